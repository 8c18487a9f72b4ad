"""The seal: initial shares, sealing, unsealing, seal-status, health and init."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.errors import SecretsError
from toolkit.sandbox.secrets.seal import SealState


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[httpx.Client, dict[str, Any]]]:
    """A fresh sandbox, a root client for /v1 and the init file it wrote."""
    path = tmp_path / "init.json"
    with (
        Sandbox(demo=False, init_file=str(path)) as sb,
        httpx.Client(base_url=f"{sb.address}/v1", headers={"X-Vault-Token": sb.token}) as client,
    ):
        yield client, json.loads(path.read_text())


# -- the state class, without a socket --------------------------------------------


def test_a_new_seal_is_unsealed_with_five_shares_and_threshold_three() -> None:
    seal = SealState()
    assert not seal.sealed
    assert (seal.shares, seal.threshold) == (5, 3)


def test_a_threshold_of_the_initial_shares_unseals(tmp_path: Path) -> None:
    seal = SealState(4, 2)
    path = tmp_path / "init.json"
    seal.write_init_file(str(path), "root")
    keys = [bytes.fromhex(key) for key in json.loads(path.read_text())["keys"]]
    seal.seal()
    seal.unseal(keys[3])
    assert seal.sealed and seal.progress == 1
    seal.unseal(keys[1])
    assert not seal.sealed and seal.progress == 0


def test_a_share_given_twice_counts_once() -> None:
    seal = SealState(3, 2)
    seal.seal()
    seal.unseal(b"\x01" * 33)
    seal.unseal(b"\x01" * 33)
    assert seal.progress == 1


def test_shares_of_another_key_are_refused_and_progress_starts_over() -> None:
    seal, other = SealState(3, 2), SealState(3, 2)
    _, foreign = other.new_root_key(3, 2)
    seal.seal()
    seal.unseal(foreign[0])
    with pytest.raises(SecretsError, match="Unseal failed, invalid key"):
        seal.unseal(foreign[1])
    assert seal.sealed and seal.progress == 0


def test_a_single_share_seal_hands_out_the_key_itself(tmp_path: Path) -> None:
    seal = SealState(1, 1)
    path = tmp_path / "init.json"
    seal.write_init_file(str(path), "root")
    (key,) = json.loads(path.read_text())["keys"]
    assert len(bytes.fromhex(key)) == 32
    seal.seal()
    seal.unseal(bytes.fromhex(key))
    assert not seal.sealed


@pytest.mark.parametrize(("shares", "threshold"), [(3, 4), (3, 1), (0, 0), (256, 3)])
def test_an_invalid_start_up_configuration_is_refused(shares: int, threshold: int) -> None:
    with pytest.raises(ValueError, match="invalid seal configuration"):
        SealState(shares, threshold)


def test_the_seal_repr_shows_no_shares() -> None:
    assert repr(SealState()) == "<SealState unsealed t=3 n=5>"


# -- over HTTP ---------------------------------------------------------------------


def test_the_init_file_is_private_and_shaped_like_sys_init(tmp_path: Path) -> None:
    path = tmp_path / "init.json"
    with Sandbox(demo=False, init_file=str(path), key_shares=3, key_threshold=2) as sb:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        init = json.loads(path.read_text())
        assert init["root_token"] == sb.token
        assert len(init["keys"]) == len(init["keys_base64"]) == 3
        assert all(len(bytes.fromhex(key)) == 33 for key in init["keys"])


def test_seal_status_answers_without_a_token(
    server: tuple[httpx.Client, dict[str, Any]],
) -> None:
    client, _ = server
    body = httpx.get(f"{client.base_url}sys/seal-status").json()
    assert body["type"] == "shamir"
    assert body["initialized"] is True and body["sealed"] is False
    assert (body["t"], body["n"], body["progress"]) == (3, 5, 0)
    for name in ("nonce", "version", "commit_date", "migration", "recovery_seal", "storage_type"):
        assert name in body


def test_health_and_init_report_an_unsealed_initialised_server(
    server: tuple[httpx.Client, dict[str, Any]],
) -> None:
    client, _ = server
    health = httpx.get(f"{client.base_url}sys/health")
    assert health.status_code == 200
    assert health.json()["sealed"] is False and health.json()["standby"] is False
    assert client.get("sys/init").json() == {"initialized": True}
    assert client.put("sys/init", json={}).status_code == 400


def test_sealing_makes_authenticated_calls_answer_503_until_unsealed(
    server: tuple[httpx.Client, dict[str, Any]],
) -> None:
    client, init = server
    assert client.put("sys/seal").status_code == 204
    sealed = client.get("sys/rotate/root/init")
    assert sealed.status_code == 503
    assert sealed.json() == {"errors": ["Vault is sealed"]}
    health = httpx.get(f"{client.base_url}sys/health")
    assert health.status_code == 503 and health.json()["sealed"] is True
    assert httpx.get(f"{client.base_url}sys/health?sealedcode=200").status_code == 200

    first = client.put("sys/unseal", json={"key": init["keys"][0]}).json()
    assert first["sealed"] is True and first["progress"] == 1 and first["nonce"]
    client.put("sys/unseal", json={"key": init["keys_base64"][2]})
    last = client.put("sys/unseal", json={"key": init["keys"][4]}).json()
    assert last["sealed"] is False and last["progress"] == 0
    assert client.get("sys/rotate/root/init").status_code == 200


def test_sealing_needs_a_token(server: tuple[httpx.Client, dict[str, Any]]) -> None:
    client, _ = server
    assert httpx.put(f"{client.base_url}sys/seal").status_code == 403
    assert client.get("sys/seal-status").json()["sealed"] is False


def test_a_wrong_share_set_is_refused_with_400_and_progress_resets(
    server: tuple[httpx.Client, dict[str, Any]],
) -> None:
    client, init = server
    client.put("sys/seal")
    forged = bytearray(bytes.fromhex(init["keys"][1]))
    forged[0] ^= 0xFF
    client.put("sys/unseal", json={"key": init["keys"][0]})
    client.put("sys/unseal", json={"key": forged.hex()})
    answer = client.put("sys/unseal", json={"key": init["keys"][2]})
    assert answer.status_code == 400
    assert answer.json() == {"errors": ["Unseal failed, invalid key"]}
    assert client.get("sys/seal-status").json()["progress"] == 0


def test_unseal_reset_clears_progress_and_is_refused_when_unsealed(
    server: tuple[httpx.Client, dict[str, Any]],
) -> None:
    client, init = server
    refused = client.put("sys/unseal", json={"reset": True})
    assert refused.status_code == 400 and refused.json() == {"errors": ["vault is unsealed"]}
    client.put("sys/seal")
    client.put("sys/unseal", json={"key": init["keys"][0]})
    reset = client.put("sys/unseal", json={"reset": True}).json()
    assert reset["progress"] == 0 and reset["sealed"] is True


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "'key' must be specified in request body as JSON, or 'reset' set to true"),
        ({"key": "not a share!"}, "'key' must be a valid hex or base64 string"),
        ({"key": "abcd"}, "key is shorter than minimum 16 bytes"),
        ({"key": "00" * 40}, "key is longer than maximum 33 bytes"),
    ],
)
def test_unseal_refuses_a_missing_or_malformed_key(
    server: tuple[httpx.Client, dict[str, Any]], body: dict[str, Any], message: str
) -> None:
    client, _ = server
    client.put("sys/seal")
    answer = client.put("sys/unseal", json=body)
    assert answer.status_code == 400
    assert answer.json() == {"errors": [message]}
    assert client.get("sys/seal-status").json()["progress"] == 0


# -- a seal with stored shares (auto-unseal, recovery shares) ------------------------


@pytest.fixture
def recovery_server(tmp_path: Path) -> Iterator[tuple[httpx.Client, dict[str, Any]]]:
    """A sandbox whose seal stores the root key, with the recovery shares it wrote."""
    path = tmp_path / "init.json"
    with (
        Sandbox(demo=False, init_file=str(path), recovery_seal=True) as sb,
        httpx.Client(base_url=f"{sb.address}/v1", headers={"X-Vault-Token": sb.token}) as client,
    ):
        yield client, json.loads(path.read_text())


def test_a_recovery_seal_reports_itself_and_writes_recovery_shares_to_the_init_file(
    recovery_server: tuple[httpx.Client, dict[str, Any]],
) -> None:
    client, init = recovery_server
    status = client.get("sys/seal-status").json()
    assert status["recovery_seal"] is True and status["type"] == "static"
    assert status["recovery_seal_type"] == "shamir"
    assert (status["t"], status["n"]) == (3, 5)
    assert init["keys"] == [] and init["keys_base64"] == []
    assert len(init["recovery_keys"]) == 5 and len(init["recovery_keys_base64"]) == 5


def test_a_shamir_seal_is_no_recovery_seal_and_has_no_recovery_rekey(
    server: tuple[httpx.Client, dict[str, Any]],
) -> None:
    client, init = server
    status = client.get("sys/seal-status").json()
    assert status["recovery_seal"] is False and "recovery_seal_type" not in status
    assert "recovery_keys" not in init
    refused = client.post(
        "sys/rotate/recovery/init", json={"secret_shares": 1, "secret_threshold": 1}
    )
    assert refused.status_code == 400 and "recovery" in refused.json()["errors"][0]


def test_recovery_shares_unseal_a_recovery_seal_sealed_by_hand(
    recovery_server: tuple[httpx.Client, dict[str, Any]],
) -> None:
    client, init = recovery_server
    assert client.put("sys/seal").status_code == 204
    assert client.get("sys/seal-status").json()["sealed"] is True
    for key in init["recovery_keys"][:3]:
        status = client.put("sys/unseal", json={"key": key}).json()
    assert status["sealed"] is False and status["recovery_seal"] is True


def test_the_sandbox_command_takes_a_recovery_seal_flag(tmp_path: Path) -> None:
    from toolkit.__main__ import _sandbox_parser

    assert _sandbox_parser().parse_args(["--recovery-seal"]).recovery_seal is True
    assert _sandbox_parser().parse_args([]).recovery_seal is False
