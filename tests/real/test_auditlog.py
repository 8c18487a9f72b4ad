"""The audit log OpenBao itself writes, read by toolkit.auditlog and joined with the live inventory.

The file device here keeps OpenBao's default: tokens and accessors HMAC'd. The
toolkit matches live accessors through ``sys/audit-hash/<device>``.
"""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.real.conftest import launch
from tests.servers.openbao import AUDIT_DEVICE, OpenBao
from toolkit import InputError, auditlog
from toolkit.secrets import SecretsClient

RESTRICTED = """
path "auth/token/accessors" { capabilities = ["sudo", "list"] }
path "auth/token/lookup-accessor" { capabilities = ["update"] }
path "sys/auth" { capabilities = ["read"] }
path "auth/approle/role" { capabilities = ["list"] }
path "auth/userpass/users" { capabilities = ["list"] }
"""


@pytest.fixture(scope="module")
def hashed() -> Iterator[OpenBao]:
    """A dev OpenBao whose file audit device HMACs tokens and accessors (its default)."""
    with launch(lambda: OpenBao(audit=True, audit_raw=False)) as server:
        yield server


@pytest.fixture(scope="module")
def used(hashed: OpenBao) -> dict[str, str]:
    """AppRole roles `builds` (logged in, used) and `dormant` (never), user `alice` (logged in,
    then denied), a token never used; the accessors by name."""
    root = hashed.http()
    for method in ("approle", "userpass"):
        root.post(f"/sys/auth/{method}", json={"type": method}).raise_for_status()
    for role in ("builds", "dormant"):
        root.post(f"/auth/approle/role/{role}", json={"token_policies": ["default"]})
    root.post("/auth/userpass/users/alice", json={"password": "pw-alice-7", "token_policies": []})
    root.put("/sys/policies/acl/restricted", json={"policy": RESTRICTED}).raise_for_status()
    role_id = root.get("/auth/approle/role/builds/role-id").json()["data"]["role_id"]
    secret_id = root.post("/auth/approle/role/builds/secret-id").json()["data"]["secret_id"]
    base = f"{hashed.address}/v1"
    build = httpx.post(f"{base}/auth/approle/login", json={"role_id": role_id,
                                                           "secret_id": secret_id}).json()  # fmt: skip
    alice = httpx.post(f"{base}/auth/userpass/login/alice", json={"password": "pw-alice-7"}).json()
    assert hashed.http(build["auth"]["client_token"]).get("/auth/token/lookup-self").is_success
    assert hashed.http(alice["auth"]["client_token"]).get("/sys/mounts").status_code == 403
    idle = root.post("/auth/token/create", json={"policies": ["default"]}).json()["auth"]
    limited = root.post("/auth/token/create", json={"policies": ["restricted"]}).json()["auth"]
    root.close()
    return {
        "builds": build["auth"]["accessor"],
        "alice": alice["auth"]["accessor"],
        "idle": idle["accessor"],
        "limited_token": limited["client_token"],
    }


def test_the_log_openbao_wrote_gives_requests_denials_and_last_use(
    hashed: OpenBao, used: dict[str, str], tmp_path: Path
) -> None:
    log = auditlog.open(hashed.audit_log)
    requests = log.requests_frame()
    assert {"time", "operation", "path", "mount", "namespace", "accessor", "entity_id",
            "display_name", "remote_address", "error"} <= set(requests.columns)  # fmt: skip
    assert str(requests["time"].dtype) == "datetime64[us, UTC]"
    denied = log.denied_frame()
    assert list(denied["path"]) == ["sys/mounts"]
    assert denied["display_name"].iloc[0] == "userpass-alice"
    last = log.last_use_frame().set_index(["kind", "name"])
    assert last.loc[("approle role", "builds"), "login_mount"] == "auth/approle/"
    assert pd_notna(last.loc[("approle role", "builds"), "last_use"])
    assert "secret id" in last.loc[("approle role", "builds"), "note"]
    assert ("userpass user", "alice") in last.index
    assert all(n.startswith("hmac-sha256:") for n in last.loc["token"].index)
    principals = log.principals_frame()
    alice = principals[principals["role"] == "alice"].iloc[0]
    assert alice["denied"] == 1 and alice["display_name"] == "userpass-alice"

    packed = tmp_path / "audit.log.gz"
    with open(hashed.audit_log, "rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert auditlog.open(packed).span.lines == log.span.lines


def pd_notna(value: object) -> bool:
    import pandas as pd

    return bool(pd.notna(value))


def test_live_tokens_and_roles_are_matched_through_the_audit_hash_endpoint(
    hashed: OpenBao, used: dict[str, str]
) -> None:
    with SecretsClient(hashed.address, hashed.token) as client:
        usage = auditlog.unused_frame(
            auditlog.open(hashed.audit_log), client, days=30, expected_networks=["10.0.0.0/8"]
        )
    by = usage.set_index(["kind", "name"])
    assert by.loc[("approle role", "dormant"), "state"] == "never used since the log begins"
    assert by.loc[("approle role", "builds"), "state"] == "used"
    assert by.loc[("userpass user", "alice"), "state"] == "used"
    assert by.loc[("token", used["builds"]), "state"] == "used"
    assert by.loc[("token", used["idle"]), "state"] == "never used since the log begins"
    # Every address here is loopback: outside the expected network.
    assert by.loc[("approle role", "builds"), "unexpected_addresses"] == "127.0.0.1"
    assert "secret id" in by.loc[("approle role", "dormant"), "note"]
    assert usage.attrs["coverage"]["complete"], usage.attrs["coverage"]


def test_without_sudo_on_sys_audit_nor_a_device_the_tokens_are_not_called_unused(
    hashed: OpenBao, used: dict[str, str]
) -> None:
    with SecretsClient(hashed.address, used["limited_token"]) as client:
        usage = auditlog.unused_frame(auditlog.open(hashed.audit_log), client)
        tokens = usage[usage["kind"] == "token"]
        assert len(tokens) >= 4 and set(tokens["state"]) == {"not matched"}
        gaps = usage.attrs["coverage"]["gaps"]
        assert not usage.attrs["coverage"]["complete"]
        by_path = {g["path"]: g for g in gaps}
        assert list(by_path) == ["auth/token/accessors", "sys/audit"]  # in path order
        assert by_path["sys/audit"]["status"] == 403
        assert "needs sudo" in by_path["sys/audit"]["reason"]
        assert "not matched" in by_path["auth/token/accessors"]["reason"]
        # Given the device name, the hash endpoint still needs update there.
        named = auditlog.unused_frame(
            auditlog.open(hashed.audit_log), client, devices=[AUDIT_DEVICE]
        )
        named_gaps = {g["path"]: g for g in named.attrs["coverage"]["gaps"]}
        refused = named_gaps[f"sys/audit-hash/{AUDIT_DEVICE}"]
        assert refused["status"] == 403
        assert "needs update there" in refused["reason"]
    roles = usage[usage["kind"] == "approle role"].set_index("name")
    assert roles.loc["dormant", "state"] == "never used since the log begins"


def test_a_log_where_no_live_accessor_hash_appears_is_a_gap_not_never_used(
    hashed: OpenBao, used: dict[str, str]
) -> None:
    # The log another OpenBao wrote (its own HMAC key): this server's accessors hash fine,
    # and none of those hashes is in it. The join could not see; nobody is "never used".
    other = Path(__file__).resolve().parents[1] / "data" / "openbao-2.7.2-audit.log"
    with SecretsClient(hashed.address, hashed.token) as client:
        usage = auditlog.unused_frame(auditlog.open(other), client, devices=[AUDIT_DEVICE])
    tokens = usage[usage["kind"] == "token"]
    assert len(tokens) >= 4 and set(tokens["state"]) == {"not matched"}
    (gap,) = usage.attrs["coverage"]["gaps"]
    assert gap["path"] == "auth/token/accessors" and "no live token accessor" in gap["reason"]


def test_the_log_openbao_wrote_cut_short_or_wrapped_by_syslog_is_never_read_as_never_used(
    hashed: OpenBao, used: dict[str, str], tmp_path: Path
) -> None:
    import zstandard

    data = Path(hashed.audit_log).read_bytes()
    packed = zstandard.ZstdCompressor().compress(data * 4)
    (tmp_path / "audit-1.log.zst").write_bytes(packed[: len(packed) // 2])  # a copy cut short
    (tmp_path / "audit-2.log").write_bytes(data)
    with SecretsClient(hashed.address, hashed.token) as client:
        log = auditlog.open(tmp_path / "audit-*")
        usage = auditlog.unused_frame(log, client, days=30)
    assert log.span.truncated == (str(tmp_path / "audit-1.log.zst"),)
    by = usage.set_index(["kind", "name"])
    assert by.loc[("approle role", "dormant"), "state"] == auditlog.NOT_SEEN
    assert by.loc[("approle role", "builds"), "state"] == "used"
    assert "never used since the log begins" not in set(usage["state"])
    assert not usage.attrs["coverage"]["complete"]
    # The same lines as a syslog forwarder writes them hold no audit entry: refused, named.
    wrapped = tmp_path / "syslog"
    wrapped.write_bytes(
        b"".join(b"Nov 25 17:32:52 host bao[812]: " + x + b"\n" for x in data.splitlines())
    )
    with pytest.raises(InputError, match="syslog holds no audit entry"):
        auditlog.open(wrapped)
