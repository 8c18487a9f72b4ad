"""Calls through a real forward proxy (tinyproxy from Debian), named in the environment
as operators do: ``HTTP_PROXY`` for http, ``HTTPS_PROXY`` for https (a CONNECT tunnel,
with TLS checked end to end against the test CA)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import pytest

from tests._sockets import Peer, Scripted, answer, certificate_files
from tests.servers._common import ServerMissing
from tests.servers.tinyproxy import Tinyproxy
from toolkit.secrets import SecretsClient

# A real tinyproxy process: the slow suite (make test-slow), after make system-deps.
pytestmark = pytest.mark.slow

TOKEN = "s.proxy-test-token"


@pytest.fixture(scope="module")
def proxy() -> Iterator[Tinyproxy]:
    try:
        launcher = Tinyproxy()
    except ServerMissing as missing:
        pytest.fail(str(missing))
    with launcher as running:
        yield running


@pytest.fixture
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def sealed_status(peer: Peer) -> None:
    while peer.request() is not None:
        peer.send(answer(200, b'{"sealed": false, "t": 3, "n": 5}'))


def test_an_http_call_goes_through_the_proxy_http_proxy_names(proxy, no_proxy_settings):
    server = Scripted(sealed_status)
    try:
        no_proxy_settings.setenv("HTTP_PROXY", proxy.address)
        with SecretsClient(server.address, TOKEN, timeout=10) as client:
            assert client.seal.status()["t"] == 3
    finally:
        server.stop()
    assert [s.target for s in server.seen] == ["/v1/sys/seal-status"]
    assert f"127.0.0.1:{server.port}/v1/sys/seal-status" in proxy.log_text()


def test_an_https_call_tunnels_through_the_proxy_https_proxy_names(
    proxy, no_proxy_settings, tmp_path
):
    ca, cert, key = certificate_files(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = Scripted(sealed_status, context)
    try:
        no_proxy_settings.setenv("HTTPS_PROXY", proxy.address)
        with SecretsClient(server.address, TOKEN, ca_file=str(ca), timeout=10) as client:
            assert client.seal.status()["n"] == 5
    finally:
        server.stop()
    assert [s.target for s in server.seen] == ["/v1/sys/seal-status"]
    assert f"CONNECT 127.0.0.1:{server.port}" in proxy.log_text()


def test_no_proxy_sends_the_call_straight_to_the_server(proxy, no_proxy_settings):
    server = Scripted(sealed_status)
    try:
        no_proxy_settings.setenv("HTTP_PROXY", proxy.address)
        no_proxy_settings.setenv("NO_PROXY", "127.0.0.1")
        with SecretsClient(server.address, TOKEN, timeout=10) as client:
            client.seal.status()
    finally:
        server.stop()
    assert len(server.seen) == 1
    assert f"127.0.0.1:{server.port}" not in proxy.log_text()
