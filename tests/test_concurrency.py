"""The concurrent paths against real sandboxes: order, coverage, failures part-way, 429s.

The views fan out with ``HTTPLayer.many`` (pages, lease lookups) and
``HTTPLayer.map`` (the thread pool, for client calls); these tests hold both to
giving exactly what a one-at-a-time walk gives, and to stopping and backing off
as they should. ``tests/_http/test_fan_out.py`` holds ``many`` to the cases a
scripted server produces.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests._sockets import Threaded
from toolkit import NotFound, PlatformClient, RetryPolicy, SecretsClient
from toolkit._http import HTTPLayer, Response
from toolkit.sandbox import Sandbox

STATUSES = ("idle", "busy", "exited", "errored", "unknown")


def fill_pool(sandbox: Sandbox, name: str, agents: int, organization: str = "acme") -> str:
    """A new pool of ``agents`` agents with names in creation order."""
    service = sandbox.platform
    pool_id = service.add_pool(organization, name)
    for i in range(agents):
        service.add_agent(
            pool_id,
            name=f"{name}-{i:04d}",
            status=STATUSES[i % len(STATUSES)],
            ip_address=f"10.1.{i // 256}.{i % 256}",
        )
    return pool_id


@pytest.fixture
def big_pools() -> Iterator[tuple[Sandbox, list[str]]]:
    """A sandbox allowing three pools per organization, two of them big (several pages)."""
    with Sandbox(demo=True, pool_limit=3) as sandbox:
        ids = [fill_pool(sandbox, "big-a", 430), fill_pool(sandbox, "big-b", 215)]
        yield sandbox, ids


def statuses_seen(http: HTTPLayer) -> list[int]:
    seen: list[int] = []
    lock = threading.Lock()

    def note(response: Response) -> None:
        with lock:
            seen.append(response.status_code)

    http.response_hooks.append(note)
    return seen


def test_concurrent_pages_give_every_agent_once_in_server_order(big_pools):
    sandbox, (pool_a, _) = big_pools
    with (
        PlatformClient(sandbox.address, sandbox.token, max_concurrency=8) as fast,
        PlatformClient(sandbox.address, sandbox.token, max_concurrency=1) as slow,
    ):
        concurrent = fast.agent_pools.agents_frame(pool_a)
        sequential = slow.agent_pools.agents_frame(pool_a)
    assert len(concurrent) == 430
    assert concurrent.index.is_unique
    assert list(concurrent.index) == list(sequential.index)
    assert list(concurrent["name"]) == [f"big-a-{i:04d}" for i in range(430)]


def test_agents_by_status_over_several_big_pools_counts_every_agent(big_pools):
    sandbox, (pool_a, pool_b) = big_pools
    with PlatformClient(sandbox.address, sandbox.token, max_concurrency=4) as client:
        counts = client.agent_pools.agents_by_status("acme")
    # Pools of several pages each, fetched from inside the pool fan-out: the
    # nested fan-out runs inline instead of waiting for the pool's own threads.
    assert counts.loc[pool_a, "total"] == 430
    assert counts.loc[pool_b, "total"] == 215
    assert counts.loc[pool_a, "idle"] == 86
    assert counts.loc[pool_b, "unknown"] == 43


def test_map_keeps_order_and_misses_nothing_over_many_reads(demo_sandbox: Sandbox):
    http = HTTPLayer(
        demo_sandbox.address,
        "/api/v2",
        headers={"Authorization": f"Bearer {demo_sandbox.token}"},
        max_concurrency=6,
    )
    names = ["acme", "globex", "initech"] * 40
    got = list(http.map(lambda n: http.json("GET", f"/organizations/{n}")["data"]["id"], names))
    http.close()
    assert got == names


def test_a_failure_part_way_raises_after_the_results_before_it_and_stops_the_rest(
    demo_sandbox: Sandbox,
):
    http = HTTPLayer(
        demo_sandbox.address,
        "/api/v2",
        headers={"Authorization": f"Bearer {demo_sandbox.token}"},
        max_concurrency=4,
        retry=RetryPolicy(attempts=1),
    )
    seen = statuses_seen(http)
    names = ["acme"] * 5 + ["no-such-org"] + ["globex"] * 300
    yielded: list[str] = []
    with pytest.raises(NotFound):
        for org in http.map(lambda n: http.json("GET", f"/organizations/{n}"), names):
            yielded.append(org["data"]["id"])
    http.close()
    assert yielded == ["acme"] * 5
    # No new item starts after the failure: far fewer than all 306 were sent.
    assert len(seen) < 100


def test_leaving_the_iteration_early_starts_no_new_item(demo_sandbox: Sandbox):
    http = HTTPLayer(
        demo_sandbox.address,
        "/api/v2",
        headers={"Authorization": f"Bearer {demo_sandbox.token}"},
        max_concurrency=4,
    )
    seen = statuses_seen(http)
    results = http.map(lambda n: http.json("GET", f"/organizations/{n}"), ["acme"] * 400)
    assert next(results)["data"]["id"] == "acme"
    results.close()
    time.sleep(0.2)
    count = len(seen)
    time.sleep(0.2)
    http.close()
    assert count == len(seen)
    # Far fewer than all 400 were sent: what started before the close, never the rest.
    # (At most four in flight; a loaded machine lets the pool start some more between
    # the first answer and the close, so the bound is half, not a measured count.)
    assert count < 200


@pytest.mark.slow  # it waits out the sandbox's rate-limit windows, a second each
def test_a_429_in_the_middle_is_waited_out_and_every_page_arrives():
    with Sandbox(demo=True, rate_limit=15) as sandbox:
        pool_id = fill_pool(sandbox, "limited", 2000, organization="initech")
        client = PlatformClient(
            sandbox.address,
            sandbox.token,
            max_concurrency=8,
            retry=RetryPolicy(attempts=6, backoff=0.05, max_pause=5.0),
        )
        seen = statuses_seen(client.http)
        time.sleep(1.05)  # start on a fresh window
        started = time.monotonic()
        agents = client.agent_pools.agents_frame(pool_id)
        elapsed = time.monotonic() - started
        client.close()
    assert list(agents["name"]) == [f"limited-{i:04d}" for i in range(2000)]
    assert 429 in seen
    assert seen.count(200) == 20
    # 20 pages at 15 a second cannot finish inside the first window; the pauses
    # follow the server's reset hint rather than hammering it.
    assert elapsed >= 1.0
    assert seen.count(429) <= 8 * 3


def test_lease_lookups_in_parallel_give_the_same_frame_as_one_at_a_time(sandbox: Sandbox):
    # A fresh sandbox: in the session's shared one, leases issued by earlier tests with
    # short TTLs can expire between the two walks, and the frames then rightly differ.
    with (
        SecretsClient(sandbox.address, sandbox.token, max_concurrency=8) as fast,
        SecretsClient(sandbox.address, sandbox.token, max_concurrency=1) as slow,
    ):
        # Three mounts of the demo's (near a thousand leases, several folders each)
        # show the order and content kept as well as all of them would.
        mounts = ["broker/", "ad/", "auth/token/"]
        concurrent = fast.leases.leases_by_mount(mounts=mounts)
        sequential = slow.leases.leases_by_mount(mounts=mounts)
    assert len(concurrent) > 500
    assert set(concurrent["mount"]) == set(mounts)
    assert list(concurrent.index) == list(sequential.index)
    assert concurrent.drop(columns="ttl").equals(sequential.drop(columns="ttl"))


def test_a_lease_gone_between_listing_and_lookup_is_left_out(sandbox: Sandbox):
    with SecretsClient(sandbox.address, sandbox.token) as client:
        ids = client.leases.list_lease_ids("broker/")
        gone = ids[len(ids) // 2]
        client.leases.revoke(gone)
        frame = client.leases.lookup_leases(ids)
    assert gone not in frame.index
    assert len(frame) == len(ids) - 1


def test_threads_reuse_their_connections() -> None:
    def answer(head: bytes, n: int) -> tuple[bytes, bool]:
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
            False,
        )

    server = Threaded(answer)
    http = HTTPLayer(server.address, "/v1", max_concurrency=4)
    try:
        for _ in range(3):
            list(http.map(lambda n: http.json("GET", f"/organizations/{n}"), ["acme"] * 50))
    finally:
        http.close()
        server.stop()
    # At most one connection a pool thread, however many rounds: connections
    # are kept, not opened per call.
    assert server.connections <= 4
    assert len(server.heads) == 150


def test_a_layer_nobody_closed_takes_its_threads_with_it_when_collected(demo_sandbox: Sandbox):
    import gc

    # Follow this test's own threads: threads other tests left behind may end meanwhile.
    started: set[threading.Thread] = set()
    for _ in range(3):
        before = set(threading.enumerate())
        http = HTTPLayer(
            demo_sandbox.address,
            "/api/v2",
            headers={"Authorization": f"Bearer {demo_sandbox.token}"},
            max_concurrency=4,
        )
        list(http.map(lambda n, h=http: h.json("GET", f"/organizations/{n}"), ["acme"] * 20))
        new = set(threading.enumerate()) - before
        assert new, "the layer's map ran on threads of its own"
        started |= new
        del http
    gc.collect()
    deadline = time.monotonic() + 10
    while any(t.is_alive() for t in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [t.name for t in started if t.is_alive()]
