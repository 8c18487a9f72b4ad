"""The raw clients: the same requests as the toolkit with the least client work.

Two of them, and the benchmark takes the faster as the reference:

- :class:`RawHTTP`: asyncio streams speaking HTTP/1.1 directly, ``n``
  keep-alive connections, each a worker pulling the next request. No client
  library at all: the floor of what Python can do per request.
- :class:`AioHTTP`: aiohttp's ``ClientSession`` with a connection limit of ``n``.

Both take a list of (method, path, JSON body or None) and return the decoded
JSON answers in order.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

RawRequest = tuple[str, str, Any]


class RawHTTP:
    """HTTP/1.1 over asyncio streams; ``headers`` are sent with every request."""

    name = "raw asyncio"

    def __init__(self, address: str, headers: dict[str, str], n: int = 8) -> None:
        parts = urlsplit(address)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.n = n
        fixed = [f"Host: {self.host}:{self.port}"] + [f"{k}: {v}" for k, v in headers.items()]
        self.fixed = ("\r\n".join(fixed) + "\r\n").encode()

    def run(self, calls: Sequence[RawRequest]) -> list[Any]:
        return asyncio.run(self._run(calls))

    async def _run(self, calls: Sequence[RawRequest]) -> list[Any]:
        out: list[Any] = [None] * len(calls)
        todo = iter(enumerate(calls))

        async def worker() -> None:
            reader, writer = await asyncio.open_connection(self.host, self.port)
            try:
                for k, (method, path, body) in todo:
                    payload = b"" if body is None else json.dumps(body).encode()
                    writer.write(
                        f"{method} {path} HTTP/1.1\r\n".encode()
                        + self.fixed
                        + b"Content-Type: application/json\r\nContent-Length: "
                        + str(len(payload)).encode()
                        + b"\r\n\r\n"
                        + payload
                    )
                    head = await reader.readuntil(b"\r\n\r\n")
                    status = int(head[9:12])
                    lower = head.lower()
                    if b"transfer-encoding: chunked" in lower:
                        data = await _read_chunked(reader)
                    else:
                        at = lower.find(b"content-length:")
                        length = int(lower[at + 15 : lower.find(b"\r\n", at)]) if at >= 0 else 0
                        data = await reader.readexactly(length)
                    if status >= 400:
                        raise RuntimeError(f"{method} {path}: {status} {data[:200]!r}")
                    out[k] = json.loads(data) if data else None
            finally:
                writer.close()

        await asyncio.gather(*(worker() for _ in range(min(self.n, len(calls)) or 1)))
        return out


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return b"".join(parts)
        parts.append((await reader.readexactly(size + 2))[:-2])


class AioHTTP:
    """aiohttp with ``n`` connections."""

    name = "aiohttp"

    def __init__(
        self, address: str, headers: dict[str, str], n: int = 8, gone: frozenset[int] = frozenset()
    ) -> None:
        self.address = address
        self.headers = headers
        self.n = n
        # Statuses answered as None, not raised: a lease that expired between the listing
        # and its lookup (400), which the toolkit's scan passes over as well.
        self.gone = gone

    def run(self, calls: Sequence[RawRequest]) -> list[Any]:
        return asyncio.run(self._run(calls))

    async def _run(self, calls: Sequence[RawRequest]) -> list[Any]:
        import aiohttp

        out: list[Any] = [None] * len(calls)
        todo = iter(enumerate(calls))
        connector = aiohttp.TCPConnector(limit=self.n)
        async with aiohttp.ClientSession(
            self.address, headers=self.headers, connector=connector
        ) as session:

            async def worker() -> None:
                for k, (method, path, body) in todo:
                    async with session.request(method, path, json=body) as response:
                        if response.status in self.gone:
                            continue
                        response.raise_for_status()
                        text = await response.read()
                        out[k] = json.loads(text) if text else None

            await asyncio.gather(*(worker() for _ in range(min(self.n, len(calls)) or 1)))
        return out
