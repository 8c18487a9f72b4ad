"""A TCP forwarder on loopback that a test can kill at will: the upstream entry that fails.

    with Forwarder(("127.0.0.1", bao.port)) as hop:
        hop.address                 # "127.0.0.1:<port>", to put in front of OpenBao
        hop.die_on_answer()         # dies when the next answer comes back from OpenBao
        hop.kill()                  # every connection reset, the port closed
        hop.revive()                # listening again on the same port

It copies bytes both ways and understands nothing of them (no HTTP here). It runs
on an asyncio loop of its own in a background thread, bounded: at most
``max_connections`` at once (more are closed on arrival), and a connection idle
for ``idle_timeout`` seconds is closed.

``die_on_answer`` is how a test kills it "while requests are in flight" without a
race: the first bytes OpenBao sends back prove that a request reached OpenBao,
and the forwarder dies right then, before passing them on. The front end then
has a request whose outcome it cannot know, which is the case its retry rules
are about.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Coroutine
from typing import Any, Self

from ._common import ServerFailed, free_port

CHUNK = 65536


class Forwarder:
    """Forwards every connection to ``target`` until killed."""

    def __init__(
        self,
        target: tuple[str, int],
        *,
        max_connections: int = 256,
        idle_timeout: float = 60.0,
    ) -> None:
        self.target = target
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self.port = 0
        self.accepted = 0  # connections accepted since the start (a keep-alive measure)
        self.answers_cut = 0  # answers dropped by die_on_answer
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._die_after: int | None = None  # answers still let through before dying
        self._die_marker: bytes | None = None  # only answers holding these bytes count

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self._server is not None

    # -- lifecycle -----------------------------------------------------------
    def start(self) -> Self:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="forwarder", daemon=True
        )
        self._thread.start()
        self.port = free_port()
        self.revive()
        return self

    def revive(self) -> None:
        """Listen again on the same port (after :meth:`kill`), with no die_on_answer armed."""
        self._die_after = None
        self._die_marker = None
        if self._server is None:
            self._run(self._listen(), timeout=10)

    def kill(self) -> None:
        """Reset every open connection and stop listening, as a crashed process would."""
        if self._loop is not None and self._server is not None:
            self._run(self._die(), timeout=10)

    def die_on_answer(self, after: int = 0, *, marker: bytes | None = None) -> None:
        """Let ``after`` reads of answer bytes through (about one answer each, for the small
        answers of the tests), then die when the next bytes come back from the target.

        With ``marker``, only reads holding those bytes count and the death comes on
        one of them: the answer to a chosen kind of request is the one cut, whatever
        else is in flight (a token create's answer holds ``client_token``)."""
        self._die_after = after
        self._die_marker = marker

    def stop(self) -> None:
        if self._loop is None:
            return
        self.kill()
        self._loop.call_soon_threadsafe(self._loop.stop)
        assert self._thread is not None
        self._thread.join(10)
        if self._thread.is_alive():
            raise ServerFailed("the forwarder's loop did not stop within 10 s")
        self._loop.close()
        self._loop = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "alive" if self.alive else "dead"
        return f"<Forwarder {self.address} -> {self.target[0]}:{self.target[1]} {state}>"

    # -- on the loop -----------------------------------------------------------
    def _run(self, coroutine: Coroutine[Any, Any, None], timeout: float) -> None:
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    async def _listen(self) -> None:
        # SO_REUSEADDR (asyncio's default here) lets a revive take the port back at once.
        self._server = await asyncio.start_server(
            self._serve, "127.0.0.1", self.port, reuse_address=True
        )

    async def _die(self) -> None:
        # No wait_closed(): on newer Pythons it waits for the handlers, and this
        # may run inside one. Closing the listener and resetting every connection
        # is enough for the port to be free.
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for writer in list(self._open):
            _reset(writer)
        self._open.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._open) >= self.max_connections or self._server is None:
            _reset(writer)
            return
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(*self.target), timeout=5
            )
        except (OSError, TimeoutError):
            _reset(writer)
            return
        self._open.update((writer, up_writer))
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._copy(reader, up_writer, answers=False))
                group.create_task(self._copy(up_reader, writer, answers=True))
        except* (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            for w in (writer, up_writer):
                self._open.discard(w)
                _reset(w)

    async def _copy(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, *, answers: bool
    ) -> None:
        while True:
            data = await asyncio.wait_for(source.read(CHUNK), timeout=self.idle_timeout)
            if not data:
                # One side closed: close the other too, as a plain TCP proxy does.
                raise ConnectionResetError("closed")
            counts = answers and (self._die_marker is None or self._die_marker in data)
            if counts and self._die_after == 0:
                self._die_after = None
                self.answers_cut += 1
                await self._die()
            elif counts and self._die_after is not None:
                self._die_after -= 1
            if self._server is None:
                # Dead: bytes read just before the reset go nowhere.
                raise ConnectionResetError("killed")
            sink.write(data)
            await sink.drain()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a reset (SO_LINGER 0), so that the peer sees the connection break."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
