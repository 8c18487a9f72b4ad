"""The sandbox: a real HTTP server implementing both APIs, for laptops, CI and Binder.

    with Sandbox() as sb:            # demo data, a free port on 127.0.0.1
        client = PlatformClient(sb.address, sb.token)

``python -m toolkit sandbox`` runs the same server in the foreground. Each
service's state and rules live in plain Python (``sandbox.platform``,
``sandbox.secrets``); the HTTP layer in ``app`` and the ``routes`` modules is
thin over them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..extras import require
from ._clock import DEMO_EPOCH, Clock
from ._faults import Faults
from ._state import StateFile, stored

if TYPE_CHECKING:
    from .secrets.backends import EngineRegistry

# The server stack comes with the [sandbox] extra; say so before a bare ImportError would.
require("sandbox", "The sandbox", "starlette", "uvicorn", "zttp")

__all__ = ["DEFAULT_TOKEN", "Sandbox", "SandboxOptions", "ensure_sandbox", "DEMO_EPOCH"]

# The token the sandbox accepts when none is given: an owner / organization
# token on every platform organization, and the secrets server's root token.
DEFAULT_TOKEN = "sandbox-root-token"

# Environment variables naming a sandbox already running (set by the
# ``sandbox`` command's users such as ``make lab`` and ``binder/start``).
ENV_ADDRESS = "TOOLKIT_SANDBOX_ADDRESS"
ENV_TOKEN = "TOOLKIT_SANDBOX_TOKEN"


@dataclass
class SandboxOptions:
    """Start-up options; the command line maps one flag to each."""

    token: str = DEFAULT_TOKEN
    demo: bool = True
    pool_limit: int = 1
    key_shares: int = 5
    key_threshold: int = 3
    # An auto-unseal seal that stores the root key: the shares are recovery shares.
    recovery_seal: bool = False
    init_file: str | None = None
    rate_limit: float | None = None
    start_time: datetime | None = None
    # A SQLite file to keep the state in across restarts (see ``_state``).
    state: str | None = None
    # Host names accepted besides localhost, 127.0.0.1 and [::1] (``--allow-host``).
    allow_hosts: list[str] = field(default_factory=list)
    # The administrative namespace (``--admin-namespace``), where restricted
    # endpoints answer as in the root; created at start when missing.
    admin_namespace: str | None = None
    # The secrets engines the server can mount (None: the built-in ones,
    # ``secrets.engines.ENGINES``); a test of the house adds one of its own.
    engines: EngineRegistry | None = None
    # A file the secrets server's audit device appends to (``--audit-file``), in
    # OpenBao's file format; None: no audit device.
    audit_file: str | None = None
    # Generated records at scale by kind (``--demo-scale leases=1M,...``; see ``scale``).
    demo_scale: dict[str, int] = field(default_factory=dict)


class Sandbox:
    """Both services' state, and the server that serves it."""

    def __init__(self, options: SandboxOptions | None = None, **overrides: Any) -> None:
        opts = options or SandboxOptions()
        for key, value in overrides.items():
            if not hasattr(opts, key):
                raise TypeError(f"unknown sandbox option {key!r}")
            setattr(opts, key, value)
        self.options = opts
        self.token = opts.token
        # Whether the state was resumed from ``options.state`` rather than built.
        self.resumed = False
        self.state_file: StateFile | None = None
        if opts.state:
            self.state_file = StateFile(opts.state)
            try:
                saved = self.state_file.load()
            except BaseException:
                self.state_file.close()  # and its lock: the file is free for another try
                raise
            if saved is not None:
                self.clock, self.platform, self.secrets = saved.clock, saved.platform, saved.secrets
                self.secrets.engines = self._engines(opts)
                self.token = self.secrets.root_token
                self.resumed = True
        if not self.resumed:
            self._build(opts)
        if opts.admin_namespace is not None or not self.resumed:
            self.secrets.namespaces.set_admin(opts.admin_namespace)
        if self.state_file is not None and (not self.resumed or opts.admin_namespace is not None):
            self.state_file.save(stored(self))
        # Faults to inject for client tests (none armed unless a test arms one).
        self.faults = Faults()
        # How many requests ``rate_limit`` refused with 429 (so tests see the limit bite).
        self.rate_limited = 0
        self._server: Any = None
        self._app: Any = None

    @staticmethod
    def _engines(opts: SandboxOptions) -> EngineRegistry:
        if opts.engines is not None:
            return opts.engines
        from .secrets.engines import ENGINES

        return ENGINES

    def _build(self, opts: SandboxOptions) -> None:
        start = opts.start_time or (DEMO_EPOCH if opts.demo else None)
        self.clock = Clock(start)
        from .platform.models import PlatformService
        from .secrets.models import SecretsService

        self.platform = PlatformService(
            clock=self.clock, admin_token=opts.token, pool_limit=opts.pool_limit
        )
        self.secrets = SecretsService(
            clock=self.clock,
            root_token=opts.token,
            engines=self._engines(opts),
            key_shares=opts.key_shares,
            key_threshold=opts.key_threshold,
            recovery_seal=opts.recovery_seal,
        )
        if opts.audit_file:
            self.secrets.audit.enable_file("file", opts.audit_file)
        if opts.demo:
            from .platform.demo import load_demo as load_platform_demo
            from .secrets.demo import load_demo as load_secrets_demo

            load_platform_demo(self.platform)
            load_secrets_demo(self.secrets)
        if opts.demo_scale:
            from .scale import load_scale

            load_scale(self.secrets, self.platform, opts.demo_scale)
        if opts.init_file:
            self.secrets.write_init_file(opts.init_file)

    def persist(self, *, service: str | None = None) -> None:
        """Store what changed in ``options.state`` now (no-op without one).

        ``service`` ("platform" or "secrets") names the only service a request
        may have changed, so the other is not looked at.
        """
        if self.state_file is None:
            return
        self.state_file.save(stored(self), *([(service,)] if service else []))

    @property
    def app(self) -> Any:
        if self._app is None:
            from .app import build_app

            self._app = build_app(self)
        return self._app

    # -- serving ---------------------------------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0) -> Sandbox:
        """Serve from a background thread; returns once the server listens."""
        from ._server import BackgroundServer

        if self._server is not None:
            raise RuntimeError("this sandbox is already serving")
        server = BackgroundServer(self.app, host, port)
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self.state_file is not None:
            self.state_file.close(stored(self))
            self.state_file = None

    def describe_tokens(self) -> list[tuple[str, str]]:
        """Every token the sandbox accepts besides its own, with what each may do."""
        described = list(self.platform.describe_tokens())
        for token in self.secrets.tokens.live():
            if token.id != self.token:
                policies = ", ".join(token.policies) or "no policies"
                described.append((token.id, f"secrets server token with policies: {policies}"))
        return described

    def __enter__(self) -> Sandbox:
        if self._server is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> str:
        if self._server is None:
            raise RuntimeError("the sandbox is not serving; call start() first")
        host = self._server.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self._server.port}"

    def __repr__(self) -> str:
        where = self.address if self._server is not None else "not serving"
        return f"<Sandbox {where}>"


@dataclass(frozen=True)
class RunningSandbox:
    """Where a sandbox serves, and whether this process started it."""

    address: str
    token: str
    started_here: bool
    sandbox: Sandbox | None = None


_SHARED: Sandbox | None = None


def ensure_sandbox() -> RunningSandbox:
    """The sandbox that the environment names, or one started in this process.

    ``TOOLKIT_SANDBOX_ADDRESS`` (and ``TOOLKIT_SANDBOX_TOKEN``, default
    :data:`DEFAULT_TOKEN`) name a sandbox already running, as ``make lab`` and
    ``binder/start`` set them; otherwise a demo sandbox is started in a
    background thread of this process, once. Its audit device writes to a file in a
    folder of its own, readable by this user only, as ``binder/start``'s does: the
    audit-log reader and the least-privilege runbook read the sandbox's own log.
    """
    global _SHARED
    address = os.environ.get(ENV_ADDRESS)
    if address:
        return RunningSandbox(address.rstrip("/"), os.environ.get(ENV_TOKEN, DEFAULT_TOKEN), False)
    if _SHARED is None:
        import tempfile

        folder = tempfile.mkdtemp(prefix="toolkit-sandbox-audit-")
        _SHARED = Sandbox(audit_file=os.path.join(folder, "audit.log")).start()
    return RunningSandbox(_SHARED.address, _SHARED.token, True, _SHARED)
