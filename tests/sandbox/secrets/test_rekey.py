"""The rekey attempt (spec part 3 and 4.3): the state machine alone, then over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolkit.sandbox import Sandbox
from toolkit.sandbox._plain import round_trip
from toolkit.sandbox.secrets.errors import SecretsError, ServerSealed
from toolkit.sandbox.secrets.http import sys_rekey
from toolkit.sandbox.secrets.rekey import (
    RekeyBackup,
    RekeyOperation,
    RekeyResult,
    RekeyStatus,
    VerificationStatus,
)
from toolkit.sandbox.secrets.seal import SealState


def initial_shares(seal: SealState, tmp_path: Path) -> list[bytes]:
    path = tmp_path / "init.json"
    seal.write_init_file(str(path), "root")
    return [bytes.fromhex(key) for key in json.loads(path.read_text())["keys"]]


# -- the state machine, without a socket ---------------------------------------------


def test_the_state_machine_walks_start_update_verify_without_a_socket(tmp_path: Path) -> None:
    seal = SealState(3, 2)
    old = initial_shares(seal, tmp_path)
    ceremony = RekeyOperation(seal)
    assert ceremony.status().started is False

    started = ceremony.start(4, 3, require_verification=True)
    assert (started.started, started.threshold, started.shares, started.required) == (
        True,
        3,
        4,
        2,
    )
    progress = ceremony.update(old[0], started.nonce)
    assert isinstance(progress, RekeyStatus) and progress.progress == 1
    done = ceremony.update(old[2], started.nonce)
    assert isinstance(done, RekeyResult) and done.verification_required
    new = done.shares
    assert seal.rebuilds_root_key(old[:2]) and not seal.rebuilds_root_key(new[:2])
    assert new[0].hex() not in repr(done), "the new shares stay out of the result's repr"

    nonce = done.verification_nonce
    assert ceremony.verification_status() == VerificationStatus(nonce, True, 3, 4, 0)
    ceremony.verify(new[3], nonce)
    ceremony.verify(new[0], nonce)
    assert ceremony.verify(new[1], nonce) == nonce
    assert ceremony.attempt is None
    assert (seal.shares, seal.threshold) == (4, 3)
    assert seal.rebuilds_root_key(new[:3]) and not seal.rebuilds_root_key(old[:2])


def test_sealing_forgets_the_attempt_and_a_sealed_server_refuses_rekey(tmp_path: Path) -> None:
    seal = SealState(3, 2)
    ceremony = RekeyOperation(seal)
    ceremony.start(3, 2)
    seal.seal()
    with pytest.raises(SecretsError) as refused:
        ceremony.status()
    assert isinstance(refused.value, ServerSealed) and refused.value.messages == ["Vault is sealed"]
    for share in initial_shares(seal, tmp_path)[:2]:
        seal.unseal(share)
    assert ceremony.status().started is False


def test_the_attempt_repr_shows_no_shares(tmp_path: Path) -> None:
    seal = SealState(3, 2)
    ceremony = RekeyOperation(seal)
    nonce = ceremony.start(3, 2).nonce
    share = initial_shares(seal, tmp_path)[0]
    ceremony.update(share, nonce)
    assert share.hex() not in repr(ceremony) and "b'" not in repr(ceremony)


# -- over HTTP -------------------------------------------------------------------------


class Server:
    """A fresh sandbox with its initial shares; ``call`` uses the legacy or replacement paths."""

    def __init__(self, sb: Sandbox, init: dict[str, Any], client: httpx.Client) -> None:
        self.sb = sb
        self.keys: list[str] = init["keys"]
        self.client = client

    def call(self, method: str, path: str, body: Any = None, *, rotate: bool = False) -> Any:
        prefix = "sys/rotate/root" if rotate else "sys/rekey"
        return self.client.request(method, f"{prefix}/{path}", json=body)

    def data(self, response: httpx.Response, *, rotate: bool) -> Any:
        assert response.status_code == 200, response.text
        body = response.json()
        return body["data"] if rotate else body

    def authorise_verified_rekey(self, shares: int, threshold: int) -> tuple[str, Any]:
        """Start a rekey that requires verification and give the current shares.

        Returns the attempt's nonce and the answer carrying the new shares.
        """
        settings = {
            "secret_shares": shares,
            "secret_threshold": threshold,
            "require_verification": True,
        }
        nonce = self.call("PUT", "init", settings).json()["nonce"]
        for key in self.keys[:3]:
            done = self.call("PUT", "update", {"key": key, "nonce": nonce}).json()
        return nonce, done

    def seal_and_unseal_with(self, keys: list[str]) -> list[httpx.Response]:
        """Seal (unless sealed), forget earlier unseal progress, then give ``keys``."""
        if not self.client.get("sys/seal-status").json()["sealed"]:
            assert self.client.put("sys/seal").status_code == 204
        self.client.put("sys/unseal", json={"reset": True})
        return [self.client.put("sys/unseal", json={"key": key}) for key in keys]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    path = tmp_path / "init.json"
    with (
        Sandbox(demo=False, init_file=str(path)) as sb,
        httpx.Client(base_url=f"{sb.address}/v1", headers={"X-Vault-Token": sb.token}) as client,
    ):
        yield Server(sb, json.loads(path.read_text()), client)


def errors(response: httpx.Response) -> list[str]:
    return list(response.json()["errors"])


@pytest.mark.parametrize("rotate", [False, True], ids=["sys/rekey", "sys/rotate/root"])
def test_a_rekey_without_verification_rotates_the_root_key(server: Server, rotate: bool) -> None:
    status = server.data(
        server.call("PUT", "init", {"secret_shares": 3, "secret_threshold": 2}, rotate=rotate),
        rotate=rotate,
    )
    nonce = status["nonce"]
    assert status["started"] and (status["t"], status["n"], status["required"]) == (2, 3, 3)
    for key in server.keys[:2]:
        progress = server.data(
            server.call("PUT", "update", {"key": key, "nonce": nonce}, rotate=rotate),
            rotate=rotate,
        )
        assert progress["started"] and not progress.get("complete")
    assert progress["progress"] == 2
    done = server.data(
        server.call("PUT", "update", {"key": server.keys[2], "nonce": nonce}, rotate=rotate),
        rotate=rotate,
    )
    assert done["complete"] is True and done["nonce"] == nonce
    assert len(done["keys"]) == len(done["keys_base64"]) == 3
    assert done["verification_required"] is False and done["pgp_fingerprints"] is None
    # The replacement family shows an empty verification nonce; the legacy one leaves it out.
    assert done.get("verification_nonce", None) == ("" if rotate else None)
    assert server.data(server.call("GET", "init", rotate=rotate), rotate=rotate)["started"] is False

    # The old shares no longer unseal; the new ones do.
    answers = server.seal_and_unseal_with(server.keys[:2])
    assert answers[-1].status_code == 400
    unsealed = server.seal_and_unseal_with(done["keys_base64"][1:])
    assert unsealed[-1].json()["sealed"] is False
    assert unsealed[-1].json()["t"] == 2 and unsealed[-1].json()["n"] == 3


def test_a_rekey_with_verification_rotates_only_after_the_new_shares_are_verified(
    server: Server,
) -> None:
    nonce, done = server.authorise_verified_rekey(4, 2)
    assert done["complete"] and done["verification_required"]
    new, verify_nonce = done["keys"], done["verification_nonce"]
    status = server.call("GET", "init").json()
    assert status["started"] and status["verification_nonce"] == verify_nonce

    again = server.call("PUT", "update", {"key": server.keys[3], "nonce": nonce})
    assert again.status_code == 400
    assert verify_nonce in errors(again)[0] and "verification must be performed" in errors(again)[0]

    first = server.call("PUT", "verify", {"key": new[0], "nonce": verify_nonce}).json()
    assert first == {"nonce": verify_nonce, "started": True, "t": 2, "n": 4, "progress": 1}
    # The current shares still unseal until verification completes.
    assert server.seal_and_unseal_with(server.keys[:3])[-1].json()["sealed"] is False


def test_verification_completes_and_the_new_shares_unseal(server: Server) -> None:
    nonce, done = server.authorise_verified_rekey(3, 2)
    new, verify_nonce = done["keys"], done["verification_nonce"]
    server.call("PUT", "verify", {"key": new[2], "nonce": verify_nonce})
    finished = server.call("PUT", "verify", {"key": new[1], "nonce": verify_nonce})
    assert finished.json() == {"nonce": verify_nonce, "complete": True}
    assert server.call("GET", "init").json()["started"] is False
    assert server.seal_and_unseal_with(server.keys[:2])[-1].status_code == 400
    assert server.seal_and_unseal_with(new[:2])[-1].json()["sealed"] is False


def test_a_bad_verification_share_issues_a_new_nonce_and_resets_progress(server: Server) -> None:
    nonce, done = server.authorise_verified_rekey(3, 2)
    new, verify_nonce = done["keys"], done["verification_nonce"]
    server.call("PUT", "verify", {"key": new[0], "nonce": verify_nonce})
    refused = server.call("PUT", "verify", {"key": server.keys[0], "nonce": verify_nonce})
    assert refused.status_code == 400
    assert errors(refused)[0].startswith("rekey verification failed; incorrect key shares supplied")
    status = server.call("GET", "verify").json()
    assert status["progress"] == 0 and status["nonce"] != verify_nonce
    assert status["nonce"] in errors(refused)[0]

    stale = server.call("PUT", "verify", {"key": new[0], "nonce": verify_nonce})
    assert stale.status_code == 400
    assert errors(stale) == [
        f'incorrect nonce supplied; nonce for this verify operation is "{status["nonce"]}"'
    ]
    server.call("PUT", "verify", {"key": new[0], "nonce": status["nonce"]})
    done = server.call("PUT", "verify", {"key": new[1], "nonce": status["nonce"]}).json()
    assert done["complete"] is True


def test_delete_verify_resets_progress_with_a_new_nonce_and_keeps_the_attempt(
    server: Server,
) -> None:
    nonce, done = server.authorise_verified_rekey(3, 3)
    verify_nonce = done["verification_nonce"]
    server.call("PUT", "verify", {"key": done["keys"][0], "nonce": verify_nonce})
    restarted = server.call("DELETE", "verify").json()
    assert restarted["progress"] == 0 and restarted["started"] is True
    assert restarted["nonce"] != verify_nonce
    assert server.call("GET", "init").json()["started"] is True


def test_cancelling_during_verification_keeps_the_current_shares(server: Server) -> None:
    nonce, done = server.authorise_verified_rekey(3, 2)
    assert server.call("DELETE", "init").status_code == 204
    assert server.call("GET", "init").json()["started"] is False
    assert server.call("GET", "verify").status_code == 400
    new_shares = server.seal_and_unseal_with(done["keys"][:3])
    assert new_shares[-1].status_code == 400
    assert server.seal_and_unseal_with(server.keys[1:4])[-1].json()["sealed"] is False


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"secret_shares": 3, "secret_threshold": 4},
            "invalid rekey seal configuration: secret_threshold (4) cannot be larger than "
            "secret_shares (3)",
        ),
        (
            {"secret_shares": 3, "secret_threshold": 1},
            "invalid rekey seal configuration: secret_threshold must be greater than one for "
            "multiple shares",
        ),
        (
            {"secret_shares": 0, "secret_threshold": 0},
            "invalid rekey seal configuration: secret_shares must be at least one (got 0)",
        ),
        (
            {"secret_shares": 256, "secret_threshold": 3},
            "invalid rekey seal configuration: secret_shares must be less than 256 (got 256)",
        ),
        (
            {"secret_threshold": 2},
            "invalid rekey seal configuration: secret_shares is required",
        ),
        (
            {"secret_shares": "five", "secret_threshold": 2},
            "invalid rekey seal configuration: secret_shares must be an integer, got 'five'",
        ),
        (
            {"secret_shares": 3, "secret_threshold": 2, "backup": True},
            "cannot request a backup of the new keys without providing PGP keys for encryption",
        ),
        (
            {"secret_shares": 3, "secret_threshold": 2, "pgp_keys": ["a", "b"]},
            "incorrect number of PGP keys for rekey: pgp_keys has 2 entries, secret_shares is 3",
        ),
        (
            {"secret_shares": 2, "secret_threshold": 2, "pgp_keys": ["!!", "!!"]},
            "pgp_keys[0]: error decoding given PGP key: not valid base64",
        ),
        (
            {"secret_shares": 3, "secret_threshold": 2, "require_verification": "yes"},
            "require_verification must be a boolean, got 'yes'",
        ),
    ],
)
def test_invalid_rekey_settings_are_refused_with_400_naming_the_field(
    server: Server, body: dict[str, Any], message: str
) -> None:
    refused = server.call("PUT", "init", body)
    assert refused.status_code == 400
    assert errors(refused) == [message]
    assert server.call("GET", "init").json()["started"] is False


def test_a_single_share_rekey_is_allowed(server: Server) -> None:
    nonce = server.call("PUT", "init", {"secret_shares": 1, "secret_threshold": 1}).json()["nonce"]
    for key in server.keys[:3]:
        done = server.call("PUT", "update", {"key": key, "nonce": nonce}).json()
    assert len(done["keys"]) == 1
    assert server.seal_and_unseal_with(done["keys"])[-1].json()["sealed"] is False


def test_a_second_init_while_one_runs_is_refused_and_keeps_the_first(server: Server) -> None:
    first = server.call("PUT", "init", {"secret_shares": 3, "secret_threshold": 2}).json()
    refused = server.call("PUT", "init", {"secret_shares": 5, "secret_threshold": 3})
    assert refused.status_code == 400 and errors(refused) == ["rekey already in progress"]
    status = server.call("GET", "init").json()
    assert (status["nonce"], status["t"], status["n"]) == (first["nonce"], 2, 3)


def test_update_refusals_change_nothing(server: Server) -> None:
    assert errors(server.call("PUT", "update", {"key": server.keys[0], "nonce": "x"})) == [
        "no barrier rekey in progress"
    ]
    nonce = server.call("PUT", "init", {"secret_shares": 3, "secret_threshold": 2}).json()["nonce"]
    wrong = server.call("PUT", "update", {"key": server.keys[0], "nonce": "not-the-nonce"})
    assert wrong.status_code == 400
    assert errors(wrong) == [
        f'incorrect nonce supplied; nonce for this rekey operation is "{nonce}"'
    ]
    garbled = server.call("PUT", "update", {"key": "zz-not-a-share", "nonce": nonce})
    assert errors(garbled) == ["'key' must be a valid hex or base64 string"]
    server.call("PUT", "update", {"key": server.keys[0], "nonce": nonce})
    twice = server.call("PUT", "update", {"key": server.keys[0], "nonce": nonce})
    assert twice.status_code == 400
    assert errors(twice) == ["given key has already been provided during this rekey operation"]
    assert server.call("GET", "init").json()["progress"] == 1


def test_an_invalid_share_set_is_refused_and_progress_resets(server: Server) -> None:
    nonce = server.call("PUT", "init", {"secret_shares": 3, "secret_threshold": 2}).json()["nonce"]
    forged = bytearray(bytes.fromhex(server.keys[1]))
    forged[5] ^= 0x01
    server.call("PUT", "update", {"key": server.keys[0], "nonce": nonce})
    server.call("PUT", "update", {"key": forged.hex(), "nonce": nonce})
    refused = server.call("PUT", "update", {"key": server.keys[2], "nonce": nonce})
    assert refused.status_code == 400
    assert errors(refused)[0].startswith("root key verification failed")
    status = server.call("GET", "init").json()
    assert status["started"] is True and status["progress"] == 0 and status["nonce"] == nonce
    assert server.seal_and_unseal_with(server.keys[2:5])[-1].json()["sealed"] is False


def test_the_rotate_endpoints_need_a_token_and_answer_under_data(server: Server) -> None:
    anonymous = httpx.get(f"{server.client.base_url}sys/rotate/root/init")
    assert anonymous.status_code == 403
    body = server.call("GET", "init", rotate=True).json()
    # Idle, the status has only these fields (as OpenBao 2.7 answers).
    assert body["data"] == {"started": False, "t": 0, "n": 0, "required": 3}
    started = server.call("PUT", "init", {"secret_shares": 3, "secret_threshold": 2}, rotate=True)
    assert sorted(started.json()["data"]) == [
        "n",
        "nonce",
        "progress",
        "required",
        "started",
        "t",
        "verification_nonce",
        "verification_required",
    ]
    assert server.call("DELETE", "init", rotate=True).status_code == 204
    missing = server.call("PUT", "update", {"key": server.keys[0]}, rotate=True)
    assert errors(missing) == ["missing required field 'nonce'"]


def test_the_legacy_endpoints_answer_without_a_token_but_not_when_sealed(server: Server) -> None:
    base = server.client.base_url
    assert httpx.get(f"{base}sys/rekey/init").json()["started"] is False
    server.client.put("sys/seal")
    for method, path in (("GET", "init"), ("PUT", "init"), ("GET", "verify"), ("PUT", "update")):
        refused = httpx.request(
            method,
            f"{base}sys/rekey/{path}",
            json={"secret_shares": 3, "secret_threshold": 2, "key": server.keys[0], "nonce": "n"},
        )
        assert refused.status_code == 503 and errors(refused) == ["Vault is sealed"]


def test_the_legacy_endpoints_answer_405_when_switched_off(server: Server) -> None:
    server.sb.secrets.legacy_rekey = False
    for method, path in (("GET", "init"), ("PUT", "update"), ("GET", "verify"), ("GET", "backup")):
        refused = server.call(method, path, {"key": server.keys[0], "nonce": "n"})
        assert refused.status_code == 405
        assert errors(refused) == ["unsupported operation"]
    assert server.call("GET", "init", rotate=True).status_code == 200


# -- a seal with stored shares: the root key stays in the seal, recovery shares rekey ---------


@pytest.fixture
def recovery_server(tmp_path: Path) -> Iterator[Server]:
    path = tmp_path / "init.json"
    with (
        Sandbox(demo=False, init_file=str(path), recovery_seal=True) as sb,
        httpx.Client(base_url=f"{sb.address}/v1", headers={"X-Vault-Token": sb.token}) as client,
    ):
        init = json.loads(path.read_text())
        yield Server(sb, {"keys": init["recovery_keys"]}, client)


@pytest.mark.parametrize("rotate", [False, True], ids=["sys/rekey", "sys/rotate/root"])
def test_a_root_rekey_on_a_recovery_seal_is_coerced_to_one_share_and_hands_out_none(
    recovery_server: Server, rotate: bool
) -> None:
    server = recovery_server
    # As OpenBao 2.7: 3 shares / threshold 2 asked, 1 / 1 kept (the spec says they must be 1).
    status = server.data(
        server.call("PUT", "init", {"secret_shares": 3, "secret_threshold": 2}, rotate=rotate),
        rotate=rotate,
    )
    # The legacy status shows t and n as 0, as OpenBao 2.7 does; the rotate one 1 of 1.
    kept = (1, 1) if rotate else (0, 0)
    assert (status["t"], status["n"], status["required"]) == (*kept, 3)
    nonce = status["nonce"]
    for key in server.keys[:3]:
        done = server.data(
            server.call("PUT", "update", {"key": key, "nonce": nonce}, rotate=rotate),
            rotate=rotate,
        )
    assert done["complete"] is True and done["keys"] == [] and done["keys_base64"] == []
    assert server.sb.secrets.seal.stored_key_rotations == 1
    # The recovery shares are unchanged: they still unseal a server sealed by hand.
    assert server.seal_and_unseal_with(server.keys[:3])[-1].json()["sealed"] is False


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"secret_shares": 1, "secret_threshold": 1, "require_verification": True}, "verification"),
        ({"secret_shares": 1, "secret_threshold": 1, "backup": True}, "backup"),
    ],
)
def test_a_root_rekey_on_a_recovery_seal_refuses_what_needs_shares(
    recovery_server: Server, body: dict[str, Any], named: str
) -> None:
    response = recovery_server.call("PUT", "init", body, rotate=True)
    assert response.status_code == 400 and named in errors(response)[0]
    assert (
        recovery_server.data(recovery_server.call("GET", "init", rotate=True), rotate=True)[
            "started"
        ]
        is False
    )


@pytest.mark.parametrize(
    "legacy", [False, True], ids=["sys/rotate/recovery", "sys/rekey-recovery-key"]
)
def test_the_recovery_shares_rekey_with_new_shares_handed_out(
    recovery_server: Server, legacy: bool
) -> None:
    server = recovery_server
    prefix = "sys/rekey-recovery-key" if legacy else "sys/rotate/recovery"

    def call(method: str, op: str, body: Any = None) -> Any:
        response = server.client.request(method, f"{prefix}/{op}", json=body)
        return server.data(response, rotate=not legacy)

    status = call("POST", "init", {"secret_shares": 3, "secret_threshold": 2})
    assert (status["t"], status["n"], status["required"]) == (2, 3, 3)
    for key in server.keys[:3]:
        done = call("POST", "update", {"key": key, "nonce": status["nonce"]})
    assert done["complete"] is True and len(done["keys"]) == 3
    seal = server.client.get("sys/seal-status").json()
    assert (seal["t"], seal["n"], seal["recovery_seal"]) == (2, 3, True)
    # The old recovery shares no longer count; the new ones authorise and unseal.
    assert server.seal_and_unseal_with(server.keys[:2])[-1].status_code == 400
    assert server.seal_and_unseal_with(done["keys"][:2])[-1].json()["sealed"] is False


def test_the_legacy_recovery_paths_answer_404_when_switched_off(recovery_server: Server) -> None:
    recovery_server.sb.secrets.legacy_rekey = False
    response = recovery_server.client.get("sys/rekey-recovery-key/init")
    assert response.status_code == 404 and errors(response) == ["unsupported path"]
    assert recovery_server.client.get("sys/rotate/recovery/init").status_code == 200


def test_recovery_rekey_settings_are_checked_like_unseal_ones(recovery_server: Server) -> None:
    response = recovery_server.client.post(
        "sys/rotate/recovery/init", json={"secret_shares": 3, "secret_threshold": 4}
    )
    assert response.status_code == 400
    assert errors(response)[0].startswith("invalid recovery configuration")
    assert recovery_server.client.get("sys/rekey-recovery-key/backup").status_code == 404


def test_the_backup_is_stored_as_a_record_and_rendered_on_the_http_side() -> None:
    """``--state`` keeps the backup as a ``RekeyBackup`` (the encrypted shares as bytes);
    ``sys/rekey/backup`` shows them in hex and base64 by fingerprint."""
    backup = RekeyBackup("nonce-1", {"AB12": [b"\x01\xff", b"\x02"], "CD34": [b"\x03"]})
    copy = round_trip({"secrets": backup})["secrets"]
    assert copy == backup and "\\x01" not in repr(copy)
    assert sys_rekey.backup_document(copy) == {
        "nonce": "nonce-1",
        "keys": {"AB12": ["01ff", "02"], "CD34": ["03"]},
        "keys_base64": {"AB12": ["Af8=", "Ag=="], "CD34": ["Aw=="]},
    }
