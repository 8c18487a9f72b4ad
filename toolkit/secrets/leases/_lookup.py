"""The lease lookup tree (``sys/leases/lookup``): walking it, looking leases up, counting.

The features of :class:`~toolkit.secrets.leases.Leases` that read many leases take
the HTTP layer: :func:`leases_by_mount` walks the tree level by level (the folders
of a level listed concurrently), then :func:`lookup_leases` looks every lease up
concurrently and builds one frame in one pass; :func:`count_leases` counts from the
``LIST`` answers alone. The radar's scan (:mod:`.radar`) reads through the same
helpers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from ..._coverage import Coverage, Gap, is_gap, require_complete
from ..._errors import APIError, InputError, ToolkitError
from ..._frames import Schema, build_frame, frame_from_columns
from ..._gc import collector_paused
from ..._http import HTTPLayer, decode_json, segments
from ..._progress import progress
from ..._spec.leases import split_lease_id
from ..._time import parse_time
from .._base import GONE, Names, lookup_requests, require_mounts, unwrap
from ..walk import MAX_DEPTH, Walk, walk_tree
from .rules import LEASE_COUNTS

LEASES = Schema.of(
    """lease_id mount role issue_time:datetime expire_time:datetime last_renewal_time:datetime
    ttl:int renewable:bool""",
    index="lease_id",
)

# What the lease walks cannot tell when the mount tables are refused.
MOUNTS_UNCHECKED = "the mount names could not be checked (a mistyped mount reads as empty)"


def list_mounts(http: HTTPLayer, *, coverage: Coverage | None = None) -> Names:
    """Mount paths of the secrets engines and auth methods (``sys/mounts``, ``sys/auth``).

    A table the token may not read raises (a short list would hide its mounts),
    unless ``coverage`` is given: then the refusal is a gap noted there and the
    other table's mounts come back."""
    found: list[str] = []
    for path, prefix in (("/sys/mounts", ""), ("/sys/auth", "auth/")):
        try:
            data = unwrap(http.json("GET", path))
        except APIError as exc:
            if coverage is None or not is_gap(exc):
                raise
            coverage.note_error(path.lstrip("/"), exc)
            continue
        found.extend(prefix + k for k in data if k.endswith("/"))
    return found


def known_mounts(http: HTTPLayer) -> Names:
    """The mounts a lease id's path is split by (mount, role); what cannot be read
    only makes that split a guess, so it is not a gap of the lease view."""
    try:
        return list_mounts(http, coverage=Coverage("leases.mount_names"))
    except ToolkitError:
        return []


def unchecked_mounts(walk: Walk) -> None:
    """Note in ``walk`` that the mount names could not be checked (the mount tables
    were refused): the lookup tree answers a mistyped mount as an empty folder."""
    walk.unread.append(Gap("sys/mounts", 403, MOUNTS_UNCHECKED))


def list_lease_ids(http: HTTPLayer, prefix: str = "", *, walk: Walk | None = None) -> Names:
    """Every lease id under ``prefix`` (all when empty), walking the lookup tree.

    :func:`~toolkit.secrets.walk.walk_tree`: the folders of each level listed
    concurrently. What could not be read is recorded in ``walk`` when one is
    given; without one, a walk that could not read everything raises
    :class:`~toolkit.PartialCoverage` naming what it missed (a list of names has
    no room to say it is partial).
    """
    seen = walk if walk is not None else Walk()
    if prefix and not require_mounts(http, [prefix]):
        unchecked_mounts(seen)
    found: list[str] = []
    for folder, keys in walk_tree(http, [folder_of(prefix)], path_of=lookup_path, walk=seen):
        found.extend(folder + k for k in keys)
    if walk is None and not seen.complete:
        require_complete(Coverage.from_dict(seen.coverage("leases.list_lease_ids", [prefix])))
    return found


def leases_by_mount(
    http: HTTPLayer,
    prefix: str | None = None,
    mounts: Iterable[str] | None = None,
    *,
    show_progress: bool = False,
) -> pd.DataFrame:
    """Every lease under ``prefix`` (or under ``mounts``, or all), looked up: the
    :meth:`~toolkit.secrets.leases.Leases.leases_by_mount` frame (see there)."""
    if prefix is not None and mounts is not None:
        raise InputError("pass prefix or mounts, not both")
    mounts = None if mounts is None else list(mounts)
    named = mounts if mounts is not None else [prefix] if prefix else []
    checked = require_mounts(http, named)
    starts = [folder_of(m) for m in mounts] if mounts is not None else [folder_of(prefix or "")]
    walk = Walk()
    ids = [
        folder + k
        for folder, keys in walk_tree(http, starts, path_of=lookup_path, walk=walk)
        for k in keys
    ]
    frame = lookup_leases(
        http, ids, mounts=starts if mounts is not None else None, show_progress=show_progress
    )
    cov = Coverage.from_dict(walk.coverage("leases.leases_by_mount", starts))
    if named and not checked:
        # What the walk cannot tell: a mistyped mount from an empty one, when the
        # mount tables are refused.
        cov.note_gap("sys/mounts", 403, MOUNTS_UNCHECKED)
    return cov.attach(frame)


def lookup_leases(
    http: HTTPLayer,
    ids: Iterable[str],
    mounts: Iterable[str] | None = None,
    *,
    show_progress: bool = False,
) -> pd.DataFrame:
    """The leases ``ids`` looked up concurrently: the :meth:`~toolkit.secrets.leases.Leases.lookup_leases` frame."""
    todo = list(dict.fromkeys(ids))
    mount_paths = list(mounts) if mounts is not None else known_mounts(http)

    # The collector stays off until every temporary of the lookups is gone: the
    # requests, the answers' documents and the columns are all freed by
    # reference counting, and resuming while they were still alive made the
    # next allocation walk all of them.
    with collector_paused():
        calls = lookup_requests("/sys/leases/lookup", "lease_id", todo)
        answers = progress(
            http.many(calls),
            desc="looking up leases",
            total=len(todo),
            enabled=show_progress,
        )
        kept: list[str] = []
        datas: list[dict[str, Any]] = []
        for lease_id, response in zip(todo, answers, strict=True):
            if response.status_code in GONE:  # expired or revoked since the listing
                continue
            kept.append(lease_id)
            datas.append(unwrap(decode_json(response, "POST")))
        del calls, answers
        # Times stay text here: the frame parses each column at once.
        columns = _lease_columns(datas, kept, _text)
        del datas
        columns["mount"], columns["role"] = _mounts_and_roles(kept, mount_paths)
        frame = frame_from_columns(columns, LEASES)
        del columns, kept
        # Every id asked was answered (one gone since is not a place unread).
        record = Coverage("leases.lookup_leases", asked=["sys/leases/lookup"])
        record.note_read(len(frame))
        return record.attach(frame.sort_values(["mount", "expire_time"], kind="stable"))


def lease_counts(
    http: HTTPLayer,
    prefix: str = "",
    mounts: Iterable[str] | None = None,
    *,
    max_depth: int = MAX_DEPTH,
    starts: Sequence[str] | None = None,
) -> pd.DataFrame:
    """:func:`count_leases` under ``prefix`` (or from each of ``starts`` alone), the
    mounts named checked first, as the lookup tree answers a mistyped mount as an empty
    folder: the :meth:`~toolkit.secrets.leases.Leases.lease_counts` frame."""
    named = [folder_of(m) for m in starts] if starts is not None else [prefix] if prefix else []
    checked = require_mounts(http, named) if named else True
    split = list(mounts) if mounts is not None else known_mounts(http)
    if starts is None:
        return count_leases(http, prefix, split, max_depth=max_depth)
    split = list(dict.fromkeys([*split, *named]))
    counts = count_leases(http, "", split, starts=named, max_depth=max_depth)
    if not checked:
        record = Coverage.from_dict(counts.attrs["coverage"])
        record.note_gap("sys/mounts", 403, MOUNTS_UNCHECKED)
        record.attach(counts)
    return counts


def lease_fields(
    data: Mapping[str, Any], lease_id: str, times: Callable[[Any], Any] | None = None
) -> dict[str, Any]:
    """One lease's fields from its lookup's ``data`` (times parsed unless ``times`` says)."""
    return {k: v[0] for k, v in _lease_columns([data], [lease_id], times or _time).items()}


def _lease_columns(
    datas: Sequence[Mapping[str, Any]], ids: Sequence[str], time: Callable[[Any], Any]
) -> dict[str, list[Any]]:
    """The lease fields of many lookups' ``data``, a list a field (``ids`` as listed)."""
    return {
        "lease_id": [d.get("id") or i for d, i in zip(datas, ids, strict=True)],
        "issue_time": [time(d.get("issue_time")) for d in datas],
        "expire_time": [time(d.get("expire_time")) for d in datas],
        "last_renewal_time": [
            time(d.get("last_renewal_time", d.get("last_renewal"))) for d in datas
        ],
        "renewable": [d.get("renewable") for d in datas],
        "ttl": [d.get("ttl") for d in datas],
    }


def _mounts_and_roles(ids: Sequence[str], mounts: Sequence[str]) -> tuple[list[str], list[str]]:
    """:func:`split_lease_id` of each id, split once a folder (they share mount and role)."""
    by_folder: dict[str, tuple[str, str]] = {}
    cacheable = all(not m or m.endswith("/") for m in mounts)
    found: list[tuple[str, str]] = []
    for lease_id in ids:
        folder = lease_id[: lease_id.rfind("/") + 1]
        where = by_folder.get(folder) if cacheable and folder else None
        if where is None:
            where = split_lease_id(lease_id, mounts)
            if cacheable and folder:
                by_folder[folder] = where
        found.append(where)
    return [m for m, _ in found], [r for _, r in found]


def _text(value: Any) -> Any:
    return value or None


def _time(value: Any) -> datetime | None:
    return parse_time(value) if isinstance(value, str | datetime) and value else None


def folder_of(prefix: str) -> str:
    prefix = prefix.lstrip("/")
    return prefix if not prefix or prefix.endswith("/") else prefix + "/"


# The walks list the folders the server named: a key such as ``../../auth/`` is
# refused by the same rule as a prefix given, before anything is sent.
_FOLDER = "prefix (or a folder the server listed under it)"


def lookup_path(prefix: str) -> str:
    """``/sys/leases/lookup/<folder>/``: the folder's names by the one rule (root: empty)."""
    folder = folder_of(prefix)
    return "/sys/leases/lookup/" + (segments(folder, _FOLDER) + "/" if folder else "")


def count_leases(
    http: HTTPLayer,
    prefix: str = "",
    mounts: Sequence[str] = (),
    *,
    starts: Sequence[str] | None = None,
    max_depth: int = MAX_DEPTH,
) -> pd.DataFrame:
    """How many leases each mount and role holds, from ``LIST`` answers alone.

    Walks ``LIST /sys/leases/lookup/:prefix`` (sudo) in waves with
    :func:`~toolkit.secrets.walk.walk_tree` (or from each of ``starts``, the
    mounts walked together). LIST ignores ``limit`` and answers a whole folder
    at once; its keys are parsed as they come and counted in chunks, never
    kept: memory holds the folders still to list and one wave's answers. No
    lease is looked up.

    Rows ``mount``, ``role``, ``kind`` (``secret`` or ``auth``), ``count``,
    most leases first. Engine leases (``<mount>/creds/<role>/<id>``) count per
    role; auth leases per auth mount only (``role`` empty: an AppRole or token
    lease id carries no role). ``frame.attrs["coverage"]`` records the folders
    that could not be read (refused, not permitted, a cycle, too deep).
    """
    counts: Counter[tuple[str, str]] = Counter()
    walk = Walk()
    folders = [folder_of(s) for s in starts] if starts is not None else [folder_of(prefix)]
    for folder, keys in walk_tree(
        http, folders, path_of=lookup_path, walk=walk, max_depth=max_depth
    ):
        counts[_mount_role(folder, mounts)] += len(keys)
    rows = [
        {
            "mount": mount,
            "role": role,
            "kind": "auth" if mount.startswith("auth/") else "secret",
            "count": n,
        }
        for (mount, role), n in counts.items()
    ]
    frame = build_frame(rows, LEASE_COUNTS)
    frame = frame.sort_values(
        ["count", "mount", "role"], ascending=[False, True, True], kind="stable", ignore_index=True
    )
    frame.attrs["coverage"] = walk.coverage("leases.lease_counts", folders)
    return frame


def _mount_role(folder: str, mounts: Sequence[str]) -> tuple[str, str]:
    mount, role = split_lease_id(folder + "_", mounts)
    if mount.startswith("auth/"):
        return mount, ""
    # Only ``<mount>/<endpoint>/<role>/...`` names a role; a lease right under a
    # mount's endpoint word (``pki/issue/<id>`` is already the role) stays as split.
    return mount, role
