"""``python -m toolkit sandbox``: starts, says where and with which tokens, and stops on Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.sandbox._process import start


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[str, list[str], Path]]:
    init_file = tmp_path / "init.json"
    proc, lines = start(
        "--token",
        "cli-root",
        "--key-shares",
        "3",
        "--key-threshold",
        "2",
        "--init-file",
        str(init_file),
    )
    address = lines[0].split()[-1]
    try:
        yield address, lines, init_file
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


def test_the_banner_names_the_address_and_every_accepted_token(running):
    address, lines, _ = running
    assert address.startswith("http://127.0.0.1:") and not address.endswith(":0")
    text = "\n".join(lines)
    assert "cli-root" in text and "demo-member-alice" in text and "demo-auditor-token" in text
    assert httpx.get(f"{address}/api/v2/ping").status_code == 204


def test_the_key_options_shape_the_unseal_shares_and_the_init_file(running):
    address, _, init_file = running
    status = httpx.get(f"{address}/v1/sys/seal-status").json()
    assert (status["n"], status["t"], status["sealed"]) == (3, 2, False)
    init = json.loads(init_file.read_text())
    assert len(init["keys"]) == len(init["keys_base64"]) == 3
    assert init["root_token"] == "cli-root"
    headers = {"X-Vault-Token": "cli-root"}
    assert httpx.put(f"{address}/v1/sys/seal", headers=headers).status_code == 204
    for key in init["keys"][:2]:
        answer = httpx.put(f"{address}/v1/sys/unseal", json={"key": key}).json()
    assert answer["sealed"] is False


def test_empty_starts_without_demo_data():
    proc, lines = start("--empty")
    try:
        address = lines[0].split()[-1]
        token = {"Authorization": "Bearer sandbox-root-token"}
        assert httpx.get(f"{address}/api/v2/organizations", headers=token).json()["data"] == []
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)


def test_a_threshold_above_the_share_count_is_refused_with_a_message():
    done = subprocess.run(
        [sys.executable, "-m", "toolkit", "sandbox", "--key-shares", "2", "--key-threshold", "3"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "--key-threshold" in done.stderr


def test_a_tls_handshake_to_the_plain_port_is_refused_at_once():
    """A client speaking TLS to the plain-HTTP port gets a 400 and a close, not a hang."""
    import socket
    import time

    from toolkit.sandbox import Sandbox

    with Sandbox(demo=False) as sandbox:
        host, port = sandbox.address.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            started = time.monotonic()
            sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64)
            answer = sock.recv(4096)
            assert time.monotonic() - started < 2
    assert answer.startswith(b"HTTP/1.1 400")
