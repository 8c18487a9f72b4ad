"""The audit log read with DuckDB: a log OpenBao 2.7.2 wrote (HMAC'd), compressed copies, a cut
last line, and the join with a sandbox's live inventory."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
import zstandard

from toolkit import InputError, SecretsClient, auditlog
from toolkit.sandbox import Sandbox

# Written by a dev OpenBao 2.7.2 with a file audit device (HMAC'd tokens and accessors):
# AppRole role app1 logged in and used, role `unused` never, userpass alice logged in and
# denied on secret/data/x, one request with a bad token denied on sys/mounts.
OPENBAO_LOG = Path(__file__).parent / "data" / "openbao-2.7.2-audit.log"
LINES = len(OPENBAO_LOG.read_bytes().splitlines())


def test_the_requests_and_responses_of_a_real_log_are_typed_frames() -> None:
    log = auditlog.open(OPENBAO_LOG)
    requests = log.requests_frame()
    responses = log.responses_frame()
    assert len(requests) + len(responses) == LINES == log.span.lines
    assert str(requests["time"].dtype) == "datetime64[us, UTC]"
    assert requests["time"].is_monotonic_increasing
    login = requests[requests["path"] == "auth/approle/login"].iloc[0]
    assert login["mount"] == "auth/approle/" and login["remote_address"] == "127.0.0.1"
    assert login["operation"] == "update"
    assert log.span.first_time is not None and log.span.unreadable == 0


def test_denied_requests_are_kept_apart_with_their_principal() -> None:
    denied = auditlog.open(OPENBAO_LOG).denied_frame()
    assert list(denied["path"]) == ["secret/data/x", "sys/mounts"]
    assert denied["display_name"].iloc[0] == "userpass-alice"
    assert pd.isna(denied["display_name"].iloc[1])  # a token the server did not know
    assert denied["error"].str.contains("permission denied").all()
    assert set(denied["outcome"]) == {"denied"}
    outcomes = auditlog.open(OPENBAO_LOG).responses_frame()["outcome"].value_counts()
    assert outcomes["denied"] == 2 and outcomes["ok"] == outcomes.sum() - 2


def test_last_use_per_accessor_role_and_user_says_what_the_log_cannot_show() -> None:
    last = auditlog.open(OPENBAO_LOG).last_use_frame().set_index(["kind", "name"])
    app = last.loc[("approle role", "app1")]
    assert app["login_mount"] == "auth/approle/" and app["requests"] == 1
    assert app["last_use"] > app["last_login"]
    assert app["note"] == auditlog.SECRET_ID_CAVEAT
    assert ("approle role", "unused") not in last.index  # never logged in: not in the log
    assert last.loc[("userpass user", "alice"), "login_mount"] == "auth/userpass/"
    tokens = last.loc["token"]
    assert all(n.startswith("hmac-sha256:") for n in tokens.index)
    assert (tokens["note"] == "").all()


def test_requests_per_principal_count_requests_failures_and_denials() -> None:
    principals = auditlog.open(OPENBAO_LOG).principals_frame()
    alice = principals[principals["role"] == "alice"].iloc[0]
    assert (alice["requests"], alice["denied"], alice["addresses"]) == (1, 1, 1)
    assert principals["requests"].sum() == LINES - len(auditlog.open(OPENBAO_LOG).responses_frame())
    assert str(principals["requests"].dtype) == "int64"


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_a_compressed_log_reads_the_same(tmp_path: Path, suffix: str) -> None:
    data = OPENBAO_LOG.read_bytes()
    packed = tmp_path / f"audit.log{suffix}"
    if suffix == ".gz":
        packed.write_bytes(gzip.compress(data))
    else:
        packed.write_bytes(zstandard.ZstdCompressor().compress(data))
    plain = auditlog.open(OPENBAO_LOG).principals_frame()
    assert auditlog.open(packed).principals_frame().equals(plain)


def test_a_line_cut_short_is_counted_not_read_and_a_glob_reads_every_file(tmp_path: Path) -> None:
    data = OPENBAO_LOG.read_bytes()
    (tmp_path / "audit-1.log").write_bytes(data)
    head = data.splitlines()[:4]
    cut = data.splitlines()[5][:120]  # the writer mid-line
    (tmp_path / "audit-2.log").write_bytes(b"\n".join([*head, cut]))
    log = auditlog.open(tmp_path / "audit-*.log")
    assert len(log.paths) == 2
    assert (log.span.lines, log.span.unreadable) == (LINES + 5, 1)
    more = sum(b'"type":"request"' in line for line in head)
    assert len(log.requests_frame()) == len(auditlog.open(OPENBAO_LOG).requests_frame()) + more
    # The cut line is a gap of every frame, named with its file and count.
    (gap,) = log.requests_frame().attrs["coverage"]["gaps"]
    assert gap["path"].endswith("audit-2.log") and gap["reason"].startswith("1 line(s)")


def test_a_missing_log_is_an_error_that_names_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no audit log at .*nowhere.log"):
        auditlog.open(tmp_path / "nowhere.log")


def _raw_entry(when: str, accessor: str, path: str, address: str, **auth: object) -> str:
    """A request entry as a device with ``hmac_accessor=false`` writes it."""
    return json.dumps({
        "time": when, "type": "request",
        "auth": {"accessor": accessor, "display_name": "token", **auth},
        "request": {"id": when, "operation": "read", "path": path, "mount_point": "secret/",
                    "namespace": {"id": "root"}, "remote_address": address},
    })  # fmt: skip


def test_the_live_inventory_gives_never_used_unused_for_n_days_and_unexpected_addresses(
    demo_sandbox: Sandbox, tmp_path: Path
) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        tokens = client.tokens.inventory()
        accessors = list(tokens.index)
        assert len(accessors) >= 3
        log_file = tmp_path / "audit.log"
        log_file.write_text(
            "\n".join(
                [
                    _raw_entry("2026-01-01T00:00:00Z", accessors[0], "secret/a", "10.1.2.3"),
                    _raw_entry("2026-03-01T00:00:00Z", accessors[1], "secret/b", "10.1.2.4"),
                    _raw_entry("2026-03-02T00:00:00Z", accessors[1], "secret/b", "192.0.2.9"),
                ]
            )
            + "\n"
        )
        roles = pd.DataFrame(
            {
                "mount": ["approle/"],
                "method": ["approle"],
                "kind": ["approle role"],
                "name": ["ci"],
                "mount_accessor": ["auth_approle_1"],
            }  # fmt: skip
        )
        usage = auditlog.unused_frame(
            auditlog.open(log_file), client, days=30, tokens=tokens, roles=roles,
            expected_networks=["10.0.0.0/8"],
        )  # fmt: skip
    by = usage.set_index(["kind", "name"])
    assert by.loc[("token", accessors[0]), "state"] == "unused for 30 days"
    assert by.loc[("token", accessors[1]), "state"] == "used"
    assert by.loc[("token", accessors[1]), "unexpected_addresses"] == "192.0.2.9"
    assert by.loc[("token", accessors[2]), "state"] == "never used since the log begins"
    assert by.loc[("approle role", "ci"), "state"] == "never used since the log begins"
    assert by.loc[("approle role", "ci"), "note"] == auditlog.SECRET_ID_CAVEAT
    assert usage.attrs["log"]["first_time"].startswith("2026-01-01")
    assert usage.attrs["coverage"]["complete"]  # a raw log: nothing to hash, nothing refused
    assert isinstance(usage["last_use"].dtype, pd.DatetimeTZDtype)
    assert str(usage["last_use"].dt.tz) == "UTC"
    with pytest.raises(InputError, match="days must be at least 1"):
        auditlog.unused_frame(auditlog.open(log_file), client, days=0)


def _cert_entries(when: str, entry: str, path: str, accessor: str, role: str) -> str:
    """A cert-auth entry as OpenBao writes it (``hmac_accessor=false``): the login's
    metadata names the role (``cert_name``) beside the certificate's own fields."""
    auth = {
        "accessor": accessor, "display_name": f"cert-{role}", "policies": ["default"],
        "entity_id": "7f1c0c55-0000-4000-8000-000000000001", "token_type": "service",
        "metadata": {"authority_key_id": "3a:9f:00:11", "cert_name": role,
                     "common_name": "host.example", "serial_number": "61440",
                     "subject_key_id": "b2:04:77:e1"},
    }  # fmt: skip
    request = {"id": when, "operation": "update" if "login" in path else "read", "path": path,
               "mount_point": "auth/cert/" if path.startswith("auth/") else "secret/",
               "mount_type": "cert" if path.startswith("auth/") else "kv",
               "namespace": {"id": "root"}, "remote_address": "10.0.0.7"}  # fmt: skip
    if entry == "request" and "login" in path:
        auth = {"policy_results": {"allowed": True}, "token_type": "default"}
    return json.dumps({"time": when, "type": entry, "auth": auth, "request": request})


def test_a_cert_role_s_last_login_and_last_use_come_from_its_cert_name(tmp_path: Path) -> None:
    log_file = tmp_path / "audit.log"
    lines = [
        _cert_entries("2026-02-01T00:00:00Z", "request", "auth/cert/login", "", "web"),
        _cert_entries("2026-02-01T00:00:01Z", "response", "auth/cert/login", "acc-web", "web"),
        _cert_entries("2026-02-03T00:00:00Z", "request", "secret/data/app", "acc-web", "web"),
        _cert_entries("2026-02-03T00:00:01Z", "response", "secret/data/app", "acc-web", "web"),
    ]
    log_file.write_text("\n".join(lines) + "\n")
    log = auditlog.open(log_file)
    assert log.span.unreadable == 0  # the certificate's metadata fields are read, not refused
    cert = log.last_use_frame().set_index(["kind", "name"]).loc[("cert role", "web")]
    assert cert["last_login"] == pd.Timestamp("2026-02-01T00:00:01Z")
    assert cert["login_mount"] == "auth/cert/"
    assert cert["last_use"] == pd.Timestamp("2026-02-03T00:00:00Z")
    assert cert["requests"] == 1 and cert["note"] == ""  # the login request has no token yet
    roles = pd.DataFrame(
        {"mount": ["cert/", "cert/"], "method": ["cert", "cert"],
         "kind": ["cert role", "cert role"], "name": ["web", "spare"],
         "mount_accessor": ["auth_cert_1", "auth_cert_1"]}, dtype="string",
    )  # fmt: skip
    tokens = pd.DataFrame(index=pd.Index([], name="accessor", dtype="string"))
    usage = auditlog.unused_frame(log, None, days=30, tokens=tokens, roles=roles)
    by = usage.set_index(["kind", "name"])
    assert by.loc[("cert role", "web"), "state"] == "used"
    assert by.loc[("cert role", "web"), "last_use"] == pd.Timestamp("2026-02-03T00:00:00Z")
    assert by.loc[("cert role", "spare"), "state"] == "never used since the log begins"
