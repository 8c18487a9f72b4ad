"""What a view could see: the coverage record every walking view carries.

A view that walks (leases, tokens, policies, certificates, keys, team access,
agents) notes what it was asked to read, how much it read, and every place it
could not read (a 403, a 404 that is not an empty folder, a refused LIST, a
limit reached). The record travels with its frame as ``frame.attrs["coverage"]``,
a plain JSON-able dict, so it survives copies, Parquet and evidence files.

    cov = Coverage("leases.leases_by_mount", asked=["database/", "pki/"])
    cov.note_read(120)
    cov.note_gap("sys/leases/lookup/pki/", 403, "permission denied")
    frame = cov.attach(frame)
    toolkit.coverage(frame)        # a frame: a row per gap, attrs say complete or not
    require_complete(frame)        # raises PartialCoverage with one line naming the gaps

An audit whose coverage is incomplete fails, or, when the operator allowed it,
says "incomplete" in every output (see toolkit.runbook and docs/decisions.md,
"Coverage").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ParamSpec, TypeVar

import pandas as pd

from ._errors import (
    APIError,
    MountNotFound,
    NamespaceNotFound,
    NotFound,
    PartialCoverage,
    PermissionDenied,
    TokenRefused,
)

T = TypeVar("T")
P = ParamSpec("P")

__all__ = [
    "BuiltFrame",
    "Coverage",
    "CoverageReport",
    "Gap",
    "OutcomeFrame",
    "PlanFrame",
    "StoredFrame",
    "ReadsNothing",
    "carry",
    "carries_coverage",
    "coverage",
    "coverage_of",
    "is_gap",
    "require_complete",
]

ATTR = "coverage"
COLUMNS = ("view", "path", "status", "reason")
# A summary names this many gaps and counts the rest, so it stays one line.
NAMED_IN_SUMMARY = 3


@dataclass(frozen=True)
class Gap:
    """One place a view could not read: its path, the HTTP status (None when no
    answer came, or a limit stopped the walk) and why, in the server's words."""

    path: str
    status: int | None
    reason: str

    def __str__(self) -> str:
        status = f"{self.status} " if self.status is not None else ""
        return f"{self.path} ({status}{self.reason})"


@dataclass
class Coverage:
    """What ``view`` was asked to read, how much it read, and what it could not."""

    view: str
    asked: list[str] = field(default_factory=list)
    read: int = 0
    gaps: list[Gap] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.gaps

    def note_read(self, count: int = 1) -> None:
        self.read += count

    def note_gap(self, path: str, status: int | None, reason: str) -> None:
        self.gaps.append(Gap(path, status, reason))

    def note_error(self, path: str, exc: APIError) -> None:
        """A gap for an error met on the way, in the server's words."""
        self.note_gap(path, exc.status, exc.message or type(exc).__name__)

    def read_or_gap(self, path: str, read: Callable[[], T]) -> T | None:
        """``read()``, or None: with a gap noted when the server refused it (403) or
        answered 404 with a reason; without one when a record listed a moment before
        is gone (404, no reason: deleted or expired since). A refused token, a missing
        namespace or mount is not a gap: it is raised (nothing could be read)."""
        try:
            return read()
        except APIError as exc:
            if not is_gap(exc):
                raise
            if isinstance(exc, NotFound) and not exc.messages:
                return None
            self.note_error(path, exc)
            return None

    def summary(self) -> str:
        """One line: complete, or incomplete with the first gaps named."""
        if self.complete:
            return f"{self.view}: complete ({self.read} read)"
        named = ", ".join(str(gap) for gap in self.gaps[:NAMED_IN_SUMMARY])
        more = len(self.gaps) - NAMED_IN_SUMMARY
        tail = f" and {more} more" if more > 0 else ""
        return (
            f"{self.view}: incomplete, {len(self.gaps)} place(s) not read: {named}{tail} "
            f"({self.read} read)"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "asked": list(self.asked),
            "read": self.read,
            "complete": self.complete,
            # In path order: reads that ran concurrently note theirs in any order, and
            # evidence of the same view should read the same from run to run.
            "gaps": [
                {"path": g.path, "status": g.status, "reason": g.reason}
                for g in sorted(self.gaps, key=lambda g: (g.path, g.status or 0, g.reason))
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Coverage:
        return cls(
            view=str(data.get("view", "")),
            asked=[str(a) for a in data.get("asked", ())],
            read=int(data.get("read", 0)),
            gaps=[
                Gap(
                    str(g["path"]),
                    None if g.get("status") is None else int(g["status"]),
                    str(g.get("reason", "")),
                )
                for g in data.get("gaps", ())
            ],
        )

    @classmethod
    def merged(cls, view: str, records: Iterable[Coverage]) -> Coverage:
        """One record for ``view`` holding what each of ``records`` asked, read and
        could not read (a view built from several reads, or parts put together)."""
        parts = list(records)
        return cls(
            view,
            asked=list(dict.fromkeys(a for r in parts for a in r.asked)),
            read=sum(r.read for r in parts),
            gaps=[g for r in parts for g in r.gaps],
        )

    def attach(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with this record in ``attrs["coverage"]`` (the frame itself, changed)."""
        frame.attrs[ATTR] = self.as_dict()
        return frame

    def __repr__(self) -> str:
        return f"<Coverage {self.summary()}>"


@dataclass(frozen=True)
class ReadsNothing:
    """In a return annotation, ``Annotated[pd.DataFrame, ReadsNothing(why)]``: a frame
    that is not a view of what a server holds, so it carries no coverage record (a plan
    of writes, an action's outcome, a report on records, a frame built from records
    handed to it). The house test (tests/test_every_view_covered.py) reads this from the
    annotation; every other public call annotated to return a frame must carry one."""

    why: str


# The frames that read nothing, each named by what it is (type checkers see a DataFrame).
PlanFrame = Annotated[pd.DataFrame, ReadsNothing("a plan: the writes it would send, nothing read")]
OutcomeFrame = Annotated[pd.DataFrame, ReadsNothing("an action's outcome: what it did")]
CoverageReport = Annotated[pd.DataFrame, ReadsNothing("a report on coverage records")]
BuiltFrame = Annotated[
    pd.DataFrame, ReadsNothing("built from the records handed to it; its caller files their record")
]
StoredFrame = Annotated[
    pd.DataFrame, ReadsNothing("read back from the toolkit's own store, as it was filed")
]


def carries_coverage(view: str) -> Callable[[Callable[P, pd.DataFrame]], Callable[P, pd.DataFrame]]:
    """For a view derived from the frames it is given: its frame carries the union of
    their records (:func:`carry`), so what they could not read stays on record. A frame
    given without a record is a gap of the view (nothing proves it whole)."""

    def wrap(func: Callable[P, pd.DataFrame]) -> Callable[P, pd.DataFrame]:
        @functools.wraps(func)
        def derived(*args: P.args, **kwargs: P.kwargs) -> pd.DataFrame:
            frame = func(*args, **kwargs)
            sources = [a for a in (*args, *kwargs.values()) if _is_source(a)]
            if not sources:
                return frame
            # The record the view filed itself (what it read), and its sources' records.
            merged = Coverage.merged(view, [*coverage_of(frame), *_records_of(sources, view)])
            merged.gaps = list(dict.fromkeys(merged.gaps))  # one place not read, once
            return merged.attach(frame)

        return derived

    return wrap


def _is_source(value: Any) -> bool:
    """A frame or a record handed to a derived view (a scan files its own)."""
    return isinstance(value, pd.DataFrame | Coverage)


def is_gap(exc: BaseException) -> bool:
    """Whether a view notes ``exc`` as a place not read and walks on: a 403 for a
    token the server accepts, or a 404 that names no missing namespace or mount."""
    if isinstance(exc, TokenRefused | NamespaceNotFound | MountNotFound):
        return False
    return isinstance(exc, PermissionDenied | NotFound)


def coverage_of(obj: Any) -> list[Coverage]:
    """The coverage records ``obj`` carries: a frame's ``attrs["coverage"]`` (one
    record or a list of them), a :class:`Coverage`, or an iterable of either."""
    if isinstance(obj, Coverage):
        return [obj]
    if isinstance(obj, Mapping) and "view" in obj:
        return [Coverage.from_dict(obj)]
    attrs = getattr(obj, "attrs", None)
    if isinstance(attrs, Mapping):
        found = attrs.get(ATTR)
        if found is None:
            return []
        items = found if isinstance(found, list) else [found]
        return [c if isinstance(c, Coverage) else Coverage.from_dict(c) for c in items]
    if isinstance(obj, Iterable) and not isinstance(obj, str | bytes):
        return [c for item in obj for c in coverage_of(item)]
    return []


def carry(frame: pd.DataFrame, *sources: Any, view: str) -> pd.DataFrame:
    """``frame`` (derived from ``sources``: frames, records) with one record for
    ``view`` merging theirs, so a view built from others keeps what they could not
    read. A source that carries no record is a gap: nothing proves it whole."""
    return Coverage.merged(view, _records_of(sources, view)).attach(frame)


def _records_of(sources: Iterable[Any], view: str) -> list[Coverage]:
    records: list[Coverage] = []
    for source in sources:
        found = coverage_of(source)
        if not found:
            found = [
                Coverage(view, gaps=[Gap(view, None, "built from a frame with no coverage record")])
            ]
        records.extend(found)
    return records


def coverage(*objs: Any) -> pd.DataFrame:
    """A frame with a row per place the given frames' views could not read.

    ``attrs["complete"]`` says whether every record was complete, and
    ``attrs["views"]`` lists each record's one-line summary. A frame that carries
    no record is not evidence of full coverage: it is listed as a gap.
    """
    rows: list[dict[str, Any]] = []
    summaries: list[str] = []
    for obj in objs:
        found = coverage_of(obj)
        if not found:
            rows.append({"view": "?", "path": "", "status": None, "reason": "no coverage record"})
            summaries.append("?: no coverage record")
        for cov in found:
            summaries.append(cov.summary())
            rows.extend({"view": cov.view, **vars(gap)} for gap in cov.gaps)
    frame = pd.DataFrame(rows, columns=list(COLUMNS)).astype(
        {"view": "string", "path": "string", "status": "Int64", "reason": "string"}
    )
    frame.attrs["complete"] = not rows
    frame.attrs["views"] = summaries
    return frame


def require_complete(*objs: Any, allow_incomplete: bool = False) -> pd.DataFrame:
    """The coverage frame of ``objs``; raises :class:`PartialCoverage` with one line
    naming what was not read, unless ``allow_incomplete``."""
    frame = coverage(*objs)
    if not frame.attrs["complete"] and not allow_incomplete:
        incomplete = [s for s in frame.attrs["views"] if ": complete (" not in s]
        raise PartialCoverage(
            "; ".join(incomplete)
            + " — grant the token what it lacks, fix the name, or rerun with allow_incomplete=True"
        )
    return frame
