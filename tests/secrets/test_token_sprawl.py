"""Token sprawl: the accessor inventory at scale, streamed and resumable, and its summaries."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from toolkit import PermissionDenied
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.checkpoint import WalkInterrupted
from toolkit.secrets.tokens.sprawl import policies_carried, token_sprawl, widest_access

COUNT = 300


@pytest.fixture(scope="module")
def tokens_sandbox() -> Iterator[Sandbox]:
    with Sandbox(demo=False, demo_scale={"tokens": COUNT}) as sb:
        yield sb


@pytest.fixture
def bao(tokens_sandbox: Sandbox) -> Iterator[SecretsClient]:
    with SecretsClient(tokens_sandbox.address, tokens_sandbox.token) as client:
        yield client


def test_the_chunked_scan_matches_the_inventory_and_sums_up_the_sprawl(
    bao: SecretsClient,
) -> None:
    inventory = bao.tokens.inventory()
    scan = bao.tokens.scan(chunk=64, max_rows=100)  # spooled to Parquet past 100 rows
    frame = scan.frame()
    assert scan.spool.spooled and sorted(frame.index) == sorted(inventory.index)
    sprawl = token_sprawl(scan, max_age=timedelta(days=0))
    assert sprawl.equals(token_sprawl(inventory, now=scan.now, max_age=timedelta(days=0)))
    assert sprawl.loc["root", "tokens"] == COUNT // 100 + 1  # and the sandbox's own root
    assert sprawl.loc["never expires", "tokens"] == COUNT // 50 + 1
    assert sprawl.loc["path: auth/approle/login", "tokens"] == COUNT // 4
    carried = policies_carried(scan)
    assert carried.loc["default", "tokens"] == COUNT - COUNT // 100
    widest = widest_access(scan)
    assert widest.loc[0, "policies"] == "root" and widest["breadth"].isna().sum() == 20 - 1
    ranked = widest_access(scan, breadth=lambda p: len(p))
    assert ranked["breadth"].notna().all()


def test_an_interrupted_token_scan_resumes_after_the_last_accessor(
    bao: SecretsClient, tmp_path: Path
) -> None:
    point = tmp_path / "tokens.json"
    with pytest.raises(WalkInterrupted, match="100 tokens looked up"):
        bao.tokens.scan(chunk=100, checkpoint=point, deadline=0)
    lookups: list[str] = []
    bao.http.response_hooks.append(lambda r: lookups.append(r.url) if r.method == "POST" else None)
    scan = bao.tokens.scan(chunk=100, checkpoint=point)
    assert scan.frame().index.is_unique and scan.tokens == COUNT + 1
    assert len(lookups) == COUNT + 1 - 100


def test_a_token_without_sudo_is_refused_rather_than_shown_no_tokens(
    tokens_sandbox: Sandbox, bao: SecretsClient
) -> None:
    answer = bao.http.json("POST", "/auth/token/create", json={"policies": ["default"]})
    narrow = SecretsClient(tokens_sandbox.address, answer["auth"]["client_token"])
    with narrow, pytest.raises(PermissionDenied):
        narrow.tokens.token_sprawl()


def test_lookups_refused_one_by_one_are_gaps_in_the_coverage(
    tokens_sandbox: Sandbox, bao: SecretsClient
) -> None:
    rules = 'path "auth/token/accessors" { capabilities = ["list", "sudo"] }'
    bao.policies.write("acl", "list-accessors-only", rules)
    body = {"policies": ["list-accessors-only"], "no_default_policy": True}
    answer = bao.http.json("POST", "/auth/token/create", json=body)
    lister = SecretsClient(tokens_sandbox.address, answer["auth"]["client_token"])
    with lister:
        scan = lister.tokens.scan(chunk=500)
    coverage = scan.frame().attrs["coverage"]
    assert scan.tokens == 0 and not coverage["complete"]
    assert len(coverage["gaps"]) >= COUNT and {g["status"] for g in coverage["gaps"]} == {403}


def test_the_widest_policy_sets_by_the_access_evaluator(bao: SecretsClient) -> None:
    bao.policies.write(
        "acl", "scale-policy-0003", 'path "sys/*" { capabilities = ["sudo", "read"] }'
    )
    widest = widest_access(bao.tokens.scan(), breadth=lambda p: len(bao.access.can(list(p))))
    assert widest.loc[0, "policies"] == "root"
    assert widest.loc[1, "policies"] == "default, scale-policy-0003"
    assert widest["breadth"].iloc[1:].is_monotonic_decreasing


def test_orphans_and_tokens_past_the_maximum_age_are_counted_exactly(
    empty_sandbox: Sandbox,
) -> None:
    """Tokens of known orphan-ness and age: the counts are checked against them, not
    against another path through the same summary."""
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as bao:

        def create(*, orphan: bool) -> None:
            body = {"policies": ["default"], "no_parent": orphan}
            bao.http.json("POST", "/auth/token/create", json=body)

        # Old (with the sandbox's root token, also an orphan): 1 orphan and 3 children.
        create(orphan=True)
        for _ in range(3):
            create(orphan=False)
        empty_sandbox.clock.advance(20 * 86400)  # within the default 32-day TTL
        # New: 2 orphans and 2 children (no two counts, nor their complements, are equal).
        for orphan in (True, True, False, False):
            create(orphan=orphan)
        scan = bao.tokens.scan()
    assert scan.tokens == 1 + 4 + 4
    sprawl = token_sprawl(scan, max_age=timedelta(days=10))
    assert sprawl.loc["orphan", "tokens"] == 1 + 1 + 2
    assert sprawl.loc["older than 10 days", "tokens"] == 1 + 4
    assert sprawl.loc["older than 10 days", "share"] == 5 / 9
    younger = token_sprawl(scan, max_age=timedelta(days=21))
    assert younger.loc["older than 21 days", "tokens"] == 0
