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

# Each test starts the sandbox's command line as a process of its own.
pytestmark = pytest.mark.slow


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


# -- DNS rebinding: only the names the sandbox is served under -------------------------------


def _answer(address: str, path: str, host: str | None) -> httpx.Response:
    headers = {"X-Vault-Token": "cli-root", "Authorization": "Bearer cli-root"}
    if host is not None:
        headers["Host"] = host
    return httpx.get(f"{address}{path}", headers=headers)


def test_a_request_for_another_host_name_is_refused_with_400_on_both_apis(running):
    address, _, _ = running
    port = address.rsplit(":", 1)[1]
    for path in ("/v1/sys/health", "/api/v2/organizations"):
        for host in ("localhost", f"localhost:{port}", "127.0.0.1", f"127.0.0.1:{port}"):
            assert _answer(address, path, host).status_code == 200, (path, host)
        for host in ("attacker.example", f"attacker.example:{port}", f"localhost:{int(port) + 1}"):
            refused = _answer(address, path, host)
            assert refused.status_code == 400, (path, host)
            assert "--allow-host" in refused.text and host in refused.text
    # Refused before anything runs: a write under a foreign Host changes nothing.
    forged = httpx.put(
        f"{address}/v1/sys/policies/acl/rebound",
        headers={"X-Vault-Token": "cli-root", "Host": "attacker.example"},
        json={"policy": 'path "a/*" {}'},
    )
    assert forged.status_code == 400
    assert _answer(address, "/v1/sys/policies/acl/rebound", None).status_code == 404


def test_allow_host_adds_a_name_on_any_port_or_on_the_port_it_names() -> None:
    proc, lines = start("--token", "cli-root", "--allow-host", "lab.proxy", "--allow-host", "X:81")
    address = lines[0].split()[-1]
    try:
        assert _answer(address, "/v1/sys/health", "lab.proxy").status_code == 200
        assert _answer(address, "/v1/sys/health", "LAB.proxy:8443").status_code == 200
        assert _answer(address, "/v1/sys/health", "x:81").status_code == 200
        assert _answer(address, "/v1/sys/health", "x:82").status_code == 400
        assert _answer(address, "/v1/sys/health", "other.proxy").status_code == 400
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


def test_the_sandbox_object_takes_allowed_hosts_too() -> None:
    from toolkit.sandbox import Sandbox

    with Sandbox(demo=False, allow_hosts=["notebook.internal"]) as sb:
        assert _answer(sb.address, "/v1/sys/health", "notebook.internal").status_code == 200
        assert _answer(sb.address, "/v1/sys/health", "evil.internal").status_code == 400


def test_hide_tokens_keeps_every_token_out_of_the_banner() -> None:
    proc, lines = start("--token", "cli-root", "--hide-tokens")
    try:
        text = "\n".join(lines)
        assert "cli-root" not in text and "demo-" not in text
        assert "not shown (--hide-tokens)" in text
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
