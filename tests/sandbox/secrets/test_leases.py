"""Leases: the lease manager on the sandbox clock, and sys/leases/* over real HTTP."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest

from tests._demo_leases import (
    demo_lease_folders,
    engine_lease_ids,
    folder_of,
    irrevocable_folders,
)
from tests.sandbox.secrets._access_api import issue, put_acl, v1
from toolkit._time import parse_time
from toolkit.sandbox import Sandbox
from toolkit.sandbox._clock import Clock
from toolkit.sandbox.secrets.demo_leases import _ROLES, DEMO_LEASE_COUNT
from toolkit.sandbox.secrets.errors import InvalidRequest, SecretsError
from toolkit.sandbox.secrets.leases import Lease, LeaseStore, mount_of

START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def manager() -> LeaseStore:
    return LeaseStore(Clock(START))


def failing(reason: str) -> Callable[[Lease], None]:
    def on_revoke(lease: Lease) -> None:
        raise RuntimeError(reason)

    return on_revoke


# -- the lease manager, without a socket -------------------------------------------


def test_a_lease_id_is_the_path_prefix_and_a_random_suffix(manager: LeaseStore) -> None:
    lease = manager.create("database/creds/readonly", ttl=3600)
    prefix, _, suffix = lease.lease_id.rpartition("/")
    assert prefix == "database/creds/readonly"
    assert len(suffix) == 24
    assert lease.mount == "database/"
    assert mount_of("auth/token/create/abc") == "auth/token/"


def test_a_lease_expires_on_its_own_when_the_clock_passes_its_ttl(manager: LeaseStore) -> None:
    lease = manager.create("database/creds/readonly", ttl=60)
    manager._clock.advance(30)
    assert manager.get(lease.lease_id) is lease
    manager._clock.advance(31)
    assert manager.get(lease.lease_id) is None
    assert manager.lookup_prefix("database/") == []


def test_expiry_runs_the_engines_revocation_callback(manager: LeaseStore) -> None:
    revoked: list[str] = []
    lease = manager.create(
        "broker/creds/app", ttl=10, on_revoke=lambda le: revoked.append(le.lease_id)
    )
    manager._clock.advance(11)
    assert len(manager) == 0
    assert revoked == [lease.lease_id]


def test_a_lease_whose_revocation_fails_at_expiry_becomes_irrevocable(
    manager: LeaseStore,
) -> None:
    lease = manager.create("database/creds/app", ttl=10, on_revoke=failing("connection refused"))
    manager._clock.advance(11)
    assert manager.get(lease.lease_id) is lease
    assert lease.irrevocable and lease.revoke_error == "connection refused"
    assert manager.count_irrevocable() == ({"database/": 1}, 1)


def test_renewal_extends_from_now_and_records_the_renewal_time(manager: LeaseStore) -> None:
    lease = manager.create("database/creds/app", ttl=600, max_ttl=3600)
    manager._clock.advance(300)
    renewed = manager.renew(lease.lease_id, 900)
    assert renewed.last_renewal_time is not None
    assert 899 <= renewed.ttl(manager.now()) <= 900
    # The old expiry no longer applies: the lease outlives it.
    manager._clock.advance(400)
    assert manager.get(lease.lease_id) is lease


def test_renewal_without_an_increment_grants_the_original_ttl(manager: LeaseStore) -> None:
    lease = manager.create("database/creds/app", ttl=600, max_ttl=3600)
    manager._clock.advance(100)
    assert 599 <= manager.renew(lease.lease_id).ttl(manager.now()) <= 600


def test_renewal_is_capped_at_issue_time_plus_max_ttl(manager: LeaseStore) -> None:
    lease = manager.create("database/creds/app", ttl=600, max_ttl=1000)
    manager._clock.advance(500)
    manager.renew(lease.lease_id, 10_000)
    assert lease.expire_time == lease.max_expire_time
    assert 499 <= lease.ttl(manager.now()) <= 500


def test_a_lease_renewed_up_to_its_max_ttl_expires_there(manager: LeaseStore) -> None:
    lease = manager.create("database/creds/app", ttl=100, max_ttl=100)
    manager._clock.advance(50)
    manager.renew(lease.lease_id, 100)
    manager._clock.advance(51)
    with pytest.raises(SecretsError, match="lease not found"):
        manager.renew(lease.lease_id, 100)


def test_a_non_renewable_lease_refuses_renewal(manager: LeaseStore) -> None:
    lease = manager.create("pki/issue/web-server", ttl=600, renewable=False)
    with pytest.raises(SecretsError, match="not renewable") as info:
        manager.renew(lease.lease_id, 60)
    assert isinstance(info.value, InvalidRequest)


def test_the_ttl_at_creation_is_capped_by_max_ttl(manager: LeaseStore) -> None:
    lease = manager.create("database/creds/app", ttl=7200, max_ttl=3600)
    assert lease.ttl(manager.now()) <= 3600


def test_revoke_prefix_revokes_only_the_leases_under_the_folder(manager: LeaseStore) -> None:
    ro = [manager.create("database/creds/readonly", ttl=600) for _ in range(3)]
    app = manager.create("database/creds/app", ttl=600)
    other = manager.create("database/creds/readonly-extra", ttl=600)
    assert manager.revoke_prefix("database/creds/readonly") == 3
    assert all(manager.get(le.lease_id) is None for le in ro)
    assert manager.get(app.lease_id) is app
    assert manager.get(other.lease_id) is other


def test_revoke_prefix_naming_one_lease_revokes_that_lease(manager: LeaseStore) -> None:
    lease = manager.create("database/creds/readonly", ttl=600)
    assert manager.revoke_prefix(lease.lease_id) == 1
    assert manager.get(lease.lease_id) is None


def test_revoke_prefix_stops_at_a_failing_lease_and_keeps_it(manager: LeaseStore) -> None:
    bad = manager.create("database/creds/app", ttl=600, on_revoke=failing("db down"))
    with pytest.raises(SecretsError, match="db down"):
        manager.revoke_prefix("database/")
    assert manager.get(bad.lease_id) is bad and bad.irrevocable


def test_revoke_force_removes_leases_even_when_the_engine_fails(manager: LeaseStore) -> None:
    bad = manager.create("database/creds/app", ttl=600, on_revoke=failing("db down"))
    good = manager.create("database/creds/app", ttl=600)
    assert manager.revoke_force("database/creds/app") == 2
    assert manager.get(bad.lease_id) is None and manager.get(good.lease_id) is None
    assert manager.count_irrevocable() == ({}, 0)


def test_revoking_one_lease_reports_whether_there_was_one(manager: LeaseStore) -> None:
    lease = manager.create("broker/creds/app", ttl=600)
    assert manager.revoke(lease.lease_id) is True
    assert manager.revoke(lease.lease_id) is False


def test_tidy_revokes_the_leases_of_tokens_that_are_gone(manager: LeaseStore) -> None:
    kept = manager.create("database/creds/app", ttl=600, token="live-token")
    gone = manager.create("database/creds/app", ttl=600, token="dead-token")
    server = manager.create("database/creds/app", ttl=600)
    assert manager.tidy(lambda token: token == "live-token") == 1
    assert manager.get(gone.lease_id) is None
    assert manager.get(kept.lease_id) is kept and manager.get(server.lease_id) is server


def test_revoke_by_token_revokes_every_lease_of_that_token(manager: LeaseStore) -> None:
    for _ in range(3):
        manager.create("database/creds/app", ttl=600, token="t1")
    manager.create("database/creds/app", ttl=600, token="t2")
    assert manager.revoke_by_token("t1") == 3
    assert len(manager) == 1


def test_the_token_a_lease_was_issued_to_never_shows_in_its_repr(manager: LeaseStore) -> None:
    # Values no random lease id can contain (ids are letters and digits only).
    lease = manager.create(
        "database/creds/app", ttl=600, token="s.very-secret-token", data={"p": "pass-word!"}
    )
    assert "very-secret" not in repr(lease) and "pass-word!" not in repr(lease)


def test_lookup_prefix_lists_direct_children_with_folders_ending_in_a_slash(
    manager: LeaseStore,
) -> None:
    a = manager.create("database/creds/readonly", ttl=600, suffix="aaa")
    manager.create("database/creds/readonly/nested", ttl=600, suffix="bbb")
    assert manager.lookup_prefix("") == ["database/"]
    assert manager.lookup_prefix("database/creds") == ["readonly/"]
    assert manager.lookup_prefix("database/creds/readonly/") == ["aaa", "nested/"]
    manager.revoke(a.lease_id)
    assert manager.lookup_prefix("database/creds/readonly") == ["nested/"]


def test_irrevocable_leases_are_listed_by_mount_up_to_a_limit(manager: LeaseStore) -> None:
    for mount in ("database/creds/app", "broker/creds/app", "database/creds/ro"):
        manager.create(mount, ttl=1, on_revoke=failing("unreachable"))
    manager._clock.advance(2)
    leases, total = manager.list_irrevocable(limit=2)
    assert total == 3
    assert [le.mount for le in leases] == ["broker/", "database/"]
    assert len(manager.list_irrevocable()[0]) == 3


def test_expiry_examines_only_the_leases_that_are_due_not_all_leases(
    manager: LeaseStore,
) -> None:
    for _ in range(5000):
        manager.create("database/creds/long", ttl=86_400)
    due = [manager.create("database/creds/short", ttl=10) for _ in range(3)]
    manager._clock.advance(11)
    before = manager.examined
    assert manager.get(due[0].lease_id) is None
    # Three heap entries were due; the 5,000 long leases were never looked at.
    assert manager.examined - before == 3


def test_a_kept_listing_follows_every_lease_added_or_revoked_under_it(
    manager: LeaseStore,
) -> None:
    first = manager.create("database/creds/app", ttl=86_400, suffix="m")
    assert manager.lookup_prefix("database/creds/app/") == ["m"]
    assert manager.lookup_prefix("database/creds/") == ["app/"]
    manager.create("database/creds/app", ttl=86_400, suffix="a")
    manager.create("database/creds/app/m", ttl=86_400, suffix="x")  # "m" is a folder too now
    assert manager.lookup_prefix("database/creds/app/") == ["a", "m", "m/"]
    before = manager.examined
    manager.lookup_prefix("database/creds/app/")
    assert manager.examined - before == 3  # kept: only the path was walked again
    manager.revoke(first.lease_id)
    assert manager.lookup_prefix("database/creds/app/") == ["a", "m/"]
    manager.create("database/creds/short", ttl=10)
    assert manager.lookup_prefix("database/creds/") == ["app/", "short/"]
    manager._clock.advance(11)  # expiry revokes it, and the kept listing follows
    assert manager.lookup_prefix("database/creds/") == ["app/"]
    listed = manager.lookup_prefix("database/creds/")
    listed.append("changed by a caller")
    assert manager.lookup_prefix("database/creds/") == ["app/"]


def test_listing_a_prefix_touches_its_path_and_children_not_every_lease(
    manager: LeaseStore,
) -> None:
    for _ in range(3000):
        manager.create("database/creds/big", ttl=86_400)
    for _ in range(4):
        manager.create("broker/creds/small", ttl=86_400)
    before = manager.examined
    assert len(manager.lookup_prefix("broker/creds/small/")) == 4
    # Three path segments walked plus four children listed.
    assert manager.examined - before == 7
    before = manager.examined
    manager.revoke_prefix("broker/creds/small")
    assert manager.examined - before < 20


def test_renewals_do_not_grow_the_expiry_heap_without_bound(manager: LeaseStore) -> None:
    lease = manager.create("database/creds/app", ttl=600, max_ttl=10**9)
    for _ in range(1000):
        manager.renew(lease.lease_id, 600)
    assert len(manager._heap) < 100


# -- the demo data --------------------------------------------------------------------


def test_the_demo_set_has_three_thousand_live_leases_and_a_few_irrevocable() -> None:
    # A fresh load: the session-wide demo sandbox's clock runs, and its leases expire.
    leases = Sandbox().secrets.leases
    counts, total = leases.count_irrevocable()
    assert total == sum(irrevocable_folders().values()) == 6
    assert counts == dict(Counter(mount_of(f) for f in irrevocable_folders().elements()))
    assert set(counts) == {"database/", "broker/", "ad/"}
    assert Counter(folder_of(le) for le in leases.leases_under("")) == demo_lease_folders()
    engines = engine_lease_ids()
    assert all(leases.get(lease_id) is not None for lease_id in engines)
    bulk = [le for prefix, *_ in _ROLES for le in leases.leases_under(prefix + "/")]
    live = [le for le in bulk if not le.irrevocable and le.lease_id not in engines]
    assert len(live) == DEMO_LEASE_COUNT
    assert leases.lookup_prefix("") == ["ad/", "auth/", "broker/", "database/", "pki/"]


def test_the_demo_lease_ids_are_the_same_on_every_load() -> None:
    first = Sandbox().secrets.leases.lookup_prefix("database/creds/app/")
    second = Sandbox().secrets.leases.lookup_prefix("database/creds/app/")
    assert first == second and len(first) == demo_lease_folders()["database/creds/app"]


def test_demo_certificate_leases_are_not_renewable_and_some_leases_are_renewed(
    demo_sandbox: Sandbox,
) -> None:
    leases = demo_sandbox.secrets.leases
    certs = leases.leases_under("pki/issue/web-server")
    assert certs and not any(le.renewable for le in certs)
    renewed = [le for le in leases.leases_under("database/") if le.last_renewal_time]
    assert 100 < len(renewed) < 600


# -- sys/leases over HTTP -------------------------------------------------------------


def issue_lease(
    sandbox: Sandbox, prefix: str = "database/creds/readonly", **kwargs: object
) -> Lease:
    with sandbox.secrets.lock:
        return sandbox.secrets.leases.create(prefix, **{"ttl": 3600, **kwargs})  # type: ignore[arg-type]


def folder_names(prefix: str) -> list[str]:
    """The sorted folders right under ``prefix`` that the demo loaders issue leases in."""
    return sorted(
        {
            f.removeprefix(prefix).split("/")[0] + "/"
            for f in demo_lease_folders()
            if f.startswith(prefix)
        }
    )


def first_lease(client: httpx.Client, folder: str) -> str:
    keys = client.request("LIST", f"sys/leases/lookup/{folder}").json()["data"]["keys"]
    return folder + next(k for k in keys if not k.endswith("/"))


@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_lookup_answers_the_lease_fields_with_rfc3339_times(
    demo_api: httpx.Client, method: str
) -> None:
    lease_id = first_lease(demo_api, "database/creds/app/")
    response = demo_api.request(method, "sys/leases/lookup", json={"lease_id": lease_id})
    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == {"id", "issue_time", "expire_time", "last_renewal_time", "renewable", "ttl"}
    assert data["id"] == lease_id and data["renewable"] is True
    issued, expires = parse_time(data["issue_time"]), parse_time(data["expire_time"])
    assert issued is not None and expires is not None and issued < expires
    assert data["issue_time"].endswith("Z") and data["ttl"] > 0


def test_lookup_of_an_unknown_lease_is_400_invalid_lease(demo_api: httpx.Client) -> None:
    response = demo_api.post("sys/leases/lookup", json={"lease_id": "database/creds/app/nope"})
    assert response.status_code == 400
    assert response.json() == {"errors": ["invalid lease"]}


def test_lookup_without_a_lease_id_is_400_naming_the_field(demo_api: httpx.Client) -> None:
    response = demo_api.post("sys/leases/lookup", json={})
    assert response.status_code == 400
    assert "lease_id" in response.json()["errors"][0]


def test_an_expired_lease_is_gone_from_lookup(sandbox: Sandbox, api: httpx.Client) -> None:
    lease = issue_lease(sandbox, ttl=30)
    sandbox.clock.advance(31)
    response = api.post("sys/leases/lookup", json={"lease_id": lease.lease_id})
    assert response.status_code == 400


def test_a_renewed_lease_shows_its_last_renewal_time(sandbox: Sandbox, api: httpx.Client) -> None:
    lease = issue_lease(sandbox, max_ttl=86_400)
    assert (
        api.post("sys/leases/lookup", json={"lease_id": lease.lease_id}).json()["data"][
            "last_renewal_time"
        ]
        is None
    )
    api.put("sys/leases/renew", json={"lease_id": lease.lease_id, "increment": 60})
    data = api.post("sys/leases/lookup", json={"lease_id": lease.lease_id}).json()["data"]
    assert parse_time(data["last_renewal_time"]) is not None


@pytest.mark.parametrize("method", ["LIST", "GET"])
def test_listing_a_prefix_answers_direct_children_with_folders(
    demo_api: httpx.Client, method: str
) -> None:
    params = {"list": "true"} if method == "GET" else None
    response = demo_api.request(method, "sys/leases/lookup/database/creds/", params=params)
    assert response.status_code == 200
    assert response.json()["data"]["keys"] == folder_names("database/creds/")
    top = demo_api.request("LIST", "sys/leases/lookup/").json()["data"]["keys"]
    assert top == ["ad/", "auth/", "broker/", "database/", "pki/"]


def test_listing_a_prefix_without_a_trailing_slash_lists_the_folder(api: httpx.Client) -> None:
    # A fresh sandbox: no demo lease expires in its first two minutes.
    keys = api.request("LIST", "sys/leases/lookup/database/creds/app").json()["data"]["keys"]
    assert len(keys) == demo_lease_folders()["database/creds/app"]
    assert not any(key.endswith("/") for key in keys)


def test_listing_an_unknown_prefix_is_404_with_no_errors(demo_api: httpx.Client) -> None:
    response = demo_api.request("LIST", "sys/leases/lookup/nothing/here/")
    assert response.status_code == 404
    assert response.json() == {"errors": []}


def test_renew_answers_lease_id_renewable_and_duration_at_the_top(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    lease = issue_lease(sandbox, max_ttl=86_400)
    response = api.post("sys/leases/renew", json={"lease_id": lease.lease_id, "increment": "2h"})
    assert response.status_code == 200
    body = response.json()
    assert body["lease_id"] == lease.lease_id and body["renewable"] is True
    assert 7199 <= body["lease_duration"] <= 7200


def test_renew_takes_the_lease_id_from_the_path(sandbox: Sandbox, api: httpx.Client) -> None:
    lease = issue_lease(sandbox, max_ttl=86_400)
    response = api.put(f"sys/leases/renew/{lease.lease_id}", json={"increment": 120})
    assert response.status_code == 200 and response.json()["lease_id"] == lease.lease_id


def test_renew_prefers_the_body_lease_id_over_the_path(sandbox: Sandbox, api: httpx.Client) -> None:
    in_body = issue_lease(sandbox, max_ttl=86_400)
    response = api.put(
        "sys/leases/renew/database/creds/readonly/unknown", json={"lease_id": in_body.lease_id}
    )
    assert response.status_code == 200 and response.json()["lease_id"] == in_body.lease_id


def test_renew_beyond_max_ttl_is_capped_with_a_warning(sandbox: Sandbox, api: httpx.Client) -> None:
    lease = issue_lease(sandbox, ttl=600, max_ttl=1200)
    body = api.post(
        "sys/leases/renew", json={"lease_id": lease.lease_id, "increment": 100_000}
    ).json()
    assert body["lease_duration"] <= 1200
    assert "capped" in body["warnings"][0]


def test_renew_of_an_unknown_lease_is_400_lease_not_found(demo_api: httpx.Client) -> None:
    response = demo_api.post("sys/leases/renew", json={"lease_id": "database/creds/app/nope"})
    assert response.status_code == 400
    assert response.json() == {"errors": ["lease not found"]}


def test_renew_of_a_certificate_lease_is_400_not_renewable(demo_api: httpx.Client) -> None:
    lease_id = first_lease(demo_api, "pki/issue/web-server/")
    response = demo_api.post("sys/leases/renew", json={"lease_id": lease_id})
    assert response.status_code == 400
    assert "not renewable" in response.json()["errors"][0]


def test_renew_with_a_bad_increment_is_400_naming_it(sandbox: Sandbox, api: httpx.Client) -> None:
    lease = issue_lease(sandbox)
    before = lease.expire_time
    response = api.post("sys/leases/renew", json={"lease_id": lease.lease_id, "increment": "soon"})
    assert response.status_code == 400
    assert "increment" in response.json()["errors"][0]
    assert lease.expire_time == before and lease.last_renewal_time is None


def test_revoke_with_sync_revokes_now_and_answers_204(sandbox: Sandbox, api: httpx.Client) -> None:
    lease = issue_lease(sandbox)
    response = api.put("sys/leases/revoke", json={"lease_id": lease.lease_id, "sync": True})
    assert response.status_code == 204
    assert api.post("sys/leases/lookup", json={"lease_id": lease.lease_id}).status_code == 400


def test_revoke_without_sync_is_accepted_and_already_done(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    lease = issue_lease(sandbox)
    assert api.post(f"sys/leases/revoke/{lease.lease_id}").status_code == 202
    assert api.post("sys/leases/lookup", json={"lease_id": lease.lease_id}).status_code == 400


def test_revoke_of_an_unknown_lease_is_204(api: httpx.Client) -> None:
    response = api.post("sys/leases/revoke", json={"lease_id": "database/creds/app/nope"})
    assert response.status_code == 204


def test_revoke_with_a_non_boolean_sync_is_400_and_revokes_nothing(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    lease = issue_lease(sandbox)
    response = api.post("sys/leases/revoke", json={"lease_id": lease.lease_id, "sync": "maybe"})
    assert response.status_code == 400 and "sync" in response.json()["errors"][0]
    assert sandbox.secrets.leases.get(lease.lease_id) is lease


def test_revoke_prefix_revokes_every_lease_under_it(sandbox: Sandbox, api: httpx.Client) -> None:
    response = api.post("sys/leases/revoke-prefix/database/creds/reporting", json={"sync": True})
    assert response.status_code == 204
    listing = api.request("LIST", "sys/leases/lookup/database/creds/reporting/")
    assert listing.status_code == 404
    remaining = api.request("LIST", "sys/leases/lookup/database/creds/").json()["data"]["keys"]
    assert remaining == [f for f in folder_names("database/creds/") if f != "reporting/"]


def test_revoke_prefix_ending_in_a_slash_is_400(sandbox: Sandbox, api: httpx.Client) -> None:
    response = api.put("sys/leases/revoke-prefix/database/creds/reporting/")
    assert response.status_code == 400
    assert "/" in response.json()["errors"][0]
    reporting = sandbox.secrets.leases.leases_under("database/creds/reporting")
    assert len(reporting) == demo_lease_folders()["database/creds/reporting"]


def test_revoke_prefix_stops_with_400_on_an_irrevocable_lease(api: httpx.Client) -> None:
    response = api.post("sys/leases/revoke-prefix/database/creds/app", json={"sync": True})
    assert response.status_code == 400
    assert "connection refused" in response.json()["errors"][0]


def test_revoke_force_also_removes_irrevocable_leases(sandbox: Sandbox, api: httpx.Client) -> None:
    assert api.post("sys/leases/revoke-force/database/").status_code == 204
    assert api.request("LIST", "sys/leases/lookup/database/").status_code == 404
    counts = api.get("sys/leases/count", params={"type": "irrevocable"}).json()["data"]
    assert "database/" not in counts["counts"] and counts["lease_count"] == 3


def test_the_legacy_revoke_alias_revokes_too(sandbox: Sandbox, api: httpx.Client) -> None:
    lease = issue_lease(sandbox)
    assert api.put(f"sys/revoke/{lease.lease_id}", json={"sync": True}).status_code == 204
    assert sandbox.secrets.leases.get(lease.lease_id) is None


def test_the_legacy_renew_alias_renews_too(sandbox: Sandbox, api: httpx.Client) -> None:
    lease = issue_lease(sandbox, max_ttl=86_400)
    response = api.put("sys/renew", json={"lease_id": lease.lease_id, "increment": 60})
    assert response.status_code == 200 and lease.last_renewal_time is not None


def test_a_token_lease_cannot_be_renewed_through_the_lease_endpoint(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    token = sandbox.secrets.tokens.get("demo-operator-token")
    assert token is not None
    before = api.post("sys/leases/lookup", json={"lease_id": token.lease_id}).json()["data"]
    response = api.post("sys/leases/renew", json={"lease_id": token.lease_id})
    assert response.status_code == 400
    assert response.json() == {"errors": ["tokens cannot be renewed through this endpoint"]}
    after = api.post("sys/leases/lookup", json={"lease_id": token.lease_id}).json()["data"]
    assert after == {**before, "ttl": after["ttl"]}


def test_revoking_a_token_lease_revokes_the_token(sandbox: Sandbox, api: httpx.Client) -> None:
    token = sandbox.secrets.tokens.get("demo-operator-token")
    assert token is not None
    response = api.put("sys/leases/revoke", json={"lease_id": token.lease_id, "sync": True})
    assert response.status_code == 204
    denied = api.get(
        "sys/leases/count",
        params={"type": "irrevocable"},
        headers={"X-Vault-Token": "demo-operator-token"},
    )
    assert denied.status_code == 403


def test_tidy_answers_202_with_a_warning_and_revokes_dangling_leases(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    dangling = issue_lease(sandbox, token="s.token-that-never-existed")
    owned = issue_lease(sandbox, token=sandbox.token)
    response = api.post("sys/leases/tidy")
    assert response.status_code == 202
    assert response.json()["warnings"]
    assert sandbox.secrets.leases.get(dangling.lease_id) is None
    assert sandbox.secrets.leases.get(owned.lease_id) is owned


def test_count_answers_irrevocable_leases_per_mount(demo_api: httpx.Client) -> None:
    response = demo_api.get("sys/leases/count", params={"type": "irrevocable"})
    assert response.status_code == 200
    assert response.json()["data"] == {
        "counts": {"ad/": 1, "broker/": 2, "database/": 3},
        "lease_count": 6,
    }


@pytest.mark.parametrize("params", [{}, {"type": "all"}])
def test_count_needs_the_irrevocable_type(demo_api: httpx.Client, params: dict[str, str]) -> None:
    response = demo_api.get("sys/leases/count", params=params)
    assert response.status_code == 400
    assert "irrevocable" in response.json()["errors"][0]


def test_count_accepts_include_child_namespaces(demo_api: httpx.Client) -> None:
    params = {"type": "irrevocable", "include_child_namespaces": "true"}
    assert demo_api.get("sys/leases/count", params=params).status_code == 200


def test_the_lease_list_shows_each_irrevocable_lease_with_its_error(demo_api: httpx.Client) -> None:
    response = demo_api.get("sys/leases", params={"type": "irrevocable"})
    assert response.status_code == 200
    body = response.json()
    assert body["warnings"] is None
    data = body["data"]
    assert data["lease_count"] == 6 and len(data["leases"]) == 6
    row = data["leases"][0]
    assert set(row) == {"lease_id", "mount_id", "expire_time", "error"}
    assert row["mount_id"] == "ad/" and "invalid credentials" in row["error"]


def test_a_numeric_limit_caps_the_list_and_warns(demo_api: httpx.Client) -> None:
    body = demo_api.get("sys/leases", params={"type": "irrevocable", "limit": "2"}).json()
    assert len(body["data"]["leases"]) == 2 and body["data"]["lease_count"] == 6
    assert "6" in body["warnings"][0]


def test_limit_none_returns_every_lease(demo_api: httpx.Client) -> None:
    body = demo_api.get("sys/leases", params={"type": "irrevocable", "limit": "none"}).json()
    assert len(body["data"]["leases"]) == 6 and body["warnings"] is None


@pytest.mark.slow  # it makes ten thousand leases
def test_the_default_limit_is_ten_thousand_with_a_warning_beyond(empty_sandbox: Sandbox) -> None:
    leases = empty_sandbox.secrets.leases
    with empty_sandbox.secrets.lock:
        for _ in range(10_001):
            leases.create("database/creds/app", ttl=1, on_revoke=failing("down"))
    empty_sandbox.clock.advance(2)
    with v1(empty_sandbox) as client:
        body = client.get("sys/leases", params={"type": "irrevocable"}).json()
    assert len(body["data"]["leases"]) == 10_000 and body["data"]["lease_count"] == 10_001
    assert body["warnings"]


@pytest.mark.parametrize("limit", ["0", "-3", "lots"])
def test_a_bad_limit_is_400_naming_it(demo_api: httpx.Client, limit: str) -> None:
    response = demo_api.get("sys/leases", params={"type": "irrevocable", "limit": limit})
    assert response.status_code == 400 and "limit" in response.json()["errors"][0]


def test_the_lease_endpoints_are_restricted_to_the_root_namespace(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    with sandbox.secrets.lock:
        sandbox.secrets.namespaces.create("", "team-a")
    response = api.get(
        "sys/leases/count", params={"type": "irrevocable"}, headers={"X-Vault-Namespace": "team-a"}
    )
    assert response.status_code == 403 and "restricted" in response.json()["errors"][0]


def test_listing_and_prefix_revocation_need_sudo(sandbox: Sandbox, api: httpx.Client) -> None:
    put_acl(api, "lease-ops", 'path "sys/leases/*" { capabilities = ["read", "update", "list"] }')
    headers = {"X-Vault-Token": issue(api, policies=["lease-ops"])}
    lease = issue_lease(sandbox)
    looked = api.post("sys/leases/lookup", json={"lease_id": lease.lease_id}, headers=headers)
    assert looked.status_code == 200
    listing = api.request("LIST", "sys/leases/lookup/database/", headers=headers)
    assert listing.status_code == 403
    revoked = api.post("sys/leases/revoke-prefix/database/creds/readonly", headers=headers)
    assert revoked.status_code == 403
    assert sandbox.secrets.leases.get(lease.lease_id) is lease
