"""Every failure is a toolkit error: a fuzz of server answers against every view of
both clients.

Each view's answers are first recorded from the demo sandbox (through the layer's
response hooks). A scripted server (tests/_sockets.py) then plays them back to
the same view, hypothesis choosing how each answer is spoiled: its status, its
headers (a ``Date`` in the year 9999, a wrong content type) or its JSON body (a
value anywhere in it replaced by the wrong type, null, a huge or negative
number, a bad time, deep nesting, or a key removed). Whatever the view does
with that, only a :class:`~toolkit.ToolkitError` may come out of it.

The views are derived: the areas' public methods named as views by the naming
rule (``*_frame``, ``list_*``, the nouns of ``tests/test_naming_rule.py``) and
the clients' own reads, each run when its required parameters can be filled.
``FUZZ_EXAMPLES`` raises the number of examples (``make test-fuzz``).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import os
import random
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._hypothesis import driving_servers
from tests._sockets import Threaded
from tests.test_naming_rule import VIEWS
from toolkit import (
    DecodeError,
    MissingField,
    NotFound,
    PlatformClient,
    RetryPolicy,
    ToolkitError,
)
from toolkit._area import Area
from toolkit._frames import Col, Schema, build_frame
from toolkit._http import Response
from toolkit._records import Record, integer
from toolkit._time import from_epoch, parse_time
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))
CLIENT_READS = ("connection", "health", "is_authenticated", "ping")
# Views that need what a fuzzed answer cannot give (a callable, a frame).
NOT_VIEWS = {"across", "summary"}

Answer = tuple[int, dict[str, str], bytes]


@dataclass
class View:
    service: str
    area: str  # "" for the client itself
    method: str
    kwargs: dict[str, Any]
    # Out of the repr: hypothesis prints a failing example's view, and the answers are
    # hundreds of kilobytes.
    answers: dict[tuple[str, str], Answer] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"View({self}, {self.kwargs!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def __str__(self) -> str:
        return f"{self.service}.{self.area + '.' if self.area else ''}{self.method}"

    def run(self, clients: dict[str, Any]) -> Any:
        owner = clients[self.service]
        target = getattr(owner, self.area) if self.area else owner
        result = getattr(target, self.method)(**self.kwargs)
        if isinstance(result, Iterator):
            result = list(result)
        return result


class Views(list[View]):
    """The derived views; shown by count, as hypothesis prints a failing example's
    arguments and the recorded answers run to hundreds of kilobytes."""

    def __repr__(self) -> str:
        return f"<{len(self)} views>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def _is_view(name: str) -> bool:
    return name not in NOT_VIEWS and (
        name.endswith("_frame") or name.startswith("list_") or name in VIEWS
    )


def _fill(method: Callable[..., Any], fillers: dict[str, Any]) -> dict[str, Any] | None:
    kwargs: dict[str, Any] = {}
    for name, p in inspect.signature(method).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not p.empty:
            continue
        if name not in fillers:
            return None
        kwargs[name] = fillers[name]
    return kwargs


def derive_views(clients: dict[str, Any], fillers: dict[str, Any]) -> Views:
    found = Views()
    for service, client in clients.items():
        for name in CLIENT_READS:
            if hasattr(client, name):
                found.append(View(service, "", name, {}))
        for area_name, area in vars(client).items():
            if not isinstance(area, Area):
                continue
            for name, _function in inspect.getmembers(type(area), inspect.isfunction):
                if name.startswith("_") or not _is_view(name):
                    continue
                kwargs = _fill(getattr(area, name), fillers)
                if kwargs is not None:
                    found.append(View(service, area_name, name, kwargs))
    return found


def _target(url: str) -> str:
    rest = url.split("://", 1)[1]
    return "/" + rest.split("/", 1)[1] if "/" in rest else "/"


def _few_leases(client: SecretsClient) -> None:
    """Revoke the demo's big lease folders (a few leases still show every shape), so
    that a lease view makes tens of requests, not thousands."""
    folders = Counter(lease.rsplit("/", 1)[0] for lease in client.leases.list_lease_ids())
    for folder, count in folders.items():
        if count > 5:
            client.leases.revoke_force(folder)


def _fillers(clients: dict[str, Any]) -> dict[str, Any]:
    """A value for each required parameter of a view, taken from the demo data, so
    that views which need one (a pool, a key, a path) are fuzzed too."""
    platform, secrets = clients["platform"], clients["secrets"]
    organization = platform.organizations.list_organizations()[0]
    return {
        "organization": organization,
        "pool_id": platform.agent_pools.pools_frame(organization).index[0],
        "policy_set_id": platform.organizations.policy_sets_frame(organization).index[0],
        "workspace_id": platform.organizations.workspaces_frame(organization).index[0],
        "principal": ["default"],
        "capability": "read",
        "path": "database/creds/readonly",
        "name": secrets.keymgmt.list_keys()[0],
        "provider": secrets.keymgmt.list_providers()[0],
        "prefix": "database/",
        "plugin_type": "secret",
    }


@pytest.fixture(scope="module")
def views() -> Iterator[list[View]]:
    """Every view, with the answers the demo sandbox gave it."""
    with Sandbox() as sandbox:
        clients = {
            "secrets": SecretsClient(sandbox.address, sandbox.token),
            "platform": PlatformClient(sandbox.address, sandbox.token),
        }
        _few_leases(clients["secrets"])
        found = derive_views(clients, _fillers(clients))
        current: list[View] = []

        def keep(response: Response) -> None:
            if current:
                key = (response.method, _target(response.url))
                headers = {
                    k: v
                    for k, v in response.raw_headers.items()
                    if k.lower() in ("content-type", "date", "location")
                }
                current[0].answers.setdefault(
                    key, (response.status_code, headers, response.content)
                )

        for client in clients.values():
            client.http.response_hooks.append(keep)
        for view in found:
            current[:] = [view]
            # A view the demo data refuses still has its answers to spoil.
            with contextlib.suppress(ToolkitError):
                view.run(clients)
        current.clear()
        for client in clients.values():
            client.close()
    yield found


# -- spoiling an answer ----------------------------------------------------------------------

NASTY_VALUES: list[Any] = [
    None,
    "",
    "x",
    -1,
    0,
    10**30,
    -(10**30),
    1e308,
    True,
    [],
    {},
    [1, "a", None],
    {"a": {"b": [None]}},
    "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00Z",
    "2026-13-45T99:99:99Z",
    "1h",
    "-5s",
    "%s" * 4,
    "😀" * 200,
]
DEEP = b"[" * 100_000 + b"]" * 100_000
STATUSES = [200, 201, 204, 301, 307, 400, 401, 403, 404, 405, 409, 412, 422, 429, 500, 502, 503]
DATES = ["Fri, 31 Dec 9999 23:59:59 GMT", "garbage", "Mon, 01 Jan 0001 00:00:00 GMT", ""]
REASONS = {200: b"OK", 204: b"No Content", 404: b"Not Found"}
CONTENT_TYPES = ["text/html", "application/json; charset=utf-16", "", "application/vnd.api+json"]
JUNK_HEADERS = ["", "0", "-1", "nan", "http://elsewhere.example/v1/x", "/relative", "é"]


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:50]):
            yield from _nodes(v, (*path, i))


def _spoil_body(rng: random.Random, body: bytes) -> bytes:
    try:
        document = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        document = None
    choice = rng.random()
    if choice < 0.05:
        return DEEP
    if choice < 0.1:
        return b'{"data": NaN, "x": Infinity}'
    if document is None or choice < 0.15:
        return _dumps(copy.deepcopy(rng.choice(NASTY_VALUES)))
    for _ in range(rng.randint(1, 4)):
        paths = [p for p in _nodes(document) if p]
        if not paths:
            return _dumps(copy.deepcopy(rng.choice(NASTY_VALUES)))
        where = rng.choice(paths)
        parent = document
        for step in where[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and rng.random() < 0.25:
            del parent[where[-1]]
        else:
            parent[where[-1]] = copy.deepcopy(rng.choice(NASTY_VALUES))
    return _dumps(document)


def _dumps(value: Any) -> bytes:
    # The standard encoder: orjson refuses integers past 64 bits, which a server may send.
    return json.dumps(value).encode()


def spoil(rng: random.Random, rate: float, answer: Answer) -> bytes:
    status, headers, body = answer
    headers = dict(headers)
    if rng.random() < rate:
        body = _spoil_body(rng, body)
    if rng.random() < rate / 4:
        status = rng.choice(STATUSES)
    if rng.random() < rate / 4:
        headers["Date"] = rng.choice(DATES)
    if rng.random() < rate / 8:
        headers["Content-Type"] = rng.choice(CONTENT_TYPES)
    if rng.random() < rate / 8:
        headers[rng.choice(["Location", "Retry-After", "X-Junk"])] = rng.choice(JUNK_HEADERS)
    if status == 204:
        body = b""
    reason = rng.choice([b"", b"Spoiled " * 40]) if rng.random() < rate / 8 else None
    head = [b"HTTP/1.1 %d %s" % (status, reason or REASONS.get(status, b"Spoiled"))]
    head += [f"{k}: {v}".encode("latin-1", "replace") for k, v in headers.items()]
    head.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(head) + b"\r\n\r\n" + body


# What the demo sandbox draws afresh at each start: uuids (issuer and request ids),
# serials (hex bytes joined by colons or hyphens), and long random names (lease ids).
_DRAWN = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|(?:[0-9a-f]{2}(?:[:-]|%3A)){3,}[0-9a-f]{2}"
    r"|(?=[A-Za-z]*[0-9])[A-Za-z0-9]{16,}",
    re.IGNORECASE,
)


def _stable(target: str) -> str:
    return _DRAWN.sub("<drawn>", target)


class Player:
    """A scripted server playing one view's recorded answers back, spoiled."""

    def __init__(self) -> None:
        self.view: View | None = None
        self.seed = 0
        self.rate = 0.0
        self.lock = threading.Lock()
        self.server = Threaded(self.answer)
        retry = RetryPolicy(attempts=1)
        self.clients = {
            "secrets": SecretsClient(self.server.address, "s.fuzz", timeout=5, retry=retry),
            "platform": PlatformClient(self.server.address, "fuzz", timeout=5, retry=retry),
        }

    def answer(self, head: bytes, n: int) -> tuple[bytes, bool]:
        method, target = head.split(b" ", 2)[:2]
        key = (method.decode(), target.decode("latin-1"))
        with self.lock:
            view, seed, rate = self.view, self.seed, self.rate
        recorded = view.answers.get(key) if view else None
        if recorded is None:
            recorded = (404, {"Content-Type": "application/json"}, b'{"errors":[]}')
        # Spoiled the same way whatever order the requests come in, and in every run:
        # the ids the demo draws afresh at each start are left out of the seed.
        rng = random.Random(f"{seed}:{method.decode()}:{_stable(key[1])}")
        return spoil(rng, rate, recorded), False

    def close(self) -> None:
        for client in self.clients.values():
            client.close()
        self.server.stop()


@pytest.fixture(scope="module")
def player() -> Iterator[Player]:
    player = Player()
    yield player
    player.close()


def test_views_are_derived_from_both_clients(views: list[View]) -> None:
    expected = {
        "secrets.leases.leases_by_mount",
        "secrets.policies.policies_frame",
        "secrets.tokens.inventory",
        "secrets.connection",
        "platform.agent_pools.agents_by_status",
        "platform.team_access.permissions_matrix",
        "platform.organizations.organizations_frame",
    }
    assert expected - {str(v) for v in views} == set()
    # A view that sends nothing has nothing to spoil: the session's own certificates, and
    # the access questions answered from the policies `access.can` loaded before them.
    assert sorted(str(v) for v in views if not v.answers) == [
        "secrets.access.explain",
        "secrets.access.who_can",
        "secrets.pki.session_certificates",
    ]


@driving_servers(EXAMPLES)
@given(data=st.data())
def test_only_toolkit_errors_come_out_of_a_view_whatever_the_server_answers(
    views: list[View], player: Player, data: st.DataObject
) -> None:
    view = data.draw(st.sampled_from(views), label="view")
    seed = data.draw(st.integers(0, 2**32), label="seed")
    rate = data.draw(st.sampled_from([0.1, 0.5, 1.0]), label="rate")
    with player.lock:
        player.view, player.seed, player.rate = view, seed, rate
    with contextlib.suppress(ToolkitError):
        view.run(player.clients)


# Examples the fuzz once found escaping as other than a toolkit error (view, seed, rate),
# replayed every run: the spoiling is a function of the seed and the request.
FOUND = [
    ("platform.connection", 4243591148, 0.5),  # a number where the account was due
    ("platform.team_access.effective_access_matrix", 1347535308, 1.0),  # nothing read
    ("platform.team_access.permissions_long", 245832823, 0.5),  # an access of NA
    ("platform.agent_pools.agent_capacity", 225627031, 1.0),  # a column of nested lists
    ("secrets.connection", 4070378921, 1.0),  # deep nesting in lookup-self
    ("secrets.database.static_roles_frame", 3966150535, 0.5),  # statements of a number
    ("secrets.database.static_roles_frame", 4170579029, 0.5),  # a period of 10**30 s
    ("secrets.database.static_roles_frame", 1040917965, 1.0),  # a db_name that is an object
    ("secrets.database.roles_frame", 79892169, 0.1),  # a db_name that is a list
    ("secrets.database.findings", 4002591813, 0.5),
    ("secrets.policies.policies_frame", 3170718331, 0.1),  # EGP paths of a number
    ("secrets.plugins.inventory", 1598681340, 0.5),
    ("secrets.pki.findings", 1661501010, 0.1),  # an issuer name of NA
    ("secrets.keymgmt.keys_frame", 141362904, 0.1),  # a key name that is an object
]


@pytest.mark.parametrize(("name", "seed", "rate"), FOUND, ids=[f"{n}-{s}" for n, s, _ in FOUND])
def test_what_the_fuzz_once_found_stays_a_toolkit_error(
    views: list[View], name: str, seed: int, rate: float
) -> None:
    view = next(v for v in views if str(v) == name)
    player = Player()  # its own clients: what earlier answers left in them is no part of it
    try:
        with player.lock:
            player.view, player.seed, player.rate = view, seed, rate
        with contextlib.suppress(ToolkitError):
            view.run(player.clients)
    finally:
        player.close()


# -- the cases the probe named, one by one ------------------------------------------------------


def _serve_one(body: bytes, *, date: str = "", status: int = 200) -> Threaded:
    def answer(head: bytes, n: int) -> tuple[bytes, bool]:
        extra = f"Date: {date}\r\n".encode() if date else b""
        return (
            b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s"
            % (status, extra, len(body), body),
            False,
        )

    return Threaded(answer)


def test_deeply_nested_json_is_a_decode_error_in_an_answer_and_in_an_error_answer() -> None:
    for status in (200, 404):
        server = _serve_one(DEEP, status=status)
        client = SecretsClient(server.address, "s.t", retry=RetryPolicy(attempts=1))
        try:
            with pytest.raises(DecodeError if status == 200 else NotFound):
                client.policies.read("acl", "ops")
        finally:
            client.close()
            server.stop()


def test_a_date_header_in_the_year_9999_does_not_set_the_servers_clock() -> None:
    server = _serve_one(b'{"initialized": true}', date="Fri, 31 Dec 9999 23:59:59 GMT")
    client = SecretsClient(server.address, "s.t", retry=RetryPolicy(attempts=1))
    try:
        client.health()
        assert client.http.server_now().year < 9000
        assert client.http.server_now() + timedelta(days=365) > client.http.server_now()
    finally:
        client.close()
        server.stop()


def test_times_a_frame_cannot_hold_are_empty_and_garbage_is_a_decode_error() -> None:
    schema = Schema.of(Col("expire_time", "datetime"), Col("ttl", "int"))
    frame = build_frame(
        [
            {"expire_time": "9999-12-31T23:59:59Z", "ttl": 1},
            {"expire_time": "0001-01-01T00:00:00Z", "ttl": 2},
            {"expire_time": "2026-06-01T12:00:00.123456789Z", "ttl": 3},
        ],
        schema,
    )
    assert str(frame["expire_time"].dtype) == "datetime64[ns, UTC]"
    assert frame["expire_time"].isna().tolist() == [True, True, False]
    for bad in ({"expire_time": "1h"}, {"expire_time": 5}, {"ttl": 10**30}, {"ttl": "x"}):
        with pytest.raises(DecodeError, match="column"):
            build_frame([bad], schema)


def test_a_field_an_answer_lacks_or_gives_in_the_wrong_type_is_a_decode_error() -> None:
    with pytest.raises(MissingField, match="'certificate'"):
        Record({}, kind="pki_issuer")["certificate"]
    with pytest.raises(KeyError):  # still a KeyError for code that asks
        Record({})["x"]
    with pytest.raises(DecodeError, match="'lease_count'"):
        integer("many", "lease_count")
    assert integer("12", "n") == 12 and integer(None, "n", 7) == 7
    with pytest.raises(DecodeError):
        parse_time("not a time")
    with pytest.raises(DecodeError):
        from_epoch(10**30)


def test_a_platform_answer_that_is_no_resource_is_a_decode_error_not_an_empty_one() -> None:
    # `true` where a document was due, and a document holding no organization: neither
    # may read as "this token shows no permissions".
    for body in (b"true", b'{"data": null}', b'{"data": [1]}'):
        server = _serve_one(body)
        client = PlatformClient(server.address, "t", retry=RetryPolicy(attempts=1))
        try:
            with pytest.raises(DecodeError):
                client.organizations.caller_permissions("acme")
            if body == b"true":
                with pytest.raises(DecodeError, match="the account"):
                    client.account()
        finally:
            client.close()
            server.stop()
