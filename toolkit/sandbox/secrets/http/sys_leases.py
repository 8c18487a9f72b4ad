"""HTTP for ``sys/leases/*`` (spec section 4.4; restricted), thin over :mod:`..leases`.

Status codes follow the real server: lookup of an unknown id is 400 ``invalid
lease``, renew of one 400 ``lease not found``, revoke of one 204. A revocation
with ``sync`` false (the default) is queued on a real server and answered 202;
the sandbox performs it before answering, so a lookup right after it already
fails. ``sync`` true, or nothing to revoke, answers 204. ``revoke-force`` is
always synchronous. Tidy answers 202 with a warning. The count and list of
irrevocable leases key leases by mount path (``mount_id`` is the mount path in
the sandbox). The legacy aliases ``sys/renew``, ``sys/revoke``,
``sys/revoke-prefix`` and ``sys/revoke-force`` are served too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.routing import Route

from ...._time import format_rfc3339, parse_duration
from ..errors import InvalidRequest, SecretsError
from ._base import SecretsRequest, envelope, error, flag, no_content, route

if TYPE_CHECKING:
    from ..leases import Lease
    from ..models import SecretsService

__all__ = ["DEFAULT_LIST_LIMIT", "lease_routes"]

# Spec part 8: the lease list returns at most this many leases unless told otherwise.
DEFAULT_LIST_LIMIT = 10_000


def _lease_id(call: SecretsRequest) -> str:
    """The lease id of the body, else of the path (the body wins when both are given)."""
    value = call.body.get("lease_id") or call.params.get("lease_id") or ""
    if not isinstance(value, str):
        raise InvalidRequest("lease_id: expected a string")
    if not value:
        raise InvalidRequest("lease_id must be specified")
    return value


def _prefix(call: SecretsRequest) -> str:
    prefix = call.params.get("prefix", "")
    if not prefix.strip("/"):
        raise InvalidRequest("prefix must be specified")
    return prefix


def _time(value: Any) -> str | None:
    return format_rfc3339(value) if value is not None else None


def lookup_data(lease: Lease, now: Any) -> dict[str, Any]:
    """The lease fields of spec part 2, as ``sys/leases/lookup`` answers them."""
    return {
        "id": lease.lease_id,
        "issue_time": _time(lease.issue_time),
        "expire_time": _time(lease.expire_time),
        "last_renewal_time": _time(lease.last_renewal_time),
        "renewable": lease.renewable and not lease.irrevocable,
        "ttl": 0 if lease.irrevocable else lease.ttl(now),
    }


async def lookup(call: SecretsRequest) -> Response:
    """``POST|PUT sys/leases/lookup``: one lease's times."""
    leases = call.service.leases
    lease = leases.get(_lease_id(call))
    if lease is None:
        raise InvalidRequest("invalid lease")
    return envelope(lookup_data(lease, leases.now()))


async def lookup_list(call: SecretsRequest) -> Response:
    """``LIST sys/leases/lookup/:prefix`` (sudo): direct children, folders ending in ``/``."""
    keys = call.service.leases.lookup_prefix(call.params.get("prefix", ""))
    if not keys:
        return error(404)
    return envelope({"keys": keys})


async def renew(call: SecretsRequest) -> Response:
    """``POST|PUT sys/leases/renew[/:lease_id]``: extend a lease, capped by its max ttl."""
    lease_id = _lease_id(call)
    try:
        increment = parse_duration(call.body.get("increment"), field="increment")
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    leases = call.service.leases
    known = leases.get(lease_id)
    if known is not None and known.mount.startswith("auth/"):
        # Spec 4.4: token leases are renewed through the token endpoints.
        raise InvalidRequest("tokens cannot be renewed through this endpoint")
    lease = leases.renew(lease_id, increment)
    # Counted from the renewal's own instant: the clock has moved on since, and
    # a later "now" would grant a second less than asked (and warn of a cap).
    granted = lease.ttl(lease.last_renewal_time or leases.now())
    warnings = []
    if increment and granted < increment:
        warnings.append(
            f'TTL of "{increment}s" exceeded the effective max_ttl of "{granted}s"; '
            "TTL value is capped accordingly"
        )
    return envelope(
        None,
        lease_id=lease.lease_id,
        renewable=lease.renewable,
        lease_duration=granted,
        warnings=warnings,
    )


def _revoked(sync: bool, done: bool) -> Response:
    # A real server queues an unsynchronised revocation and answers 202.
    return Response(status_code=202) if done and not sync else no_content()


async def revoke(call: SecretsRequest) -> Response:
    """``POST|PUT sys/leases/revoke[/:lease_id]``: revoke one lease (unknown: 204)."""
    lease_id = _lease_id(call)
    sync = flag(call, "sync")
    return _revoked(sync, call.service.leases.revoke(lease_id))


async def revoke_prefix(call: SecretsRequest) -> Response:
    """``POST|PUT sys/leases/revoke-prefix/:prefix`` (sudo): every lease under the prefix."""
    prefix = _prefix(call)
    if prefix.endswith("/"):
        raise InvalidRequest(f'invalid prefix {prefix!r}: a prefix must not end in "/"')
    sync = flag(call, "sync")
    return _revoked(sync, call.service.leases.revoke_prefix(prefix) > 0)


async def revoke_force(call: SecretsRequest) -> Response:
    """``POST|PUT sys/leases/revoke-force/:prefix`` (sudo): ignores the engines' errors."""
    call.service.leases.revoke_force(_prefix(call))
    return no_content()


def _token_valid(service: SecretsService, token_id: str) -> bool:
    try:
        service.authenticate(token_id)
    except SecretsError:
        return False
    return True


async def tidy(call: SecretsRequest) -> Response:
    """``POST|PUT sys/leases/tidy``: revoke leases whose token is gone; 202 with a warning."""
    service = call.service
    count = service.leases.tidy(lambda token_id: _token_valid(service, token_id))
    return envelope(
        None,
        status=202,
        warnings=[
            "Tidy operation successfully started. In the sandbox it has already "
            f"finished: {count} dangling lease(s) revoked."
        ],
    )


def _irrevocable_type(call: SecretsRequest) -> None:
    kind = call.arg("type", "")
    if not kind:
        raise InvalidRequest('type is required: only "irrevocable" is supported')
    if kind != "irrevocable":
        raise InvalidRequest(f'unsupported lease type {kind!r}: only "irrevocable" is supported')
    flag(call, "include_child_namespaces")  # accepted; the sandbox has one namespace


async def count(call: SecretsRequest) -> Response:
    """``GET sys/leases/count?type=irrevocable``: irrevocable leases per mount and in total."""
    _irrevocable_type(call)
    counts, total = call.service.leases.count_irrevocable()
    return envelope({"counts": counts, "lease_count": total})


def _limit(call: SecretsRequest) -> int | None:
    raw = call.arg("limit", "")
    if raw in ("", None):
        return DEFAULT_LIST_LIMIT
    text = str(raw).strip().lower()
    if text == "none":
        return None
    if isinstance(raw, bool) or not text.isdigit() or int(text) <= 0:
        raise InvalidRequest(f'limit: expected a positive number or "none", got {raw!r}')
    return int(text)


async def list_irrevocable(call: SecretsRequest) -> Response:
    """``GET sys/leases?type=irrevocable&limit=``: irrevocable leases, up to ``limit``."""
    _irrevocable_type(call)
    limit = _limit(call)
    leases, total = call.service.leases.list_irrevocable(limit)
    warnings = []
    if limit is not None and total > limit:
        warnings.append(
            f"{total} irrevocable leases exist; only {limit} are listed. "
            'Set a larger limit, or "none" to list them all.'
        )
    rows = [
        {
            "lease_id": lease.lease_id,
            "mount_id": lease.mount,
            "expire_time": _time(lease.expire_time),
            "error": lease.revoke_error,
        }
        for lease in leases
    ]
    return envelope({"leases": rows, "lease_count": total}, warnings=warnings)


def lease_routes(service: SecretsService) -> list[Route]:
    """The routes of spec section 4.4 (all restricted to the root namespace)."""
    write = ("POST", "PUT")
    table = [
        route(service, "sys/leases/lookup", lookup, write, restricted=True),
        route(service, "sys/leases/lookup", lookup_list, ["LIST"], sudo=True, restricted=True),
        route(
            service,
            "sys/leases/lookup/{prefix:path}",
            lookup_list,
            ["LIST"],
            sudo=True,
            restricted=True,
        ),
        route(service, "sys/leases/tidy", tidy, write, restricted=True),
        route(service, "sys/leases/count", count, ["GET"], restricted=True),
        route(service, "sys/leases", list_irrevocable, ["GET"], restricted=True),
    ]
    for base in ("sys/leases/", "sys/"):
        table += [
            route(service, base + "renew", renew, write, restricted=True),
            route(service, base + "renew/{lease_id:path}", renew, write, restricted=True),
            route(service, base + "revoke", revoke, write, restricted=True),
            route(service, base + "revoke/{lease_id:path}", revoke, write, restricted=True),
            route(
                service,
                base + "revoke-prefix/{prefix:path}",
                revoke_prefix,
                write,
                sudo=True,
                restricted=True,
            ),
            route(
                service,
                base + "revoke-force/{prefix:path}",
                revoke_force,
                write,
                sudo=True,
                restricted=True,
            ),
        ]
    return table
