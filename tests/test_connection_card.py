"""The connection card both clients show in Jupyter, their health() and is_authenticated():
what a user sees first, against the sandbox, a down server, and a scripted platform."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from toolkit import PlatformClient, RetryPolicy, SecretsClient
from toolkit._card import format_seconds
from toolkit.sandbox import Sandbox

# Tries once: a down server's card should come back at once in these tests.
ONCE = RetryPolicy(attempts=1)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the secrets server ------------------------------------------------------------------


def test_the_secrets_card_shows_server_seal_and_token_facts_and_never_the_token(
    sandbox: Sandbox,
) -> None:
    with SecretsClient(sandbox.address, sandbox.token) as root:
        issued = root.tokens.create(["default", "auditor"], ttl="90m", display_name="alice")
        token = issued["client_token"].reveal()
        health = root.health()
    with SecretsClient(sandbox.address, token) as bao:
        facts = bao.connection()
        page = bao._repr_html_()
    assert facts["address"] == sandbox.address
    assert facts["state"] == "active"
    assert facts["version"] == health["version"] and facts["version"]
    assert facts["cluster"] == health["cluster_name"]
    assert facts["seal"] == "unsealed (shamir, 3 of 5)"
    assert facts["authenticated"] is True
    assert facts["display_name"] == "token-alice"
    assert set(facts["policies"]) == {"default", "auditor"}
    assert facts["ttl"] == "1h 30m"
    for shown in (sandbox.address, health["version"], "token-alice", "auditor", "1h 30m"):
        assert shown in page
    assert token not in page + repr(bao) + repr(facts)
    assert sandbox.token not in page


def test_health_answers_for_a_sealed_server_and_the_card_says_sealed(sandbox: Sandbox) -> None:
    with SecretsClient(sandbox.address, sandbox.token) as bao:
        bao.seal.seal()
        health = bao.health()
        facts = bao.connection()
        page = bao._repr_html_()
    assert health["sealed"] is True
    assert facts["state"] == "sealed"
    assert facts["seal"].startswith("sealed: 0 of 3 shares given")
    assert facts["authenticated"] == "unknown while sealed"
    assert "sealed" in page and sandbox.token not in page


def test_a_refused_token_is_not_authenticated_and_the_card_says_so(
    demo_sandbox: Sandbox,
) -> None:
    with SecretsClient(demo_sandbox.address, "not-a-real-token") as bao:
        assert bao.is_authenticated() is False
        facts = bao.connection()
        page = bao._repr_html_()
    assert facts["authenticated"] is False
    assert "display_name" not in facts
    assert "not-a-real-token" not in page
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as bao:
        assert bao.is_authenticated() is True


def test_the_repr_stays_short_names_the_namespace_and_sends_nothing() -> None:
    port = _closed_port()
    started = time.monotonic()
    text = repr(SecretsClient(f"http://127.0.0.1:{port}", "t0ken", namespace="team-a"))
    assert time.monotonic() - started < 0.5
    assert text == f"<SecretsClient http://127.0.0.1:{port} namespace='team-a'>"


# -- a server that is down -----------------------------------------------------------------


@pytest.mark.parametrize("client_class", [SecretsClient, PlatformClient])
def test_a_down_server_shows_as_unreachable_and_the_card_does_not_raise(
    client_class: type[SecretsClient] | type[PlatformClient],
) -> None:
    address = f"http://127.0.0.1:{_closed_port()}"
    with client_class(address, "s3cret-token-value", retry=ONCE) as client:
        facts = client.connection()
        page = client._repr_html_()
        with pytest.raises(Exception, match="cannot connect"):
            client.health()
    assert facts["state"] == "unreachable"
    assert "cannot connect" in facts["problem"]
    assert "unreachable" in page and "cannot connect" in page
    assert "s3cret-token-value" not in page


# -- the platform --------------------------------------------------------------------------


def test_the_platform_card_shows_the_api_version_and_the_organizations_the_token_sees(
    demo_sandbox: Sandbox,
) -> None:
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as platform:
        health = platform.health()
        facts = platform.connection()
        page = platform._repr_html_()
        assert platform.is_authenticated() is True
    assert health["status"] == 204 and health["api_version"] == "2.6"
    assert facts["api_version"] == "2.6"
    assert facts["authenticated"] is True
    assert facts["organizations"] == ["acme", "globex", "initech"]
    assert facts["token_owner"] == "admin <admin@sandbox.example>, site administrator"
    assert "acme, globex, initech" in page
    assert demo_sandbox.token not in page


def test_an_organization_token_sees_its_own_organization_on_the_card(
    demo_sandbox: Sandbox,
) -> None:
    with PlatformClient(demo_sandbox.address, "demo-org-acme") as platform:
        facts = platform.connection()
        page = platform._repr_html_()
    assert facts["organizations"] == ["acme"]
    assert "demo-org-acme" not in page


def test_a_refused_platform_token_is_not_authenticated_though_ping_answers(
    demo_sandbox: Sandbox,
) -> None:
    with PlatformClient(demo_sandbox.address, "not-a-real-token") as platform:
        assert platform.health()["status"] == 204  # /ping needs no token
        assert platform.is_authenticated() is False
        facts = platform.connection()
    assert facts["state"] == "answering"
    assert facts["authenticated"] is False
    assert "organizations" not in facts


class _UserTokenService(BaseHTTPRequestHandler):
    """A platform as a self-hosted installation answers a user token (scripted)."""

    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        if self.path == "/api/v2/ping":
            self._answer(204, None, {"TFP-API-Version": "2.6", "X-TFE-Version": "v202601-1"})
        elif self.path.startswith("/api/v2/organizations"):
            org = {"id": "acme", "type": "organizations", "attributes": {"name": "acme"}}
            self._answer(200, {"data": [org], "meta": {"pagination": {"total-pages": 1}}})
        elif self.path == "/api/v2/account/details":
            user = {"username": "alice", "email": "alice@example.com"}
            self._answer(200, {"data": {"id": "user-1", "type": "users", "attributes": user}})
        else:
            self._answer(404, {"errors": [{"status": "404", "title": "not found"}]})

    def _answer(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if data:
            self.send_header("Content-Type", "application/vnd.api+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def user_token_service() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _UserTokenService)
    server.timeout = 5
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_user_tokens_owner_and_the_installations_version_are_on_the_card(
    user_token_service: str,
) -> None:
    with PlatformClient(user_token_service, "user-token-value", retry=ONCE) as platform:
        facts = platform.connection()
        page = platform._repr_html_()
    assert facts["version"] == "v202601-1"
    assert facts["token_owner"] == "alice <alice@example.com>"
    assert "alice &lt;alice@example.com&gt;" in page
    assert "user-token-value" not in page


# -- formatting ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "never expires"),
        (45, "45s"),
        (5400, "1h 30m"),
        (3 * 86400 + 7200 + 5, "3d 2h"),
        (None, "unknown"),
        ("x", "unknown"),
    ],
)
def test_a_ttl_reads_as_its_two_largest_units(seconds: object, text: str) -> None:
    assert format_seconds(seconds) == text
