"""The toolkit's lease calls and views on a real OpenBao, with thousands of real leases:
tokens, and database credentials of a real PostgreSQL."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from tests.real import _seed
from tests.servers.openbao import OpenBao
from tests.servers.postgres import Postgres
from toolkit import APIError, InputError
from toolkit.secrets import SecretsClient
from toolkit.secrets.leases import LEASES, lease_summary

BULK = 2000
ROLE = "bulk"
PREFIX = f"auth/token/create/{ROLE}/"
DB_BULK = 1000
DB_ROLE = "bulk-db"
_counter = itertools.count()


@pytest.fixture(scope="module")
def bulk_tokens(bao: OpenBao) -> list[str]:
    """Thousands of real token leases, ttls 3600 s to 3600 s + BULK, made once for the module."""
    return _seed.tokens(bao, ROLE, BULK)


@pytest.fixture(scope="module")
def bulk_credentials(bao: OpenBao, database_mount: str) -> list[dict[str, Any]]:
    """A thousand real database credentials (each a real PostgreSQL login), made once."""
    _seed.dynamic_role(bao, database_mount, "pg", DB_ROLE)
    return _seed.read_many(bao, f"{database_mount}/creds/{DB_ROLE}", DB_BULK)


@pytest.fixture
def few(bao: OpenBao) -> tuple[str, list[str]]:
    """A prefix of its own (no trailing ``/``) with five token leases, for a test that revokes."""
    role = f"few{next(_counter)}"
    return f"auth/token/create/{role}", _seed.tokens(bao, role, 5)


@pytest.fixture
def few_credentials(bao: OpenBao, database_mount: str) -> tuple[str, list[dict[str, Any]]]:
    """A prefix of its own with five database credentials."""
    role = f"few-db{next(_counter)}"
    _seed.dynamic_role(bao, database_mount, "pg", role)
    return f"{database_mount}/creds/{role}", _seed.read_many(
        bao, f"{database_mount}/creds/{role}", 5
    )


def token_works(bao: OpenBao, token: str) -> bool:
    with bao.http(token) as http:
        return http.get("auth/token/lookup-self").status_code == 200


def test_leases_by_mount_walks_thousands_of_real_leases_with_real_dtypes(
    bao: OpenBao,
    bao_client: SecretsClient,
    bulk_tokens: list[str],
    bulk_credentials: list[dict[str, Any]],
) -> None:
    started = datetime.now(UTC)
    frame = bao_client.leases.leases_by_mount(mounts=["auth/token/", "database/"])
    credentials = frame[frame.index.str.startswith(f"database/creds/{DB_ROLE}/")]
    assert set(credentials.index) == {c["lease_id"] for c in bulk_credentials}
    assert set(credentials["mount"]) == {"database/"} and set(credentials["role"]) == {DB_ROLE}
    assert credentials["ttl"].between(3600 - 300, 3600).all()
    bulk = frame[frame.index.str.startswith(PREFIX)]
    listed = {PREFIX + key for key in _seed.lease_keys(bao, PREFIX)}
    assert set(bulk.index) == listed and len(listed) >= BULK - 100
    assert (
        list(frame.columns) == [c for c in LEASES.names if c != "lease_id"]
        and frame.index.name == "lease_id"
    )
    assert str(frame["issue_time"].dtype) == "datetime64[ns, UTC]"
    assert str(frame["ttl"].dtype) == "Int64" and str(frame["renewable"].dtype) == "boolean"
    assert set(bulk["mount"]) == {"auth/token/"} and set(bulk["role"]) == {ROLE}
    assert bulk["renewable"].all() and bulk["last_renewal_time"].isna().all()
    assert bulk["ttl"].between(3600 - 300, 3600 + BULK).all()
    assert (bulk["issue_time"] <= pd.Timestamp(started + timedelta(seconds=5))).all()
    lifetime = (bulk["expire_time"] - bulk["issue_time"]).dt.total_seconds()
    assert lifetime.between(3600 - 1, 3600 + BULK + 1).all()
    # Sorted by mount, then expiry.
    assert bulk["expire_time"].is_monotonic_increasing
    assert list(frame["mount"].unique()) == ["auth/token/", "database/"]


def test_the_whole_tree_and_a_prefix_give_the_same_leases(
    bao_client: SecretsClient, bulk_tokens: list[str]
) -> None:
    everything = bao_client.leases.leases_by_mount()
    under = bao_client.leases.leases_by_mount(prefix=PREFIX)
    assert set(under.index) <= set(everything.index)
    assert set(under.index) == set(everything.index[everything.index.str.startswith(PREFIX)])
    ids = bao_client.leases.list_lease_ids(PREFIX)
    assert sorted(ids) == sorted(under.index)
    assert set(bao_client.leases.list_leases("auth/token/create")) >= {f"{ROLE}/"}


def test_lease_summary_counts_the_real_leases_per_mount(
    bao_client: SecretsClient, bulk_tokens: list[str]
) -> None:
    frame = bao_client.leases.leases_by_mount(prefix=PREFIX)
    summary = lease_summary(frame)
    row = summary.loc["auth/token/"]
    assert row["count"] == len(frame)
    assert row["expiring_1h"] == int((frame["ttl"] <= 3600).sum())
    assert row["expiring_24h"] == len(frame)
    assert row["min_ttl"] == frame["ttl"].min()


def test_lookup_renew_and_the_renewal_time(
    bao_client: SecretsClient, few_credentials: tuple[str, list[dict[str, Any]]]
) -> None:
    lease_id = few_credentials[1][0]["lease_id"]
    before = bao_client.leases.lookup(lease_id)
    assert before["lease_id"] == lease_id and before["renewable"] is True
    assert before["last_renewal_time"] is None
    assert before["issue_time"] < before["expire_time"]

    renewed = bao_client.leases.renew(lease_id, 600)
    assert renewed["lease_id"] == lease_id and renewed["renewable"] is True
    assert renewed["lease_duration"] == 600
    after = bao_client.leases.lookup(lease_id)
    # The real server calls it last_renewal; the client reads it as last_renewal_time.
    assert after["last_renewal_time"] is not None
    assert after["last_renewal_time"] >= before["issue_time"]
    assert 590 <= after["ttl"] <= 600


def test_a_renewal_past_the_roles_max_ttl_brings_the_real_servers_capping_warning(
    bao_client: SecretsClient, few_credentials: tuple[str, list[dict[str, Any]]]
) -> None:
    # The role's max_ttl is 24 h (_seed.dynamic_role): asking two days is capped, with a warning.
    first, second = (c["lease_id"] for c in few_credentials[1][:2])
    capped = bao_client.leases.renew(first, 2 * 86400)
    assert capped["lease_duration"] <= 86400
    assert len(capped["warnings"]) == 1 and "capped" in capped["warnings"][0]
    done = bao_client.leases.renew_leases([second], 2 * 86400, dry_run=False, show_progress=False)
    assert "exceeded the effective max_ttl" in str(done.loc[second, "detail"])


def test_bulk_renew_and_revoke_report_each_lease_and_a_dry_run_sends_nothing(
    postgres: Postgres,
    bao_client: SecretsClient,
    few_credentials: tuple[str, list[dict[str, Any]]],
) -> None:
    prefix, credentials = few_credentials
    users = [c["data"]["username"] for c in credentials]
    ids = bao_client.leases.list_lease_ids(prefix)
    assert sorted(ids) == sorted(c["lease_id"] for c in credentials)
    dry = bao_client.leases.revoke_leases(ids)
    assert list(dry.columns) == ["action", "detail"]
    assert set(dry["action"]) == {"would revoke"} and set(users) <= postgres.roles()

    renewed = bao_client.leases.renew_leases(ids, 900, dry_run=False, show_progress=False)
    assert set(renewed["action"]) == {"renewed"}
    assert set(renewed["detail"]) == {"lease_duration 900s"}

    unknown = prefix + "no-such-lease"
    revoked = bao_client.leases.revoke_leases(
        [*ids[:3], unknown], dry_run=False, show_progress=False
    )
    assert set(revoked["action"]) == {"revoked"}  # revoking an unknown lease is a no-op
    assert sorted(bao_client.leases.list_lease_ids(prefix)) == sorted(ids[3:])
    # Revoking a credential's lease drops its PostgreSQL user.
    gone = {c["data"]["username"] for c in credentials if c["lease_id"] in ids[:3]}
    assert len(gone) == 3 and not gone & postgres.roles()
    assert set(users) - gone <= postgres.roles()
    # Looking up revoked leases leaves them out of the frame.
    assert sorted(bao_client.leases.lookup_leases(ids).index) == sorted(ids[3:])


def test_revoke_prefix_revokes_every_lease_and_token_under_it(
    bao: OpenBao, bao_client: SecretsClient, few: tuple[str, list[str]]
) -> None:
    prefix, tokens = few
    bao_client.leases.revoke_prefix(prefix)
    assert bao_client.leases.list_lease_ids(prefix) == []
    assert not any(token_works(bao, t) for t in tokens)


def test_revoke_force_revokes_every_lease_under_the_prefix(
    bao: OpenBao, bao_client: SecretsClient, few: tuple[str, list[str]]
) -> None:
    prefix, tokens = few
    bao_client.leases.revoke_force(prefix)
    assert bao_client.leases.list_lease_ids(prefix) == []
    assert not any(token_works(bao, t) for t in tokens)


def test_the_real_servers_errors_for_unknown_leases(bao_client: SecretsClient) -> None:
    with pytest.raises(APIError) as lookup:
        bao_client.leases.lookup("auth/token/create/nope/unknown")
    assert (lookup.value.status, lookup.value.message) == (400, "invalid lease")
    with pytest.raises(APIError) as renew:
        bao_client.leases.renew("auth/token/create/nope/unknown")
    assert (renew.value.status, renew.value.message) == (400, "lease not found")
    bao_client.leases.revoke("auth/token/create/nope/unknown")  # 204: nothing to do
    with pytest.raises(InputError):
        bao_client.leases.revoke_prefix("/")


def test_the_real_server_renews_tokens_only_through_the_token_endpoints(
    bao_client: SecretsClient, few: tuple[str, list[str]]
) -> None:
    lease_id = bao_client.leases.list_lease_ids(few[0])[0]
    with pytest.raises(APIError) as renew:
        bao_client.leases.renew(lease_id, 60)
    assert (renew.value.status, renew.value.message) == (
        400,
        "tokens cannot be renewed through this endpoint",
    )


def test_tidy_counts_and_irrevocable_leases(
    bao_client: SecretsClient, bulk_tokens: list[str]
) -> None:
    warnings = bao_client.leases.tidy()
    assert any("tidy" in w.lower() for w in warnings), warnings
    counts = bao_client.leases.count_irrevocable()
    assert counts["lease_count"] == 0 and counts["counts"] == {}
    irrevocable = bao_client.leases.irrevocable_frame()
    assert irrevocable.empty and list(irrevocable.columns) == ["mount", "expire_time", "error"]
    assert irrevocable.attrs["lease_count"] == 0
    assert str(irrevocable["expire_time"].dtype) == "datetime64[ns, UTC]"


def test_the_revoke_form_previews_and_revokes_a_prefix_on_the_real_server(
    bao: OpenBao, bao_client: SecretsClient, few: tuple[str, list[str]]
) -> None:
    from widgets import LeaseRevokeForm

    prefix, tokens = few
    form = LeaseRevokeForm(bao_client)
    form.mode.value = "prefix"
    form.prefix.value = prefix.rstrip("/")
    form.preview_button.click()
    assert "5 lease(s) under" in form.status_text, form.status_text
    form.confirm.value = prefix.rstrip("/")
    form.revoke_button.click()
    assert bao_client.leases.list_lease_ids(prefix) == [], form.status_text
    assert not any(token_works(bao, t) for t in tokens)
