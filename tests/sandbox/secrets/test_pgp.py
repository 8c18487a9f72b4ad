"""PGP-encrypted rekey shares and their backup, with keys made by pysequoia."""

from __future__ import annotations

import base64
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pysequoia
import pytest

from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets import pgp
from toolkit.sandbox.secrets.errors import InvalidRequest, SecretsError


def make_keys(count: int) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return [pysequoia.Tsk.generate(f"Operator {n} <op{n}@example.org>") for n in range(count)]


def public_bytes(tsk: Any) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return bytes(tsk.extract_certificate())


def fingerprint(tsk: Any) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return str(tsk.extract_certificate().fingerprint).lower()


def decrypt(tsk: Any, message: bytes) -> str:
    plain = pysequoia.decrypt(message, tsk.decryptor()).bytes
    assert plain is not None
    return plain.decode("ascii")


@pytest.fixture(scope="module")
def operators() -> list[Any]:
    return make_keys(3)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[httpx.Client, list[str]]]:
    path = tmp_path / "init.json"
    with (
        Sandbox(demo=False, init_file=str(path)) as sb,
        httpx.Client(base_url=f"{sb.address}/v1", headers={"X-Vault-Token": sb.token}) as client,
    ):
        yield client, json.loads(path.read_text())["keys"]


def test_keys_in_base64_binary_and_armored_form_give_lower_case_fingerprints(
    operators: list[Any],
) -> None:
    binary = base64.b64encode(public_bytes(operators[0])).decode()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        armored = str(operators[1].extract_certificate())
    parsed = pgp.parse_public_keys([binary, armored])
    assert [key.fingerprint for key in parsed] == [fingerprint(tsk) for tsk in operators[:2]]
    assert all(len(key.fingerprint) == 40 for key in parsed)
    assert repr(parsed[0]) == f"<PublicKey {parsed[0].fingerprint}>"


def test_each_share_is_encrypted_as_hex_text_to_its_own_key(operators: list[Any]) -> None:
    keys = pgp.parse_public_keys(
        [base64.b64encode(public_bytes(tsk)).decode() for tsk in operators[:2]]
    )
    messages = pgp.encrypt_shares([b"\x01\x02", b"\xff\x00"], keys)
    assert decrypt(operators[0], messages[0]) == "0102"
    assert decrypt(operators[1], messages[1]) == "ff00"
    with pytest.raises(Exception):  # noqa: B017 - pysequoia raises a plain error
        decrypt(operators[0], messages[1])


def test_a_value_that_is_not_a_public_key_is_refused_naming_the_entry() -> None:
    with pytest.raises(SecretsError) as refused:
        pgp.parse_public_keys([base64.b64encode(b"not a key").decode()])
    assert isinstance(refused.value, InvalidRequest)
    message = refused.value.messages[0]
    assert message.startswith("pgp_keys[0]: error parsing given PGP key")
    assert "\n" not in message


def test_a_pgp_rekey_returns_encrypted_shares_that_decrypt_and_unseal(
    server: tuple[httpx.Client, list[str]], operators: list[Any]
) -> None:
    client, old = server
    pgp_keys = [base64.b64encode(public_bytes(tsk)).decode() for tsk in operators]
    fingerprints = [fingerprint(tsk) for tsk in operators]
    started = client.put(
        "sys/rekey/init",
        json={"secret_shares": 3, "secret_threshold": 2, "pgp_keys": pgp_keys, "backup": True},
    ).json()
    assert started["pgp_fingerprints"] == fingerprints and started["backup"] is True
    for key in old[:3]:
        done = client.put("sys/rekey/update", json={"key": key, "nonce": started["nonce"]}).json()
    assert done["complete"] and done["pgp_fingerprints"] == fingerprints and done["backup"]
    assert [base64.b64decode(b) for b in done["keys_base64"]] == [
        bytes.fromhex(h) for h in done["keys"]
    ]
    shares = [
        decrypt(tsk, bytes.fromhex(message))
        for tsk, message in zip(operators, done["keys"], strict=True)
    ]

    backup = client.get("sys/rekey/backup").json()["data"]
    assert backup["nonce"] == started["nonce"]
    assert backup["keys"] == {fp: [key] for fp, key in zip(fingerprints, done["keys"], strict=True)}
    assert backup["keys_base64"][fingerprints[0]] == [done["keys_base64"][0]]
    assert client.get("sys/rotate/root/backup").json()["data"]["keys"] == backup["keys"]

    client.put("sys/seal")
    client.put("sys/unseal", json={"key": shares[2]})
    assert client.put("sys/unseal", json={"key": shares[0]}).json()["sealed"] is False

    assert client.delete("sys/rekey/backup").status_code == 204
    for path in ("sys/rekey/backup", "sys/rotate/root/backup"):
        gone = client.get(path)
        assert gone.status_code == 400 and gone.json() == {"errors": ["no backed-up keys found"]}


def test_the_backup_needs_a_token(server: tuple[httpx.Client, list[str]]) -> None:
    client, _ = server
    assert httpx.get(f"{client.base_url}sys/rekey/backup").status_code == 403
    assert httpx.delete(f"{client.base_url}sys/rotate/root/backup").status_code == 403


def test_a_pgp_rekey_without_backup_stores_none(
    server: tuple[httpx.Client, list[str]], operators: list[Any]
) -> None:
    client, old = server
    pgp_keys = [base64.b64encode(public_bytes(tsk)).decode() for tsk in operators[:2]]
    nonce = client.put(
        "sys/rotate/root/init",
        json={"secret_shares": 2, "secret_threshold": 2, "pgp_keys": pgp_keys},
    ).json()["data"]["nonce"]
    for key in old[:3]:
        done = client.put("sys/rotate/root/update", json={"key": key, "nonce": nonce})
    assert done.json()["data"]["backup"] is False
    none = client.get("sys/rekey/backup")
    assert none.status_code == 400 and none.json() == {"errors": ["no backed-up keys found"]}
