"""The shared HTTP layer against small real servers that misbehave on purpose."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from toolkit import (
    BadRequest,
    ConfigurationError,
    ConnectError,
    DecodeError,
    NotFound,
    OutcomeUnknown,
    PermissionDenied,
    PreconditionFailed,
    RateLimited,
    RetryPolicy,
    ServerError,
    TimeoutError,
    TLSError,
    Unprocessable,
)
from toolkit._http import HTTPLayer
from toolkit._http.transport import DeadlineWatch
from toolkit.sandbox._server import BackgroundServer

FAST = RetryPolicy(attempts=4, backoff=0.01, max_pause=1.0)


class Flaky:
    """A server whose answers a test scripts: a list of (status, headers) per path."""

    def __init__(self) -> None:
        self.script: dict[str, list[tuple[int, dict[str, str]]]] = {}
        self.hits: dict[str, int] = {}
        self.lock = threading.Lock()

    async def handle(self, request: Request) -> Response:
        path = request.url.path
        with self.lock:
            self.hits[path] = self.hits.get(path, 0) + 1
            queue = self.script.get(path) or []
            status, headers = queue.pop(0) if queue else (200, {})
        if path.endswith("/slow"):
            time.sleep(0.5)
        if path.endswith("/slow-once") and self.hits[path] == 1:
            await asyncio.sleep(1.0)  # the loop serves the next try meanwhile
        if path.endswith("/html"):
            return PlainTextResponse("<html>proxy error</html>", status_code=200)
        if path.endswith("/truncated"):
            return Response(b'{"data": {"id": "x"', media_type="application/json")
        if path.endswith("/jsonapi-error"):
            return JSONResponse(
                {
                    "errors": [
                        {
                            "status": "422",
                            "title": "invalid attribute",
                            "detail": "Name has already been taken",
                            "source": {"pointer": "/data/attributes/name"},
                        }
                    ]
                },
                status_code=422,
            )
        if status >= 400:
            return JSONResponse({"errors": [f"scripted {status}"]}, status, headers=headers)
        return JSONResponse({"ok": True, "hits": self.hits[path]}, headers=headers)


@pytest.fixture
def flaky() -> Iterator[tuple[Flaky, str]]:
    server_state = Flaky()
    app = Starlette(
        routes=[
            Route("/v1/{rest:path}", server_state.handle, methods=["GET", "POST", "PUT", "DELETE"])
        ]
    )
    server = BackgroundServer(app)
    server.start()
    try:
        yield server_state, f"http://127.0.0.1:{server.port}"
    finally:
        server.stop()


def layer(address: str, **kw: object) -> HTTPLayer:
    return HTTPLayer(address, "/v1", retry=FAST, **kw)  # type: ignore[arg-type]


def test_a_429_on_a_get_is_retried_after_the_pause_the_server_asks_for(flaky):
    state, address = flaky
    state.script["/v1/a"] = [(429, {"Retry-After": "0.2"})]
    started = time.monotonic()
    assert layer(address).json("GET", "/a")["hits"] == 2
    assert time.monotonic() - started >= 0.19


def test_x_ratelimit_reset_is_honoured_when_there_is_no_retry_after(flaky):
    state, address = flaky
    state.script["/v1/a"] = [(429, {"X-RateLimit-Reset": "0.15"})]
    started = time.monotonic()
    assert layer(address).json("GET", "/a")["hits"] == 2
    assert time.monotonic() - started >= 0.14


def test_502_503_504_are_retried_for_reads_and_calls_marked_repeatable(flaky):
    state, address = flaky
    state.script["/v1/b"] = [(502, {}), (503, {}), (504, {})]
    assert layer(address).json("GET", "/b")["hits"] == 4
    state.script["/v1/b2"] = [(502, {}), (503, {}), (504, {})]
    assert layer(address).json("POST", "/b2", json={"x": 1}, idempotent=True)["hits"] == 4


def test_a_put_counts_as_a_write_and_a_502_leaves_its_outcome_unknown(flaky):
    state, address = flaky
    state.script["/v1/b3"] = [(502, {})]
    with pytest.raises(OutcomeUnknown, match="outcome|may or may not") as err:
        layer(address).json("PUT", "/b3", json={"x": 1}, check="read it back")
    assert state.hits["/v1/b3"] == 1
    assert "read it back" in str(err.value)


def test_a_post_is_never_retried(flaky):
    state, address = flaky
    state.script["/v1/c"] = [(503, {})]
    with pytest.raises(ServerError):
        layer(address).json("POST", "/c", json={})
    assert state.hits["/v1/c"] == 1


def test_a_post_marked_idempotent_is_retried(flaky):
    state, address = flaky
    state.script["/v1/c2"] = [(503, {})]
    assert layer(address).json("POST", "/c2", json={}, idempotent=True)["hits"] == 2


def test_retries_stop_after_the_configured_attempts_and_raise_the_last_error(flaky):
    state, address = flaky
    state.script["/v1/d"] = [(429, {"Retry-After": "0"})] * 10
    with pytest.raises(RateLimited) as err:
        layer(address).json("GET", "/d")
    assert state.hits["/v1/d"] == FAST.attempts
    assert err.value.status == 429


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequest),
        (403, PermissionDenied),
        (404, NotFound),
        (412, PreconditionFailed),
        (422, Unprocessable),
    ],
)
def test_error_statuses_map_to_exceptions_carrying_the_servers_message(flaky, status, cls):
    state, address = flaky
    state.script["/v1/e"] = [(status, {})]
    with pytest.raises(cls) as err:
        layer(address).json("GET", "/e")
    assert err.value.status == status
    assert err.value.messages == [f"scripted {status}"]
    assert address in str(err.value)


def test_jsonapi_error_objects_give_detail_and_pointer(flaky):
    _, address = flaky
    with pytest.raises(Unprocessable) as err:
        layer(address).json("GET", "/jsonapi-error")
    assert "Name has already been taken" in err.value.message
    assert "/data/attributes/name" in err.value.message


def test_a_non_json_answer_is_a_decode_error_naming_the_address(flaky):
    _, address = flaky
    with pytest.raises(DecodeError) as err:
        layer(address).json("GET", "/html")
    assert address in str(err.value)
    assert "not valid JSON" in str(err.value)


def test_a_truncated_answer_is_a_decode_error(flaky):
    _, address = flaky
    with pytest.raises(DecodeError):
        layer(address).json("GET", "/truncated")


def test_a_timeout_is_a_clear_timeout_error(flaky):
    _, address = flaky
    with pytest.raises(TimeoutError) as err:
        HTTPLayer(address, "/v1", timeout=0.1, retry=RetryPolicy(attempts=1)).json("GET", "/slow")
    assert "no answer within the timeout" in str(err.value)
    assert address in str(err.value)


def test_a_read_that_missed_its_deadline_is_tried_again(flaky):
    state, address = flaky
    http = HTTPLayer(address, "/v1", timeout=0.3, retry=FAST)
    try:
        # The first try waits a second; a busy machine may need a third try.
        assert http.json("GET", "/slow-once")["hits"] >= 2
    finally:
        http.close()


async def _guarded(watch: DeadlineWatch, seconds: float, hold: float) -> str:
    """What an exchange does with the watch, around a wait of ``hold`` seconds."""
    task = watch.start(seconds)
    try:
        await asyncio.sleep(hold)
    except asyncio.CancelledError:
        if watch.stop(task):
            return "deadline"
        raise
    return "deadline" if watch.stop(task) else "done"


def test_one_watch_keeps_every_deadline_the_earliest_first():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        watch = DeadlineWatch(loop)
        long = asyncio.create_task(_guarded(watch, 5.0, 10))
        await asyncio.sleep(0)  # the long deadline is set first
        started = loop.time()
        assert await _guarded(watch, 0.2, 10) == "deadline"
        assert 0.19 <= loop.time() - started < 1.0
        assert await _guarded(watch, 0.5, 0.05) == "done"
        # The deadline's cancel was taken back: the task goes on uncancelled.
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0
        await asyncio.sleep(0.01)
        long.cancel()  # a cancel of anyone else's passes through
        with pytest.raises(asyncio.CancelledError):
            await long

    asyncio.run(main())


def test_a_cancel_that_meets_a_passed_deadline_is_still_a_cancel():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        watch = DeadlineWatch(loop)
        task = asyncio.create_task(_guarded(watch, 0.5, 10))
        await asyncio.sleep(0)

        def busy_then_cancel() -> None:
            time.sleep(0.6)  # the deadline passes while the loop is busy,
            loop.call_soon(task.cancel)  # and this cancel comes just before the watch's

        loop.call_soon(busy_then_cancel)
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_a_cancel_swallowed_by_a_library_is_made_again():
    async def swallowing(watch: DeadlineWatch) -> str:
        task = watch.start(0.05)
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(5)  # a library that ignores one cancel
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "deadline" if watch.stop(task) else "cancelled"
        watch.stop(task)
        return "done"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await swallowing(DeadlineWatch(loop)) == "deadline"
        assert loop.time() - started < 2

    asyncio.run(main())


def test_a_deadline_in_clean_up_after_a_cancel_is_still_a_deadline():
    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(1)  # clean-up code runs on after a cancel it caught
        assert task.cancelling() == 1
        watch = DeadlineWatch(asyncio.get_running_loop())
        assert await _guarded(watch, 0.05, 5) == "deadline"
        assert task.cancelling() == 1  # the watch took back only its own

    asyncio.run(main())


def test_a_refused_connection_names_the_address():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"http://127.0.0.1:{port}"
    with pytest.raises(ConnectError) as err:
        layer(address).json("GET", "/x")
    assert f"cannot connect to {address}" in str(err.value)


def test_a_tls_failure_is_a_tls_error_naming_the_address(flaky):
    _, address = flaky
    tls_address = address.replace("http://", "https://")
    with pytest.raises(TLSError) as err:
        HTTPLayer(tls_address, "/v1", retry=RetryPolicy(attempts=1)).json("GET", "/x")
    assert tls_address in str(err.value)


def test_an_address_without_a_scheme_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="must start with http"):
        HTTPLayer("localhost:8200", "/v1")


def test_auth_headers_never_appear_in_errors_or_repr(flaky):
    state, address = flaky
    state.script["/v1/f"] = [(403, {})]
    http = HTTPLayer(address, "/v1", headers={"X-Vault-Token": "s.supersecret"}, retry=FAST)
    with pytest.raises(PermissionDenied) as err:
        http.json("GET", "/f")
    assert "supersecret" not in str(err.value)
    assert "supersecret" not in repr(err.value)
    assert "supersecret" not in repr(http)


def test_server_now_follows_the_date_header():
    then = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

    async def dated(request: Request) -> Response:
        return JSONResponse({}, headers={"Date": format_datetime(then, usegmt=True)})

    server = BackgroundServer(Starlette(routes=[Route("/v1/t", dated)]))
    server.start()
    try:
        http = HTTPLayer(f"http://127.0.0.1:{server.port}", "/v1")
        http.json("GET", "/t")
        assert abs(http.server_now() - then) < timedelta(seconds=5)
    finally:
        server.stop()


def test_map_keeps_input_order_under_concurrency(flaky):
    _, address = flaky
    http = layer(address, max_concurrency=4)
    results = list(http.map(lambda i: (i, http.json("GET", f"/m{i}")["ok"]), range(20)))
    assert [i for i, _ in results] == list(range(20))
