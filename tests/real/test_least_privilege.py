"""Least privilege from evidence against a real OpenBao and the log its file audit device
wrote: every request's deciding rule, policies generated from use and proved on the
server itself, and the impact of a tightened policy named pair for pair."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.real.conftest import launch
from tests.servers.openbao import OpenBao
from toolkit import least_privilege
from toolkit.fleet import parse_targets, run_fleet
from toolkit.least_privilege import Review
from toolkit.secrets import SecretsClient

APP_READER = """
path "secret/data/app/*" { capabilities = ["read", "create", "update"] }
path "secret/metadata/app/*" { capabilities = ["list"] }
path "secret/data/app/forbidden" { capabilities = ["deny"] }
path "secret/data/shared/*" { capabilities = ["read"] }
path "sys/auth/*" { capabilities = ["read", "sudo"] }
path "sys/policies/acl/*" { capabilities = ["read", "update"] }
"""
TEAM_OPS = """
path "secret/data/ops/+" { capabilities = ["read"] }
path "secret/data/{{identity.entity.name}}/*" { capabilities = ["read", "create", "update"] }
"""
CI = """
path "secret/data/ci/*" { capabilities = ["read"] }
path "secret/data/ci/config" {
  capabilities = ["create", "update", "read"]
  allowed_parameters = { "data" = [] }
}
path "auth/token/create-orphan" { capabilities = ["update", "sudo"] }
"""
# app-reader without read on secret/data/app/*: the impact test's tightening.
TIGHTENED = APP_READER.replace(
    'path "secret/data/app/*" { capabilities = ["read", "create", "update"] }',
    'path "secret/data/app/*" { capabilities = ["create", "update"] }\n'
    'path "secret/data/app/a" { capabilities = ["read"] }',
)
RUNBOOK = Path(__file__).parents[2] / "notebooks" / "15_least_privilege.ipynb"
PRINCIPALS = ("auth/userpass/users/alice", "auth/userpass/users/bob", "auth/approle/role/ci")


@dataclass
class World:
    server: OpenBao
    tokens: dict[str, str]  # principal -> the token its traffic used


def _ok(response: httpx.Response) -> httpx.Response:
    assert response.is_success, (response.request.url, response.status_code, response.text)
    return response


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    """Three principals' traffic: users alice and bob (bob in group ops, whose policy is an
    identity policy with a template) and AppRole role ci; allowed and denied requests."""
    with launch(lambda: OpenBao(audit=True)) as server:
        root = server.http()
        for name, text in (("app-reader", APP_READER), ("team-ops", TEAM_OPS), ("ci", CI)):
            _ok(root.put(f"/sys/policies/acl/{name}", json={"policy": text}))
        for method in ("userpass", "approle"):
            _ok(root.post(f"/sys/auth/{method}", json={"type": method}))
        for user in ("alice", "bob"):
            _ok(root.post(f"/auth/userpass/users/{user}",
                          json={"password": f"pw-{user}-7", "token_policies": ["app-reader"]}))  # fmt: skip
        _ok(root.post("/auth/approle/role/ci", json={"token_policies": ["ci"]}))
        for name in ("a", "b", "c", "d", "e", "forbidden"):
            _ok(root.post(f"/secret/data/app/{name}", json={"data": {"v": name}}))
        for name in ("one", "two"):
            _ok(root.post(f"/secret/data/ops/{name}", json={"data": {"v": name}}))
        _ok(root.post("/secret/data/ci/x", json={"data": {"v": "x"}}))
        base = f"{server.address}/v1"
        tokens = {}
        for user in ("alice", "bob"):
            login = _ok(httpx.post(f"{base}/auth/userpass/login/{user}",
                                   json={"password": f"pw-{user}-7"})).json()["auth"]  # fmt: skip
            tokens[f"auth/userpass/users/{user}"] = login["client_token"]
            if user == "bob":
                entity = login["entity_id"]
                _ok(root.post(f"/identity/entity/id/{entity}", json={"name": "bob"}))
                _ok(root.post("/identity/group", json={"name": "ops", "policies": ["team-ops"],
                                                       "member_entity_ids": [entity]}))  # fmt: skip
        role_id = _ok(root.get("/auth/approle/role/ci/role-id")).json()["data"]["role_id"]
        secret_id = _ok(root.post("/auth/approle/role/ci/secret-id")).json()["data"]["secret_id"]
        ci = _ok(httpx.post(f"{base}/auth/approle/login",
                            json={"role_id": role_id, "secret_id": secret_id})).json()["auth"]  # fmt: skip
        tokens["auth/approle/role/ci"] = ci["client_token"]
        alice = server.http(tokens["auth/userpass/users/alice"])
        for name in ("a", "b", "c", "d", "e"):
            _ok(alice.get(f"/secret/data/app/{name}"))
        _ok(alice.post("/secret/data/app/f", json={"data": {"v": "f"}}))
        _ok(alice.request("LIST", "/secret/metadata/app"))
        _ok(alice.get("/sys/auth/userpass"))  # a root-protected path: read and sudo
        assert alice.get("/secret/data/app/forbidden").status_code == 403
        assert alice.get("/secret/data/other").status_code == 403
        bob = server.http(tokens["auth/userpass/users/bob"])
        for name in ("one", "two"):
            _ok(bob.get(f"/secret/data/ops/{name}"))
        _ok(bob.post("/secret/data/bob/notes", json={"data": {"v": "n"}}))
        _ok(bob.get("/secret/data/bob/notes"))
        _ok(bob.get("/secret/data/app/a"))
        ci_http = server.http(tokens["auth/approle/role/ci"])
        _ok(ci_http.get("/secret/data/ci/x"))
        _ok(ci_http.post("/secret/data/ci/config", json={"data": {"k": "v"}}))
        assert ci_http.get("/sys/mounts").status_code == 403
        for client in (root, alice, bob, ci_http):
            client.close()
        yield World(server, tokens)


@pytest.fixture(scope="module")
def review(world: World) -> Review:
    with SecretsClient(world.server.address, world.server.token) as client:
        return least_privilege.review(client, world.server.audit_log, days=90)


def _capabilities(server: OpenBao, token: str, path: str) -> set[str]:
    with server.http() as root:
        answer = _ok(root.post("/sys/capabilities", json={"token": token, "paths": [path]}))
    return set(answer.json()["data"][path])


def test_every_logged_request_is_decided_by_the_rule_and_policies_the_server_logged(
    review: Review,
) -> None:
    decisions = review.decisions()
    acl = decisions[decisions["decided_by"] == "acl"]
    assert len(acl) >= 15
    assert acl["agrees"].all(), acl[~acl["agrees"]].to_dict("records")
    assert review.findings().empty
    assert set(PRINCIPALS) <= set(decisions["principal"])
    forbidden = acl[acl["path"] == "secret/data/app/forbidden"].iloc[0]
    assert (forbidden["allowed"], forbidden["pattern"]) == (False, "secret/data/app/forbidden")
    notes = acl[(acl["path"] == "secret/data/bob/notes") & (acl["operation"] == "read")].iloc[0]
    assert (notes["policy"], notes["pattern"]) == (
        "team-ops", "secret/data/{{identity.entity.name}}/*"
    )  # fmt: skip
    sudo = acl[acl["path"] == "sys/auth/userpass"].iloc[0]
    assert (sudo["capability"], sudo["allowed"], sudo["pattern"]) == (
        "read+sudo", True, "sys/auth/*"
    )  # fmt: skip


def test_unused_grants_are_standing_privilege_ranked_by_danger(review: Review) -> None:
    standing = review.standing(["auth/userpass/users/alice"]).set_index(["pattern", "capability"])
    assert not standing.loc[("secret/data/app/*", "read"), "unused"]
    assert standing.loc[("secret/data/app/*", "read"), "requests"] == 5
    assert standing.loc[("sys/policies/acl/*", "update"), "unused"]
    assert "policy writes" in standing.loc[("sys/policies/acl/*", "update"), "danger"]
    assert not standing.loc[("sys/auth/*", "sudo"), "unused"]
    # bob's requests count for the group ops too, whose identity policy decided them.
    group = review.standing(["identity/group/name/ops"]).set_index(["pattern", "capability"])
    assert group.loc[("secret/data/ops/+", "read"), "requests"] == 2
    assert not group.loc[("secret/data/{{identity.entity.name}}/*", "create"), "unused"]
    ranking = review.ranking(list(PRINCIPALS))
    assert ranking["danger_score"].is_monotonic_decreasing
    ci = ranking.set_index("principal").loc["auth/approle/role/ci"]
    assert "orphan tokens" in ci["dangers"]


def test_a_login_tokens_use_counts_for_it_though_the_log_hashes_its_accessor() -> None:
    # OpenBao's default device HMACs accessors: matched through sys/audit-hash, else the
    # token would look unused.
    with launch(lambda: OpenBao(audit=True, audit_raw=False)) as server:
        with server.http() as root:
            _ok(root.put("/sys/policies/acl/reader", json={"policy": APP_READER}))
            _ok(root.post("/sys/auth/userpass", json={"type": "userpass"}))
            _ok(root.post("/auth/userpass/users/alice",
                          json={"password": "pw-alice-7", "token_policies": ["reader"]}))  # fmt: skip
        login = _ok(httpx.post(f"{server.address}/v1/auth/userpass/login/alice",
                               json={"password": "pw-alice-7"})).json()["auth"]  # fmt: skip
        with server.http(login["client_token"]) as alice:
            _ok(alice.get("/sys/policies/acl/reader"))
        assert login["accessor"] not in server.audit_log.read_text()
        with SecretsClient(server.address, server.token) as client:
            review = least_privilege.review(client, server.audit_log, days=90)
        token = f"auth/token/accessors/{login['accessor']}"
        assert review.ranking([token]).set_index("principal").loc[token, "used"] > 0


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_a_generated_policy_given_to_a_fresh_token_allows_the_window_and_denies_what_it_lost(
    world: World, review: Review, principal: str
) -> None:
    generated = review.generate(principal, generalise_above=4)
    name = "lp-" + principal.rsplit("/", 1)[1]
    server = world.server
    with server.http() as root:
        _ok(root.put(f"/sys/policies/acl/{name}", json={"policy": generated.hcl}))
        fresh = _ok(root.post("/auth/token/create", json={
            "policies": [name], "no_default_policy": True, "ttl": "10m"})).json()["auth"]  # fmt: skip
    token = fresh["client_token"]
    used = review.used(principal)
    assert len(used) >= 2
    for row in used.itertuples(index=False):
        caps = _capabilities(server, token, str(row.path))
        wanted = {str(row.operation)} | ({"sudo"} if row.sudo else set())
        assert wanted <= caps, (row.path, wanted, caps)
    with server.http(token) as http:
        for row in used[used["operation"].isin(["read", "list"])].itertuples(index=False):
            method = "LIST" if row.operation == "list" else "GET"
            assert http.request(method, f"/{row.path}").is_success, row.path
        lost = generated.lost[generated.lost["capability"] == "read"]
        assert not lost.empty
        example = str(lost["example_path"].iloc[0])
        assert "read" not in _capabilities(server, token, example)
        assert http.get(f"/{example}").status_code == 403


def test_generalising_says_which_rule_stands_for_how_many_paths(review: Review) -> None:
    bob = review.generate("auth/userpass/users/bob", generalise_above=2)
    general = bob.rules[bob.rules["generalised"]]
    assert list(general["pattern"]) == ["secret/data/ops/+"]
    assert general["paths"].iloc[0] == 2
    assert "generalised from 2 path(s) under secret/data/ops/" in bob.hcl
    assert (
        not review.generate("auth/userpass/users/bob", generalise_above=3)
        .rules["generalised"]
        .any()
    )
    # secret/data/app/+ would reach secret/data/app/forbidden, which app-reader denies.
    alice = review.generate("auth/userpass/users/alice", generalise_above=4)
    assert not alice.rules["generalised"].any()
    refused = alice.proof["not_generalised"][0]
    assert refused.startswith("secret/data/app/+ (from 6 paths) not used")
    assert "secret/data/app/forbidden" in refused
    ci = review.generate("auth/approle/role/ci")
    kept = ci.rules.set_index("pattern").loc["secret/data/ci/config"]
    assert kept["kept_as_written"] and "allowed_parameters" in ci.hcl


def test_the_impact_of_a_tightened_policy_names_exactly_the_pairs_the_server_then_refuses(
    world: World, review: Review
) -> None:
    impact = review.impact({"app-reader": TIGHTENED}, recent_days=1)
    assert impact.attrs["flag"].startswith("DENIES RECENT USE")
    assert (impact["old_allowed"] & ~impact["new_allowed"]).all()  # only what changes
    predicted = {(str(r.principal), str(r.path), str(r.operation)) for r in impact.itertuples()}
    assert predicted
    server = world.server
    decisions = review.decisions()
    mine = decisions[decisions["principal"].isin(list(world.tokens)) & decisions["allowed"]]
    pairs = {(str(r.principal), str(r.path), str(r.operation)) for r in mine.itertuples()}
    with server.http() as root:
        _ok(root.put("/sys/policies/acl/app-reader", json={"policy": TIGHTENED}))
    try:
        refused = {
            (who, path, op)
            for who, path, op in pairs
            if op not in _capabilities(server, world.tokens[who], path)
        }
    finally:
        with server.http() as root:
            _ok(root.put("/sys/policies/acl/app-reader", json={"policy": APP_READER}))
    assert refused == predicted


def test_the_fleet_runs_the_least_privilege_runbook_on_an_audited_openbao(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_LP_TOKEN", world.server.token)
    targets = parse_targets(
        f"""
[[target]]
name = "audited"
kind = "secrets"
address = "{world.server.address}"
token_env = "FLEET_LP_TOKEN"
parameters = {{ audit_log = "{world.server.audit_log}", principals = ["auth/userpass/users/alice"] }}
"""
    )
    run = run_fleet(RUNBOOK, targets, tmp_path / "run", show_progress=False)
    (result,) = run.results
    assert result["status"] == "passed", result.get("error")
    summary = result["summary"]
    assert summary["requests"] >= 15 and summary["disagreements"] == 0
    assert summary["generated"] == 1
    evidence = tmp_path / "run" / "audited" / "evidence"
    assert any(evidence.glob("*generated*.csv"))
    with (tmp_path / "run" / "audited" / "15_least_privilege.ipynb").open("rb") as saved:
        assert world.server.token.encode() not in saved.read()
