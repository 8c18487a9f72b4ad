"""Reading HTTP/1.1 requests off a raw socket, for the test servers that script their answers."""

from __future__ import annotations

import socket


def read_request(conn: socket.socket, buffer: bytes) -> tuple[bytes, bytes] | None:
    """(the next request's head, what is left of ``buffer`` after its body), or
    None when the client closed first. ``buffer`` holds bytes already read."""
    while b"\r\n\r\n" not in buffer:
        try:
            chunk = conn.recv(65536)
        except OSError:
            return None
        if not chunk:
            return None
        buffer += chunk
    head, _, buffer = buffer.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(buffer) < length:
        buffer += conn.recv(65536)
    return head, buffer[length:]
