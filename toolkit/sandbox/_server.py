"""Running the sandbox app with uvicorn in a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from typing import Any

import uvicorn
from uvicorn.protocols.http.zttp_impl import ZttpProtocol

__all__ = ["BackgroundServer"]

# What a request line may start with: a method is a token (RFC 9110, 5.6.2).
_TOKEN_START = frozenset(
    b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)


class _Protocol(ZttpProtocol):
    """uvicorn's zttp protocol, refusing at once a connection that does not
    start like an HTTP request (a TLS handshake sent to the plain port): zttp
    would wait for the end of a header section that never comes."""

    _started = False

    def data_received(self, data: bytes) -> None:
        if not self._started:
            self._started = True
            if data[0] not in _TOKEN_START:
                self.send_400_response("Invalid HTTP request received.")
                return
        super().data_received(data)


def _config(app: Any, host: str, port: int, sock: socket.socket | None = None) -> uvicorn.Config:
    # zttp (a compiled HTTP/1.1 parser) accepts any method token, which the
    # secrets API's LIST method needs (httptools does not), and costs about half
    # of h11's CPU time per request; the app sets its own Date header from the
    # sandbox clock.
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=_Protocol,
        lifespan="off",
        log_level="warning",
        access_log=False,
        date_header=False,
        server_header=False,
        timeout_keep_alive=30,
    )


class _Server(uvicorn.Server):
    """uvicorn's server, stopping as soon as it is asked.

    uvicorn looks at ``should_exit`` every 0.1 s, and when shutting down waits a fixed
    0.1 s, then 0.1 s at a time, for connections to close: a fifth of a second a stop,
    which a test suite that starts a sandbox a test pays hundreds of times. Here a stop
    wakes the loop at once, and connections are awaited in short steps; as in uvicorn,
    an answer in flight is finished first (within ``timeout_graceful_shutdown``).
    """

    _loop: asyncio.AbstractEventLoop | None = None
    _wake: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)
            should_exit = await self.on_tick(counter)

    def ask_to_exit(self) -> None:
        """Set ``should_exit`` and wake the loop (from any thread)."""
        self.should_exit = True
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already ended
                loop.call_soon_threadsafe(wake.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()
        grace = self.config.timeout_graceful_shutdown
        loop = asyncio.get_running_loop()
        deadline = None if grace is None else loop.time() + grace
        while (state.connections or state.tasks) and not self.force_exit:
            if deadline is not None and loop.time() > deadline:
                for task in state.tasks:
                    task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
                break
            await asyncio.sleep(0.005)
        if not self.force_exit:
            await self.lifespan.shutdown()


class BackgroundServer:
    """uvicorn serving ``app`` from a daemon thread; ``start`` returns once it listens."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit this: without it Nagle's algorithm holds the
        # body of each answer for the client's delayed ACK, 40 ms a request.
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.bind((host, port))
        self.port: int = self._sock.getsockname()[1]
        self._server = _Server(_config(app, host, self.port))
        self._thread = threading.Thread(target=self._run, name="sandbox-server", daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            asyncio.run(self._server.serve(sockets=[self._sock]))
        except BaseException as exc:  # surfaced by start()
            self._error = exc

    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        deadline = threading.Event()
        waited = 0.0
        while not self._server.started:
            if self._error is not None:
                raise RuntimeError(f"the sandbox server failed to start: {self._error}")
            if not self._thread.is_alive():
                raise RuntimeError("the sandbox server thread ended before it listened")
            if waited > timeout:
                raise RuntimeError("the sandbox server did not start in time")
            deadline.wait(0.01)
            waited += 0.01

    def stop(self) -> None:
        self._server.ask_to_exit()
        self._thread.join(timeout=10)
        self._sock.close()
