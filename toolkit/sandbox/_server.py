"""Running the sandbox app with uvicorn in a background thread."""

from __future__ import annotations

import asyncio
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
        self._server = uvicorn.Server(_config(app, host, self.port))
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
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
