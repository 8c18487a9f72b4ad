"""The auth matrix: every endpoint of both APIs, with every kind of caller, answered as the spec says.

The endpoints come from the sandbox's own route tables (so a new endpoint is
covered the day it is added); what each must answer comes from the spec:

- platform (spec 000 part 5): no token or an unknown token is 401; a token
  that may not see the record is 404, and a member's change is 404 too;
- secrets (spec 001 parts 1 and 5, README): no token, an unknown token or a
  token without the capability is 403 ``permission denied``; sudo endpoints
  need ``sudo`` besides the capability; restricted endpoints are refused
  outside the root namespace; only the seal, health, init and legacy rekey
  endpoints answer without a token.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from starlette.routing import Route

from toolkit.sandbox import Sandbox
from toolkit.sandbox.platform.http.routes import routes as platform_routes
from toolkit.sandbox.secrets.engines import ENGINES
from toolkit.sandbox.secrets.http.routes import system_routes
from toolkit.sandbox.secrets.token_roles import TokenRequest

# -- what the spec says ---------------------------------------------------------------
# Answer without a token (the real server's unauthenticated system endpoints).
UNAUTHENTICATED = re.compile(
    r"^sys/(seal-status|health|init|unseal|leader|rekey(-recovery-key)?/(init|update|verify))$"
    # The certificate engine's public reads: CA certificates, chains, issued certificates, CRLs.
    r"|^pki/(ca(/pem)?|ca_chain|cert/[^/]+|issuers|issuer/[^/]+/(pem|der|json|crl|crl/delta))$"
    r"|^pki/crl(/pem|/delta|/delta/pem)?$"
    # Logging in: how a caller gets a token.
    r"|^auth/(userpass|ldap)/login/[^/]+$|^auth/approle/login$"
    # Looking a wrapping token up (OpenBao's unauthenticated sys/wrapping/lookup).
    r"|^sys/wrapping/lookup$"
)
# Spec 001 part 5.3, plus sealing and reading the rekey backup (sudo on the real server).
SUDO = [
    ("LIST", re.compile(r"^sys/leases/lookup(/.*)?$")),
    ("GET", re.compile(r"^sys/leases/lookup(/.*)?$")),  # a GET there is a list
    ("LIST", re.compile(r"^auth/token/accessors$")),
    ("GET", re.compile(r"^auth/token/accessors$")),  # a GET there is a list
    ("*", re.compile(r"^sys/(leases/)?revoke-(force|prefix)/.+$")),
    ("*", re.compile(r"^sys/plugins/catalog/[^/]+/[^/]+$")),  # register, read, remove
    # Listing a type too: OpenBao 2.7.2 refuses it without sudo (measured).
    ("*", re.compile(r"^sys/plugins/catalog/[^/]+$")),
    ("*", re.compile(r"^pki/root/sign-self-issued$")),
    ("*", re.compile(r"^sys/seal$")),
    ("*", re.compile(r"^sys/(rekey|rotate/root|rotate/recovery)/backup$")),
    # OpenBao's root-protected system paths: audit devices and auth method mounts.
    ("*", re.compile(r"^sys/(audit|audit/.+|auth/.+)$")),
]
# Spec 001 sections 4.1, 4.2, 4.4 and 4.5 are marked restricted.
RESTRICTED = re.compile(
    r"^sys/(policies/(acl|rgp|egp|password)|policy|leases|renew|revoke|plugins/catalog)"
)
# What the default policy grants every token that has it (the real server's default policy).
WRITE = frozenset({"POST", "PUT"})
DEFAULT_GRANTS = [
    (frozenset({"GET"}), re.compile(r"^auth/token/lookup-self$")),
    (WRITE, re.compile(r"^auth/token/(renew|revoke)-self$")),
    (WRITE, re.compile(r"^sys/(leases/lookup|leases/renew|capabilities-self)$")),
    (WRITE, re.compile(r"^sys/(wrapping/(wrap|lookup|unwrap)|tools/hash(/.*)?)$")),
    (frozenset({"GET"}), re.compile(r"^sys/policies/password/[^/]+/generate$")),
]

CALLS = [0]  # requests sent by this module, for the run's summary

# One client for the whole module: making an httpx client costs more than a request.
HTTP = httpx.Client(timeout=30)

# Unauthenticated on the real server, but it filters what it shows by the caller's token.
SELF_CHECKING = "/sys/internal/ui/mounts"

FULL_NO_SUDO = 'path "*" { capabilities = ["create", "read", "update", "delete", "list", "patch"] }'
FULL = 'path "*" { capabilities = ["create", "read", "update", "delete", "list", "patch", "sudo"] }'
NOTHING = 'path "nothing/here" { capabilities = ["read"] }'


def _is_sudo(method: str, path: str) -> bool:
    return any(m in ("*", method) and p.match(path) for m, p in SUDO)


def _concrete(template: str) -> str:
    special = {"type": "secret", "kind": "acl"}

    def fill(match: re.Match[str]) -> str:
        return special.get(match.group(1), "probe")

    return re.sub(r"\{(\w+)(?::\w+)?\}", fill, template).lstrip("/")


def _secrets_endpoints() -> list[tuple[str, str]]:
    sandbox = Sandbox(demo=False)
    found: set[tuple[str, str]] = set()
    for entry in system_routes(sandbox.secrets):
        assert isinstance(entry, Route) and entry.methods
        if entry.path.startswith(SELF_CHECKING):
            continue  # answers per token itself: see its own test below
        for method in entry.methods - {"HEAD"}:
            found.add((method, _concrete(entry.path)))
    for engine in ENGINES:
        for route in engine.routes():
            for method in route.rule.methods:
                found.add((method, engine.mount + _concrete(route.path)))
    return sorted(found)


SECRETS_ENDPOINTS = _secrets_endpoints()


@pytest.fixture(scope="module")
def secrets_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, str]]:
    init_file = Path(tmp_path_factory.mktemp("auth")) / "init.json"
    with Sandbox(key_shares=1, key_threshold=1, init_file=str(init_file)) as sandbox:
        share = json.loads(init_file.read_text())["keys"][0]
        for name, text in (("full", FULL), ("full-no-sudo", FULL_NO_SUDO), ("nothing", NOTHING)):
            sandbox.secrets.policies.put("acl", name, text)
        with sandbox.secrets.lock:
            # A child namespace, from which restricted endpoints are refused.
            sandbox.secrets.namespaces.create("", "team-a")
        yield sandbox, share


def _token(sandbox: Sandbox, policy: str, *, default: bool = False) -> str:
    """A fresh token with one policy (a fresh one per call: some calls revoke their caller)."""
    request = TokenRequest(policies=[policy], no_default_policy=not default)
    with sandbox.secrets.lock:
        token, _ = sandbox.secrets.tokens.create(
            sandbox.secrets.tokens.root, request, privileged=True
        )
        return token.id


def _call(
    sandbox: Sandbox,
    share: str,
    method: str,
    path: str,
    token: str | None,
    namespace: str | None = None,
) -> httpx.Response:
    headers = {} if token is None else {"X-Vault-Token": token}
    if namespace:
        headers["X-Vault-Namespace"] = namespace
    body = None if method in ("GET", "LIST", "DELETE") else b"{}"
    answer = HTTP.request(method, f"{sandbox.address}/v1/{path}", headers=headers, content=body)
    _reopen(sandbox, share)  # a permitted sys/seal seals: the next caller finds it open again
    CALLS[0] += 1
    return answer


def _denied(answer: httpx.Response) -> bool:
    return answer.status_code == 403 and any(
        "permission denied" in e for e in answer.json()["errors"]
    )


def _reopen(sandbox: Sandbox, share: str) -> None:
    if sandbox.secrets.sealed:
        HTTP.put(f"{sandbox.address}/v1/sys/unseal", json={"key": share})
    assert not sandbox.secrets.sealed


@pytest.mark.parametrize(
    ("method", "path"), SECRETS_ENDPOINTS, ids=[f"{m} {p}" for m, p in SECRETS_ENDPOINTS]
)
def test_secrets_endpoint_answers_each_caller_as_the_spec_says(
    record_property: Callable[[str, object], None],
    secrets_sandbox: tuple[Sandbox, str],
    method: str,
    path: str,
) -> None:
    sandbox, share = secrets_sandbox
    before = CALLS[0]
    _check_secrets_endpoint(sandbox, share, method, path)
    record_property("tried:auth matrix requests", CALLS[0] - before)


def _check_secrets_endpoint(sandbox: Sandbox, share: str, method: str, path: str) -> None:
    open_endpoint = bool(UNAUTHENTICATED.match(path))
    for token in (None, "s.NoSuchTokenAtAllAnywhere1"):
        answer = _call(sandbox, share, method, path, token)
        assert _denied(answer) != open_endpoint, f"{token and 'unknown'} token: {answer.text}"
    answer = _call(sandbox, share, method, path, _token(sandbox, "nothing"))
    assert _denied(answer) != open_endpoint, f"token without permission: {answer.text}"
    answer = _call(sandbox, share, method, path, _token(sandbox, "nothing", default=True))
    granted = open_endpoint or any(method in m and p.match(path) for m, p in DEFAULT_GRANTS)
    assert _denied(answer) != granted, f"token with the default policy: {answer.text}"
    if not open_endpoint:
        answer = _call(sandbox, share, method, path, _token(sandbox, "full-no-sudo"))
        assert _denied(answer) == _is_sudo(method, path), f"token without sudo: {answer.text}"
        answer = _call(sandbox, share, method, path, _token(sandbox, "full"), namespace="team-a")
        restricted = bool(RESTRICTED.match(path))
        assert _denied(answer) == restricted, f"from namespace team-a: {answer.text}"
    permitted = _call(sandbox, share, method, path, _token(sandbox, "full"))
    assert not _denied(permitted), permitted.text
    assert permitted.status_code < 500, permitted.text


def test_the_ui_mounts_listing_shows_each_token_only_what_it_can_reach(
    secrets_sandbox: tuple[Sandbox, str],
) -> None:
    sandbox, share = secrets_sandbox
    path = SELF_CHECKING.lstrip("/")
    assert _denied(_call(sandbox, share, "GET", path, None))
    nothing = _call(sandbox, share, "GET", path, _token(sandbox, "nothing")).json()["data"]
    assert nothing == {"secret": {}, "auth": {}}
    full = _call(sandbox, share, "GET", path, _token(sandbox, "full")).json()["data"]
    assert {"database/", "pki/"} <= set(full["secret"])
    # One mount: refused when the token cannot reach it, shown when it can.
    assert _denied(_call(sandbox, share, "GET", path + "/database", _token(sandbox, "nothing")))
    one = _call(sandbox, share, "GET", path + "/database", _token(sandbox, "full"))
    assert one.status_code == 200


def test_the_secrets_matrix_covers_every_area() -> None:
    paths = {p for _, p in SECRETS_ENDPOINTS}
    prefixes = {"/".join(p.split("/")[:2]) for p in paths}
    assert {
        "sys/policies",
        "sys/rekey",
        "sys/leases",
        "sys/plugins",
        "sys/mounts",
        "sys/namespaces",
        "auth/token",
        "auth/userpass",
        "auth/ldap",
        "auth/approle",
    } <= prefixes
    print(f"secrets auth matrix: {len(SECRETS_ENDPOINTS)} endpoints x 7 callers")


# -- platform -------------------------------------------------------------------------
OUTSIDER = "demo-org-initech"  # an organization token of another organization
MEMBER = "demo-member-alice"  # a member (not owner) of acme


def _platform_ids(sandbox: Sandbox) -> dict[str, str]:
    service = sandbox.platform
    with service.lock:  # the stores, read as a request reads them
        owner = service.org_store.authenticate("demo-org-acme")
        pool = service.pool_store.list_pools(owner, "acme")[0][0]
        parameters = service.parameter_store.list_parameters
        policy_set = next(
            s for s in service.org_store.list_policy_sets(owner, "acme") if parameters(owner, s.id)
        )
        workspaces = service.org_store.list_workspaces(owner, "acme")
        access = next(a for w in workspaces for a in service.access_store.list_records(owner, w.id))
        return {
            "name": "acme",
            "pool": pool.id,
            "agent": service.agent_store.list_agents(owner, pool.id)[0].id,
            "policy_set": policy_set.id,
            "parameter": parameters(owner, policy_set.id)[0].id,
            "workspace": workspaces[0].id,
            "team": service.org_store.list_teams(owner, "acme")[0].id,
            "access": access.id,
        }


def _platform_path(template: str, ids: dict[str, str]) -> str:
    kind = {
        "organizations": "name",
        "agent-pools": "pool",
        "agents": "agent",
        "policy-sets": "policy_set",
        "workspaces": "workspace",
        "teams": "team",
        "team-workspaces": "access",
    }
    parts = template.strip("/").split("/")
    out = []
    for index, part in enumerate(parts):
        if part == "{parameter_id}":
            out.append(ids["parameter"])
        elif part.startswith("{"):
            out.append(ids[kind[parts[index - 1]]])
        else:
            out.append(part)
    return "/" + "/".join(out)


def _platform_endpoints() -> list[tuple[str, str]]:
    sandbox = Sandbox(demo=False)
    return sorted(
        (method, entry.path)
        for entry in platform_routes(sandbox.platform)
        if isinstance(entry, Route) and entry.path != "/ping"
        for method in (entry.methods or set()) - {"HEAD"}
    )


PLATFORM_ENDPOINTS = _platform_endpoints()
JSONAPI = "application/vnd.api+json"


@pytest.mark.parametrize(
    ("method", "template"), PLATFORM_ENDPOINTS, ids=[f"{m} {p}" for m, p in PLATFORM_ENDPOINTS]
)
def test_platform_endpoint_answers_each_caller_as_the_spec_says(
    sandbox: Sandbox, method: str, template: str
) -> None:
    ids = _platform_ids(sandbox)
    path = _platform_path(template, ids)
    params = {"filter[workspace][id]": ids["workspace"]} if path == "/team-workspaces" else None
    body = b'{"data": {}}'
    if (method, path) == ("POST", "/team-workspaces"):
        # Which organization is meant comes from the body: name acme's workspace and team.
        relationships = {
            "workspace": {"data": {"type": "workspaces", "id": ids["workspace"]}},
            "team": {"data": {"type": "teams", "id": ids["team"]}},
        }
        body = json.dumps(
            {
                "data": {
                    "type": "team-workspaces",
                    "attributes": {"access": "read"},
                    "relationships": relationships,
                }
            }
        ).encode()

    def call(token: str | None) -> httpx.Response:
        headers = {"Content-Type": JSONAPI}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return HTTP.request(
            method,
            f"{sandbox.address}/api/v2{path}",
            headers=headers,
            params=params,
            content=body if method in ("POST", "PATCH") else None,
        )

    assert call(None).status_code == 401
    assert call("no-such-token-anywhere").status_code == 401
    # The list of one's own organizations (empty, not refused) and one's own account
    # are every valid token's to read.
    if path not in ("/organizations", "/account/details"):
        assert call(OUTSIDER).status_code == 404, path
    if method != "GET" and not path.startswith("/_sandbox"):
        assert call(MEMBER).status_code == 404, f"a member's {method} {path}"
    permitted = call(sandbox.token)
    assert permitted.status_code not in (401, 404), permitted.text
    assert permitted.status_code < 500, permitted.text
