"""Fan-outs: many requests described as data (:class:`Request`, run by
:class:`RequestFanOut` on the engine's event loop and read back in order
through :class:`OrderedResponses`), and any function over many items on a
thread pool (:class:`ThreadedMap`).

``RequestFanOut`` keeps at most ``window`` requests in flight: ``n`` at first,
halved on each refusal to go faster (429, 503), grown back by one for each
window's worth of answers (as TCP does). Requests to try again wait for their
pause and go out before new ones; after a refusal nothing goes out until its
pause is over. The first failure stops new requests and is raised in its
place; the whole fan-out has a deadline of its own.
"""

from __future__ import annotations

import asyncio
import builtins
import heapq
import math
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from .._errors import TimeoutError, ToolkitError
from .._progress import fan_out_bar
from .policy import SLOW_DOWN, Failure
from .response import Response
from .transport import Transport

__all__ = [
    "OrderedResponses",
    "Request",
    "RequestFanOut",
    "ThreadedMap",
    "call_label",
    "map_calls",
    "mark_worker",
    "paths_label",
    "send_many",
    "worker_layer",
]


# A reader of a fan-out is woken once the answers waiting for it hold this much
# body, whole batch or not: a page of 100 agents (39 kB) is reading enough for one
# wake-up, where a lease lookup (half a kilobyte) is not.
WAKE_BYTES = 32 * 1024


class Request(NamedTuple):
    """One request of a fan-out (:meth:`HTTPLayer.many`), each field with
    :meth:`HTTPLayer.request`'s meaning. A named tuple: immutable, and built in
    a third of a frozen dataclass's time (a fan-out builds thousands)."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    idempotent: bool | None = None
    ok_statuses: frozenset[int] = frozenset()
    check: str = ""


# One try of a request: the answer, or what went wrong instead.
Attempt = Callable[[Request], Awaitable[Response | Failure]]
# After try ``attempt`` of a request: None (the answer stands) or a pause ending
# before the moment given (the fan-out's deadline); raises the error.
Verdict = Callable[[Request, int, "Response | Failure", float], "float | None"]


class OrderedResponses:
    """The meeting point of a fan-out (on the event loop) and its reader (any thread):
    results by index, handed over in order, several at a time.

    ``ready`` counts the results in, in order: every index below it is in. A
    reader with nothing to take waits for up to ``batch`` more of them (fewer
    near the end), so that it is woken once for a batch rather than once a
    result: each wake-up moves the interpreter lock between threads, which
    cost as much as a third of a small exchange. It is woken sooner once the
    answers in hold ``batch_bytes`` of body between them: answers that large
    are enough work a wake-up, and a reader kept waiting for a batch of them
    is left with the whole last batch to read after the last answer is in.
    The fan-out itself never waits for the reader (up to its ``ahead`` bound).
    """

    def __init__(self, count: int, batch: int = 1, batch_bytes: int | None = None) -> None:
        self.count = count
        self.batch = max(1, batch)
        self.batch_bytes = batch_bytes
        # Body bytes of the results in (below ``ready``) not yet taken.
        self.ready_bytes = 0
        self.results: dict[int, Response | BaseException] = {}
        # The loop enters the plain lock (no Python-level Condition code on its
        # path); the reader waits on the condition built over it.
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.ready = 0
        self.waiting_for = -1
        self.finished = False
        self.failed = False  # a failure is among the results
        self.final_error: BaseException | None = None
        self.consumed = 0

    # -- the loop's side
    def put(self, k: int, result: Response | BaseException, failed: bool = False) -> None:
        with self.lock:
            results = self.results
            results[k] = result
            ready = self.ready
            while ready in results:
                answer = results[ready]
                if not isinstance(answer, BaseException):
                    self.ready_bytes += len(answer.content)
                ready += 1
            self.ready = ready
            if failed:
                self.failed = True
            waiting = self.waiting_for
            limit = self.batch_bytes
            if waiting >= 0 and (
                waiting < ready or self.failed or (limit is not None and self.ready_bytes >= limit)
            ):
                self.waiting_for = -1  # one wake-up is enough
                self.cond.notify_all()

    def finish(self, error: BaseException | None) -> None:
        with self.cond:
            self.finished = True
            if error is not None and self.final_error is None:
                self.final_error = error
            self.cond.notify_all()

    def wait_finished(self, timeout: float) -> None:
        with self.cond:
            self.cond.wait_for(lambda: self.finished, timeout)

    # -- the reader's side
    def take(self, k: int) -> list[Response]:
        """The results from ``k`` on that are in (at least one, waiting for it);
        raises where a failure stands instead of a result."""
        with self.cond:
            if k >= self.ready and not self.finished:
                # Wait for a batch; after a failure, only for ``k`` itself.
                want = min(k + self.batch, self.count) - 1
                limit = self.batch_bytes
                while not self.finished and not (
                    want < self.ready
                    or (self.failed and k < self.ready)
                    or (limit is not None and self.ready_bytes >= limit and k < self.ready)
                ):
                    self.waiting_for = want
                    self.cond.wait()
                self.waiting_for = -1
            results = self.results
            taken: list[Response] = []
            j = k
            while j in results:
                result = results.pop(j)
                if isinstance(result, BaseException):
                    if taken:  # hand over what came before it first
                        results[j] = result
                        break
                    self.consumed = j + 1
                    raise result
                taken.append(result)
                self.ready_bytes -= len(result.content)
                j += 1
            if not taken:
                # The fan-out ended without this request: it stopped at an earlier
                # failure whose error was already raised, or at its deadline.
                errors = [e for e in results.values() if isinstance(e, BaseException)]
                raise self.final_error or (errors[0] if errors else _lost(k))
            self.consumed = j
        return taken


def _late(deadline: float) -> TimeoutError:
    return TimeoutError(f"the fan-out did not finish within its deadline of {deadline:g} s")


def _lost(k: int) -> RuntimeError:
    return RuntimeError(f"the fan-out lost request {k}")  # a bug, not a server's


class RequestFanOut:
    """Runs on the event loop: ``n`` workers send the requests, within the window.

    Worker ``i`` sends only while ``i < window``. Workers with nothing to do
    wait on one shared signal, kicked whenever something changes (an answer, a
    retry queued, the window grown, the reader taking a result).
    """

    def __init__(
        self,
        requests: Sequence[Request],
        n: int,
        attempt: Attempt,
        verdict: Verdict,
        out: OrderedResponses,
        *,
        ahead: int,
    ) -> None:
        self.requests = requests
        self.count = len(requests)
        self.n = n
        self.window = n
        self.answered = 0
        self.attempt = attempt
        self.verdict = verdict
        self.out = out
        self.ahead = ahead  # how far sending may run ahead of the reader
        self.cursor = 0
        self.busy = 0
        self.tries: dict[int, int] = {}
        self.later: list[tuple[float, int]] = []
        self.hold_until = 0.0
        self.stopped = False
        self.blocked = False  # waiting for the reader (``ahead``)
        self.ends_at = math.inf  # the fan-out's deadline (time.monotonic())
        # The error a cancel of the fan-out leaves its reader (the client was closed).
        self.cancelled: ToolkitError | None = None
        self._signal: asyncio.Future[None] | None = None

    async def run(self, deadline: float) -> None:
        self.ends_at = time.monotonic() + deadline
        try:
            async with asyncio.timeout(deadline):
                await asyncio.gather(*(self._worker(i) for i in range(self.n)))
        except builtins.TimeoutError:
            self.out.finish(_late(deadline))
            return
        except BaseException as exc:
            self.out.finish(exc if isinstance(exc, Exception) else self.cancelled)
            raise
        self.out.finish(None)

    def kick(self) -> None:
        """Wake every waiting worker (something changed)."""
        signal, self._signal = self._signal, None
        if signal is not None and not signal.done():
            signal.set_result(None)

    async def _wait(self, seconds: float | None) -> None:
        if self._signal is None:
            self._signal = asyncio.get_running_loop().create_future()
        # wait() leaves the shared signal alone when this worker is cancelled.
        await asyncio.wait([self._signal], timeout=seconds)

    def _next(self, loop: asyncio.AbstractEventLoop) -> int | float | None:
        """The next request to send, or seconds to wait, or None: nothing left to send."""
        later = self.later
        now = loop.time() if later else 0.0
        if later and later[0][0] <= now:
            return heapq.heappop(later)[1]
        if not self.stopped and self.cursor < self.count:
            if self.cursor - self.out.consumed >= self.ahead:
                # Waiting for the reader, who may be waiting for a request due
                # again: wake for the earliest retry (the reader's kick wakes
                # it otherwise; the minute is a safety net).
                self.blocked = True
                return float(later[0][0] - now) if later else 60.0
            k = self.cursor
            self.cursor += 1
            return k
        if later:
            return float(later[0][0] - now)
        return None

    def _idle(self) -> bool:
        done = self.stopped or self.cursor >= self.count
        return done and not self.later and not self.busy

    async def _worker(self, i: int) -> None:
        loop = asyncio.get_running_loop()
        attempt, requests = self.attempt, self.requests
        while True:
            if i >= self.window:
                step: int | float | None = None
            else:
                if self.hold_until and self.hold_until > (now := loop.time()):
                    await asyncio.sleep(self.hold_until - now)
                    continue
                step = self._next(loop)
            if step is None:
                if self._idle():
                    self.kick()
                    return
                await self._wait(None)
            elif isinstance(step, float):
                await self._wait(step)
            else:
                self.busy += 1
                try:
                    result = await attempt(requests[step])
                finally:
                    self.busy -= 1
                self._settle(step, result, loop)

    def _settle(self, k: int, result: Response | Failure, loop: asyncio.AbstractEventLoop) -> None:
        """After a try of request ``k``: hand its answer over, queue it again, or stop."""
        tries = self.tries.get(k, 0) + 1  # noted only for a request tried again
        try:
            pause = self.verdict(self.requests[k], tries, result, self.ends_at)
        except ToolkitError as exc:
            self.stopped = True
            self.out.put(k, exc, failed=True)
            self.kick()
            return
        if pause is None:  # an answer that stands (a failure never does)
            assert isinstance(result, Response)
            self.out.put(k, result)
            if self.window < self.n:
                self.answered += 1
                if self.answered >= self.window:
                    self.window, self.answered = self.window + 1, 0
            if self._signal is not None:
                self.kick()
            return
        self.tries[k] = tries
        at = loop.time() + pause
        if isinstance(result, Response) and result.status_code in SLOW_DOWN:
            self.window, self.answered = max(1, self.window // 2), 0
            self.hold_until = max(self.hold_until, at)
        heapq.heappush(self.later, (at, k))
        self.kick()


# -- map(): a function over items, on threads ------------------------------------------------

# Marks the threads of a layer's pool, so that a map() inside a map() on the
# same layer runs inline instead of waiting for a thread of its own pool.
worker_mark = threading.local()


class ThreadedMap(Iterator[Any]):
    """``n`` pool jobs pulling items from one shared cursor; results yielded in order.

    The whole map has ``deadline`` seconds: past it no item starts, and the
    reader gets a TimeoutError where the first unfinished item would have been
    (the calls still running end within their own deadlines).
    """

    def __init__(
        self,
        fn: Callable[[Any], Any],
        items: list[Any],
        n: int,
        pool: ThreadPoolExecutor,
        deadline: float = math.inf,
    ) -> None:
        self.fn = fn
        self.deadline = deadline
        self.ends_at = time.monotonic() + deadline
        self.items = items
        self.results: list[Any] = [None] * len(items)
        self.done = [False] * len(items)
        self.errors: dict[int, BaseException] = {}
        self.cursor = 0
        self.next_out = 0
        self.stopped = False
        self.cond = threading.Condition()
        self.jobs = [pool.submit(self._drain) for _ in range(n)]

    def _take(self) -> int | None:
        with self.cond:
            if self.stopped or self.cursor >= len(self.items):
                return None
            if time.monotonic() > self.ends_at:
                self.stopped = True
                self.cond.notify_all()
                return None
            k = self.cursor
            self.cursor += 1
            return k

    def _drain(self) -> None:
        while (k := self._take()) is not None:
            try:
                value = self.fn(self.items[k])
            except BaseException as exc:  # handed to the consumer, in order
                with self.cond:
                    self.errors[k] = exc
                    self.stopped = True
                    self.done[k] = True
                    self.cond.notify_all()
                return
            with self.cond:
                self.results[k] = value
                self.done[k] = True
                self.cond.notify_all()

    def __next__(self) -> Any:
        k = self.next_out
        if k >= len(self.items):
            raise StopIteration
        with self.cond:
            while not self.done[k]:
                if self.stopped and k >= self.cursor:
                    break
                left = self.ends_at - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(min(left, threading.TIMEOUT_MAX))
            if k in self.errors:
                self.next_out = len(self.items)
                raise self.errors.pop(k)
            if not self.done[k]:
                # Stopped before this item was done: raise the failure now, or
                # the deadline's.
                self.stopped = True
                self.next_out = len(self.items)
                if self.errors:
                    raise self.errors.pop(min(self.errors))
                raise _late(self.deadline)
            value = self.results[k]
            self.results[k] = None
        self.next_out = k + 1
        return value

    def stop(self) -> None:
        """Start no new item (the consumer stopped early, failed, or is done), and
        wait until the items already running have ended, within what is left of
        the map's deadline: nothing of the map is still sending once it has
        returned or raised."""
        with self.cond:
            self.stopped = True
            self.cond.notify_all()
        left = self.ends_at - time.monotonic()
        if left > 0:
            futures.wait(self.jobs, timeout=min(left, threading.TIMEOUT_MAX))


def paths_label(requests: list[Request]) -> str:
    """What a fan-out reads, for its bar: the path segments its requests share."""
    shared = requests[0].path.strip("/").split("/")
    for r in requests[1:]:
        parts = r.path.strip("/").split("/")
        n = 0
        while n < min(len(shared), len(parts)) and shared[n] == parts[n]:
            n += 1
        shared = shared[:n]
        if not shared:
            break
    return "/".join(shared) or "requests"


def call_label(fn: Callable[..., Any]) -> str:
    """What a map runs, for its bar: its function's name, without ``<locals>``."""
    name = getattr(fn, "__qualname__", "") or getattr(fn, "__name__", "") or "calls"
    return name.split(".<locals>")[0].strip("._") or "calls"


def mark_worker(layer: weakref.ref[Any]) -> None:
    # A weak reference: a layer nobody closed can still be collected, and its
    # pool with it (whose threads then end).
    worker_mark.layer = layer


def worker_layer() -> object | None:
    """The layer whose thread pool runs this thread (None outside a map's call)."""
    ref = getattr(worker_mark, "layer", None)
    return ref() if ref is not None else None


def map_calls(
    fn: Callable[[Any], Any],
    items: list[Any],
    n: int,
    owner: object,
    executor: Callable[[], ThreadPoolExecutor],
    timeout: float,
) -> Iterator[Any]:
    """:meth:`~toolkit._http.HTTPLayer.map`'s work: ``fn`` over ``items`` on ``n`` threads
    of the ``owner`` layer's pool (inline when ``n`` is 1 or this is already one of its
    threads), within ``timeout`` seconds, with a progress bar unless inside a map's call."""
    inner = worker_layer() is not None  # a map's call: counted as that call
    bar = None if inner else fan_out_bar(len(items), lambda: call_label(fn))
    try:
        if n <= 1 or worker_layer() is owner:
            ends_at = time.monotonic() + timeout
            for item in items:
                if time.monotonic() > ends_at:
                    raise TimeoutError(
                        f"the fan-out did not finish within its deadline of {timeout:g} s"
                    )
                value = fn(item)
                if bar is not None:
                    bar.update(1)
                yield value
            return
        fan = ThreadedMap(fn, items, n, executor(), timeout)
        try:
            if bar is None:
                yield from fan
            else:
                for value in fan:
                    bar.update(1)
                    yield value
        finally:
            fan.stop()
    finally:
        if bar is not None:
            bar.close()


def send_many(
    todo: list[Request],
    n: int,
    attempt: Callable[..., Awaitable[Response | Failure]],
    verdict: Callable[..., float | None],
    engine: Transport,
    timeout: float,
    closed: ToolkitError,
) -> Iterator[Response]:
    """:meth:`~toolkit._http.HTTPLayer.many`'s work: ``todo`` sent on ``n`` connections
    of ``engine`` (each try by ``attempt``, judged by ``verdict``), the answers read in
    order, within ``timeout`` seconds; ``closed`` is raised when the client is closed
    while the fan-out is in flight."""
    # Sending runs at most ``ahead`` answers ahead of the reader; the reader is
    # woken for half of that at once (fewer at the end).
    ahead = max(64, 8 * n)
    out = OrderedResponses(len(todo), batch=ahead // 2, batch_bytes=WAKE_BYTES)

    fan = RequestFanOut(todo, n, attempt, verdict, out, ahead=ahead)
    fan.cancelled = closed
    loop = engine.loop()
    future = engine.submit(fan.run(timeout))
    # A fan-out the loop never ran (the client closed as it was handed over)
    # still finishes, so that its reader is not left waiting. Only then: a
    # reader leaving early cancels this future too, and must wait for the
    # fan-out itself to stop (below), not for this callback.
    transport = engine
    future.add_done_callback(
        lambda f: out.finish(fan.cancelled) if f.cancelled() and transport.closed else None
    )
    # Progress by batch of answers (a fan-out inside a map's call counts as that call).
    bar = fan_out_bar(len(todo), lambda: paths_label(todo)) if worker_layer() is None else None
    try:
        k = 0
        while k < len(todo):
            batch = out.take(k)
            if fan.blocked:
                fan.blocked = False
                loop.call_soon_threadsafe(fan.kick)
            k += len(batch)
            if bar is not None:
                bar.update(len(batch))
            yield from batch
    finally:
        if bar is not None:
            bar.close()
        if not future.done():
            # The reader left early: stop the fan-out and wait until it has
            # stopped, so that nothing more is sent once this returns.
            loop.call_soon_threadsafe(future.cancel)
            out.wait_finished(5.0)
