"""Namespaces: walk the tree of child namespaces, and read an area in every one of them.

OpenBao 2.3 and later have namespaces: ``LIST sys/namespaces`` in a namespace
(its path in the ``X-Vault-Namespace`` header) lists its children. The walk
starts where the client is (the root, or the client's own namespace) and goes
down level by level, each level's namespaces listed concurrently.

:meth:`Namespaces.across` runs one client call in the starting namespace and in
every namespace below it, on a view of the client that shares its connections
(:meth:`~toolkit.secrets.SecretsClient.in_namespace`), and stacks the frames
with a ``namespace`` column first. The spec restricts password policies, access
policies and the lease endpoints to the root or administrative namespace
(part 1, convention 5): a namespace that refuses a call (403) is not an error
that stops the walk but a row whose ``problem`` says "not permitted in
namespace X"; :func:`refusal_findings` turns those rows into findings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import pandas as pd

from .._coverage import Coverage, Gap, carries_coverage, coverage_of
from .._errors import NamespaceNotFound, NotFound, PermissionDenied, TokenRefused
from .._frames import Schema, build_frame, scope_part, stack_scopes
from .._http import HTTPLayer, api_path, decode_json
from .._records import Record
from .._spec.headers import NAMESPACE_HEADER
from ..findings import Finding, findings_frame
from ._base import SecretsArea, unwrap
from .engines import mounted_engines
from .leases import Leases
from .policies import Policies

__all__ = ["MOUNTS", "NAMESPACES", "ROOT", "NamespaceView", "Namespaces", "refusal_findings"]

# How the root namespace is named in a frame's ``namespace`` column.
ROOT = "root"

NAMESPACES = Schema.of("path id parent depth:int custom_metadata:object problem", index="path")
MOUNTS = Schema.of("path type description accessor local:bool seal_wrap:bool")


def _one(name: str) -> str:
    """``/sys/namespaces/:name`` of one child (slashes at either end dropped)."""
    return api_path(
        "/sys/namespaces/{name}", name=name.strip("/") if isinstance(name, str) else name
    )


def _label(path: str) -> str:
    return path or ROOT


class NamespaceView(Protocol):
    """What :meth:`Namespaces.across` hands each call: a client in one namespace (a
    :class:`~toolkit.secrets.SecretsClient`); the area's own calls need only its HTTP layer."""

    @property
    def http(self) -> HTTPLayer: ...


View = TypeVar("View", bound=NamespaceView)


class Namespaces(SecretsArea, Generic[View]):
    """The namespaces below the client's own, and any area's calls across all of them.

    ``view`` makes a client in another namespace (``SecretsClient.in_namespace``);
    :meth:`across` hands it to the call.
    """

    def __init__(self, http: HTTPLayer, view: Callable[[str], View]) -> None:
        super().__init__(http)
        self._view = view

    # -- one namespace's children ---------------------------------------------------
    def list_namespaces(self) -> list[str]:
        """The names of the namespaces directly below this one (``team-a/``).
        ``LIST /sys/namespaces``."""
        return self._list("/sys/namespaces")

    def read(self, name: str) -> Record:
        """One child namespace: ``path``, ``id``, ``custom_metadata``, ...
        ``GET /sys/namespaces/:name``."""
        return self._record(self._read(_one(name)), "namespace")

    def create(self, name: str, custom_metadata: dict[str, str] | None = None) -> Record:
        """Create the child namespace ``name`` (one path segment), or replace its
        ``custom_metadata``. ``POST /sys/namespaces/:name``."""
        body = {"custom_metadata": dict(custom_metadata or {})}
        answer = self._send("POST", _one(name), body)
        return self._record(unwrap(answer), "namespace")

    def delete(self, name: str) -> None:
        """Delete the child namespace ``name`` (the server refuses one that has children).
        ``DELETE /sys/namespaces/:name``."""
        self._send("DELETE", _one(name))

    # -- the walk -------------------------------------------------------------------
    def _start(self) -> str:
        here = self._http.headers.get(NAMESPACE_HEADER) or ""
        here = here.strip().strip("/")
        return "" if here in ("", ROOT) else here + "/"

    def _children(self, path: str) -> tuple[list[dict[str, Any]], str | None]:
        """(the children of ``path``, why they could not be listed or None)."""
        try:
            response = self._http.request(
                "LIST",
                "/sys/namespaces",
                # The root's walk sends no header: the layer then sends none either.
                headers={NAMESPACE_HEADER: path} if path else None,
                ok_statuses=frozenset({404}),
            )
        except TokenRefused:
            raise
        except PermissionDenied as exc:
            return [], f"children not listed, not permitted in namespace {_label(path)}: {exc}"
        if response.status_code == 404:
            return [], None
        data = unwrap(decode_json(response, "LIST"))
        info = data.get("key_info") or {}
        found = []
        for key in data.get("keys") or []:
            entry = dict(info.get(key) or {})
            entry["path"] = entry.get("path") or path + key.strip("/") + "/"
            found.append(entry)
        return found, None

    def _walk(self) -> list[dict[str, Any]]:
        start = self._start()
        rows: list[dict[str, Any]] = []
        level = [start]
        depth = 0
        problems: dict[str, str] = {}
        while level:
            depth += 1
            results = list(self._http.map(self._children, level))
            following = []
            for parent, (children, problem) in zip(level, results, strict=True):
                if problem:
                    problems[parent] = problem
                for child in children:
                    child.update(parent=_label(parent), depth=depth)
                    rows.append(child)
                    following.append(child["path"])
            level = following
        for row in rows:
            row["problem"] = problems.get(row["path"])
        return rows

    def list_all(self) -> list[str]:
        """The full path of every namespace below this one, walked down recursively
        (``team-a/``, ``team-a/sub/``, ...), parents before children.
        ``LIST /sys/namespaces`` in each."""
        return [row["path"] for row in self._walk()]

    def namespaces_frame(self) -> pd.DataFrame:
        """Every namespace below this one, indexed by full ``path``: ``id``, ``parent``
        (``root`` for the top level), ``depth`` (1 for the top level), ``custom_metadata``,
        and ``problem`` (why its children could not be listed, else empty).
        ``LIST /sys/namespaces`` in each namespace. ``attrs["coverage"]`` has a gap
        for each namespace whose children could not be listed."""
        rows = self._walk()
        cov = Coverage("namespaces.namespaces_frame", asked=[self._start() or ROOT])
        cov.note_read(len(rows))
        for row in rows:
            if row.get("problem"):
                cov.note_gap(f"{row['path']}sys/namespaces", 403, str(row["problem"]))
        return cov.attach(build_frame(rows, NAMESPACES))

    # -- any call, in every namespace -------------------------------------------------
    def across(
        self,
        call: Callable[[View], pd.DataFrame],
        namespaces: Iterable[str] | None = None,
    ) -> pd.DataFrame:
        """``call(client)`` in this namespace and every one below it, as one frame.

        ``call`` gets a client in one namespace and returns a frame. The frames
        are stacked with ``namespace`` (full path; ``root`` for the root) as the
        first column, the frame's named index kept as a column, and ``problem``
        as the last: a namespace that refuses the call (403: restricted there) or
        has vanished since the walk gives one row with only ``namespace`` and
        ``problem`` set, and the others go on. ``namespaces`` limits the run to
        those full paths (default: the walk's, starting here); a namespace named there
        that does not exist is an error naming it (:class:`~toolkit.NamespaceNotFound`),
        not a row: only one the walk found and that then vanished is a gap.
        """
        named = namespaces is not None
        paths = [self._start(), *self.list_all()] if namespaces is None else list(namespaces)
        cov = Coverage("namespaces.across", asked=[p or ROOT for p in paths])

        def one(path: str) -> pd.DataFrame:
            key = path.strip().strip("/")
            label = key + "/" if key and key != ROOT else ROOT
            try:
                frame = call(self._view(path))
            except TokenRefused:
                raise  # not a namespace's refusal: nothing anywhere could be read
            except PermissionDenied as exc:
                cov.note_error(label, exc)
                return scope_part(
                    "namespace", label, None, f"not permitted in namespace {label}: {exc}"
                )
            except NotFound as exc:
                if "namespace not found" not in str(exc) and not isinstance(exc, NamespaceNotFound):
                    raise
                if named:  # the caller's own name: a mistake to name, not a gap
                    raise
                cov.note_error(label, exc)
                return scope_part("namespace", label, None, f"namespace {label} no longer exists")
            for inner in coverage_of(frame):  # what the call could not read there
                cov.gaps.extend(
                    Gap(f"{'' if label == ROOT else label}{g.path}", g.status, g.reason)
                    for g in inner.gaps
                )
            cov.note_read(len(frame))
            return scope_part("namespace", label, frame)

        return cov.attach(stack_scopes("namespace", list(self._http.map(one, paths))))

    def policies_by_namespace(self, kinds: Sequence[str] = ("acl",)) -> pd.DataFrame:
        """Every namespace's policies: :meth:`across` of ``policies.policies_frame(kinds)``
        (``LIST``/``GET /sys/policies/{kind}`` in each; restricted by the spec)."""
        return self.across(lambda client: Policies(client.http).policies_frame(kinds))

    def mounts_by_namespace(self) -> pd.DataFrame:
        """Every namespace's secrets engine mounts: ``path``, ``type``, ``description``,
        ``accessor``, ``local``, ``seal_wrap``. ``GET /sys/mounts`` in each."""
        return self.across(lambda client: _mounts_frame(client.http))

    def leases_by_namespace(self) -> pd.DataFrame:
        """Every namespace's lease counts by mount and role: :meth:`across` of
        ``leases.lease_counts()`` (``LIST /sys/leases/lookup/...``, sudo; restricted by
        the spec)."""
        return self.across(lambda client: Leases(client.http).lease_counts())


def _mounts_frame(http: HTTPLayer) -> pd.DataFrame:
    rows = [{"path": path, **entry} for path, entry in sorted(mounted_engines(http).items())]
    return build_frame(rows, MOUNTS)


@carries_coverage("namespaces.refusal_findings")
def refusal_findings(frame: pd.DataFrame) -> pd.DataFrame:
    """The ``problem`` rows of an :meth:`Namespaces.across` frame as findings
    (severity ``info``, area ``namespaces``, object the namespace)."""
    problems = frame[frame["problem"].notna()] if "problem" in frame else frame.iloc[0:0]
    return findings_frame(
        Finding("info", "namespaces", str(ns), str(reason))
        for ns, reason in zip(problems["namespace"], problems["problem"], strict=True)
    )
