"""A fan-out of many reads against a server that misbehaves at random positions:
for the fast suite (a few hundred requests) and the benchmark (ten thousand).

The server counts the requests it receives, across its connections, and at the
positions a seeded random draw picked it resets the connection (RST after
reading the request), refuses with ``429`` and ``Retry-After: 0``, or answers
and then closes the connection while the client keeps it for the next request
(a stale keep-alive connection, as a proxy's idle timeout leaves). Every other
request is answered with its own path, so that an answer out of step shows.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from tests._sockets import Peer, Scripted, answer

FAULTS = ("reset", "429", "stale")


class FaultyServer:
    """A :class:`Scripted` server misbehaving at ``faults`` (request number -> what)."""

    def __init__(self, faults: dict[int, str]) -> None:
        self.faults = faults
        self.count = 0
        self.done: dict[str, int] = {}
        self._lock = threading.Lock()
        self.server = Scripted(self._handle)

    @property
    def address(self) -> str:
        return self.server.address

    def _handle(self, peer: Peer) -> None:
        while (seen := peer.request()) is not None:
            with self._lock:
                self.count += 1
                fault = self.faults.get(self.count, "")
                if fault:
                    self.done[fault] = self.done.get(fault, 0) + 1
            if fault == "reset":
                peer.reset()
                return
            if fault == "429":
                peer.send(answer(429, b'{"errors": ["slow down"]}', "Retry-After: 0"))
                continue
            peer.send(answer(200, b'"' + seen.target.encode() + b'"'))
            if fault == "stale":
                return  # closed by the server; the client still holds it as kept

    def stop(self) -> None:
        self.server.stop()


def draw_faults(requests: int, faults: int, seed: int) -> dict[int, str]:
    """``faults`` positions among the first ``requests`` (past the first few), each a kind."""
    rng = random.Random(seed)
    positions = rng.sample(range(10, requests), faults)
    return {p: FAULTS[i % len(FAULTS)] for i, p in enumerate(sorted(positions))}


def fan_out_seconds(address: str, requests: int, **options: Any) -> float:
    """Seconds for one fan-out of ``requests`` GETs, each answer checked against its path."""
    from toolkit._http import HTTPLayer, Request

    http = HTTPLayer(address, "/v1", **options)
    try:
        calls = [Request("GET", f"/item/{i}") for i in range(requests)]
        started = time.perf_counter()
        for i, response in enumerate(http.many(calls)):
            if response.content != f'"/v1/item/{i}"'.encode():
                raise AssertionError(f"answer {i} out of step: {response.content[:40]!r}")
        return time.perf_counter() - started
    finally:
        http.close()


def stress(
    requests: int, faults: int, seed: int = 24, rounds: int = 1, **options: Any
) -> tuple[float, float, dict[str, int]]:
    """(seconds of a clean fan-out, seconds of one with ``faults`` faults, faults
    served in the last round): the best of ``rounds`` each, taken alternately."""
    clean_seconds, hostile_seconds = float("inf"), float("inf")
    served: dict[str, int] = {}
    for _ in range(rounds):
        clean = FaultyServer({})
        try:
            fan_out_seconds(clean.address, min(requests, 200), **options)  # warm up
            clean_seconds = min(clean_seconds, fan_out_seconds(clean.address, requests, **options))
        finally:
            clean.stop()
        hostile = FaultyServer(draw_faults(requests, faults, seed))
        try:
            hostile_seconds = min(
                hostile_seconds, fan_out_seconds(hostile.address, requests, **options)
            )
        finally:
            hostile.stop()
        served = hostile.done
    return clean_seconds, hostile_seconds, served
