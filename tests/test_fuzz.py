"""Fuzzing every endpoint of both APIs: bad input is a 4xx in the API's error shape, and changes nothing.

For each route of the sandbox's own route tables (so new endpoints are fuzzed
the day they are added), hypothesis sends malformed JSON, wrong types, missing,
extra, huge and empty values, odd unicode, bad ids and bad percent-encoding,
with the route's methods and with unknown ones. Every answer must come back
(no hang), never be a 5xx, carry the API's error shape when it is a 4xx, and
a refused request must leave the state exactly as it was.

The sandbox is started without the demo data (plus a few records), so that
the state can be compared whole after each request.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.routing import Route

from toolkit.sandbox import Sandbox
from toolkit.sandbox._plain import dump
from toolkit.sandbox.platform.http.routes import routes as platform_routes
from toolkit.sandbox.secrets.backends import EngineRegistry
from toolkit.sandbox.secrets.engines import ENGINES
from toolkit.sandbox.secrets.http.routes import system_routes

# Examples per endpoint: a few in the fast suite, many more in `make test-fuzz` (FUZZ_EXAMPLES),
# which `make test` runs.
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "3"))
TRIED: dict[str, int] = {"requests": 0}


def fingerprint(sandbox: Sandbox) -> str:
    """The services as ``--state`` stores them, with the clock left out: time passing is not a change."""
    with sandbox.platform.lock, sandbox.secrets.lock:
        stored = json.loads(
            dump({"clock": sandbox.clock, "platform": sandbox.platform, "secrets": sandbox.secrets})
        )
    del stored["areas"]["clock"]
    return hashlib.sha256(json.dumps(stored, sort_keys=True).encode()).hexdigest()


def _endpoints() -> list[tuple[str, str, frozenset[str]]]:
    """(api, path template, methods) of every route of both APIs."""
    sandbox = Sandbox(demo=False)
    found: list[tuple[str, str, frozenset[str]]] = []
    for entry in platform_routes(sandbox.platform):
        assert isinstance(entry, Route)
        found.append(("platform", "/api/v2" + entry.path, frozenset(entry.methods or ())))
    for entry in system_routes(sandbox.secrets):
        assert isinstance(entry, Route)
        found.append(("secrets", "/v1" + entry.path, frozenset(entry.methods or ())))
    found += engine_endpoints(ENGINES)
    return sorted(found)


def engine_endpoints(engines: EngineRegistry) -> list[tuple[str, str, frozenset[str]]]:
    """(api, path template, methods) of every engine's handlers, at its default mount."""
    found: list[tuple[str, str, frozenset[str]]] = []
    for engine in engines:
        for route in engine.routes():
            methods = set(route.rule.methods) | ({"GET"} if "LIST" in route.rule.methods else set())
            found.append(("secrets", f"/v1/{engine.mount}{route.path}", frozenset(methods)))
    return found


ENDPOINTS = _endpoints()

# -- strategies -------------------------------------------------------------------------
odd_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        ["", " ", "..", "%", "%zz", "%00", "a/b", "\u202e", "\ud7ff", "😀" * 50, "x" * 5000, "null"]
    ),
)
json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    odd_text,
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text, inner, max_size=4),
    max_leaves=8,
)
# Field names the endpoints read, so that wrong types reach the validation of real fields.
FIELD_NAMES = sorted(
    {
        "name", "type", "policy", "policies", "ttl", "max_ttl", "key", "nonce", "secret_shares",
        "secret_threshold", "pgp_keys", "backup", "require_verification", "lease_id", "increment",
        "sync", "sha256", "command", "args", "env", "version", "data", "attributes", "relationships",
        "access", "runs", "value", "category", "sensitive", "organization-scoped", "plugin_name",
        "connection_url", "username", "password", "allowed_roles", "db_name", "creation_statements",
        "rotation_period", "vhosts", "vhost_topics", "tags", "common_name", "alt_names", "ip_sans",
        "csr", "format", "not_after", "service_account_names", "provider", "key_collection",
        "purpose", "protection", "min_enabled_version", "deletion_allowed", "binddn", "bindpass",
        "length", "formatter", "password_policy", "config", "enforcement_level", "paths", "limit",
        "role_id", "secret_id", "token_policies", "token_ttl", "token_max_ttl", "bind_secret_id",
        "secret_id_ttl", "secret_id_num_uses", "metadata",
    }
)  # fmt: skip
json_body = st.one_of(
    st.dictionaries(st.sampled_from(FIELD_NAMES), json_value, max_size=6),
    st.builds(
        lambda d: {"data": d}, st.dictionaries(st.sampled_from(FIELD_NAMES), json_value, max_size=4)
    ),
    json_value,
)
raw_body = st.one_of(
    json_body.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=64),
    st.sampled_from(
        [b"{", b'{"a":', b"\xff\xfe", b"[" * 500, b'{"policy": "' + b"a" * 70000 + b'"}']
    ),
)
methods = st.sampled_from(
    ["GET", "POST", "PUT", "PATCH", "DELETE", "LIST", "HEAD", "OPTIONS", "BREW"]
)


def _fill(template: str, value: str) -> str:
    from urllib.parse import quote

    encoded = quote(value, safe="") if value else "x"
    return re.sub(r"\{\w+(?::\w+)?\}", lambda _: encoded, template)


# What each fuzzed endpoint gets: EXAMPLES requests, the same ones on every run.
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
FUZZ_INPUTS = given(method=methods, value=odd_text, body=raw_body, known_method=st.booleans())


def fuzzed(test: Callable[..., None]) -> Callable[..., None]:
    """A test taking ``method``, ``value``, ``body``, ``known_method`` made a fuzz test."""
    return FUZZ_SETTINGS(FUZZ_INPUTS(test))


# -- the sandbox under fuzz ---------------------------------------------------------------
@pytest.fixture(scope="module")
def target() -> Iterator[tuple[Sandbox, httpx.Client]]:
    with Sandbox(demo=False) as sandbox, httpx.Client(base_url=sandbox.address, timeout=20) as http:
        # A few records, so that ids can be right and payloads can reach real validation.
        headers = {"X-Vault-Token": sandbox.token}
        http.put("/v1/sys/policies/acl/app", headers=headers, json={"policy": 'path "a/*" {}'})
        yield sandbox, http
    print(f"fuzzing: {TRIED['requests']} requests over {len(ENDPOINTS)} endpoints")


def _headers(sandbox: Sandbox, api: str) -> dict[str, str]:
    if api == "platform":
        return {
            "Authorization": f"Bearer {sandbox.token}",
            "Content-Type": "application/vnd.api+json",
        }
    return {"X-Vault-Token": sandbox.token, "Content-Type": "application/json"}


def _error_shape_ok(api: str, answer: httpx.Response) -> bool:
    if answer.request.method == "HEAD":
        return True
    try:
        payload = answer.json()
    except ValueError:
        return False
    errors = payload.get("errors") if isinstance(payload, dict) else None
    if not isinstance(errors, list):
        return False
    if not errors:
        # The real secrets server answers a missing record with 404 and an empty list.
        return api == "secrets" and answer.status_code == 404
    if api == "secrets":
        return all(isinstance(e, str) and e for e in errors)
    return all(
        isinstance(e, dict) and str(e.get("status")) == str(answer.status_code) for e in errors
    )


@pytest.mark.parametrize(
    ("api", "template", "allowed"), ENDPOINTS, ids=[f"{a}:{t}" for a, t, _ in ENDPOINTS]
)
@fuzzed
def test_bad_input_is_a_4xx_that_changes_nothing(
    record_property: Callable[[str, object], None],
    target: tuple[Sandbox, httpx.Client],
    api: str,
    template: str,
    allowed: frozenset[str],
    method: str,
    value: str,
    body: bytes,
    known_method: bool,
) -> None:
    fuzz_once(target, api, template, allowed, method, value, body, known_method)
    record_property("tried:fuzzing requests", 1)


def fuzz_once(
    target: tuple[Sandbox, httpx.Client],
    api: str,
    template: str,
    allowed: frozenset[str],
    method: str,
    value: str,
    body: bytes,
    known_method: bool,
    state_of: Callable[[Sandbox], str] = fingerprint,
) -> None:
    """Send one fuzzed request: no 5xx, the API's error shape on a 4xx, and no change when
    refused (``state_of`` draws the state compared before and after)."""
    sandbox, http = target
    if known_method and allowed:
        method = sorted(allowed)[len(value) % len(allowed)]
    url = _fill(template, value)
    before = state_of(sandbox)
    answer = http.request(method, url, headers=_headers(sandbox, api), content=body)
    TRIED["requests"] += 1
    assert answer.status_code < 500, f"{method} {url}: {answer.status_code} {answer.text[:300]}"
    if answer.status_code >= 400:
        assert _error_shape_ok(api, answer), f"{method} {url}: {answer.text[:300]}"
        assert state_of(sandbox) == before, f"{method} {url} was refused but changed the state"
    if sandbox.secrets.sealed:  # a valid sys/seal: open it again for the next example
        with sandbox.secrets.lock:
            sandbox.secrets.seal.sealed = False
