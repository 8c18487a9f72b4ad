"""Rekey through the client and the RekeyCeremony, on both API flavours, over real HTTP."""

from __future__ import annotations

import base64
import json
import stat
import warnings
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pysequoia
import pytest

from toolkit import BadRequest, InputError, MethodNotAllowed, Sensitive
from toolkit.sandbox import Sandbox
from toolkit.secrets import RekeyCeremony, SecretsClient
from toolkit.secrets.ceremony import check_share
from toolkit.secrets.rekey import Rekey


def keypair(name: str) -> pysequoia.Cert:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pysequoia.Cert.generate(f"{name} <{name}@example.org>")


def decrypt_share(encrypted: Sensitive, cert: pysequoia.Cert) -> str:
    """A key holder's step: decrypt their PGP-encrypted share (hex of the message)."""
    message = bytes.fromhex(encrypted.reveal())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        secret_key = cert.secrets
        assert secret_key is not None
        decrypted = pysequoia.decrypt(message, decryptor=secret_key.decryptor())
    assert decrypted.bytes is not None
    return decrypted.bytes.decode()


def test_a_pgp_ceremony_with_verification_ends_unsealing_with_the_new_shares(
    sandbox: Sandbox, client: SecretsClient, old_shares: list[str]
) -> None:
    holders = [keypair(f"holder{i}") for i in range(4)]
    pgp_keys = [base64.b64encode(bytes(cert)).decode() for cert in holders]

    ceremony = RekeyCeremony(client)
    assert ceremony.phase == "idle"
    started = ceremony.start(4, 3, pgp_keys=pgp_keys, backup=True, verify=True)
    assert (ceremony.phase, ceremony.progress, ceremony.required) == ("collecting", 0, 3)
    assert started["pgp_fingerprints"] == [c.fingerprint.lower() for c in holders]
    with pytest.raises(InputError):
        _ = ceremony.new_shares

    ceremony.submit_share(old_shares[0])
    ceremony.submit_share(old_shares[1])
    assert (ceremony.phase, ceremony.progress) == ("collecting", 2)
    ceremony.submit_share(old_shares[2])
    assert (ceremony.phase, ceremony.progress, ceremony.required) == ("verifying", 0, 3)

    encrypted = ceremony.new_shares
    assert len(encrypted) == 4 and all(isinstance(s, Sensitive) for s in encrypted)
    backup = client.rekey.backup()
    assert set(backup["keys"]) == {c.fingerprint.lower() for c in holders}
    new = [decrypt_share(s, cert) for s, cert in zip(encrypted, holders, strict=True)]

    ceremony.verify_share(new[3])
    ceremony.verify_share(new[0])
    assert (ceremony.phase, ceremony.progress) == ("verifying", 2)
    ceremony.verify_share(new[1])
    assert ceremony.phase == "complete"
    assert client.seal.status()["n"] == 4

    status = ceremony.prove_unseal(new[1:4])
    assert status["sealed"] is False and status["t"] == 3
    # The old shares no longer open the server.
    assert sandbox.secrets.seal.rebuilds_root_key([bytes.fromhex(s) for s in new[:3]])
    assert not sandbox.secrets.seal.rebuilds_root_key([bytes.fromhex(s) for s in old_shares[:3]])


def test_a_ceremony_without_verification_completes_at_the_threshold(
    sandbox: Sandbox, client: SecretsClient, old_shares: list[str]
) -> None:
    ceremony = RekeyCeremony(client)
    ceremony.start(3, 2)
    for share in old_shares[:3]:
        ceremony.submit_share(Sensitive(share))
    assert ceremony.phase == "complete"
    assert ceremony.prove_unseal()["sealed"] is False
    assert client.seal.status()["n"] == 3


@pytest.mark.parametrize("forced", [True, False])
def test_the_rotate_root_endpoints_serve_the_ceremony_where_the_legacy_ones_answer_405(
    sandbox: Sandbox, old_shares: list[str], forced: bool
) -> None:
    sandbox.secrets.legacy_rekey = False
    with SecretsClient(sandbox.address, sandbox.token) as client:
        if forced:
            client.rekey.api_flavour = "rotate-root"
        with pytest.raises(MethodNotAllowed):
            Rekey(client.http, "legacy").status()
        ceremony = RekeyCeremony(client)
        ceremony.start(5, 3, verify=True)
        assert client.rekey.api_flavour == "rotate-root"
        for share in old_shares[:3]:
            ceremony.submit_share(share)
        assert ceremony.phase == "verifying"
        for new_share in ceremony.new_shares[:3]:
            ceremony.verify_share(new_share)
        assert ceremony.phase == "complete"
        assert ceremony.prove_unseal()["sealed"] is False


def test_detection_picks_legacy_where_the_legacy_endpoints_answer(
    client: SecretsClient,
) -> None:
    assert client.rekey.api_flavour == "legacy"


def test_the_ceremony_uses_the_servers_nonce_after_another_operator_restarts(
    sandbox: Sandbox, client: SecretsClient, old_shares: list[str]
) -> None:
    ceremony = RekeyCeremony(client)
    first = ceremony.start(3, 2)
    # Someone else cancels and starts again: a new nonce the ceremony never saw.
    client.rekey.cancel()
    second = client.rekey.init(3, 2)
    assert second["nonce"] != first["nonce"]
    assert ceremony.submit_share(old_shares[0])["nonce"] == second["nonce"]
    assert ceremony.progress == 1


def test_a_wrong_share_is_refused_and_the_ceremony_rereads_the_server(
    sandbox: Sandbox, client: SecretsClient, old_shares: list[str]
) -> None:
    ceremony = RekeyCeremony(client)
    ceremony.start(3, 2, verify=True)
    ceremony.submit_share(old_shares[0])
    ceremony.submit_share(old_shares[1])
    ceremony.submit_share(old_shares[2])
    assert ceremony.phase == "verifying"
    nonce = ceremony.status()["nonce"]
    ceremony.verify_share(ceremony.new_shares[0])
    # A share of the old set does not rebuild the new key: the server resets
    # verification with a new nonce, and the ceremony already knows it.
    with pytest.raises(BadRequest) as refused:
        ceremony.verify_share(old_shares[0])
        ceremony.verify_share(old_shares[1])
    assert old_shares[0] not in str(refused.value) and old_shares[1] not in str(refused.value)
    assert ceremony.phase == "verifying" and ceremony.progress == 0
    assert ceremony.status()["nonce"] != nonce
    for share in ceremony.new_shares[:2]:
        ceremony.verify_share(share)
    assert ceremony.phase == "complete"


def test_cancel_and_restart_clear_progress_and_keep_the_parameters(
    sandbox: Sandbox, client: SecretsClient, old_shares: list[str]
) -> None:
    ceremony = RekeyCeremony(client)
    with pytest.raises(InputError, match="never called"):
        ceremony.restart()
    first = ceremony.start(4, 2)
    ceremony.submit_share(old_shares[0])
    again = ceremony.restart()
    assert (again["progress"], again["n"], again["t"]) == (0, 4, 2)
    assert again["nonce"] != first["nonce"]
    assert ceremony.cancel()["phase"] == "idle"
    assert client.rekey.status()["started"] is False


@pytest.mark.parametrize(
    ("share", "problem"),
    [
        ("", "empty"),
        ("zz-not-a-share!", "neither hex nor base64"),
        ("abcd", "decodes to 3 bytes"),
        (base64.b64encode(bytes(40)).decode(), "decodes to 40 bytes"),
    ],
)
def test_a_malformed_share_is_refused_before_sending_without_echoing_it(
    share: str, problem: str
) -> None:
    with pytest.raises(InputError, match=problem) as refused:
        check_share(share)
    if share:
        assert share not in str(refused.value)


def test_a_malformed_share_never_reaches_the_server(client: SecretsClient) -> None:
    ceremony = RekeyCeremony(client)
    ceremony.start(3, 2)
    with pytest.raises(InputError):
        ceremony.submit_share("0123")
    assert ceremony.status()["progress"] == 0


def test_rekey_parameters_are_checked_before_sending(client: SecretsClient) -> None:
    with pytest.raises(InputError, match="secret_threshold"):
        client.rekey.init(3, 4)
    with pytest.raises(InputError, match="one per share"):
        client.rekey.init(3, 2, pgp_keys=["a"])
    with pytest.raises(InputError, match="backup needs pgp_keys"):
        client.rekey.init(3, 2, backup=True)
    assert client.rekey.status()["started"] is False


def test_verification_can_be_restarted_with_a_new_nonce(
    sandbox: Sandbox, client: SecretsClient, old_shares: list[str]
) -> None:
    client.rekey.init(3, 2, require_verification=True)
    nonce = client.rekey.status()["nonce"]
    client.rekey.update(old_shares[0], nonce)
    client.rekey.update(old_shares[1], nonce)
    done = client.rekey.update(old_shares[2], nonce)
    assert done["complete"] and isinstance(done["keys"][0], Sensitive)
    client.rekey.verify_update(done["keys"][0], done["verification_nonce"])
    assert client.rekey.verify_status()["progress"] == 1
    restarted = client.rekey.verify_cancel()
    assert restarted["progress"] == 0 and restarted["nonce"] != done["verification_nonce"]


def test_prove_unseal_refuses_a_remote_server_unless_allowed() -> None:
    client = SecretsClient("https://vault.example.org:8200", "t")
    ceremony = RekeyCeremony(client)
    with pytest.raises(InputError, match="seals the server"):
        ceremony.prove_unseal(["00" * 33])


# -- a seal with stored shares (auto-unseal): recovery shares -------------------------


@pytest.fixture
def recovery_sandbox(tmp_path: Path) -> Iterator[tuple[Sandbox, list[str]]]:
    path = tmp_path / "init.json"
    with Sandbox(demo=False, init_file=str(path), recovery_seal=True) as sb:
        yield sb, list(json.loads(path.read_text())["recovery_keys"])


@pytest.mark.parametrize("legacy", [True, False], ids=["legacy", "rotate"])
def test_a_recovery_ceremony_hands_out_new_recovery_shares_that_then_unseal(
    recovery_sandbox: tuple[Sandbox, list[str]], legacy: bool
) -> None:
    sandbox, recovery = recovery_sandbox
    sandbox.secrets.legacy_rekey = legacy
    with SecretsClient(sandbox.address, sandbox.token) as client:
        assert client.seal.share_kind() == "recovery"
        ceremony = RekeyCeremony(client, target="recovery")
        status = ceremony.start(3, 2, verify=True)
        assert status["share_kind"] == status["new_share_kind"] == "recovery"
        assert client.recovery_rekey.api_flavour == ("legacy" if legacy else "rotate-root")
        for share in recovery[:3]:
            ceremony.submit_share(share)
        assert ceremony.phase == "verifying" and len(ceremony.new_shares) == 3
        for share in ceremony.new_shares[:2]:
            ceremony.verify_share(share)
        assert ceremony.phase == "complete"
        assert ceremony.prove_unseal()["sealed"] is False
        seal = client.seal.status()
        assert (seal["t"], seal["n"], seal["recovery_seal"]) == (2, 3, True)


def test_a_root_ceremony_on_a_recovery_seal_takes_recovery_shares_and_hands_out_none(
    recovery_sandbox: tuple[Sandbox, list[str]],
) -> None:
    sandbox, recovery = recovery_sandbox
    with SecretsClient(sandbox.address, sandbox.token) as client:
        ceremony = RekeyCeremony(client)
        status = ceremony.start(3, 2)
        assert status["share_kind"] == "recovery" and status["new_share_kind"] == ""
        # The legacy endpoints (the sandbox's default) show t and n as 0, as OpenBao 2.7 does.
        assert (status["t"], status["n"], status["required"]) == (0, 0, 3)
        for share in recovery[:3]:
            ceremony.submit_share(share)
        assert ceremony.phase == "complete" and ceremony.new_shares == []
    assert sandbox.secrets.seal.stored_key_rotations == 1


def test_a_shamir_ceremony_says_it_takes_and_hands_out_unseal_shares(
    client: SecretsClient,
) -> None:
    status = RekeyCeremony(client).status()
    assert status["share_kind"] == status["new_share_kind"] == "unseal"
    with pytest.raises(InputError, match="target"):
        RekeyCeremony(client, target="master")
    with pytest.raises(BadRequest, match="recovery"):
        RekeyCeremony(client, target="recovery").start(1, 1)


# -- after the ceremony ------------------------------------------------------------------
def test_the_live_verification_passes_after_the_ceremony_and_fails_before_it(
    client: SecretsClient, old_shares: list[str]
) -> None:
    ceremony = RekeyCeremony(client)
    ceremony.start(4, 2, verify=True)
    for share in old_shares[:3]:
        ceremony.submit_share(share)
    early = ceremony.verify_live()
    assert early["ok"] is False and early["rekey_complete"] is False
    assert early["problems"] == [
        "the rekey is not complete (phase: verifying)",
        "the seal reports 3 of 5 shares, not the new 2 of 4",
    ]
    for share in ceremony.new_shares[:2]:
        ceremony.verify_share(share)

    done = ceremony.verify_live()
    assert done["ok"] is True and done["problems"] == []
    assert (done["seal_n"], done["seal_t"]) == (4, 2) == (done["expected_n"], done["expected_t"])
    with pytest.raises(InputError, match="start\\(\\) was never called"):
        RekeyCeremony(client).verify_live()


def test_the_ceremony_record_says_when_each_share_was_entered_and_holds_no_share(
    client: SecretsClient, old_shares: list[str], tmp_path: Path
) -> None:
    holders = [keypair(f"holder{i}") for i in range(3)]
    pgp_keys = [base64.b64encode(bytes(cert)).decode() for cert in holders]
    ceremony = RekeyCeremony(client)
    started = ceremony.start(3, 2, pgp_keys=pgp_keys, backup=True)
    for share in old_shares[:3]:
        ceremony.submit_share(share)
    assert ceremony.phase == "complete"

    record = ceremony.record()
    assert record["pgp_fingerprints"] == [c.fingerprint.lower() for c in holders]
    assert record["nonces"] == [started["nonce"]]
    assert (record["shares"], record["threshold"], record["backup"]) == (3, 2, True)
    entered = [s for s in record["steps"] if s["event"] == "current share entered"]
    assert [s["progress"] for s in entered] == [1, 2, 0] and entered[-1]["phase"] == "complete"
    times = [datetime.fromisoformat(s["at"]) for s in record["steps"]]
    assert times == sorted(times) and all(t.tzinfo is not None for t in times)

    text = ceremony.record_json()
    secrets = [*old_shares, *(s.reveal() for s in ceremony.new_shares)]
    assert json.loads(text) == json.loads(json.dumps(dict(record)))
    assert not any(secret in text for secret in secrets)
    saved = ceremony.save_record(tmp_path / "ceremony.json")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert json.loads(saved.read_text())["nonces"] == [started["nonce"]]
    # An existing, world-readable file is made 0600 before the record goes in.
    loose = tmp_path / "loose.json"
    loose.write_text("{}")
    loose.chmod(0o644)
    assert stat.S_IMODE(ceremony.save_record(loose).stat().st_mode) == 0o600


def test_the_checklist_asks_to_delete_the_backup_only_when_one_was_kept(
    client: SecretsClient,
) -> None:
    with_backup = RekeyCeremony(client)
    holders = [keypair("solo")]
    with_backup.start(1, 1, pgp_keys=[base64.b64encode(bytes(holders[0])).decode()], backup=True)
    items = [i["item"] for i in with_backup.checklist()]
    assert items[0] == "Delete the backup of the encrypted shares"
    assert "Retire the old shares" in items
    with_backup.cancel()

    plain = RekeyCeremony(client)
    plain.start(3, 2)
    items = [i["item"] for i in plain.checklist()]
    assert "Delete the backup of the encrypted shares" not in items
    assert items[0] == "Retire the old shares"
