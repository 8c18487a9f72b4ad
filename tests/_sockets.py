"""For the test servers that script their answers: reading HTTP/1.1 requests off a
raw socket, a threaded server answering as a test scripts, and certificates for
serving them over TLS."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path


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
        try:
            chunk = conn.recv(65536)
        except OSError:
            return None
        if not chunk:
            return None
        buffer += chunk
    return head, buffer[length:]


def certificate_files(directory: Path, *, client: str | None = None) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it, in PEM files:
    (CA certificate, server certificate, server key). With ``client`` (a common name),
    the leaf is a client certificate of that name instead, in ``client-ca.pem``,
    ``client.pem`` and ``client-key.pem``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.now(UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, client or "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
    )
    if client:
        leaf = leaf.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    else:
        leaf = leaf.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    server = leaf.sign(ca_key, hashes.SHA256())
    names = (
        ("client-ca.pem", "client.pem", "client-key.pem")
        if client
        else (
            "ca.pem",
            "server.pem",
            "server-key.pem",
        )
    )
    paths = directory / names[0], directory / names[1], directory / names[2]
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    paths[2].chmod(0o600)
    return paths


Answer = Callable[[bytes, int], tuple[bytes, bool]]


class Threaded:
    """A socket server, one thread a connection, answering each request with
    ``answer(request_head, n)`` (n counts requests on that connection):
    (bytes to send, close the connection after them).

    ``ahead`` records, for each request, whether the next request had already
    arrived when its answer was sent: that is pipelining, seen from the server.
    """

    def __init__(self, answer: Answer, tls: ssl.SSLContext | None = None) -> None:
        self.answer = answer
        self.tls = tls
        self.heads: list[bytes] = []
        self.ahead: list[bool] = []
        self.connections = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                self.open.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        n = 0
        if self.tls is not None:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                conn.close()
                return
        with conn:
            while True:
                request = read_request(conn, buffer)
                if request is None:
                    return
                head, buffer = request
                n += 1
                answer, close = self.answer(head, n)
                with self.lock:
                    self.heads.append(head)
                    self.ahead.append(b"\r\n\r\n" in buffer)
                if answer:
                    try:
                        conn.sendall(answer)
                    except OSError:
                        return
                if close:
                    return

    def close_idle(self) -> None:
        """Close every connection from the server's side (as an idle timeout does)."""
        with self.lock:
            conns, self.open = self.open, []
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self.sock.close()
        self.close_idle()


class Peer:
    """One accepted connection, as a :class:`Scripted` server's handler sees it."""

    def __init__(self, server: Scripted, sock: socket.socket, number: int) -> None:
        self.server = server
        self.sock = sock
        self.number = number
        self.buffer = b""

    def request(self, *, body: bool = True) -> Seen | None:
        """The next request (None when the client closed); its body read too unless
        ``body`` is false. Recorded in ``server.seen``."""
        while b"\r\n\r\n" not in self.buffer:
            chunk = self._recv()
            if not chunk:
                return None
            self.buffer += chunk
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        content = b""
        if body:
            while len(self.buffer) < length:
                chunk = self._recv()
                if not chunk:
                    return None
                self.buffer += chunk
            content, self.buffer = self.buffer[:length], self.buffer[length:]
        seen = Seen(method, target, headers, content, self.number, ahead=b"\r\n\r\n" in self.buffer)
        with self.server.lock:
            self.server.seen.append(seen)
        return seen

    def read_rest(self, length: int) -> None:
        """Read and drop ``length`` bytes of a body not read yet."""
        while len(self.buffer) < length:
            chunk = self._recv()
            if not chunk:
                return
            self.buffer += chunk
        self.buffer = self.buffer[length:]

    def _recv(self) -> bytes:
        try:
            return self.sock.recv(65536)
        except OSError:
            return b""

    def send(self, data: bytes) -> bool:
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        return True

    def reset(self) -> None:
        """Close with a TCP reset (RST), not a clean close."""
        import struct

        with contextlib.suppress(OSError):
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


class Seen:
    """A request a scripted server received."""

    def __init__(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        connection: int,
        *,
        ahead: bool,
    ) -> None:
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.connection = connection
        self.ahead = ahead  # the next request had arrived before this one was answered

    def __repr__(self) -> str:
        return f"<Seen {self.method} {self.target} on connection {self.connection}>"


class Scripted:
    """A socket server running ``handler(peer)`` on each connection, in a thread of
    its own. Records every request (``seen``) and counts ``connections``. Every
    socket has a timeout, so that a test cannot hang on a server."""

    def __init__(self, handler: Callable[[Peer], None], tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.seen: list[Seen] = []
        self.connections = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def requests(self, method: str | None = None) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if method is None or s.method == method]

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(10)
            with self.lock:
                self.connections += 1
                number = self.connections
                self._open.append(conn)
            threading.Thread(target=self._serve, args=(conn, number), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        if self.tls is not None:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                conn.close()
                return
        try:
            self.handler(Peer(self, conn, number))
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def stop(self) -> None:
        self.sock.close()
        with self.lock:
            conns, self._open = self._open, []
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                conn.close()


def answer(status: int = 200, body: bytes = b"{}", *headers: str) -> bytes:
    """A complete HTTP/1.1 answer with a Content-Length."""
    reason = {200: "OK", 204: "No Content", 307: "Temporary Redirect"}.get(status, "Status")
    extra = "".join(f"{h}\r\n" for h in headers)
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n{extra}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
