"""What the credential engines (database, message broker) share: who asks, passwords, leases."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from .errors import InvalidRequest, SecretsError

if TYPE_CHECKING:
    from .host import EngineHost
    from .leases import Lease
    from .mounts import Mount

__all__ = ["LeasingEngine", "Credentials", "Requester", "creds_lease", "generate_password"]


@dataclass(frozen=True)
class Requester:
    """Who asks for credentials: the token's display name (generated usernames start
    with it) and id (revoking the token revokes the lease). Demo data may pin the
    issue time and the lease id's suffix."""

    display_name: str = "token"
    token: str | None = None
    issued_at: datetime | None = None
    lease_suffix: str | None = None


@dataclass(frozen=True)
class Credentials:
    """A user an engine made for a lease: its name and password (the password kept out of
    the repr). The HTTP side puts them in the answer's ``data``."""

    username: str
    password: str = field(repr=False)


def generate_password(
    service: EngineHost, policy: str, fallback: Callable[[], str], prefix: str = ""
) -> str:
    """A password from the named password policy, else from ``fallback``.

    A policy deleted since it was configured is a 400 (``prefix`` names the
    step that failed), as the engine's request cannot be served.
    """
    if not policy:
        return fallback()
    try:
        return service.password_policies.generate(policy)
    except SecretsError as exc:
        raise InvalidRequest(prefix + "; ".join(exc.messages)) from None


def lease_ttls(mount: Mount, ttl: int, max_ttl: int) -> tuple[int, int]:
    """A creds lease's (ttl, max_ttl): the engine's values (0: the mount's), capped by the mount."""
    default, mount_max = mount.lease_ttls()
    capped_max = min(max_ttl or mount_max, mount_max)
    return min(ttl or default, capped_max), capped_max


class LeasingEngine(Protocol):
    """A credential engine as :func:`creds_lease` uses it: where it is mounted, and how a
    lease of its credentials ends."""

    @property
    def service(self) -> EngineHost: ...

    @property
    def mount(self) -> Mount: ...

    def revoke_creds(self, lease: Lease) -> None: ...


def creds_lease(
    engine: LeasingEngine,
    role: str,
    requester: Requester,
    ttls: tuple[int, int],
    data: dict[str, Any],
) -> Lease:
    """The renewable lease ``<mount>creds/<role>/<id>`` whose revocation runs the engine's
    ``revoke_creds``."""
    ttl, max_ttl = ttls
    return engine.service.leases.create(
        f"{engine.mount.path}creds/{role}",
        ttl=ttl,
        max_ttl=max_ttl,
        renewable=True,
        on_revoke=engine.revoke_creds,
        token=requester.token,
        suffix=requester.lease_suffix,
        issue_time=requester.issued_at,
        data=data,
    )
