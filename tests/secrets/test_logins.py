"""Logging in to the sandbox: userpass, LDAP and AppRole, the login record, and renewal."""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections.abc import Callable
from datetime import datetime

import httpx
import pytest

from tests._sockets import Peer, Scripted, answer
from toolkit import Sensitive
from toolkit._errors import BadRequest, InputError, PermissionDenied, ToolkitError
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.demo_logins import DEMO_LDAP_USERS, DEMO_USERPASS_USERS
from toolkit.secrets import SecretsClient
from toolkit.secrets.auth import TokenExpiryWarning


def _login_client(sandbox: Sandbox) -> SecretsClient:
    return SecretsClient.for_login(sandbox.address)


def test_a_userpass_login_switches_the_client_to_a_token_with_the_users_policies(sandbox):
    password = DEMO_USERPASS_USERS["olivia"][0]
    with _login_client(sandbox) as client:
        login = client.auth.userpass("olivia", password)
        assert isinstance(login.client_token, Sensitive)
        # Her own policies and her entity's groups' (platform-team, and engineering above it).
        assert login.policies == ["default", "on-call", "operators", "team-access"]
        assert login.display_name == "userpass-olivia"
        assert login.renewable and login.ttl > 0 and login.accessor
        assert login.method == "userpass" and login.metadata == {"username": "olivia"}
        # The client now acts with the new token: an operator may read policies.
        assert client.tokens.lookup_self().accessor == login.accessor
        assert "operators" in client.policies.list_policies()
        assert password not in repr(login) and login.client_token.reveal() not in repr(login)


def test_a_wrong_password_is_refused_and_the_client_keeps_no_token(sandbox):
    with _login_client(sandbox) as client:
        with pytest.raises(BadRequest, match="invalid username or password") as caught:
            client.auth.userpass("olivia", "not-the-password")
        assert "not-the-password" not in str(caught.value)
        with pytest.raises(PermissionDenied):
            client.tokens.lookup_self()


def test_an_ldap_login_gets_the_policies_of_the_users_directory_groups(sandbox):
    with _login_client(sandbox) as client:
        login = client.auth.ldap("sam.audit", Sensitive(DEMO_LDAP_USERS["sam.audit"][0]))
        assert login.policies == ["auditors", "default"]
        assert login.display_name == "ldap-sam.audit"


def test_the_directory_engines_service_accounts_cannot_log_in_over_ldap(sandbox):
    directory = sandbox.secrets.mounts.engine("ad").backend  # the engine's own accounts
    account = next(e for e in directory.entries.values() if e.password)
    with _login_client(sandbox) as client, pytest.raises(BadRequest, match="failed to bind"):
        client.auth.ldap(account.name, account.password)


def test_the_ldap_login_request_is_a_post_of_the_password_to_the_users_login_path():
    """The request shape OpenBao's LDAP method takes (it ships none to test against):
    ``POST /v1/auth/ldap/login/<username>`` with ``{"password": ...}`` and no token,
    as a recording server sees it on the wire."""
    password = DEMO_LDAP_USERS["lena.ops"][0]
    login_answer = json.dumps(
        {
            "request_id": "r",
            "lease_id": "",
            "renewable": False,
            "lease_duration": 0,
            "data": None,
            "wrap_info": None,
            "warnings": None,
            "auth": {
                "client_token": "s.recorded-login",
                "accessor": "a1",
                "policies": ["default"],
                "token_policies": ["default"],
                "lease_duration": 60,
                "renewable": True,
                "metadata": {"username": "lena.ops"},
            },
        }
    ).encode()
    self_answer = json.dumps({"data": {"display_name": "ldap-lena.ops"}}).encode()

    def serve(peer: Peer) -> None:
        while (seen := peer.request()) is not None:
            body = login_answer if "/login/" in seen.target else self_answer
            peer.send(answer(200, body))

    server = Scripted(serve)
    try:
        with SecretsClient.for_login(server.address) as client:
            client.auth.ldap("lena.ops", password, mount="ldap")
    finally:
        server.stop()
    login = server.requests("POST")[0]
    assert login.target == "/v1/auth/ldap/login/lena.ops"
    assert json.loads(login.body) == {"password": password}
    assert not {"x-vault-token", "x-service-token"} & {h.lower() for h in login.headers}


def test_an_approle_logs_in_with_its_role_id_and_a_generated_secret_id(sandbox, client):
    client.http.json(
        "POST",
        "/auth/approle/role/ci-runner",
        json={"token_policies": ["auditors"], "token_ttl": "20m", "secret_id_num_uses": 1},
    )
    role_id = client.http.json("GET", "/auth/approle/role/ci-runner/role-id")["data"]["role_id"]
    issued = client.http.json("POST", "/auth/approle/role/ci-runner/secret-id")["data"]
    with _login_client(sandbox) as machine:
        login = machine.auth.approle(role_id, issued["secret_id"])
        assert login.policies == ["auditors", "default"]
        assert login.ttl == 1200 and login.metadata == {"role_name": "ci-runner"}
    # One use only: the same secret id is now spent.
    with _login_client(sandbox) as machine, pytest.raises(BadRequest, match="invalid role"):
        machine.auth.approle(role_id, issued["secret_id"])


def test_a_wrong_secret_id_is_refused_and_spends_nothing(sandbox, client):
    client.http.json("POST", "/auth/approle/role/twice", json={"secret_id_num_uses": 1})
    role_id = client.http.json("GET", "/auth/approle/role/twice/role-id")["data"]["role_id"]
    secret = client.http.json("POST", "/auth/approle/role/twice/secret-id")["data"]["secret_id"]
    with _login_client(sandbox) as machine:
        with pytest.raises(BadRequest):
            machine.auth.approle(role_id, "0000-wrong")
        assert machine.auth.approle(role_id, secret).policies == ["default"]


def test_approle_management_needs_a_permitted_token(sandbox):
    with (
        SecretsClient(sandbox.address, "demo-auditor-token") as auditor,
        pytest.raises(PermissionDenied),
    ):
        auditor.http.json("POST", "/auth/approle/role/mine", json={})


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/auth/userpass/login/olivia", {"password": 12}),
        ("/auth/userpass/login/olivia", {}),
        ("/auth/ldap/login/lena.ops", {"password": ["x"]}),
        ("/auth/approle/login", {"role_id": None}),
        ("/auth/approle/login", {"role_id": "demo-role-nightly-audit", "secret_id": 5}),
    ],
)
def test_malformed_login_bodies_are_400s_that_name_the_field(demo_sandbox, path, body):
    reply = httpx.post(demo_sandbox.address + "/v1" + path, json=body)
    assert reply.status_code == 400
    assert any(word in reply.text for word in ("password", "role_id", "secret_id"))


def test_login_methods_refuse_missing_fields_before_sending_anything(demo_sandbox):
    with _login_client(demo_sandbox) as client:
        with pytest.raises(InputError, match="password"):
            client.auth.userpass("olivia", "")
        with pytest.raises(InputError, match="role_id"):
            client.auth.approle("", "x")
        with pytest.raises(InputError, match="certificate"):
            client.auth.cert()


def test_the_login_convenience_builds_a_logged_in_client(demo_sandbox):
    password = DEMO_USERPASS_USERS["arthur"][0]
    with SecretsClient.login(
        "userpass", demo_sandbox.address, username="arthur", password=password
    ) as client:
        assert client.last_login is not None and client.last_login.policies == [
            "auditors",
            "default",
            "team-access",  # his entity's group's (security-team)
        ]
    with pytest.raises(InputError, match="unknown login method"):
        SecretsClient.login("kerberos", demo_sandbox.address)


# -- renewal ---------------------------------------------------------------------------
def _short_role(client: SecretsClient, name: str, ttl: str, max_ttl: str) -> tuple[str, str]:
    client.http.json(
        "POST", f"/auth/approle/role/{name}", json={"token_ttl": ttl, "token_max_ttl": max_ttl}
    )
    role_id = client.http.json("GET", f"/auth/approle/role/{name}/role-id")["data"]["role_id"]
    secret = client.http.json("POST", f"/auth/approle/role/{name}/secret-id")["data"]["secret_id"]
    return role_id, secret


class SandboxTime:
    """A renewal clock on the sandbox's own clock: a pause moves it forward at once,
    ``steps`` pauses at most (then it waits for the stop), so no test sleeps."""

    def __init__(self, sandbox: Sandbox, steps: int = 1000) -> None:
        self.sandbox = sandbox
        self.steps = steps
        self.paused = 0.0

    def now(self) -> datetime:
        return self.sandbox.clock.now()

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        while self.steps <= 0:  # held until the test allows more pauses, or stopped
            if stop.wait(0.01):
                return True
        if stop.is_set():
            return True
        self.steps -= 1
        self.paused += seconds
        self.sandbox.clock.advance(seconds)
        return stop.is_set()


def _until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not check() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_kept_renewed_token_outlives_its_ttl_and_renewal_stops_on_close(sandbox, client):
    role_id, secret = _short_role(client, "renewed", "3s", "1h")
    machine = _login_client(sandbox)
    machine.auth.approle(role_id, secret)
    clock = SandboxTime(sandbox, steps=5)
    renewal = machine.auth.keep_renewed(clock=clock)
    assert renewal.state == "renewing"
    _until(lambda: renewal.renewals >= 5)
    assert renewal.renewals == 5 and renewal.state == "renewing"
    assert clock.paused > 2 * 3  # more than twice the token's ttl went by, on the server too
    assert machine.tokens.lookup_self()["ttl"] > 0
    machine.close()
    assert renewal.state == "stopped" and not renewal.running


def test_without_renewal_the_same_token_expires_on_the_sandbox_clock(sandbox, client):
    # The witness for the test above: the time it moved is enough to end an unrenewed token.
    role_id, secret = _short_role(client, "unrenewed", "3s", "1h")
    with _login_client(sandbox) as machine:
        machine.auth.approle(role_id, secret)
        sandbox.clock.advance(7)
        with pytest.raises(ToolkitError):
            machine.tokens.lookup_self()


def test_renewal_says_when_the_max_ttl_is_reached(sandbox, client):
    role_id, secret = _short_role(client, "capped", "2s", "3s")
    with _login_client(sandbox) as machine:
        machine.auth.approle(role_id, secret)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            renewal = machine.auth.keep_renewed(clock=SandboxTime(sandbox))
            _until(lambda: renewal.state != "renewing")
        assert renewal.state == "max_ttl_reached"
        assert "maximum TTL" in renewal.message and not renewal.running
        assert any(issubclass(w.category, TokenExpiryWarning) for w in caught)


def test_renewal_says_at_once_that_a_token_is_not_renewable(sandbox, client):
    made = client.tokens.create(["default"], ttl="1h", renewable=False)
    with SecretsClient(sandbox.address, made.client_token.reveal()) as holder:
        with pytest.warns(TokenExpiryWarning, match="cannot be renewed"):
            renewal = holder.auth.keep_renewed()
        assert renewal.state == "not_renewable" and not renewal.running


def test_renewal_of_a_token_that_never_expires_is_not_needed(demo_client):
    assert demo_client.auth.keep_renewed().state == "not_needed"


def test_renewal_that_is_refused_says_so(sandbox, client):
    role_id, secret = _short_role(client, "revoked", "2s", "1h")
    with _login_client(sandbox) as machine:
        login = machine.auth.approle(role_id, secret)
        clock = SandboxTime(sandbox, steps=0)  # holds the first pause until told
        renewal = machine.auth.keep_renewed(clock=clock)
        client.http.json("POST", "/auth/token/revoke", json={"token": login.client_token.reveal()})
        with pytest.warns(TokenExpiryWarning, match="renewing the token failed"):
            clock.steps = 1  # now the pause passes, and the renewal is refused
            _until(lambda: renewal.state != "renewing")
        assert renewal.state == "failed"


def test_a_namespace_view_made_before_a_login_sends_the_new_token(sandbox):
    password = DEMO_USERPASS_USERS["olivia"][0]
    with _login_client(sandbox) as client:
        view = client.in_namespace("root")  # made while the client holds no token
        login = client.auth.userpass("olivia", password)
        assert view.tokens.lookup_self().accessor == login.accessor
        # A token set on the view stays the view's: the client keeps its own.
        view.http.set_token(sandbox.token)
        assert view.tokens.lookup_self().accessor != login.accessor
        assert client.tokens.lookup_self().accessor == login.accessor
