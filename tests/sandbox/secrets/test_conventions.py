"""The secrets server's HTTP conventions (spec part 1): envelope, errors, LIST, token headers."""

from __future__ import annotations

import httpx
import pytest

from tests.sandbox.secrets._access_api import assert_error, v1
from toolkit.sandbox import Sandbox

ENVELOPE = {
    "request_id",
    "lease_id",
    "renewable",
    "lease_duration",
    "data",
    "wrap_info",
    "warnings",
    "auth",
}


def test_an_answer_carries_every_envelope_field(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox) as root:
        body = root.get("auth/token/lookup-self").json()
    assert set(body) >= ENVELOPE
    assert body["request_id"] and body["lease_id"] == "" and body["wrap_info"] is None


def test_an_error_is_a_list_of_messages(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox, "wrong") as client:
        response = client.get("auth/token/lookup-self")
    assert response.status_code == 403
    assert response.json() == {"errors": ["permission denied"]}


@pytest.mark.parametrize("path", ["sys/policies/acl", "sys/policies/rgp", "sys/policies/password"])
def test_list_and_get_with_list_true_answer_the_same(demo_sandbox: Sandbox, path: str) -> None:
    with v1(demo_sandbox) as root:
        listed = root.request("LIST", path).json()
        got = root.get(path, params={"list": "true"}).json()
    assert listed["data"] == got["data"]


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Service-Token": "demo-auditor-token"},
        {"X-Vault-Token": "demo-auditor-token"},
        {"Authorization": "Bearer demo-auditor-token"},
    ],
)
def test_each_token_header_is_accepted(demo_sandbox: Sandbox, headers: dict[str, str]) -> None:
    with httpx.Client(base_url=f"{demo_sandbox.address}/v1", headers=headers) as client:
        response = client.get("auth/token/lookup-self")
    assert response.status_code == 200
    assert response.json()["data"]["display_name"] == "token-demo-auditor"


@pytest.mark.parametrize("raw", [b"[1, 2]", b'"text"', b"{broken"])
def test_a_body_that_is_not_a_json_object_is_a_400(demo_sandbox: Sandbox, raw: bytes) -> None:
    with v1(demo_sandbox) as root:
        response = root.post("auth/token/create", content=raw)
    assert_error(response, 400, "failed to parse JSON input")


def test_an_unknown_path_is_a_json_404(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox) as root:
        response = root.get("sys/no-such-endpoint")
    assert_error(response, 404, "sys/no-such-endpoint")


def test_a_wrong_method_is_405_unsupported_operation(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox) as root:
        delete = root.delete("auth/token/lookup-self")
        get_list = root.get("sys/policies/acl/default", params={"list": "true"})
        plain_get_of_a_list = root.get("sys/policies/acl")
    assert_error(delete, 405, "unsupported operation")
    assert_error(get_list, 405, "unsupported operation")
    assert_error(plain_get_of_a_list, 405, "unsupported operation")


def test_a_denied_request_changes_nothing(sandbox: Sandbox) -> None:
    with v1(sandbox, "demo-auditor-token") as auditor:
        refused = auditor.delete("sys/policies/password/alnum-20")
    with v1(sandbox) as root:
        kept = root.get("sys/policies/password/alnum-20")
    assert_error(refused, 403, "permission denied")
    assert kept.status_code == 200


def test_the_envelope_is_compact_json_and_writes_what_orjson_cannot() -> None:
    import json

    from toolkit.sandbox.secrets.http._base import envelope

    payload = {"keys": ["a", "b/"], "n": 3, 7: "int key", "é": None}
    body = envelope(payload).body
    assert json.loads(body)["data"] == {"keys": ["a", "b/"], "n": 3, "7": "int key", "é": None}
    assert b'"data":{"keys":["a","b/"]' in body  # compact, as the standard encoder wrote it
    assert json.loads(envelope({"serial": 2**70}).body)["data"] == {"serial": 2**70}


def test_engine_paths_are_dispatched_first_and_system_paths_keep_their_table() -> None:
    from starlette.routing import Match

    from toolkit.sandbox.secrets.http.routes import routes

    sandbox = Sandbox(demo=False)
    first = routes(sandbox.secrets)[0]

    def matched(path: str) -> Match:
        scope = {"type": "http", "path": path, "root_path": "", "method": "GET"}
        return first.matches(scope)[0]

    assert matched("/pki/cert/1f:a5") is Match.FULL
    assert matched("/secret/data/app") is Match.FULL
    assert matched("/sys/mounts") is Match.NONE
    assert matched("/auth/token/lookup-self") is Match.NONE


def test_the_date_header_follows_the_sandbox_clock_when_it_moves(sandbox: Sandbox) -> None:
    from email.utils import parsedate_to_datetime

    with v1(sandbox) as root:
        before = parsedate_to_datetime(root.get("sys/health").headers["date"])
        sandbox.secrets.clock.advance(3600)
        after = parsedate_to_datetime(root.get("sys/health").headers["date"])
    assert 3600 <= (after - before).total_seconds() < 3610


def test_the_indexed_system_routes_choose_as_starlette_s_ordered_scan_would() -> None:
    from starlette.routing import Match

    from toolkit.sandbox.secrets.http.routes import IndexedRoutes, system_routes

    table = system_routes(Sandbox(demo=False).secrets)
    indexed = IndexedRoutes(table)
    paths = {r.path.replace("{", "").replace("}", "").replace(":path", "") for r in table}
    paths |= {"/sys", "/sys/", "/auth", "/auth/x/login/u", "/sys/leases/lookup/a/b/", "/nope"}
    for path in sorted(paths):
        for method in ("GET", "POST", "DELETE", "LIST", "PATCH"):
            scope = {"type": "http", "path": path, "root_path": "", "method": method}
            linear = (Match.NONE, None)
            for route in table:
                match, _ = route.matches(scope)
                if match is Match.FULL:
                    linear = (match, route)
                    break
                if match is Match.PARTIAL and linear[0] is Match.NONE:
                    linear = (match, route)
            match, child = indexed.matches(scope)
            assert (match, child.get("toolkit.sandbox.route")) == linear, (method, path)


def test_the_indexed_routes_still_name_their_paths() -> None:
    from starlette.routing import NoMatchFound

    from toolkit.sandbox.secrets.http.routes import IndexedRoutes, system_routes

    table = system_routes(Sandbox(demo=False).secrets)
    first = table[0]
    params = {p: "x" for p in first.param_convertors}
    assert IndexedRoutes(table).url_path_for(first.name, **params) == first.url_path_for(
        first.name, **params
    )
    with pytest.raises(NoMatchFound):
        IndexedRoutes(table).url_path_for("no-such-route")
