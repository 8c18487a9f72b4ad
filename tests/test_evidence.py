"""Filing audit frames as evidence (toolkit.report) and comparing audits (toolkit.drift)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

import toolkit
from toolkit import drift, report
from toolkit.sandbox import Sandbox

WHEN = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)


def _leases() -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "lease_id": ["db/creds/app/1", "db/creds/app/2"],
            "mount": ["db/", "db/"],
            "expire_time": pd.to_datetime(["2026-11-23T04:00:00Z", "2026-11-24T00:00:00Z"]),
            "ttl": pd.array([3600, 75600], dtype="Int64"),
            "password": [toolkit.Sensitive("hunter2-secret"), None],
        }
    ).set_index("lease_id")
    return frame


def _header() -> report.Header:
    return report.Header(
        server="https://bao.example.com:8200",
        server_version="2.7.2",
        cluster="vault-cluster-1",
        namespace="team-a/",
        token_accessor="accessor-123",
        token_display_name="token-auditor",
        generated_at=WHEN,
        toolkit_version=toolkit.__version__,
        runbook="05_lease_audit",
        parameters=report.clean_parameters(
            {"target": "live", "token_env": "VAULT_TOKEN", "token": "s.topsecret", "soon": 3600}
        ),
    )


def test_every_format_carries_the_header_and_no_secret(tmp_path: Path) -> None:
    written = report.save({"leases": _leases()}, tmp_path, _header())
    names = sorted(p.name for p in written)
    assert names == sorted(
        [
            "evidence.html",
            "evidence.xlsx",
            "evidence.header.json",
            "evidence-leases.csv",
            "evidence-leases.parquet",
            "MANIFEST.json",
        ]
    )
    page = (tmp_path / "evidence.html").read_text()
    for fact in ("bao.example.com", "2.7.2", "vault-cluster-1", "team-a/", "accessor-123"):
        assert fact in page
    assert "<script" not in page and "http" not in page.split("<body>")[0].replace(
        "https://bao", ""
    )
    sidecar = json.loads((tmp_path / "evidence.header.json").read_text())
    assert sidecar["generated_at"] == "2026-11-23T03:00:00+00:00"
    assert sidecar["parameters"] == {
        "target": "live",
        "token_env": "VAULT_TOKEN",
        "token": report.LEFT_OUT,
        "soon": 3600,
    }
    csv = pd.read_csv(tmp_path / "evidence-leases.csv", index_col="lease_id")
    assert list(csv.index) == ["db/creds/app/1", "db/creds/app/2"]
    back = pd.read_parquet(tmp_path / "evidence-leases.parquet")
    assert back.attrs["evidence"]["token_accessor"] == "accessor-123"
    assert str(back["expire_time"].dt.tz) == "UTC"
    for path in written:
        blob = path.read_bytes()
        assert b"hunter2-secret" not in blob and b"s.topsecret" not in blob, path


def test_the_workbook_writes_times_as_utc_and_says_so(tmp_path: Path) -> None:
    frame = _leases()
    frame["expire_time"] = frame["expire_time"].dt.tz_convert("Europe/Berlin")
    report.save({"leases": frame}, tmp_path, _header(), formats=["xlsx"])
    book = openpyxl.load_workbook(tmp_path / "evidence.xlsx")
    assert book.sheetnames == ["header", "leases"]
    header = {row[0]: row[1] for row in book["header"].iter_rows(min_row=2, values_only=True)}
    assert "UTC" in header["times"]
    assert header["parameter token"] == json.dumps(report.LEFT_OUT)
    sheet = list(book["leases"].iter_rows(values_only=True))
    assert sheet[0][:3] == ("lease_id", "mount", "expire_time")
    assert sheet[1][2] == datetime(2026, 11, 23, 4, 0)  # 05:00 in Berlin, written as UTC


def test_a_bad_filing_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(toolkit.InputError, match="unknown evidence format 'pdf'"):
        report.save({"leases": _leases()}, tmp_path / "a", _header(), formats=["csv", "pdf"])
    with pytest.raises(toolkit.InputError, match="evidence name '../x'"):
        report.save({"../x": _leases()}, tmp_path / "b", _header())
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    report.save({"leases": _leases()}, tmp_path / "c", _header(), formats=["csv"])
    before = sorted((tmp_path / "c").iterdir())
    with pytest.raises(toolkit.InputError, match="exists already"):
        report.save({"leases": _leases()}, tmp_path / "c", _header())
    assert sorted((tmp_path / "c").iterdir()) == before


def test_parameters_named_as_secrets_are_left_out_and_env_names_kept() -> None:
    cleaned = report.clean_parameters(
        {
            "vault_password": "pw",
            "secret_id": "sid",
            "unseal_share": "abc",
            "private_key": "k",
            "token_env": "BAO_TOKEN",
            "apply": False,
            "given": toolkit.Sensitive("x"),
            "organization": "acme",
        }
    )
    assert cleaned == {
        "vault_password": report.LEFT_OUT,
        "secret_id": report.LEFT_OUT,
        "unseal_share": report.LEFT_OUT,
        "private_key": report.LEFT_OUT,
        "token_env": "BAO_TOKEN",
        "apply": False,
        "given": report.LEFT_OUT,
        "organization": "acme",
    }


def test_the_header_of_a_secrets_client_names_the_server_and_token_but_not_the_token(
    demo_sandbox: Sandbox,
) -> None:
    with toolkit.SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        header = report.header_of(client, runbook="06_policy_review", parameters={"apply": False})
        me = client.tokens.lookup_self()
    assert header.server == demo_sandbox.address
    assert header.server_version and header.cluster
    assert header.token_accessor == me["accessor"]
    assert header.token_display_name == me["display_name"]
    assert demo_sandbox.token not in json.dumps(header.as_dict())


def test_the_header_of_a_platform_client_names_the_organization(demo_sandbox: Sandbox) -> None:
    with toolkit.PlatformClient(demo_sandbox.address, demo_sandbox.token) as client:
        header = report.header_of(client, organization="acme")
    assert header.cluster == "acme" and header.server == demo_sandbox.address


def _grants() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "workspace": ["web", "web", "db"],
            "team": ["ops", "dev", "ops"],
            "access": ["admin", "read", "write"],
            "count": pd.array([1, 2, None], dtype="Int64"),
        }
    )


def test_diff_names_added_removed_and_changed_rows_with_their_columns() -> None:
    old = _grants()
    new = _grants()
    new.loc[1, "access"] = "admin"  # web/dev: read -> admin
    new = new.drop(index=2)  # db/ops removed
    new.loc[3] = ["api", "ops", "admin", 4]  # api/ops added
    result = drift.diff(old, new, key=["workspace", "team"])
    assert result.loc[("web", "dev"), "change"] == "changed"
    assert result.loc[("web", "dev"), "changed_columns"] == "access"
    assert result.loc[("web", "dev"), "access"] == "admin"
    assert result.loc[("db", "ops"), "change"] == "removed"
    assert result.loc[("db", "ops"), "access"] == "write"
    assert result.loc[("api", "ops"), "change"] == "added"
    assert ("web", "ops") not in result.index
    assert list(result.columns[:2]) == ["change", "changed_columns"]
    assert str(result["change"].dtype) == "category"


def test_diff_sees_no_change_across_dtypes_and_missing_values() -> None:
    old = _grants().set_index(["workspace", "team"])
    new = old.copy()
    new["count"] = new["count"].astype("float64")  # 1.0 == 1, NaN == <NA>
    result = drift.diff(old, new)
    assert result.empty and list(result.columns[:2]) == ["change", "changed_columns"]


def test_diff_refuses_a_key_that_is_missing_or_not_unique() -> None:
    with pytest.raises(toolkit.InputError, match="no key column 'nope'"):
        drift.diff(_grants(), _grants(), key="nope")
    with pytest.raises(toolkit.InputError, match="not unique: 'web'"):
        drift.diff(_grants(), _grants(), key="workspace")


def test_snapshots_compare_this_run_with_the_last_one(tmp_path: Path) -> None:
    shots = drift.Snapshots(tmp_path)
    first = shots.since_last("grants", _grants(), taken_at=WHEN, key=["workspace", "team"])
    assert list(first["change"]) == ["added"] * 3
    later = _grants()
    later.loc[0, "access"] = "read"
    second = shots.since_last(
        "grants", later, taken_at=WHEN + timedelta(days=7), key=["workspace", "team"]
    )
    assert list(second.index) == [("web", "ops")]
    assert second.iloc[0]["changed_columns"] == "access"
    assert [s.taken_at for s in shots.list("grants")] == [WHEN, WHEN + timedelta(days=7)]
    pd.testing.assert_frame_equal(shots.latest("grants"), later)
    with pytest.raises(toolkit.InputError, match="exists already"):
        shots.save("grants", later, taken_at=WHEN)


def test_diff_is_reachable_from_the_top_level_package() -> None:
    assert toolkit.diff is drift.diff
    assert toolkit.report is report


def test_a_frame_whose_attrs_hold_other_values_is_filed_with_them_as_text(tmp_path: Path) -> None:
    frame = _leases()
    frame.attrs["period"] = timedelta(days=90)
    frame.attrs["secret"] = toolkit.Sensitive("attr-secret-value")
    report.save({"leases": frame}, tmp_path, _header(), formats=["parquet"])
    back = pd.read_parquet(tmp_path / "evidence-leases.parquet")
    assert back.attrs["period"] == "90 days, 0:00:00"
    assert back.attrs["secret"] == report.LEFT_OUT
    assert b"attr-secret-value" not in (tmp_path / "evidence-leases.parquet").read_bytes()
    assert frame.attrs["period"] == timedelta(days=90)  # the caller's frame is untouched


def test_the_manifest_lists_every_file_filed_with_its_hash_so_a_change_shows(
    tmp_path: Path,
) -> None:
    written = report.save({"leases": _leases()}, tmp_path, _header())
    manifest = json.loads((tmp_path / report.MANIFEST).read_text())
    listed = {entry["file"]: entry["sha256"] for entry in manifest["files"]}
    assert set(listed) == {p.name for p in written} - {report.MANIFEST}
    for path in written:
        if path.name != report.MANIFEST:
            assert hashlib.sha256(path.read_bytes()).hexdigest() == listed[path.name]
    csv = tmp_path / "evidence-leases.csv"
    csv.write_text(csv.read_text() + "forged,row\n")
    assert hashlib.sha256(csv.read_bytes()).hexdigest() != listed[csv.name]


def test_the_header_carries_the_provenance_of_a_run(tmp_path: Path) -> None:
    header = report.Header(
        server="https://bao.example.com:8200",
        os_user="alice",
        host="ops-1",
        runbook_sha256="ab" * 32,
        fleet_target="prod-eu",
        token_source="token_env PROD_EU_TOKEN",
        started_at=WHEN,
        finished_at=WHEN,
        coverage={"verdict": "incomplete", "views": ["x: incomplete"], "without_record": []},
    )
    report.save({"leases": _leases()}, tmp_path, header)
    sidecar = json.loads((tmp_path / "evidence.header.json").read_text())
    assert sidecar["os_user"] == "alice" and sidecar["host"] == "ops-1"
    assert sidecar["fleet_target"] == "prod-eu"
    assert sidecar["token_source"] == "token_env PROD_EU_TOKEN"
    assert sidecar["started_at"] == "2026-11-23T03:00:00+00:00"
    assert sidecar["coverage"]["verdict"] == "incomplete"
    assert "(INCOMPLETE)" in (tmp_path / "evidence.html").read_text()
