"""The rekey ceremony on a real raft OpenBao (5 shares, threshold 3), through the toolkit.

Each test runs twice: against a server whose listener re-enables the legacy
``sys/rekey/*`` endpoints, and against one that offers only ``sys/rotate/root/*``.
After the ceremony the real server is sealed and unsealed with the new shares,
and the old shares no longer open it.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.openbao import OpenBao
from tests.widgets.test_rekey_ceremony import enter, hand_out, leaks
from toolkit import APIError
from toolkit.secrets import RekeyCeremony, SecretsClient


@pytest.fixture
def client(raft_bao: OpenBao) -> Iterator[SecretsClient]:
    with SecretsClient(raft_bao.address, raft_bao.token) as c:
        yield c


def expected_flavour(server: OpenBao) -> str:
    return "legacy" if server.legacy_rekey else "rotate-root"


def old_shares_no_longer_unseal(server: OpenBao, client: SecretsClient, old: list[str]) -> None:
    """Seal, try the old shares (the server refuses them and stays sealed), reset the attempt."""
    client.seal.seal()
    with pytest.raises(APIError):
        for share in old[:3]:
            client.seal.unseal(share)
    assert client.seal.status()["sealed"] is True
    client.seal.unseal(reset=True)


def test_a_ceremony_with_verification_rotates_the_real_servers_shares(
    raft_bao: OpenBao, client: SecretsClient
) -> None:
    old = list(raft_bao.shares)
    ceremony = RekeyCeremony(client)
    assert ceremony.api_flavour == expected_flavour(raft_bao)
    assert ceremony.status()["phase"] == "idle"

    status = ceremony.start(shares=4, threshold=2, verify=True)
    assert (status["phase"], status["required"], status["progress"]) == ("collecting", 3, 0)
    first_nonce = status["nonce"]
    for share in old[:3]:
        status = ceremony.submit_share(share)
    assert status["phase"] == "verifying" and status["nonce"] != first_nonce
    new = [s.reveal() for s in ceremony.new_shares]
    assert len(new) == 4 and not set(new) & set(old)
    assert len(ceremony.new_shares_base64) == 4

    # Nothing has rotated yet: the server still reports 5 / 3.
    assert (client.seal.status()["n"], client.seal.status()["t"]) == (5, 3)
    assert ceremony.verify_share(new[3])["progress"] == 1
    assert ceremony.verify_share(new[1])["phase"] == "complete"
    assert (client.seal.status()["n"], client.seal.status()["t"]) == (4, 2)

    seal = ceremony.prove_unseal(new[2:])
    assert seal["sealed"] is False
    raft_bao.wait_active()
    old_shares_no_longer_unseal(raft_bao, client, old)
    raft_bao.unseal(new[:2])
    assert client.seal.status()["sealed"] is False


def test_a_ceremony_without_verification_completes_at_the_threshold(
    raft_bao: OpenBao, client: SecretsClient
) -> None:
    ceremony = RekeyCeremony(client)
    ceremony.start(shares=3, threshold=2)
    for share in raft_bao.shares[:2]:
        assert ceremony.submit_share(share)["phase"] == "collecting"
    assert ceremony.submit_share(raft_bao.shares[2])["phase"] == "complete"
    new = [s.reveal() for s in ceremony.new_shares]
    assert (client.seal.status()["n"], client.seal.status()["t"]) == (3, 2)
    client.seal.seal()
    raft_bao.unseal(new[1:])
    assert client.seal.status()["sealed"] is False


def test_a_wrong_share_and_a_cancel_keep_the_old_shares_in_force(
    raft_bao: OpenBao, client: SecretsClient
) -> None:
    ceremony = RekeyCeremony(client)
    ceremony.start(shares=5, threshold=3)
    ceremony.submit_share(raft_bao.shares[0])
    # Another operator restarts the attempt: the ceremony re-reads the new nonce.
    client.rekey.cancel()
    client.rekey.init(5, 3)
    assert ceremony.submit_share(raft_bao.shares[1])["progress"] == 1
    # A share of no set of this server counts until the threshold, where it spoils the attempt.
    assert ceremony.submit_share("ab" * 33)["progress"] == 2
    with pytest.raises(APIError):
        ceremony.submit_share(raft_bao.shares[2])
    status = ceremony.cancel()
    assert status["phase"] == "idle"
    client.seal.seal()
    raft_bao.unseal(raft_bao.shares[2:])
    assert client.seal.status()["sealed"] is False


def test_the_widget_runs_the_ceremony_by_clicks_on_the_real_server(
    raft_bao: OpenBao, client: SecretsClient
) -> None:
    from widgets import RekeyCeremonyForm

    old = list(raft_bao.shares)
    form = RekeyCeremonyForm(client)
    assert form.last_status is not None and form.last_status["phase"] == "idle"
    form.shares.value, form.threshold.value, form.verify.value = 3, 2, True
    form.start_button.click()
    assert form.ceremony.phase == "collecting", form.status_text
    assert form.ceremony.api_flavour == expected_flavour(raft_bao)
    for share in old[:3]:
        enter(form, share)
    assert form.ceremony.phase == "verifying", form.status_text

    new = hand_out(form)
    assert len(new) == 3 and not set(new) & set(old)
    enter(form, new[0])
    enter(form, new[2])
    assert form.ceremony.phase == "complete", form.status_text
    assert (client.seal.status()["n"], client.seal.status()["t"]) == (3, 2)

    form.prove_button.click()
    assert "unseal the server" in form.status_text, form.status_text
    raft_bao.wait_active()
    assert client.seal.status()["sealed"] is False
    assert leaks(form, old + new) == []
    old_shares_no_longer_unseal(raft_bao, client, old)
    raft_bao.unseal(new[1:])


def test_a_pgp_ceremony_with_backup_hands_out_encrypted_shares_that_unseal(
    raft_bao: OpenBao, client: SecretsClient
) -> None:
    import base64

    from tests.secrets.test_rekey import decrypt_share, keypair

    holders = [keypair(f"holder{i}") for i in range(3)]
    pgp_keys = [base64.b64encode(bytes(cert)).decode() for cert in holders]
    ceremony = RekeyCeremony(client)
    started = ceremony.start(3, 2, pgp_keys=pgp_keys, backup=True, verify=True)
    assert started["pgp_fingerprints"] == [c.fingerprint.lower() for c in holders]
    assert started["backup"] is True
    for share in raft_bao.shares[:3]:
        ceremony.submit_share(share)
    assert ceremony.phase == "verifying"
    encrypted = ceremony.new_shares
    backup = client.rekey.backup()
    assert set(backup["keys"]) == {c.fingerprint.lower() for c in holders}
    assert all(isinstance(v, list) for v in backup["keys"].values())
    new = [decrypt_share(s, cert) for s, cert in zip(encrypted, holders, strict=True)]

    # A wrong share spoils verification at the threshold and the server issues a new
    # verification nonce; the right shares then complete.
    before = client.rekey.verify_status()["nonce"]
    assert ceremony.verify_share(raft_bao.shares[4])["progress"] == 1
    with pytest.raises(APIError):
        ceremony.verify_share(new[1])
    assert client.rekey.verify_status()["nonce"] != before
    assert ceremony.status()["progress"] == 0
    ceremony.verify_share(new[0])
    assert ceremony.verify_share(new[2])["phase"] == "complete"

    client.rekey.delete_backup()
    with pytest.raises(APIError) as gone:
        client.rekey.backup()
    assert gone.value.status == 400
    assert ceremony.prove_unseal(new[:2])["sealed"] is False
    raft_bao.wait_active()


# -- a seal with stored shares: OpenBao 2.7 with seal "static" ---------------------------


def test_a_root_ceremony_on_a_static_seal_takes_recovery_shares_coerced_to_one_share(
    static_seal_bao: OpenBao,
) -> None:
    with SecretsClient(static_seal_bao.address, static_seal_bao.token) as client:
        status = client.seal.status()
        assert status["recovery_seal"] is True and (status["t"], status["n"]) == (3, 5)
        assert client.seal.share_kind() == "recovery"
        ceremony = RekeyCeremony(client)
        # 3 shares / threshold 2 asked: the real server keeps 1 / 1 instead of refusing.
        started = ceremony.start(3, 2)
        # Shown as 1 of 1 by sys/rotate/root, as 0 of 0 by the legacy sys/rekey.
        kept = (0, 0) if ceremony.api_flavour == "legacy" else (1, 1)
        assert (started["t"], started["n"], started["required"]) == (*kept, 3)
        assert started["share_kind"] == "recovery" and started["new_share_kind"] == ""
        for share in static_seal_bao.recovery_shares[:3]:
            ceremony.submit_share(share)
        assert ceremony.phase == "complete" and ceremony.new_shares == []
        assert client.seal.status()["n"] == 5  # the recovery shares are untouched


def test_a_recovery_ceremony_on_a_static_seal_hands_out_recovery_shares_that_unseal(
    static_seal_bao: OpenBao,
) -> None:
    old = list(static_seal_bao.recovery_shares)
    with SecretsClient(static_seal_bao.address, static_seal_bao.token) as client:
        ceremony = RekeyCeremony(client, target="recovery")
        assert ceremony.api_flavour == expected_flavour(static_seal_bao)
        ceremony.start(3, 2, verify=True)
        for share in old[:3]:
            ceremony.submit_share(share)
        assert ceremony.phase == "verifying"
        new = ceremony.new_shares
        for share in new[:2]:
            ceremony.verify_share(share)
        assert ceremony.phase == "complete"
        seal = client.seal.status()
        assert (seal["t"], seal["n"], seal["recovery_seal"]) == (2, 3, True)
        assert ceremony.prove_unseal(new[:2])["sealed"] is False
        static_seal_bao.wait_active()
        old_shares_no_longer_unseal(static_seal_bao, client, old)


def test_the_live_verification_and_the_record_follow_the_real_servers_ceremony(
    raft_bao: OpenBao, client: SecretsClient, tmp_path: Path
) -> None:
    ceremony = RekeyCeremony(client)
    ceremony.start(shares=4, threshold=2, verify=True)
    for share in raft_bao.shares[:3]:
        ceremony.submit_share(share)
    assert ceremony.verify_live()["problems"] == [
        "the rekey is not complete (phase: verifying)",
        "the seal reports 3 of 5 shares, not the new 2 of 4",
    ]
    new = [s.reveal() for s in ceremony.new_shares]
    for share in new[:2]:
        ceremony.verify_share(share)

    live = ceremony.verify_live()
    assert live["ok"] and (live["seal_n"], live["seal_t"]) == (4, 2)
    record = ceremony.record()
    assert [s["event"] for s in record["steps"]] == [
        "started",
        *["current share entered"] * 3,
        *["new share verified"] * 2,
    ]
    assert len(record["nonces"]) == 2  # the attempt's, then the verification's
    saved = ceremony.save_record(tmp_path / "ceremony.json")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    text = saved.read_text()
    assert not any(share in text for share in [*raft_bao.shares, *new])
    assert "Retire the old shares" in [i["item"] for i in ceremony.checklist()]
