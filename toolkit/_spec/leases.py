"""The layout of a lease id (spec 001, "Leases"): ``<mount>/<endpoint>/<role>/<suffix>``.

``database/creds/readonly/Xy`` is mount ``database/``, role ``readonly``; a token's
lease is under its auth method's mount (``auth/token/create/Xy``). The client reads
mount and role from ids it lists; the sandbox files each lease under its mount.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["split_lease_id"]


def split_lease_id(lease_id: str, mounts: Sequence[str] = ()) -> tuple[str, str]:
    """The mount and role of a lease id.

    The mount is the longest of ``mounts`` the id starts with, else the first
    segment (two for ``auth/<method>/``), with a trailing ``/``. The role is
    the segment after the engine's endpoint word: ``database/creds/readonly/Xy``
    is mount ``database/``, role ``readonly``; ``ad/library/helpdesk/check-out/Xy``
    role ``helpdesk``; with a single segment before the suffix, that segment.
    """
    mount = ""
    for candidate in mounts:
        if lease_id.startswith(candidate) and len(candidate) > len(mount):
            mount = candidate
    parts = lease_id.split("/")
    if not mount:
        mount = f"auth/{parts[1]}/" if parts[0] == "auth" and len(parts) > 2 else parts[0] + "/"
    middle = [p for p in lease_id[len(mount) :].split("/")[:-1] if p]
    return mount, middle[1] if len(middle) > 1 else (middle[0] if middle else "")
