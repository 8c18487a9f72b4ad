"""Every login method OpenBao 2.7 ships, against a real OpenBao, with nothing from outside:

- approle and userpass, configured through the API;
- jwt with a key pair the test makes (``jwt_validation_pubkeys``);
- kubernetes with a scripted TokenReview endpoint served over TLS (a test CA);
- oidc against OpenBao's own identity provider, whose authorize endpoint the test
  calls itself in place of a browser;
- cert with a client CA the test makes, on a TLS listener of OpenBao's.

OpenBao ships no LDAP auth method: LDAP's request shape is tested against the sandbox
(tests/secrets/test_logins.py).
"""

from __future__ import annotations

import http.server
import json
import ssl
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests._sockets import certificate_files
from tests.real.conftest import launch
from tests.servers._common import free_port
from tests.servers.openbao import OpenBao
from toolkit import Sensitive
from toolkit._errors import APIError, BadRequest, ToolkitError
from toolkit.secrets import SecretsClient
from toolkit.secrets.auth import TokenExpiryWarning

jwt = pytest.importorskip("jwt")  # PyJWT signs the test's tokens


def _ok(reply: httpx.Response) -> dict[str, Any]:
    assert reply.status_code in (200, 204), f"{reply.request.url}: {reply.status_code} {reply.text}"
    return reply.json() if reply.content else {}


def _enable(bao: OpenBao, kind: str, path: str | None = None) -> str:
    path = path or f"{kind}-{uuid.uuid4().hex[:8]}"
    with bao.http() as http:
        _ok(http.post(f"sys/auth/{path}", json={"type": kind}))
    return path


def _policy(bao: OpenBao, name: str) -> str:
    with bao.http() as http:
        _ok(
            http.put(
                f"sys/policies/acl/{name}",
                json={"policy": 'path "secret/*" {\n  capabilities = ["read"]\n}\n'},
            )
        )
    return name


# -- approle and userpass ------------------------------------------------------------------
def _approle(bao: OpenBao, mount: str, role: str, **settings: Any) -> tuple[str, str]:
    with bao.http() as http:
        _ok(http.post(f"auth/{mount}/role/{role}", json=settings))
        role_id = _ok(http.get(f"auth/{mount}/role/{role}/role-id"))["data"]["role_id"]
        secret_id = _ok(http.post(f"auth/{mount}/role/{role}/secret-id"))["data"]["secret_id"]
    return role_id, secret_id


def test_approle_logs_in_at_a_mount_of_its_own_and_switches_the_token(bao):
    mount = _enable(bao, "approle")
    policy = _policy(bao, "approle-reader")
    role_id, secret_id = _approle(bao, mount, "ci", token_policies=[policy], token_ttl="10m")
    with SecretsClient.for_login(bao.address) as client:
        login = client.auth.approle(role_id, secret_id, mount=mount)
        assert login.policies == ["approle-reader", "default"]
        assert login.ttl == 600 and login.renewable
        assert login.display_name.startswith(mount)
        assert isinstance(login.client_token, Sensitive)
        assert client.tokens.lookup_self()["accessor"] == login.accessor
    with SecretsClient.for_login(bao.address) as client, pytest.raises(BadRequest):
        client.auth.approle(role_id, "not-" + secret_id, mount=mount)


def test_userpass_logs_in_with_the_users_policies(bao):
    mount = _enable(bao, "userpass")
    policy = _policy(bao, "userpass-reader")
    with bao.http() as http:
        _ok(
            http.post(
                f"auth/{mount}/users/dana",
                json={"password": "dana-test-pw", "token_policies": policy},
            )
        )
    with SecretsClient.for_login(bao.address) as client:
        login = client.auth.userpass("dana", Sensitive("dana-test-pw"), mount=mount)
        assert login.policies == ["default", "userpass-reader"]
        assert login.metadata == {"username": "dana"}
        assert login.display_name == f"{mount}-dana"


def test_renewal_on_real_openbao_renews_then_says_the_max_ttl_is_reached(bao):
    mount = _enable(bao, "approle")
    role_id, secret_id = _approle(bao, mount, "short", token_ttl="2s", token_max_ttl="5s")
    with SecretsClient.for_login(bao.address) as client:
        client.auth.approle(role_id, secret_id, mount=mount)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            renewal = client.auth.keep_renewed()
            deadline = time.monotonic() + 15
            while renewal.state == "renewing" and time.monotonic() < deadline:
                time.sleep(0.1)
        assert renewal.renewals >= 1
        assert renewal.state == "max_ttl_reached", renewal.message
        assert any(issubclass(w.category, TokenExpiryWarning) for w in caught)


# -- jwt ------------------------------------------------------------------------------------
def _rsa_key() -> tuple[rsa.RSAPrivateKey, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return key, public.decode()


def test_jwt_logs_in_with_a_token_signed_by_a_key_the_server_was_given(bao):
    mount = _enable(bao, "jwt")
    policy = _policy(bao, "jwt-reader")
    key, public = _rsa_key()
    with bao.http() as http:
        _ok(http.post(f"auth/{mount}/config", json={"jwt_validation_pubkeys": [public]}))
        _ok(
            http.post(
                f"auth/{mount}/role/ci",
                json={
                    "role_type": "jwt",
                    "user_claim": "sub",
                    "bound_audiences": ["toolkit-tests"],
                    "token_policies": [policy],
                },
            )
        )
    now = datetime.now(UTC)
    claims = {
        "sub": "pipeline-7",
        "aud": "toolkit-tests",
        "iat": now,
        "exp": now + timedelta(minutes=5),
    }
    signed = jwt.encode(claims, key, algorithm="RS256")
    with SecretsClient.for_login(bao.address) as client:
        login = client.auth.jwt("ci", signed, mount=mount)
        assert login.policies == ["default", "jwt-reader"]
        assert login.metadata.get("role") == "ci"
    other, _ = _rsa_key()
    forged = jwt.encode(claims, other, algorithm="RS256")
    with SecretsClient.for_login(bao.address) as client, pytest.raises(BadRequest):
        client.auth.jwt("ci", forged, mount=mount)


# -- kubernetes -----------------------------------------------------------------------------
class _TokenReviews:
    """A scripted Kubernetes API answering TokenReview for one service account, over TLS."""

    def __init__(self, folder: Path, token: str, namespace: str, account: str) -> None:
        self.ca, cert, key = certificate_files(folder)
        self.reviews: list[dict[str, Any]] = []
        reviews = self.reviews

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                reviews.append(body)
                good = self.path == "/apis/authentication.k8s.io/v1/tokenreviews" and (
                    body.get("spec", {}).get("token") == token
                )
                status: dict[str, Any] = {"authenticated": good}
                if good:
                    status["user"] = {
                        "username": f"system:serviceaccount:{namespace}:{account}",
                        "uid": "uid-of-" + account,
                        "groups": ["system:serviceaccounts"],
                    }
                payload = json.dumps(
                    {
                        "apiVersion": "authentication.k8s.io/v1",
                        "kind": "TokenReview",
                        "status": status,
                    }
                ).encode()
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.address = f"https://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _TokenReviews:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _service_account_token(namespace: str, account: str) -> str:
    key, _ = _rsa_key()
    claims = {
        "iss": "kubernetes/serviceaccount",
        "sub": f"system:serviceaccount:{namespace}:{account}",
        "kubernetes.io/serviceaccount/namespace": namespace,
        "kubernetes.io/serviceaccount/service-account.name": account,
        "kubernetes.io/serviceaccount/service-account.uid": "uid-of-" + account,
    }
    return jwt.encode(claims, key, algorithm="RS256")


def test_kubernetes_logs_in_with_the_pods_token_file_checked_by_token_review(bao, tmp_path):
    sa_token = _service_account_token("ops", "auditor")
    token_file = tmp_path / "token"
    token_file.write_text(sa_token + "\n")
    mount = _enable(bao, "kubernetes")
    policy = _policy(bao, "k8s-reader")
    with _TokenReviews(tmp_path, sa_token, "ops", "auditor") as api:
        with bao.http() as http:
            _ok(
                http.post(
                    f"auth/{mount}/config",
                    json={
                        "kubernetes_host": api.address,
                        "kubernetes_ca_cert": api.ca.read_text(),
                        "token_reviewer_jwt": "reviewer-token-for-tests",
                        "disable_local_ca_jwt": True,
                    },
                )
            )
            _ok(
                http.post(
                    f"auth/{mount}/role/auditor",
                    json={
                        "bound_service_account_names": ["auditor"],
                        "bound_service_account_namespaces": ["ops"],
                        "token_policies": [policy],
                    },
                )
            )
        with SecretsClient.for_login(bao.address) as client:
            login = client.auth.kubernetes("auditor", token_file=token_file, mount=mount)
            assert login.policies == ["default", "k8s-reader"]
            assert login.metadata["service_account_name"] == "auditor"
        assert api.reviews and api.reviews[-1]["spec"]["token"] == sa_token
        stranger = _service_account_token("ops", "auditor")  # same claims, unknown to the API
        with SecretsClient.for_login(bao.address) as client, pytest.raises(APIError):
            client.auth.kubernetes("auditor", stranger, mount=mount)


# -- oidc ------------------------------------------------------------------------------------
def test_oidc_logs_in_through_openbaos_own_identity_provider(bao):
    port = free_port()
    redirect = f"http://localhost:{port}/oidc/callback"
    # A person who logs in to the provider: a userpass user, whose entity the provider knows.
    people = _enable(bao, "userpass")
    with bao.http() as http:
        _ok(http.post(f"auth/{people}/users/erin", json={"password": "erin-test-pw"}))
        erin = _ok(http.post(f"auth/{people}/login/erin", json={"password": "erin-test-pw"}))[
            "auth"
        ]
        suffix = uuid.uuid4().hex[:8]
        key, assignment, app, provider = (
            f"{n}-{suffix}" for n in ("key", "people", "toolkit", "provider")
        )
        _ok(http.post(f"identity/oidc/key/{key}", json={"allowed_client_ids": ["*"]}))
        _ok(
            http.post(
                f"identity/oidc/assignment/{assignment}", json={"entity_ids": [erin["entity_id"]]}
            )
        )
        _ok(
            http.post(
                f"identity/oidc/client/{app}",
                json={"key": key, "redirect_uris": [redirect], "assignments": [assignment]},
            )
        )
        registered = _ok(http.get(f"identity/oidc/client/{app}"))["data"]
        _ok(
            http.post(
                f"identity/oidc/provider/{provider}",
                json={"allowed_client_ids": [registered["client_id"]]},
            )
        )
    mount = _enable(bao, "oidc")
    policy = _policy(bao, "oidc-reader")
    with bao.http() as http:
        _ok(
            http.post(
                f"auth/{mount}/config",
                json={
                    "oidc_discovery_url": f"{bao.address}/v1/identity/oidc/provider/{provider}",
                    "oidc_client_id": registered["client_id"],
                    "oidc_client_secret": registered["client_secret"],
                    "default_role": "people",
                },
            )
        )
        _ok(
            http.post(
                f"auth/{mount}/role/people",
                json={
                    "user_claim": "sub",
                    "allowed_redirect_uris": [redirect],
                    "token_policies": [policy],
                },
            )
        )

    def browser(auth_url: str) -> None:
        """What erin's browser would do: ask the provider for a code as erin, follow
        the redirect to the local listener."""
        query = {k: v[-1] for k, v in parse_qs(urlsplit(auth_url).query).items()}
        with httpx.Client(base_url=f"{bao.address}/v1", timeout=30) as http:
            answer = http.post(
                f"identity/oidc/provider/{provider}/authorize",
                json=query,
                headers={"X-Vault-Token": erin["client_token"]},
            )
        granted = _ok(answer)
        assert query["redirect_uri"] == redirect
        httpx.get(redirect, params={"code": granted["code"], "state": granted["state"]}, timeout=30)

    with SecretsClient.for_login(bao.address) as client:
        login = client.auth.oidc("people", mount=mount, port=port, open_url=browser, timeout=60)
        assert login.policies == ["default", "oidc-reader"]
        assert login.method == "oidc"
        assert client.tokens.lookup_self()["accessor"] == login.accessor


def test_an_oidc_login_nobody_finishes_times_out(bao):
    mount = _enable(bao, "oidc")
    port = free_port()
    with bao.http() as http:
        # A provider the login never reaches: the browser is never driven here.
        _ok(
            http.post(
                f"auth/{mount}/config",
                json={
                    "oidc_discovery_url": f"{bao.address}/v1/identity/oidc",
                    "oidc_client_id": "unused",
                    "oidc_client_secret": "unused",
                },
            )
        )
        _ok(
            http.post(
                f"auth/{mount}/role/idle",
                json={
                    "user_claim": "sub",
                    "allowed_redirect_uris": [f"http://localhost:{port}/oidc/callback"],
                },
            )
        )
    opened: list[str] = []
    with (
        SecretsClient.for_login(bao.address) as client,
        pytest.raises(ToolkitError, match="no OIDC callback within 1 s"),
    ):
        client.auth.oidc("idle", mount=mount, port=port, open_url=opened.append, timeout=1)
    assert opened and f"localhost%3A{port}%2Foidc%2Fcallback" in opened[0]


# -- cert ------------------------------------------------------------------------------------
def _client_pki(folder: Path) -> tuple[Path, Path, Path]:
    """A client CA, and a client certificate and key it signed: (CA, certificate, key)."""
    return certificate_files(folder, client="audit-runner")


@pytest.fixture(scope="module")
def tls_bao(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OpenBao, Path]]:
    folder = tmp_path_factory.mktemp("bao-tls")
    ca, cert, key = certificate_files(folder)
    with launch(lambda: OpenBao(tls_files=(cert, key))) as server:
        yield server, ca


def test_cert_logs_in_with_the_client_certificate_over_tls(tls_bao, tmp_path, monkeypatch):
    bao, server_ca = tls_bao
    client_ca, client_cert, client_key = _client_pki(tmp_path)
    mount = _enable(bao, "cert")
    policy = _policy(bao, "cert-reader")
    with bao.http() as http:
        _ok(
            http.post(
                f"auth/{mount}/certs/runners",
                json={"certificate": client_ca.read_text(), "token_policies": [policy]},
            )
        )
    # From the environment, as an operator's shell would set them.
    monkeypatch.setenv("VAULT_CLIENT_CERT", str(client_cert))
    monkeypatch.setenv("BAO_CLIENT_KEY", str(client_key))
    with SecretsClient.for_login(bao.tls_address, ca_file=str(server_ca)) as client:
        login = client.auth.cert("runners", mount=mount)
        assert login.policies == ["cert-reader", "default"]
        assert login.metadata["common_name"] == "audit-runner"
        assert client.tokens.lookup_self()["accessor"] == login.accessor
    monkeypatch.delenv("VAULT_CLIENT_CERT")
    monkeypatch.delenv("BAO_CLIENT_KEY")
    # Without the certificate the same request is refused by the server.
    with (
        SecretsClient.for_login(bao.tls_address, ca_file=str(server_ca)) as client,
        pytest.raises(APIError),
    ):
        client.auth._login("cert", mount, "login", {"name": "runners"})
