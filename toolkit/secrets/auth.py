"""Logging in: the auth methods' ``login`` endpoints, and keeping the token alive.

Each login method sends one ``POST auth/<mount>/login...`` (never repeated:
a login issues a token), switches the client to the token it gets back, and
returns a :class:`~toolkit.Record` of kind ``login``: ``client_token``
(Sensitive), ``accessor``, ``policies``, ``token_policies``, ``ttl``
(seconds), ``renewable``, ``display_name``, ``entity_id``, ``metadata``,
``method`` and ``mount``. Passwords, secret ids and JWTs are taken as
:class:`~toolkit.Sensitive` at once (plain strings are wrapped on arrival).

Renewal is asked for, not automatic: :meth:`Auth.keep_renewed` starts a
background thread that renews the client's token with
``auth/token/renew-self`` before its time runs out, stops when the client
closes, and warns (:class:`TokenExpiryWarning`) and says so in
:attr:`TokenRenewal.state` when the token can no longer be renewed.
"""

from __future__ import annotations

import contextlib
import html
import http.server
import secrets
import socketserver
import sys
import threading
import warnings
import webbrowser
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from .._errors import APIError, InputError, ToolkitError
from .._http import HTTPLayer, api_path, segments
from .._masking import Sensitive, reveal
from .._records import Record, integer
from .._time import later, parse_duration
from ._base import SecretsArea, listed_keys, unwrap

__all__ = [
    "DEFAULT_SERVICE_ACCOUNT_TOKEN",
    "Auth",
    "RenewalClock",
    "TokenExpiryWarning",
    "TokenRenewal",
    "WallClock",
]

DEFAULT_SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
# The CLI's OIDC listener: http://localhost:8250/oidc/callback, which roles allow by convention.
OIDC_PORT = 8250
OIDC_CALLBACK = "/oidc/callback"

Secret = Sensitive | str


def _sensitive(value: Secret | None, label: str) -> Sensitive:
    if value is None or (isinstance(value, str) and not value):
        raise InputError(f"a {label} is required")
    return value if isinstance(value, Sensitive) else Sensitive(value, label)


def _mount(mount: str) -> str:
    if not mount or not mount.strip("/"):
        raise InputError("mount must name the auth method's path, e.g. 'approle'")
    return segments(mount, "mount")


class TokenExpiryWarning(UserWarning):
    """The client's token can no longer be renewed: it will expire; log in again."""


class Auth(SecretsArea):
    """``auth/<method>/login``: log in, and keep the resulting token renewed.

    Mount paths default to each method's type (``approle``, ``userpass``, ...);
    pass ``mount=`` for a method enabled elsewhere.
    """

    def __init__(self, http: HTTPLayer, *, client_certificate: str | None = None) -> None:
        super().__init__(http)
        self._client_certificate = client_certificate
        self.renewal: TokenRenewal | None = None

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()))

    # -- the login methods ------------------------------------------------------------
    def approle(
        self, role_id: str, secret_id: Secret | None = None, *, mount: str = "approle"
    ) -> Record:
        """Log in with an AppRole. ``POST auth/<mount>/login`` with ``role_id`` and
        ``secret_id`` (omit it for a role that binds no secret id)."""
        if not role_id:
            raise InputError("a role_id is required")
        body: dict[str, Any] = {"role_id": role_id}
        if secret_id is not None:
            body["secret_id"] = _sensitive(secret_id, "secret id")
        return self._login("approle", mount, "login", body)

    def userpass(self, username: str, password: Secret, *, mount: str = "userpass") -> Record:
        """Log in with a username and password. ``POST auth/<mount>/login/:username``."""
        return self._password_login("userpass", username, password, mount)

    def ldap(self, username: str, password: Secret, *, mount: str = "ldap") -> Record:
        """Log in with a directory account. ``POST auth/<mount>/login/:username``."""
        return self._password_login("ldap", username, password, mount)

    def jwt(self, role: str | None, jwt: Secret, *, mount: str = "jwt") -> Record:
        """Log in with a signed JWT for ``role`` (None: the method's default role).
        ``POST auth/<mount>/login`` with ``role`` and ``jwt``."""
        body: dict[str, Any] = {"jwt": _sensitive(jwt, "JWT")}
        if role:
            body["role"] = role
        return self._login("jwt", mount, "login", body)

    def kubernetes(
        self,
        role: str,
        jwt: Secret | None = None,
        *,
        token_file: str | Path = DEFAULT_SERVICE_ACCOUNT_TOKEN,
        mount: str = "kubernetes",
    ) -> Record:
        """Log in as a Kubernetes service account. ``POST auth/<mount>/login`` with
        ``role`` and ``jwt``: the service-account token given, else read from
        ``token_file`` (the pod's mounted token by default)."""
        if not role:
            raise InputError("a role is required")
        if jwt is None:
            path = Path(token_file)
            try:
                jwt = Sensitive(path.read_text(encoding="utf-8").strip(), "service-account token")
            except OSError as exc:
                raise InputError(
                    f"cannot read the service-account token {str(path)!r}: {exc.strerror}"
                ) from None
        return self._login(
            "kubernetes",
            mount,
            "login",
            {"role": role, "jwt": _sensitive(jwt, "service-account token")},
        )

    def cert(self, name: str | None = None, *, mount: str = "cert") -> Record:
        """Log in with the client certificate this client presents (``VAULT_CLIENT_CERT``
        / ``VAULT_CLIENT_KEY``). ``POST auth/<mount>/login``, ``name`` choosing one of
        the method's certificate roles."""
        if not self._client_certificate:
            raise InputError(
                "this client presents no certificate: pass client_cert=... and client_key=... "
                "or set VAULT_CLIENT_CERT and VAULT_CLIENT_KEY"
            )
        body = {"name": name} if name else {}
        return self._login("cert", mount, "login", body)

    def oidc(
        self,
        role: str | None = None,
        *,
        mount: str = "oidc",
        port: int = OIDC_PORT,
        host: str = "localhost",
        open_url: Callable[[str], object] | None = None,
        timeout: float = 300.0,
    ) -> Record:
        """Log in through the method's OIDC provider, in a browser.

        ``POST auth/<mount>/oidc/auth_url`` gives the provider's address for a
        redirect to ``http://<host>:<port>/oidc/callback``, which a local listener
        (the standard library's ``http.server``, on loopback only) serves; the
        browser is opened on that address (``open_url``: a browser when one is at
        hand, else the address is printed). Once the provider sends the browser
        back, ``GET auth/<mount>/oidc/callback`` trades the code for a token.
        Raises :class:`~toolkit.ToolkitError` when no answer comes in ``timeout``.
        """
        path = _mount(mount)
        redirect_uri = f"http://{host}:{port}{OIDC_CALLBACK}"
        nonce = secrets.token_urlsafe(24)
        with _CallbackListener(port, timeout) as listener:
            body: dict[str, Any] = {"redirect_uri": redirect_uri, "client_nonce": nonce}
            if role:
                body["role"] = role
            answer = unwrap(self._http.json("POST", f"/auth/{path}/oidc/auth_url", json=body))
            auth_url = str(answer.get("auth_url") or "")
            if not auth_url:
                raise InputError(
                    f"the server gave no OIDC address: is {redirect_uri} among the role's "
                    "allowed_redirect_uris?"
                )
            (open_url or _open_in_browser)(auth_url)
            query = listener.wait()
        if "error" in query:
            raise ToolkitError(f"the OIDC provider refused the login: {query['error']}")
        params = {
            "state": query.get("state", ""),
            "code": query.get("code", ""),
            "client_nonce": nonce,
        }
        payload = self._http.json(
            "GET", f"/auth/{path}/oidc/callback", params=params, idempotent=False
        )
        return self._switch(payload, "oidc", mount)

    def token(self, token: Secret) -> Record:
        """Use ``token`` from now on; returns what ``GET auth/token/lookup-self`` says of it."""
        value = _sensitive(token, "token")
        self._http.set_token(value)
        data = unwrap(self._http.json("GET", "/auth/token/lookup-self"))
        data.pop("id", None)
        return Record(
            {
                "client_token": value,
                "accessor": data.get("accessor"),
                "policies": listed_keys(data.get("policies"), "policies"),
                "token_policies": listed_keys(data.get("policies"), "policies"),
                "ttl": integer(data.get("ttl"), "ttl"),
                "renewable": bool(data.get("renewable")),
                "display_name": data.get("display_name"),
                "entity_id": data.get("entity_id"),
                "metadata": dict(data.get("meta") or {}),
                "method": "token",
                "mount": "token",
            },
            kind="login",
        )

    # -- renewal ----------------------------------------------------------------------
    def keep_renewed(
        self,
        *,
        increment: str | int | timedelta | None = None,
        fraction: float = 2 / 3,
        clock: RenewalClock | None = None,
    ) -> TokenRenewal:
        """Renew the client's token in a background thread until the client closes.

        Renews with ``POST auth/token/renew-self`` once ``fraction`` of each grant
        has passed (earlier for grants under 30 s: half of it, up to 10 s, is kept
        in hand) (``increment``: the time asked for, default the token's own).
        Returns the :class:`TokenRenewal` (also :attr:`renewal`), whose ``state``
        says what it is doing; a token that cannot be renewed (not renewable, or
        its maximum TTL reached) is said so with a :class:`TokenExpiryWarning`.
        ``clock`` is the time it reads and waits on (real time by default).
        """
        if not 0 < fraction < 1:
            raise InputError("fraction must be between 0 and 1")
        try:
            seconds = (
                parse_duration(increment, field="increment") if increment is not None else None
            )
        except ValueError as exc:
            raise InputError(str(exc)) from None
        self.stop_renewing()
        renewal = TokenRenewal(self._http, increment=seconds, fraction=fraction, clock=clock)
        self.renewal = renewal
        renewal.start()
        return renewal

    def stop_renewing(self) -> None:
        """Stop the background renewal, if one runs (the client's close does this)."""
        if self.renewal is not None:
            self.renewal.stop()

    # -- one place for the wire -------------------------------------------------------
    def _password_login(self, method: str, username: str, password: Secret, mount: str) -> Record:
        if not username:
            raise InputError("a username is required")
        body = {"password": _sensitive(password, "password")}
        return self._login(method, mount, api_path("login/{username}", username=username), body)

    def _login(self, method: str, mount: str, tail: str, body: dict[str, Any]) -> Record:
        wire = {k: reveal(v) for k, v in body.items()}
        # A login issues a token: POST, never sent twice.
        payload = self._http.json(
            "POST", f"/auth/{_mount(mount)}/{tail}", json=wire, idempotent=False
        )
        return self._switch(payload, method, mount)

    def _switch(self, payload: Any, method: str, mount: str) -> Record:
        auth = dict((payload or {}).get("auth") or {}) if isinstance(payload, dict) else {}
        client_token = auth.pop("client_token", None)
        if not client_token:
            raise ToolkitError(f"the {method} login answered without a token")
        token = Sensitive(str(client_token), "token")
        self._http.set_token(token)
        display_name = None
        try:
            looked = unwrap(self._http.json("GET", "/auth/token/lookup-self"))
            display_name = looked.get("display_name")
        except APIError:
            pass  # a token whose policies forbid lookup-self: the login stands
        return Record(
            {
                "client_token": token,
                "accessor": auth.get("accessor"),
                "policies": listed_keys(auth.get("policies"), "policies"),
                "token_policies": listed_keys(
                    auth.get("token_policies") or auth.get("policies"), "token_policies"
                ),
                "ttl": integer(auth.get("lease_duration"), "lease_duration"),
                "renewable": bool(auth.get("renewable")),
                "display_name": display_name,
                "entity_id": auth.get("entity_id") or None,
                "metadata": dict(auth.get("metadata") or {}),
                "method": method,
                "mount": mount.strip("/"),
            },
            kind="login",
        )


# -- background renewal ---------------------------------------------------------------
class RenewalClock(Protocol):
    """The time a :class:`TokenRenewal` reads and waits on (a seam: tests pass one that
    moves the sandbox's clock instead of sleeping)."""

    def now(self) -> datetime: ...

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        """Pause ``seconds``; True at once when ``stop`` is set (then the renewal ends)."""
        ...


class WallClock:
    """Real time: ``datetime.now`` and a wait on the stop event."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        return stop.wait(seconds)


class TokenRenewal:
    """A background thread renewing the client's token with ``auth/token/renew-self``.

    ``state`` is one of:

    - ``"starting"``: looking the token up;
    - ``"renewing"``: running, the token renewed in time;
    - ``"not_needed"``: the token never expires (a root token);
    - ``"not_renewable"``: the token cannot be renewed (warned);
    - ``"max_ttl_reached"``: the last renewal was cut short by the token's maximum
      TTL; it expires at ``expires_at`` (warned);
    - ``"failed"``: a renewal was refused or could not be sent (warned; ``message``);
    - ``"stopped"``: stopped, by :meth:`stop` or the client's close.
    """

    def __init__(
        self,
        http: HTTPLayer,
        *,
        increment: int | None,
        fraction: float,
        clock: RenewalClock | None = None,
    ) -> None:
        self._http = http
        self._clock: RenewalClock = clock or WallClock()
        self.increment = increment
        self.fraction = fraction
        self.state = "starting"
        self.message = ""
        self.renewals = 0
        self.expires_at: datetime | None = None
        self._ttl = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        expiry = self.expires_at.isoformat(timespec="seconds") if self.expires_at else None
        return f"<TokenRenewal {self.state} renewals={self.renewals} expires_at={expiry}>"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        data = unwrap(self._http.json("GET", "/auth/token/lookup-self"))
        ttl = integer(data.get("ttl"), "ttl")
        if not ttl:
            self.state = "not_needed"
            return
        self._note(ttl)
        if not data.get("renewable"):
            self._give_up(
                "not_renewable", f"the token cannot be renewed; it expires at {self._when()}"
            )
            return
        self._ttl = integer(data.get("creation_ttl"), "creation_ttl", ttl)
        self.state = "renewing"
        self._thread = threading.Thread(target=self._run, name="token-renewal", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing (the token keeps the time it has)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        if self.state in ("starting", "renewing"):
            self.state = "stopped"

    def _note(self, ttl: int) -> None:
        self.expires_at = later(self._clock.now(), ttl)

    def _when(self) -> str:
        return self.expires_at.isoformat(timespec="seconds") if self.expires_at else "?"

    def _give_up(self, state: str, message: str) -> None:
        self.state = state
        self.message = message
        warnings.warn(f"{message}: log in again before then", TokenExpiryWarning, stacklevel=2)

    def _run(self) -> None:
        assert self.expires_at is not None
        while True:
            left = (self.expires_at - self._clock.now()).total_seconds()
            # Renew once `fraction` of the grant has passed; a short grant keeps half of
            # itself (up to 10 s) in hand, for a busy machine or a slow server.
            grant = max(self._ttl, 1)
            slack = max((1 - self.fraction) * grant, min(grant / 2, 10.0))
            pause = max(left - slack, 0.0)
            if self._clock.wait(self._stop, pause):
                return
            wanted = self.increment or self._ttl
            try:
                body = {"increment": f"{wanted}s"} if self.increment else {}
                payload = self._http.json(
                    "POST", "/auth/token/renew-self", json=body, idempotent=False
                )
            except ToolkitError as exc:
                if self._stop.is_set():
                    return
                if isinstance(exc, APIError) and "max ttl" in str(exc).lower():
                    # OpenBao refuses (500 "past the max TTL, cannot renew") once the
                    # rounded remainder of the maximum is spent.
                    self._give_up(
                        "max_ttl_reached",
                        "the token reached its maximum TTL and cannot be renewed; "
                        f"it expires at {self._when()}",
                    )
                    return
                self._give_up("failed", f"renewing the token failed ({type(exc).__name__}: {exc})")
                return
            granted = int(((payload or {}).get("auth") or {}).get("lease_duration") or 0)
            self.renewals += 1
            self._note(granted)
            if granted < wanted:
                # The server gave less than asked: the maximum TTL caps the token now.
                self._give_up(
                    "max_ttl_reached",
                    f"the token reached its maximum TTL and cannot be renewed; it expires at {self._when()}",
                )
                return
            self._ttl = granted


# -- the OIDC callback listener --------------------------------------------------------
class _CallbackServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class _CallbackListener:
    """A loopback HTTP listener waiting for one request on ``/oidc/callback``."""

    def __init__(self, port: int, timeout: float) -> None:
        self.timeout = timeout
        self._got = threading.Event()
        self.query: dict[str, str] = {}
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the library's name
                parts = urlsplit(self.path)
                if parts.path != OIDC_CALLBACK:
                    self.send_error(404)
                    return
                query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                if not listener._got.is_set():
                    listener.query = query
                    listener._got.set()
                text = "Login received: you can close this window and go back to the notebook."
                if "error" in query:
                    text = "The provider refused the login: " + html.escape(query["error"])
                page = f"<!doctype html><title>Login</title><p>{text}</p>".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # the query holds the code: never logged

        try:
            self._server = _CallbackServer(("127.0.0.1", port), Handler)
        except OSError as exc:
            raise ToolkitError(
                f"cannot listen for the OIDC callback on 127.0.0.1:{port}: {exc.strerror}"
            ) from None
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="oidc-callback", daemon=True
        )

    def __enter__(self) -> _CallbackListener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait(self) -> dict[str, str]:
        if not self._got.wait(self.timeout):
            raise ToolkitError(
                f"no OIDC callback within {self.timeout:g} s: the login was not finished"
            )
        return self.query


def _open_in_browser(url: str) -> None:
    """Open ``url`` in a browser when one is at hand, else print it to open by hand."""
    # Printed as well: a kernel's browser may open on another machine than the operator's.
    print(f"Log in in a browser at this address:\n{url}", file=sys.stdout)
    with contextlib.suppress(webbrowser.Error):
        webbrowser.open(url)
