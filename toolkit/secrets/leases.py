"""Leases (spec section 4.4): lookup, renew, revoke, tidy, counts, and the views.

:meth:`Leases.leases_by_mount` walks the lookup tree (``LIST
sys/leases/lookup/:prefix``; folders end in ``/``) level by level, listing the
folders of a level concurrently, then looks up every lease concurrently, and
builds one frame in one pass. :meth:`Leases.renew_leases` and
:meth:`Leases.revoke_leases` act on many leases and report each one, never
stopping at a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from .._errors import APIError, InputError, ToolkitError
from .._frames import Col, Schema, build_frame
from .._gc import collector_paused
from .._http import Request, decode_json, segment
from .._progress import progress
from .._records import Record
from .._time import parse_time
from ._base import Area, list_keys_of, unwrap, warnings_of

__all__ = ["LEASES", "LEASE_ACTIONS", "LEASE_SUMMARY", "Leases", "lease_summary", "split_lease_id"]

LEASES = Schema.of(
    "lease_id",
    Col("mount"),
    Col("role"),
    Col("issue_time", "datetime"),
    Col("expire_time", "datetime"),
    Col("last_renewal_time", "datetime"),
    Col("ttl", "int"),
    Col("renewable", "bool"),
    index="lease_id",
)
LEASE_SUMMARY = Schema.of(
    "mount",
    Col("count", "int"),
    Col("expiring_1h", "int"),
    Col("expiring_24h", "int"),
    Col("min_ttl", "int"),
    Col("median_ttl", "float"),
    index="mount",
)
LEASE_ACTIONS = Schema.of(
    "lease_id",
    Col("action"),
    Col("detail"),
    index="lease_id",
)
# A list of names (the class defines a method called ``list``).
Names = list[str]

IRREVOCABLE = Schema.of(
    "lease_id",
    Col("mount"),
    Col("expire_time", "datetime"),
    Col("error"),
    index="lease_id",
)


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


class Leases(Area):
    """``sys/leases/*``: one lease at a time, and in bulk."""

    @staticmethod
    def summary(frame: pd.DataFrame) -> pd.DataFrame:
        """Per mount of a :meth:`leases_by_mount` frame: counts, expiring within 1 hour
        and 24 hours, shortest and median ttl (:func:`lease_summary`; no request)."""
        return lease_summary(frame)

    # -- one lease -------------------------------------------------------------
    def lookup(self, lease_id: str) -> Record:
        """A lease's times. ``POST /sys/leases/lookup`` with ``lease_id`` (a read: repeatable).

        Fields ``id``, ``issue_time``, ``expire_time``, ``last_renewal_time``
        (the real server's ``last_renewal`` is read as this), ``renewable``,
        ``ttl``; times are aware UTC datetimes.
        """
        if not lease_id:
            raise InputError("lease_id is required")
        data = unwrap(
            self._http.json(
                "POST", "/sys/leases/lookup", json={"lease_id": lease_id}, idempotent=True
            )
        )
        return Record(_lease_fields(data, lease_id), kind="lease")

    def list(self, prefix: str) -> list[str]:
        """Keys under ``prefix`` (leases, and folders ending in ``/``).

        ``LIST /sys/leases/lookup/:prefix`` (sudo).
        """
        return self._list(_lookup_path(prefix))

    def renew(self, lease_id: str, increment: int = 0) -> Record:
        """Extend a lease by ``increment`` seconds. ``POST /sys/leases/renew``.

        Returns ``lease_id``, ``renewable``, ``lease_duration`` and the server's
        ``warnings`` (a list; a renewal capped at the lease's max ttl says so there).
        """
        if not lease_id:
            raise InputError("lease_id is required")
        if increment < 0:
            raise InputError(f"increment must not be negative, not {increment}")
        payload = self._http.json(
            "POST",
            "/sys/leases/renew",
            json={"lease_id": lease_id, "increment": increment},
            check="look the lease up (leases.lookup) to see its expire_time",
        )
        data = payload if isinstance(payload, Mapping) else {}
        return Record(
            {
                "lease_id": data.get("lease_id") or lease_id,
                "renewable": data.get("renewable"),
                "lease_duration": data.get("lease_duration"),
                "warnings": warnings_of(payload),
            },
            kind="lease-renewal",
        )

    def revoke(self, lease_id: str, *, sync: bool = True) -> None:
        """Revoke a lease (``sync=False`` queues it). ``POST /sys/leases/revoke``.

        Sent again when its outcome is unknown: revoking a lease already gone
        answers 204, so a repetition changes nothing.
        """
        if not lease_id:
            raise InputError("lease_id is required")
        self._http.json(
            "POST",
            "/sys/leases/revoke",
            json={"lease_id": lease_id, "sync": sync},
            idempotent=True,
        )

    def revoke_prefix(self, prefix: str, *, sync: bool = True) -> None:
        """Revoke every lease under ``prefix``. ``POST /sys/leases/revoke-prefix/:prefix`` (sudo)."""
        path = _prefix(prefix)
        self._http.json(
            "POST",
            f"/sys/leases/revoke-prefix/{path}",
            json={"sync": sync},
            check="list the leases under the prefix (leases.list)",
        )

    def revoke_force(self, prefix: str) -> None:
        """Revoke everything under ``prefix``, ignoring backend errors.

        ``POST /sys/leases/revoke-force/:prefix`` (sudo). Use only when the
        backend can no longer revoke: secrets may stay valid on it.
        """
        self._http.json(
            "POST",
            f"/sys/leases/revoke-force/{_prefix(prefix)}",
            check="list the leases under the prefix (leases.list)",
        )

    def tidy(self) -> Names:
        """Remove dangling lease entries. ``POST /sys/leases/tidy``; returns the warnings."""
        return warnings_of(self._http.json("POST", "/sys/leases/tidy"))

    def count_irrevocable(self, *, include_child_namespaces: bool = False) -> Record:
        """``GET /sys/leases/count?type=irrevocable``: ``lease_count`` and ``counts`` per mount."""
        params = {"type": "irrevocable", "include_child_namespaces": include_child_namespaces}
        data = unwrap(self._http.json("GET", "/sys/leases/count", params=_query(params)))
        return Record(
            {
                "lease_count": int(data.get("lease_count") or 0),
                "counts": dict(data.get("counts") or {}),
            },
            kind="lease-count",
        )

    def list_irrevocable(
        self, limit: int | str | None = None, *, include_child_namespaces: bool = False
    ) -> pd.DataFrame:
        """Irrevocable leases. ``GET /sys/leases?type=irrevocable``.

        ``limit`` caps the list (``"none"`` for all; unset, the server's 10,000).
        Index ``lease_id``; columns ``mount``, ``expire_time``, ``error``;
        ``frame.attrs`` holds ``lease_count`` and the server's ``warnings``.
        """
        params: dict[str, Any] = {
            "type": "irrevocable",
            "include_child_namespaces": include_child_namespaces,
        }
        if limit is not None:
            params["limit"] = str(limit)
        payload = self._http.json("GET", "/sys/leases", params=_query(params))
        data = unwrap(payload)
        raw = data.get("leases") or []
        items: list[Mapping[str, Any]] = []
        if isinstance(raw, Mapping):  # per mount point
            for mount, leases in raw.items():
                items.extend({"mount": mount, **lease} for lease in leases or [])
        else:
            items = list(raw)
        rows = [
            {
                "lease_id": item.get("lease_id") or item.get("id"),
                "mount": item.get("mount")
                or item.get("mount_id")
                or split_lease_id(str(item.get("lease_id") or ""))[0],
                "expire_time": item.get("expire_time"),
                "error": item.get("error"),
            }
            for item in items
        ]
        frame = build_frame(rows, IRREVOCABLE)
        frame.attrs["lease_count"] = int(data.get("lease_count") or len(rows))
        frame.attrs["warnings"] = warnings_of(payload)
        return frame

    # -- mounts ------------------------------------------------------------------
    def mounts(self) -> Names:
        """Mount paths of the secrets engines and auth methods (``sys/mounts``, ``sys/auth``)."""
        found: list[str] = []
        for path, prefix in (("/sys/mounts", ""), ("/sys/auth", "auth/")):
            try:
                data = unwrap(self._http.json("GET", path))
            except APIError:
                continue
            found.extend(prefix + k for k in data if k.endswith("/"))
        return found

    # -- views -----------------------------------------------------------------
    def lease_ids(self, prefix: str = "") -> Names:
        """Every lease id under ``prefix`` (all when empty), walking the lookup tree.

        The folders of each level are listed concurrently.
        """
        level = [_folder(prefix)]
        found: list[str] = []
        while level:
            listed = list_keys_of(self._http, [_lookup_path(p) for p in level])
            folders, level = level, []
            for folder, keys in zip(folders, listed, strict=True):
                for key in keys:
                    (level if key.endswith("/") else found).append(folder + key)
        return found

    def leases_by_mount(
        self,
        prefix: str | None = None,
        mounts: Iterable[str] | None = None,
        *,
        show_progress: bool = False,
    ) -> pd.DataFrame:
        """Every lease under ``prefix`` (or under ``mounts``, or all), looked up.

        Walks the lookup tree, then looks up every lease concurrently. Index
        ``lease_id``; columns ``mount``, ``role``, ``issue_time``,
        ``expire_time``, ``last_renewal_time`` (UTC datetimes), ``ttl`` (seconds
        left), ``renewable``; sorted by mount then expiry. A lease that expires
        between listing and lookup is left out. ``show_progress`` shows a bar
        over the lookups.
        """
        if prefix is not None and mounts is not None:
            raise InputError("pass prefix or mounts, not both")
        starts = [_folder(m) for m in mounts] if mounts is not None else [prefix or ""]
        ids: list[str] = []
        for start in starts:
            ids.extend(self.lease_ids(start))
        return self.lookup_leases(
            ids, mounts=starts if mounts is not None else None, show_progress=show_progress
        )

    def lookup_leases(
        self,
        ids: Iterable[str],
        mounts: Iterable[str] | None = None,
        *,
        show_progress: bool = False,
    ) -> pd.DataFrame:
        """The leases ``ids`` (a list, or a frame's index), looked up concurrently.

        ``POST /sys/leases/lookup`` for each (a read: repeatable). The frame of :meth:`leases_by_mount`;
        an id the server does not know (expired, revoked, mistyped) is left out.
        ``mounts`` are the mount paths to split ids by (default: the server's).
        """
        todo = list(dict.fromkeys(ids))
        mount_paths = list(mounts) if mounts is not None else self._known_mounts()

        calls = [
            Request(
                "POST",
                "/sys/leases/lookup",
                json={"lease_id": i},
                idempotent=True,
                ok_statuses=_GONE,
            )
            for i in todo
        ]
        with collector_paused():
            answers = progress(
                self._http.many(calls),
                desc="looking up leases",
                total=len(todo),
                enabled=show_progress,
            )
            rows = []
            for lease_id, response in zip(todo, answers, strict=True):
                if response.status_code in _GONE:  # expired or revoked since the listing
                    continue
                mount, role = split_lease_id(lease_id, mount_paths)
                # Times stay text here: the frame parses each column at once.
                fields = _lease_fields(unwrap(decode_json(response, "POST")), lease_id, times=_text)
                rows.append({**fields, "mount": mount, "role": role})
            frame = build_frame(rows, LEASES)
        return frame.sort_values(["mount", "expire_time"], kind="stable")

    def _known_mounts(self) -> Names:
        try:
            return self.mounts()
        except ToolkitError:
            return []

    # -- bulk --------------------------------------------------------------------
    def renew_leases(
        self,
        ids: Iterable[str],
        increment: int = 0,
        *,
        dry_run: bool = True,
        show_progress: bool = True,
    ) -> pd.DataFrame:
        """Renew each lease by ``increment`` seconds, concurrently.

        With ``dry_run`` (the default) nothing is sent. One row per lease:
        ``action`` (``would renew``, ``renewed``, ``failed``) and ``detail`` (the
        new duration and the server's warnings, such as a renewal capped at the
        lease's max ttl; or the server's error). A failure never stops the rest.
        """
        if increment < 0:
            raise InputError(f"increment must not be negative, not {increment}")

        def act(lease_id: str) -> dict[str, Any]:
            record = self.renew(lease_id, increment)
            detail = "; ".join([f"lease_duration {record.lease_duration}s", *record.warnings])
            return {"action": "renewed", "detail": detail}

        return self._bulk(ids, act, "renew", dry_run, show_progress)

    def revoke_leases(
        self,
        ids: Iterable[str],
        *,
        dry_run: bool = True,
        sync: bool = True,
        show_progress: bool = True,
    ) -> pd.DataFrame:
        """Revoke each lease, concurrently; with ``dry_run`` (the default) nothing is sent.

        One row per lease: ``action`` (``would revoke``, ``revoked``, ``failed``)
        and ``detail``. A failure never stops the rest.
        """

        def act(lease_id: str) -> dict[str, Any]:
            self.revoke(lease_id, sync=sync)
            return {"action": "revoked", "detail": ""}

        return self._bulk(ids, act, "revoke", dry_run, show_progress)

    def _bulk(
        self, ids: Iterable[str], act: Any, verb: str, dry_run: bool, show_progress: bool
    ) -> pd.DataFrame:
        todo = list(dict.fromkeys(ids))
        if dry_run:
            rows = [{"lease_id": i, "action": f"would {verb}", "detail": ""} for i in todo]
            return build_frame(rows, LEASE_ACTIONS)

        def safe(lease_id: str) -> dict[str, Any]:
            try:
                return {"lease_id": lease_id, **act(lease_id)}
            except ToolkitError as exc:
                detail = f"{exc.status}: {exc.message}" if isinstance(exc, APIError) else str(exc)
                return {"lease_id": lease_id, "action": "failed", "detail": detail}

        results = progress(
            self._http.map(safe, todo),
            desc=f"{verb} leases",
            total=len(todo),
            enabled=show_progress,
        )
        return build_frame(list(results), LEASE_ACTIONS)


def lease_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per mount of a :meth:`Leases.leases_by_mount` frame: ``count``, leases expiring
    within 1 hour and 24 hours (by ``ttl``), ``min_ttl`` and ``median_ttl``."""
    rows = []
    for mount, group in frame.groupby("mount", sort=True, observed=True):
        ttl = group["ttl"].astype("Int64")
        rows.append(
            {
                "mount": mount,
                "count": len(group),
                "expiring_1h": int((ttl <= 3600).sum()),
                "expiring_24h": int((ttl <= 86400).sum()),
                "min_ttl": int(ttl.min()) if len(ttl.dropna()) else None,
                "median_ttl": float(ttl.median()) if len(ttl.dropna()) else None,
            }
        )
    return build_frame(rows, LEASE_SUMMARY)


def _lease_fields(
    data: Mapping[str, Any], lease_id: str, times: Callable[[Any], Any] | None = None
) -> dict[str, Any]:
    time = times or _time
    last = data.get("last_renewal_time", data.get("last_renewal"))
    return {
        "lease_id": data.get("id") or lease_id,
        "issue_time": time(data.get("issue_time")),
        "expire_time": time(data.get("expire_time")),
        "last_renewal_time": time(last),
        "renewable": data.get("renewable"),
        "ttl": data.get("ttl"),
    }


def _text(value: Any) -> Any:
    return value or None


def _time(value: Any) -> datetime | None:
    return parse_time(value) if isinstance(value, str | datetime) and value else None


# Lookups answering these leave the lease out: it expired or was revoked since the listing.
_GONE = frozenset({400, 404})


def _folder(prefix: str) -> str:
    prefix = prefix.lstrip("/")
    return prefix if not prefix or prefix.endswith("/") else prefix + "/"


def _lookup_path(prefix: str) -> str:
    folder = _folder(prefix)
    return "/sys/leases/lookup/" + "/".join(segment(p) for p in folder.split("/"))


def _prefix(prefix: str) -> str:
    if not prefix or not prefix.strip("/"):
        raise InputError("a prefix is required (revoking everything is not offered)")
    return "/".join(segment(p) for p in prefix.lstrip("/").split("/"))


def _query(params: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()}
