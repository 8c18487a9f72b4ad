"""The notebook secret scan: the repository's notebooks hold no secret, and planted ones are found."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from toolkit.leakcheck import scan_notebook, scan_paths

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _notebook(
    tmp_path: Path, *, output: str = "", source: str = "x = 1", widgets: object = None
) -> Path:
    cell = {
        "cell_type": "code",
        "execution_count": 1,
        "id": "c1",
        "metadata": {},
        "source": source.splitlines(keepends=True),
        "outputs": [{"output_type": "stream", "name": "stdout", "text": output.splitlines(True)}]
        if output
        else [],
    }
    metadata: dict[str, object] = {"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    if widgets is not None:
        metadata["widgets"] = widgets
    path = tmp_path / "planted.ipynb"
    path.write_text(
        json.dumps({"cells": [cell], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})
    )
    return path


def test_no_notebook_in_the_repository_holds_a_secret() -> None:
    notebooks = sorted(NOTEBOOKS.glob("*.ipynb"))
    findings = scan_paths([NOTEBOOKS])
    print(f"scanned {len(notebooks)} notebooks: {len(findings)} findings")
    assert notebooks and findings == []


def _private_key() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _pgp_private_key() -> str:
    # The armour of a secret key block (RFC 4880, 6.2), around bytes that are not a real key.
    body = base64.b64encode(os.urandom(96)).decode()
    return (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        + "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
        + "\n-----END PGP PRIVATE KEY BLOCK-----\n"
    )


@pytest.mark.parametrize(
    ("kind", "secret"),
    [
        ("private key", _private_key()),
        ("service token", "s." + "Ab3dE6gH9jK2mN5pQ8sT1vW4"),
        ("service token", "hvs.CAESIJ" + "x" * 30),
        ("sandbox token", "sandbox-root-token"),
        ("key share (hex)", os.urandom(33).hex()),
        ("key share (base64)", base64.b64encode(bytes(range(100, 133))).decode()),
        ("value of a 'password' field", '{"password": "Zq9-correct-horse"}'),
        ("value of a 'client_token' field", "client_token = 'tok-1234567890'"),
        ("platform token", "Xq3LmN8pR2tVwZ.atlasv1." + "Kd9fJ2mQ7xB4nR8sT1vW5yZ3cE6gH0jL"),
        ("batch token", "b.AAAAAQKd9fJ2mQ7xB4nR8sT1vW5yZ3cE6gH0jL"),
        ("PGP private key", _pgp_private_key()),
        ("key share (hex)", os.urandom(33).hex().upper()),
        ("password in a URL", "postgresql://app:Zq9-correct-horse@db.internal:5432/orders"),
        ("password in a URL", "amqp://broker-admin:s3cr3t%21@mq.internal/"),
    ],
    ids=lambda value: (
        None
        if str(value).startswith(
            ("value of", "key share", "private", "service", "sandbox", "platform", "batch")
        )
        or str(value) in ("PGP private key", "password in a URL")
        else "secret"
    ),
)
@pytest.mark.parametrize("place", ["output", "source", "widgets"])
def test_each_kind_of_secret_is_found_wherever_it_is_saved(
    tmp_path: Path, kind: str, secret: str, place: str
) -> None:
    if place == "output":
        path = _notebook(tmp_path, output=f"here it is: {secret}\n")
    elif place == "source":
        path = _notebook(tmp_path, source=f"value = {secret!r}\n")
    else:
        state = {"model_id": {"state": {"value": secret, "_view_name": "PasswordView"}}}
        path = _notebook(
            tmp_path, widgets={"application/vnd.jupyter.widget-state+json": {"state": state}}
        )
    findings = scan_notebook(path)
    assert kind in {f.kind for f in findings}
    # A finding says where and what, never the value itself.
    assert all(secret not in str(f) for f in findings)


def test_placeholders_hashes_and_ordinary_text_are_not_findings(tmp_path: Path) -> None:
    ordinary = "\n".join(
        [
            '{"password": "<hidden>"}',
            "password: '********'",
            "sha256 " + "ab" * 32,  # a plugin's sum: 64 hex digits, not a 33-byte share
            "lease_id database/creds/readonly/AbCdEfGhIjKlMnOpQrStUvWx",
            "s.short",
            "url = 'postgresql://{{username}}:{{password}}@db.internal:5432/orders'",
            "amqp://guest:<password>@mq.internal/ and https://user:***@example.invalid/",
            "postgresql://app:${DB_PASSWORD}@db/x, https://example.invalid/a@b, mailto:a@b.c",
            "b.short, release 1.2.3.atlasv1.x",
        ]
    )
    assert scan_notebook(_notebook(tmp_path, output=ordinary)) == []


def _printed_tokens() -> list[str]:
    """What ``python -m toolkit sandbox`` prints under "Tokens accepted", from the sandbox."""
    from toolkit.sandbox import Sandbox

    demo = Sandbox()
    return [demo.token, *(token for token, _ in demo.describe_tokens())]


@pytest.mark.parametrize("place", ["output", "source", "widgets"])
def test_every_token_the_sandbox_prints_at_start_is_found(tmp_path: Path, place: str) -> None:
    tokens = _printed_tokens()
    assert len(tokens) > 10
    missed = []
    for token in tokens:
        if place == "output":
            path = _notebook(tmp_path, output=f"export TOKEN={token}\n")
        elif place == "source":
            path = _notebook(tmp_path, source=f"client = connect(token={token!r})\n")
        else:
            state = {"m": {"state": {"value": token, "_view_name": "TextView"}}}
            path = _notebook(
                tmp_path, widgets={"application/vnd.jupyter.widget-state+json": {"state": state}}
            )
        if not any(f.kind == "sandbox token" for f in scan_notebook(path)):
            missed.append(token)
    assert not missed, f"{len(missed)} printed tokens not found, e.g. {missed[0][:6]}..."


def test_known_secret_values_can_be_added(tmp_path: Path) -> None:
    path = _notebook(tmp_path, output="the webhook is https://hooks.example.invalid/demo\n")
    assert scan_notebook(path) == []
    found = scan_notebook(path, extra=["https://hooks.example.invalid/demo"])
    assert [f.kind for f in found] == ["known secret value"]


@pytest.mark.slow
def test_the_command_exits_1_on_a_finding_and_0_on_a_clean_tree(tmp_path: Path) -> None:
    clean = subprocess.run(
        [sys.executable, "-m", "toolkit", "check-notebooks", str(NOTEBOOKS)],
        capture_output=True,
        text=True,
    )
    assert clean.returncode == 0, clean.stdout
    assert "0 secret(s) found" in clean.stdout
    leaked = _notebook(tmp_path, output="s.Ab3dE6gH9jK2mN5pQ8sT1vW4\n")
    dirty = subprocess.run(
        [sys.executable, "-m", "toolkit", "check-notebooks", str(leaked)],
        capture_output=True,
        text=True,
    )
    assert dirty.returncode == 1
    assert "cells[0].outputs[0]: service token" in dirty.stdout
    assert "Ab3dE6gH9jK2mN5pQ8sT1vW4" not in dirty.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "toolkit", "check-notebooks", str(tmp_path / "nope.ipynb")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "no such file" in missing.stdout
