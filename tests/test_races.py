"""Concurrent requests against the sandbox: every race ends in exactly one winner.

Each test fires its requests from many threads at once (released together by
a barrier) over real HTTP, then checks the state that results.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.token_roles import TokenRequest

JSONAPI = "application/vnd.api+json"


def race(
    record: Callable[[str, object], None],
    n: int,
    request: Callable[[httpx.Client, int], httpx.Response],
) -> list[httpx.Response]:
    """Run ``request(client, i)`` for i in 0..n-1 from n threads released at once."""
    record("tried:concurrent race requests", n)
    barrier = threading.Barrier(n)
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    with httpx.Client(timeout=60, limits=limits) as client:

        def one(i: int) -> httpx.Response:
            barrier.wait()
            return request(client, i)

        with ThreadPoolExecutor(n) as pool:
            answers = list(pool.map(one, range(n)))
    print(f"{n} concurrent requests: {dict(Counter(a.status_code for a in answers))}")
    return answers


def _v1(sandbox: Sandbox, token: str | None = None) -> dict[str, str]:
    return {"X-Vault-Token": token or sandbox.token}


def test_100_parallel_check_outs_of_10_accounts_lend_each_account_once(
    record_property: Callable[[str, object], None], sandbox: Sandbox
) -> None:
    directory = sandbox.secrets.mounts.engines["ad/"].backend
    accounts = [f"race-{i:02d}@corp.example" for i in range(10)]
    with sandbox.secrets.lock:
        for name in accounts:
            directory.add_account(name, f"CN={name.split('@')[0]},OU=Race,DC=corp,DC=example")
    made = httpx.post(
        f"{sandbox.address}/v1/ad/library/race",
        headers=_v1(sandbox),
        json={"service_account_names": accounts, "ttl": "1h", "max_ttl": "2h"},
    )
    assert made.status_code == 204, made.text
    # Every borrower has its own token, allowed to check out of this set.
    with sandbox.secrets.lock:
        sandbox.secrets.policies.put(
            "acl", "race-borrower", 'path "ad/library/race/*" { capabilities = ["update"] }'
        )
        tokens = [
            sandbox.secrets.tokens.create(
                sandbox.secrets.tokens.root, TokenRequest(policies=["race-borrower"])
            )[0].id
            for _ in range(100)
        ]
    answers = race(
        record_property,
        100,
        lambda client, i: client.post(
            f"{sandbox.address}/v1/ad/library/race/check-out", headers=_v1(sandbox, tokens[i])
        ),
    )
    granted = [a for a in answers if a.status_code == 200]
    assert len(granted) == 10
    assert all(a.status_code == 400 for a in answers if a.status_code != 200)
    lent = [a.json()["data"]["service_account_name"] for a in granted]
    assert sorted(lent) == sorted(accounts)  # each account to one borrower only
    status = httpx.get(f"{sandbox.address}/v1/ad/library/race/status", headers=_v1(sandbox)).json()
    assert not any(entry["available"] for entry in status["data"].values())


def test_parallel_rekey_updates_count_each_share_once_and_complete_once(
    record_property: Callable[[str, object], None], tmp_path: Path
) -> None:
    init_file = tmp_path / "init.json"
    with Sandbox(key_shares=5, key_threshold=3, init_file=str(init_file)) as sb:
        shares = json.loads(init_file.read_text())["keys"]
        started = httpx.put(
            f"{sb.address}/v1/sys/rekey/init", json={"secret_shares": 3, "secret_threshold": 2}
        ).json()
        nonce = started["nonce"]
        # 30 keyholder submissions at once: each of 5 shares sent 6 times.
        answers = race(
            record_property,
            30,
            lambda client, i: client.put(
                f"{sb.address}/v1/sys/rekey/update", json={"key": shares[i % 5], "nonce": nonce}
            ),
        )
        complete = [a for a in answers if a.status_code == 200 and a.json().get("complete")]
        assert len(complete) == 1
        assert len(complete[0].json()["keys"]) == 3
        # No attempt is left behind, and the new shares unseal.
        assert httpx.get(f"{sb.address}/v1/sys/rekey/init").json()["started"] is False
        new_shares = complete[0].json()["keys"]
        with sb.secrets.lock:
            sb.secrets.seal.seal()
        for share in new_shares[:2]:
            unsealed = httpx.put(f"{sb.address}/v1/sys/unseal", json={"key": share}).json()
        assert unsealed["sealed"] is False


def _platform(sandbox: Sandbox) -> dict[str, str]:
    return {"Authorization": f"Bearer {sandbox.token}", "Content-Type": JSONAPI}


def test_parallel_creates_of_one_pool_name_create_one_pool_within_the_limit(
    record_property: Callable[[str, object], None],
    sandbox: Sandbox,
) -> None:
    # initech has no pool yet in the demo data; the limit is one pool per organization.
    url = f"{sandbox.address}/api/v2/organizations/initech/agent-pools"
    before = httpx.get(url, headers=_platform(sandbox)).json()["data"]

    def create(client: httpx.Client, i: int) -> httpx.Response:
        name = "race-pool" if i % 2 == 0 else f"race-pool-{i}"
        body = {"data": {"type": "agent-pools", "attributes": {"name": name}}}
        return client.post(url, headers=_platform(sandbox), json=body)

    answers = race(record_property, 40, create)
    assert sum(a.status_code == 201 for a in answers) == (0 if before else 1)
    after = httpx.get(url, headers=_platform(sandbox)).json()["data"]
    assert len(after) == max(len(before), 1)  # the 1-pool-per-organization limit held
    assert all(a.status_code in (201, 422) for a in answers)


def test_parallel_creates_of_the_same_parameter_create_one(
    record_property: Callable[[str, object], None], sandbox: Sandbox
) -> None:
    headers = _platform(sandbox)
    policy_set = httpx.get(
        f"{sandbox.address}/api/v2/organizations/acme/policy-sets", headers=headers
    ).json()["data"][0]["id"]
    url = f"{sandbox.address}/api/v2/policy-sets/{policy_set}/parameters"
    body = {
        "data": {
            "type": "vars",
            "attributes": {"key": "race_key", "value": "v", "category": "policy-set"},
        }
    }
    answers = race(
        record_property, 30, lambda client, i: client.post(url, headers=headers, json=body)
    )
    assert sum(a.status_code == 201 for a in answers) == 1
    assert all(a.status_code in (201, 422) for a in answers)
    listed = httpx.get(url, headers=headers, params={"page[size]": 100}).json()["data"]
    assert [p["attributes"]["key"] for p in listed].count("race_key") == 1


def test_parallel_creates_of_the_same_team_access_create_one(
    record_property: Callable[[str, object], None], sandbox: Sandbox
) -> None:
    headers = _platform(sandbox)
    base = f"{sandbox.address}/api/v2"
    workspaces = httpx.get(f"{base}/organizations/acme/workspaces", headers=headers).json()["data"]
    teams = httpx.get(f"{base}/organizations/acme/teams", headers=headers).json()["data"]
    pair = _free_pair(base, headers, workspaces, teams)
    assert pair is not None, "the demo data has no workspace without some team"
    workspace, team = pair
    body = {
        "data": {
            "type": "team-workspaces",
            "attributes": {"access": "read"},
            "relationships": {
                "workspace": {"data": {"type": "workspaces", "id": workspace}},
                "team": {"data": {"type": "teams", "id": team}},
            },
        }
    }
    answers = race(
        record_property,
        30,
        lambda client, i: client.post(f"{base}/team-workspaces", headers=headers, json=body),
    )
    assert sum(a.status_code == 200 for a in answers) == 1  # the spec's status for a create
    assert all(a.status_code in (200, 422) for a in answers)
    listed = httpx.get(
        f"{base}/team-workspaces", headers=headers, params={"filter[workspace][id]": workspace}
    ).json()["data"]
    assert [r["relationships"]["team"]["data"]["id"] for r in listed].count(team) == 1


def _free_pair(
    base: str, headers: dict[str, str], workspaces: list[Any], teams: list[Any]
) -> tuple[str, str] | None:
    for workspace in workspaces:
        listed = httpx.get(
            f"{base}/team-workspaces",
            headers=headers,
            params={"filter[workspace][id]": workspace["id"]},
        ).json()["data"]
        taken = {r["relationships"]["team"]["data"]["id"] for r in listed}
        for team in teams:
            if team["id"] not in taken:
                return workspace["id"], team["id"]
    return None


def test_parallel_renew_and_revoke_of_one_lease_leave_it_revoked(
    record_property: Callable[[str, object], None], sandbox: Sandbox
) -> None:
    lease_id = _a_renewable_engine_lease(sandbox)

    def call(client: httpx.Client, i: int) -> httpx.Response:
        if i % 2:
            return client.put(
                f"{sandbox.address}/v1/sys/leases/renew",
                headers=_v1(sandbox),
                json={"lease_id": lease_id, "increment": 600},
            )
        return client.put(
            f"{sandbox.address}/v1/sys/leases/revoke",
            headers=_v1(sandbox),
            json={"lease_id": lease_id},
        )

    answers = race(record_property, 40, call)
    # 202: revoked (asynchronously, as sync is false); 204: nothing left to revoke.
    assert sum(a.status_code == 202 for a in answers) == 1
    assert all(a.status_code in (200, 202, 204, 400) for a in answers)
    # Renewals that came after a revoke found no lease; nothing brought it back.
    late = [a for a in answers if a.status_code == 400]
    assert all("lease not found" in a.json()["errors"][0] for a in late)
    looked = httpx.put(
        f"{sandbox.address}/v1/sys/leases/lookup", headers=_v1(sandbox), json={"lease_id": lease_id}
    )
    assert looked.status_code == 400 and looked.json()["errors"] == ["invalid lease"]


def _a_renewable_engine_lease(sandbox: Sandbox) -> str:
    answer = httpx.get(f"{sandbox.address}/v1/database/creds/readonly", headers=_v1(sandbox))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["renewable"] is True
    return str(body["lease_id"])
