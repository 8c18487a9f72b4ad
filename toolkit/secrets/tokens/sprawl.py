"""Token sprawl: every token by accessor, at scale, streamed and resumable.

:func:`scan_tokens` reads ``LIST auth/token/accessors`` (sudo), which OpenBao
answers whole (``after``/``limit`` are ignored there), parsing the accessors
with ijson as they come rather than decoding the list, and looks them up
(``POST auth/token/lookup-accessor``, a read) a chunk at a time into a
:class:`~toolkit.secrets.checkpoint.Spool`; with a checkpoint an interrupted
scan resumes after the last accessor done (the list comes sorted). No
token's value is ever read.

:func:`token_sprawl` summarises a scan: root tokens, tokens that never expire,
orphans, tokens past a maximum age, by creation path; :func:`policies_carried`
counts the tokens carrying each policy; :func:`widest_access` ranks the
distinct policy sets by a breadth function. That function is the seam for the
access evaluator (the access-analysis issue): pass its measure of what a set
of policies grants; without one, only root is known to be widest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from ..._coverage import Gap, carries_coverage
from ..._errors import InputError
from ..._frames import Schema, build_frame
from ..._gc import collector_paused
from ..._http import HTTPLayer, decode_json
from .._base import GONE, GONE_OR_REFUSED, lookup_requests, unwrap
from ..checkpoint import DEFAULT_MAX_ROWS, Spool, keep_scan_record, scan_loop, scan_pieces
from ..walk import Walk, stream_keys
from ._common import TOKEN_INVENTORY, inventory_row

__all__ = [
    "TOKEN_SPRAWL",
    "TokenScan",
    "policies_carried",
    "scan_tokens",
    "token_sprawl",
    "widest_access",
]

CHUNK = 5_000
TOKEN_SPRAWL = Schema.of("what tokens:int share:float", index="what")


@dataclass
class TokenScan:
    """Every token looked up by accessor: the rows (the :meth:`~toolkit.secrets.tokens.Tokens.inventory`
    frame's, spooled), what could not be read, and when it was taken (server time)."""

    spool: Spool
    walk: Walk
    now: datetime
    notes: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.spool.rows

    def __repr__(self) -> str:
        return f"<TokenScan {self.tokens:,} tokens; complete={self.walk.complete}>"

    def frame(self) -> pd.DataFrame:
        frame = self.spool.frame(build_frame([], TOKEN_INVENTORY))
        frame.attrs["coverage"] = self.coverage()
        return frame

    def coverage(self) -> dict[str, Any]:
        """What the scan read and could not read (a coverage record)."""
        return self.walk.coverage("tokens.scan", ["auth/token/accessors"])


def scan_tokens(
    http: HTTPLayer,
    *,
    chunk: int = CHUNK,
    checkpoint: str | Path | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    deadline: float | None = None,
) -> TokenScan:
    """Every token, looked up by accessor ``chunk`` at a time; see the module's text.

    A refused listing raises :class:`~toolkit.PermissionDenied` (it needs sudo),
    as :meth:`~toolkit.secrets.tokens.Tokens.inventory` does.
    """
    if chunk < 1:
        raise InputError(f"chunk must be at least 1, not {chunk}")
    walk = Walk()

    def look_up(accessors: list[str]) -> pd.DataFrame:
        calls = lookup_requests(
            "/auth/token/lookup-accessor", "accessor", accessors, ok_statuses=GONE_OR_REFUSED
        )
        rows = []
        with collector_paused():
            for accessor, response in zip(accessors, http.many(calls), strict=True):
                if response.status_code == 403:  # a lookup refused: a gap, not "no token"
                    where = f"auth/token/lookup-accessor ({accessor})"
                    walk.unread.append(Gap(where, 403, "not permitted"))
                    continue
                if response.status_code in GONE:  # revoked since the listing
                    continue
                data = unwrap(decode_json(response, "POST"))
                data.pop("id", None)
                rows.append(inventory_row(accessor, data))
        return build_frame(rows, TOKEN_INVENTORY)

    with scan_loop(
        http,
        "token scan",
        "tokens",
        {},
        checkpoint=checkpoint,
        max_rows=max_rows,
        deadline=deadline,
    ) as loop:
        spool = loop.spool
        after = str(loop.state.get("after") or "")
        loop.progress = lambda: f"{spool.rows:,} tokens looked up"
        # A refusal (403: listing accessors needs sudo) is raised, as by the inventory:
        # nothing at all could be read, and empty counts would read as "no tokens".
        response = http.request("LIST", "/auth/token/accessors", ok_statuses=(404,))
        now = http.server_now()  # ages are judged by the server's clock, from its answer
        if response.status_code != 404:
            walk.folders = 1
            batch: list[str] = []
            for accessor in stream_keys(response.content):
                if after and accessor <= after:
                    continue
                batch.append(accessor)
                walk.leaves += 1
                if len(batch) >= chunk:
                    loop.add(look_up(batch), {"after": batch[-1]})
                    batch = []
            if batch:
                loop.add(look_up(batch), {"after": batch[-1]}, may_stop=False)
            del response
        loop.finish()
    return TokenScan(spool, walk, now)


@carries_coverage("sprawl.token_sprawl")
def token_sprawl(
    scan: TokenScan | pd.DataFrame,
    *,
    now: datetime | None = None,
    max_age: timedelta = timedelta(days=90),
) -> pd.DataFrame:
    """How many tokens are root, never expire, are orphans, are older than ``max_age``
    (by ``issue_time``, at ``now``: the scan's server time), and were created by each
    path (rows ``path: <path>``). Index ``what``; columns ``tokens``, ``share``."""
    moment = now or (scan.now if isinstance(scan, TokenScan) else None)
    if moment is None:
        raise InputError("now is required with a frame (the time to judge ages at)")
    tally: Counter[str] = Counter()
    total = 0
    cols = ["policies", "ttl", "expire_time", "orphan", "issue_time", "path"]
    for piece in scan_pieces(scan, cols):
        total += len(piece)
        tally["root"] += sum("root" in (p if p is not None else []) for p in piece["policies"])
        never = piece["expire_time"].isna() & (piece["ttl"].fillna(0) == 0)
        tally["never expires"] += int(never.sum())
        tally["orphan"] += int(piece["orphan"].fillna(False).astype(bool).sum())
        old = piece["issue_time"].notna() & (piece["issue_time"] < moment - max_age)
        tally[f"older than {max_age.days} days"] += int(old.sum())
        for path, n in piece["path"].fillna("").value_counts().items():
            tally[f"path: {path or '(none)'}"] += int(n)
    order = ["root", "never expires", "orphan", f"older than {max_age.days} days"]
    keys = order + sorted(k for k in tally if k not in order)
    rows = [
        {"what": k, "tokens": tally.get(k, 0), "share": (tally.get(k, 0) / total) if total else 0.0}
        for k in keys
    ]
    frame = build_frame(rows, TOKEN_SPRAWL)
    frame.attrs["tokens"] = total
    keep_scan_record(frame, scan)
    return frame


@carries_coverage("sprawl.policies_carried")
def policies_carried(scan: TokenScan | pd.DataFrame) -> pd.DataFrame:
    """Tokens carrying each policy: index ``policy``, column ``tokens``, most first."""
    tally: Counter[str] = Counter()
    for piece in scan_pieces(scan, ["policies"]):
        for policies in piece["policies"]:
            tally.update(list(policies) if policies is not None else [])
    rows = [{"policy": p, "tokens": n} for p, n in tally.most_common()]
    frame = build_frame(rows, Schema.of("policy tokens:int", index="policy"))
    keep_scan_record(frame, scan)
    return frame


@carries_coverage("sprawl.widest_access")
def widest_access(
    scan: TokenScan | pd.DataFrame,
    breadth: Callable[[tuple[str, ...]], float] | None = None,
    *,
    n: int = 20,
) -> pd.DataFrame:
    """The distinct policy sets the tokens carry, widest first: columns ``policies``
    (comma-separated), ``tokens``, ``breadth``.

    ``breadth(policies)`` measures what a set of policies grants: the access
    evaluator's, e.g. ``lambda p: len(bao.access.can(list(p)))`` (the grants the
    set holds, by :class:`~toolkit.secrets.access.Access`). A set holding ``root``
    is infinitely wide; without ``breadth`` every other set is unranked
    (``breadth`` empty): nothing is claimed that was not evaluated.
    """
    sets: Counter[tuple[str, ...]] = Counter()
    for piece in scan_pieces(scan, ["policies"]):
        sets.update(tuple(sorted(p)) if p is not None else () for p in piece["policies"])
    rows: list[dict[str, Any]] = []
    for policies, count in sets.items():
        score: float | None
        if "root" in policies:
            score = float("inf")  # root is wider than anything a policy can grant
        else:
            score = float(breadth(policies)) if breadth is not None else None
        rows.append({"policies": ", ".join(policies), "tokens": count, "breadth": score})
    schema = Schema.of("policies tokens:int breadth:float")
    frame = build_frame(rows, schema)
    frame = frame.sort_values(["breadth", "tokens"], ascending=False, na_position="last")
    frame = frame.head(n).reset_index(drop=True)
    keep_scan_record(frame, scan)
    return frame
