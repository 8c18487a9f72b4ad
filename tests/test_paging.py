"""JSON:API paging trusts no count: it follows the server's own ``next-page`` until it
is empty, within a limit of pages, and a ``total-pages`` only plans how many pages go
out at once. Each case is a scripted server (tests/_sockets.py) that answers pages
as the test says and records what was asked."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest

from tests._sockets import Threaded
from toolkit import DecodeError, PlatformClient, RetryPolicy, ToolkitError
from toolkit.platform._jsonapi import PAGES_AHEAD, _values_decoder, read_lists

Page = Callable[[int], Any]  # a document, or the bytes of an answer


def _organization(number: int) -> dict[str, Any]:
    return {"id": f"org-{number}", "type": "organizations", "attributes": {"name": f"o{number}"}}


def pages(last: int, *, total: Any = None, next_of: Callable[[int], Any] | None = None) -> Page:
    """Page ``n`` of a list of ``last`` pages (one record each), claiming ``total``
    pages and naming ``next_of(n)`` as the next page (default: honest)."""

    def page(number: int) -> dict[str, Any]:
        if number > last:
            return {"data": [], "meta": {"pagination": {"next-page": None}}}
        following = next_of(number) if next_of else (number + 1 if number < last else None)
        pagination = {"current-page": number, "next-page": following}
        if total is not None:
            pagination["total-pages"] = total
        return {"data": [_organization(number)], "meta": {"pagination": pagination}}

    return page


@pytest.fixture
def serve() -> Iterator[Callable[[Page], tuple[Threaded, PlatformClient]]]:
    started: list[tuple[Threaded, PlatformClient]] = []

    def start(page: Page) -> tuple[Threaded, PlatformClient]:
        def answer(head: bytes, n: int) -> tuple[bytes, bool]:
            target = head.split(b" ", 2)[1].decode()
            query = parse_qs(urlsplit(target).query)
            document = page(int(query["page[number]"][0]))
            body = document if isinstance(document, bytes) else orjson.dumps(document)
            return (
                b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.api+json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body),
                False,
            )

        server = Threaded(answer)
        client = PlatformClient(
            server.address, token="paging-test", timeout=5, retry=RetryPolicy(attempts=1)
        )
        started.append((server, client))
        return server, client

    yield start
    for server, client in started:
        client.close()
        server.stop()


def test_an_honest_list_is_read_whole_with_its_pages_asked_for_at_once(serve):
    server, client = serve(pages(5, total=5))
    assert client.organizations.list_organizations() == ["o1", "o2", "o3", "o4", "o5"]
    assert len(server.heads) == 5


def test_a_billion_total_pages_plans_no_more_than_a_wave_and_ends_where_the_server_says(serve):
    server, client = serve(pages(2, total=10**9))
    started = time.monotonic()
    assert client.organizations.list_organizations() == ["o1", "o2"]
    assert time.monotonic() - started < 5
    assert len(server.heads) <= 1 + PAGES_AHEAD


@pytest.mark.parametrize("total", ["many", -5, 0, 1e300, [3], {"n": 3}, True, "9" * 400, None])
def test_a_garbage_total_pages_is_only_a_hint_and_the_next_page_is_followed(serve, total):
    server, client = serve(pages(3, total=total))
    assert client.organizations.list_organizations() == ["o1", "o2", "o3"]


def test_a_total_pages_too_small_does_not_cut_the_list_short(serve):
    server, client = serve(pages(4, total=1))
    assert client.organizations.list_organizations() == ["o1", "o2", "o3", "o4"]


def test_a_next_page_that_never_ends_stops_at_the_limit_of_pages_with_a_clear_error(serve):
    server, client = serve(pages(10**6, next_of=lambda n: n + 1))
    with pytest.raises(DecodeError, match="more than 5 pages.*max_pages"):
        read_lists(client.http, [("/organizations", None)], max_pages=5)
    assert len(server.heads) == 5


@pytest.mark.parametrize("named", [7, 1, "x", 2.5, [2], {"n": 2}, -1])
def test_a_next_page_out_of_order_or_not_a_number_is_a_toolkit_error(serve, named):
    server, client = serve(pages(3, next_of=lambda n: named))
    with pytest.raises(DecodeError, match="next page"):
        client.organizations.list_organizations()


@pytest.mark.parametrize(
    "document",
    [
        [],
        "text",
        {"data": "x"},
        {"data": [1, 2]},
        {"data": [{"id": "a", "attributes": "x"}]},
        {"data": [{"id": "a", "relationships": []}]},
        {"data": [], "meta": []},
        {"data": [], "meta": {"pagination": []}},
        {"data": [], "links": "next"},
        {"data": [], "included": {}},
    ],
)
def test_a_page_that_is_not_a_json_api_list_is_a_toolkit_error(serve, document):
    server, client = serve(lambda number: document)
    with pytest.raises(ToolkitError):
        client.organizations.organizations_frame()


def test_pages_a_count_foretells_go_out_with_the_first(serve):
    """``expected_pages`` (a count the server gave elsewhere: a pool's
    ``agent-count``) sends those pages with the first, not a round trip later:
    here page 1 is answered only once page 3 has been asked for."""
    asked = threading.Event()
    honest = pages(3, total=3)

    def page(number: int) -> dict[str, Any]:
        if number == 3:
            asked.set()
        elif number == 1:
            asked.wait(4)
        return honest(number)

    server, client = serve(page)
    started = time.monotonic()
    (listing,) = read_lists(client.http, [("/organizations", None)], expected_pages=[3])
    assert time.monotonic() - started < 3
    assert [r["attributes"]["name"] for r in listing.data] == ["o1", "o2", "o3"]
    assert listing.meta["pagination"]["current-page"] == 1


@pytest.mark.parametrize("expected", [0, 1, 2, 6, -4, 10**9])
def test_a_foretold_count_of_pages_is_only_a_hint(serve, expected):
    server, client = serve(pages(3))
    (listing,) = read_lists(client.http, [("/organizations", None)], expected_pages=[expected])
    assert [r["attributes"]["name"] for r in listing.data] == ["o1", "o2", "o3"]
    assert len(server.heads) <= max(3, min(expected, PAGES_AHEAD))


# -- pages read for one attribute -------------------------------------------------------------


class Statuses:
    """A sink reading only each resource's ``status`` (as the agent tally does)."""

    attribute = "status"

    def __init__(self) -> None:
        self.values: list[Any] = []

    def add(self, resources: Any) -> None:
        raise AssertionError("a sink naming its attribute is handed values, not resources")

    def add_values(self, values: list[Any]) -> None:
        self.values.extend(values)


def _agent(status: Any = "idle", **extra: Any) -> dict[str, Any]:
    return {"id": "agent-1", "type": "agents", "attributes": {"status": status, **extra}}


def _outcome(read: Callable[[], list[Any]]) -> Any:
    try:
        return read()
    except DecodeError:
        return DecodeError


@pytest.mark.parametrize(
    "document",
    [
        {"data": [_agent("idle"), _agent("busy"), _agent(None)]},
        {"data": [_agent(7), _agent([1]), _agent({"a": 1}), _agent(True)]},
        {"data": [{"id": "a"}, {"id": "b", "attributes": None}, {"attributes": {}}]},
        {"data": [_agent("idle")], "meta": {"pagination": {"total-pages": 1}}, "links": {}},
        {"data": None},
        {"data": [], "included": [{"id": "x", "attributes": {"name": "n"}}]},
        b'{"data":[{"attributes":{"status":"idle","status":"busy"}}]}',
        b'{"data":[{"attributes":{"status":"idle"}}],"meta":{"n":NaN}}',
        b'{"data":[{"attributes":{"status":"idle","big":123456789012345678901234567890}}]}',
        b'{"data":[{"attributes":{"status":"\\u00e9t\\u00e9"}}],"jsonapi":{"version":"1.0"}}',
        # Nesting the typed reading refuses sooner than the whole one, in a member it skips.
        b'{"data":[{"id":"a","x":'
        + b"[" * 1100
        + b"]" * 1100
        + b',"attributes":{"status":"idle"}}]}',
        # Not UTF-8: in the value read, and in a member the typed reading skips.
        b'{"data":[{"attributes":{"status":"\xff"}}]}',
        b'{"data":[{"id":"\xc0\xaf","attributes":{"status":"idle"}}]}',
        # Not a page: each one a DecodeError, on either path.
        {"data": [1, 2]},
        {"data": "x"},
        {"data": [{"attributes": "x"}]},
        {"data": [{"attributes": {"status": "idle"}, "relationships": []}]},
        {"data": [], "meta": {"pagination": []}},
        {"data": [], "included": [5]},
        {"data": [], "links": "next"},
        [],
        b'{"data":[{"attributes":{"status":"idle"}}]',
        b"[" * 5000 + b"]" * 5000,
    ],
)
def test_a_page_read_for_one_attribute_gives_what_the_whole_page_gives(serve, document):
    """The typed reading of one attribute (msgspec, skipping the rest) answers as
    decoding the whole page does: the same values, or the same DecodeError."""
    server, client = serve(lambda number: document)

    def whole() -> list[Any]:
        (listing,) = read_lists(client.http, [("/organizations", None)])
        return [(r.get("attributes") or {}).get("status") for r in listing.data]

    def typed() -> list[Any]:
        sink = Statuses()
        read_lists(client.http, [("/organizations", None)], builders=[sink])
        return sink.values

    assert _outcome(typed) == _outcome(whole)


def test_an_honest_page_is_read_by_the_typed_decoder_not_the_whole_one(demo_sandbox):
    """The sandbox's pages of agents take the typed path (a decoder that refused
    them would still answer right, by decoding each page whole, at three times the cost)."""
    client = PlatformClient(demo_sandbox.address, demo_sandbox.token)
    pool = client.agent_pools.pools_frame("acme").index[0]
    page = client.http.request("GET", f"/agent-pools/{pool}/agents", params={"page[size]": 100})
    client.close()
    decoded = _values_decoder("status").decode(page.content)
    assert [r.attributes.value for r in decoded.data] == [
        r["attributes"]["status"] for r in page.json()["data"]
    ]
    assert decoded.meta["pagination"]["current-page"] == 1
