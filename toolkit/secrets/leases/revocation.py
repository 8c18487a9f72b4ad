"""Revocations sent exactly once: the plan, the journal, and what became of each lease.

:func:`revoke_leases` is :meth:`~toolkit.secrets.leases.Leases.revocation_plan`'s work. Every
lease ends with one outcome (:data:`OUTCOMES`):

- ``revoked``: the server answered the revocation of a lease a lookup had just
  found live (or, after a lost answer, a lookup found it gone);
- ``already gone``: a lookup before sending found no such lease, so nothing was sent;
- ``sent, not confirmed``: revoked without a lookup first (the token lacks ``update``
  on ``sys/leases/lookup``). OpenBao answers 204 to revoking a lease it does not
  hold, so "revoked" cannot then be told from "already gone"; the coverage says so;
- ``failed``: the server refused it (the detail says why), or it was not sent
  because the run stopped before it;
- ``outcome unknown``: its revocation may have been sent, and whether it was done
  could not be looked up. It is never sent again blind.

With a ``journal`` (a file: :class:`toolkit._durable.Journal`, locked, stamped with
the server's ``cluster_id`` and the namespace) each batch is written "about to send"
before any of it is sent, and each answer after. A run stopped anywhere (``kill
-9``, a lost connection, a full disk) leaves leases whose answer is not recorded;
the next run with the same journal looks each up before anything is sent again: a
lease still live is sent again (revoking is harmless to repeat once the lease is
known live), a gone one is ``revoked``, and one that cannot be looked up stays
``outcome unknown``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..._coverage import Coverage, OutcomeFrame
from ..._durable import Journal, StateError
from ..._errors import InputError, ToolkitError, one_line
from ..._frames import Schema, build_frame
from ..._http import HTTPLayer, Request
from ..._masking import clean_parameters
from ..checkpoint import server_identity

__all__ = ["OUTCOMES", "REVOCATIONS", "REVOKE_BATCHES", "revoke_in_batches", "revoke_leases"]

REVOKED = "revoked"
ALREADY_GONE = "already gone"
NOT_CONFIRMED = "sent, not confirmed"
FAILED = "failed"
UNKNOWN = "outcome unknown"
WILL_SEND = "will send"
OUTCOMES = (REVOKED, ALREADY_GONE, NOT_CONFIRMED, FAILED, UNKNOWN)
# Outcomes a later run keeps as they are (failed leases are tried again, after a lookup).
_SETTLED = frozenset({REVOKED, ALREADY_GONE, NOT_CONFIRMED})

REVOCATIONS = Schema.of("lease_id batch:int method path body outcome detail", index="lease_id")
REVOKE_PATH = "sys/leases/revoke"
LOOKUP_PATH = "sys/leases/lookup"
_ANSWERED = frozenset(range(400, 500))
_NO_LOOKUP = (
    "without update on sys/leases/lookup a lease cannot be looked up, and OpenBao "
    "answers 204 to revoking a lease it does not hold: revoked cannot be told from already gone"
)


def lease_ids(ids: Iterable[str] | str) -> list[str]:
    """``ids`` as a list without repeats; a lone string or an empty id is refused."""
    if isinstance(ids, str | bytes):
        raise InputError(
            f"ids must be a list of lease ids, not one string ({str(ids)[:60]!r}); "
            "pass [lease_id] to revoke one"
        )
    todo = list(dict.fromkeys(ids))
    bad = [i for i in todo if not isinstance(i, str) or not i]
    if bad:
        raise InputError(f"every lease id must be a non-empty string, not {bad[0]!r}")
    return todo


def _settled(entries: Iterable[Mapping[str, Any]]) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """From a journal: the last outcome recorded for each lease, and the leases
    whose revocation was about to be sent and whose answer is not recorded."""
    outcome: dict[str, dict[str, Any]] = {}
    pending: set[str] = set()
    for entry in entries:
        lease = entry.get("lease")
        if not isinstance(lease, str):
            continue
        if entry.get("step") == "about to send":
            pending.add(lease)
        elif "outcome" in entry:
            pending.discard(lease)
            outcome[lease] = dict(entry)
    return outcome, pending


def revoke_leases(
    http: HTTPLayer,
    ids: Iterable[str] | str,
    *,
    rate: float,
    batch_size: int = 100,
    apply: bool = False,
    journal: str | Path | None = None,
    sync: bool = True,
) -> pd.DataFrame:
    """Revoke ``ids`` at most ``rate`` a second, in batches, each lease once: the plan first.

    One row a lease (:data:`REVOCATIONS`): the request as it is (or would be)
    sent, one ``POST sys/leases/revoke`` a lease, and its ``outcome``. Without
    ``apply`` nothing is sent: the outcome is ``will send``, or what the
    journal already records. With ``apply`` each batch is looked up (``POST
    sys/leases/lookup``, a read), the live leases revoked, and the frame says
    what became of each; ``attrs["coverage"]`` says what could not be known.
    """
    if not rate or rate <= 0:
        raise InputError(f"rate must be a positive number of leases a second, not {rate!r}")
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, not {batch_size}")
    todo = lease_ids(ids)
    book = _Book(http, journal)
    try:
        return _Run(http, todo, rate, batch_size, sync, book).go(apply)
    finally:
        book.close()


class _Book:
    """The journal, or nothing (a run without one keeps its outcomes in memory)."""

    def __init__(self, http: HTTPLayer, path: str | Path | None) -> None:
        self.journal: Journal | None = None
        self.notes: list[str] = []
        if path is None:
            self.done: dict[str, dict[str, Any]] = {}
            self.pending: set[str] = set()
            return
        identity = server_identity(http, "revocation journal", {"revoke": REVOKE_PATH})
        self.journal = Journal.open(path, identity)
        self.done, self.pending = _settled(self.journal.entries)
        if self.journal.torn:
            self.notes.append(self.journal.torn)

    def write(self, entries: list[dict[str, Any]]) -> None:
        if self.journal is not None:
            self.journal.append_many(entries)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()


class _Run:
    def __init__(
        self,
        http: HTTPLayer,
        todo: list[str],
        rate: float,
        batch_size: int,
        sync: bool,
        book: _Book,
    ) -> None:
        self.http = http
        self.todo = todo
        self.rate = rate
        self.batch_size = batch_size
        self.sync = sync
        self.book = book
        self.rows: dict[str, dict[str, Any]] = {}
        self.coverage = Coverage("leases.revocation_plan", asked=[REVOKE_PATH])
        self.can_look_up = True

    # -- rows -------------------------------------------------------------------------------
    def _row(self, lease: str, batch: int, outcome: str, detail: str, sent: bool) -> None:
        body = {"lease_id": lease, "sync": self.sync}
        self.rows[lease] = {
            "lease_id": lease,
            "batch": batch,
            "method": "POST" if sent else "",
            "path": REVOKE_PATH if sent else "",
            "body": json.dumps(clean_parameters(body), sort_keys=True) if sent else "",
            "outcome": outcome,
            "detail": detail,
        }

    def _frame(self) -> pd.DataFrame:
        frame = build_frame([self.rows[lease] for lease in self.todo], REVOCATIONS)
        for note in self.book.notes:
            frame.attrs.setdefault("notes", []).append(note)
        return self.coverage.attach(frame)

    # -- the plan ---------------------------------------------------------------------------
    def go(self, apply: bool) -> pd.DataFrame:
        fresh: list[str] = []
        for lease in self.todo:
            known = self.book.done.get(lease)
            if known is not None and known["outcome"] in _SETTLED:
                detail = f"recorded by an earlier run: {known.get('detail') or known['outcome']}"
                self._row(lease, -1, known["outcome"], detail, sent=False)
            else:
                fresh.append(lease)
        batches = [fresh[k : k + self.batch_size] for k in range(0, len(fresh), self.batch_size)]
        if not apply:
            for number, batch in enumerate(batches):
                for lease in batch:
                    detail = "looked up first; revoked if live"
                    if lease in self.book.pending:
                        detail = (
                            "an earlier run stopped before its answer: looked up first, "
                            "revoked only if still live"
                        )
                    self._row(lease, number, WILL_SEND, detail, sent=True)
            frame = self._frame()
            frame.attrs["apply"] = False
            return frame
        for number, batch in enumerate(batches):
            self._throttle(number)
            try:
                self._batch(number, batch)
            except _Stopped as stop:
                self.coverage.note_gap(REVOKE_PATH, None, f"the run stopped: {stop}")
                self._not_reached(str(stop))
                break
        return self._frame()

    def _not_reached(self, why: str) -> None:
        for lease in self.todo:
            if lease in self.rows:
                continue
            if lease in self.book.pending:
                detail = (
                    f"an earlier run's answer was lost, and this run stopped ({why}) "
                    "before looking it up"
                )
                self._row(lease, -1, UNKNOWN, detail, sent=False)
            else:
                self._row(lease, -1, FAILED, f"not sent: the run stopped ({why})", sent=False)

    def _throttle(self, number: int) -> None:
        if number == 0:
            self.started = time.monotonic()
            self.sent = 0
            return
        pause = self.started + self.sent / self.rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)

    # -- one batch: look up, write ahead, send, write the answers -----------------------------
    def _batch(self, number: int, batch: list[str]) -> None:
        found = self._look_up(batch)
        ahead: list[dict[str, Any]] = []
        settled: list[dict[str, Any]] = []
        send: list[str] = []
        for lease in batch:
            state = found.get(lease)
            earlier = lease in self.book.pending
            if state == "gone":
                if earlier:
                    outcome, detail = REVOKED, "an earlier run's answer was lost; looked up: gone"
                else:
                    outcome, detail = ALREADY_GONE, "looked up: no such lease; nothing sent"
                settled.append({"lease": lease, "outcome": outcome, "detail": detail})
                self._row(lease, number, outcome, detail, sent=False)
            elif state is None and earlier:
                detail = (
                    "an earlier run may have sent its revocation and stopped before the "
                    "answer; it could not be looked up, so it is not sent again"
                )
                self._row(lease, number, UNKNOWN, detail, sent=False)
            else:
                send.append(lease)
                ahead.append({"lease": lease, "step": "about to send"})
        if settled or ahead:
            try:
                self.book.write(settled + ahead)
            except StateError as exc:
                for lease in send:
                    self._row(lease, number, FAILED, f"not sent: {exc}", sent=False)
                raise _Stopped(str(exc)) from None
        if not send:
            return
        calls = [
            Request(
                "POST",
                "/" + REVOKE_PATH,
                json={"lease_id": lease, "sync": self.sync},
                idempotent=False,
                ok_statuses=_ANSWERED,
            )
            for lease in send
        ]
        answers: list[dict[str, Any]] = []
        stopped: str | None = None
        try:
            for lease, response in zip(send, self.http.many(calls), strict=False):
                answers.append(self._answer(number, lease, found.get(lease), response))
        except ToolkitError as exc:
            stopped = one_line(f"{type(exc).__name__}: {exc}")
        self.sent += len(answers)
        for lease in send[len(answers) :]:
            detail = (
                f"the connection failed ({stopped}): it may have been sent; "
                "a rerun with the same journal looks it up"
            )
            self._row(lease, number, UNKNOWN, detail, sent=True)
            self.coverage.note_gap(f"{REVOKE_PATH} {lease}", None, "outcome unknown")
        try:
            self.book.write(answers)
        except StateError as exc:
            for entry in answers:
                row = self.rows[entry["lease"]]
                row["detail"] = f"{row['detail']} (not journaled: {exc}; a rerun looks it up)"
            raise _Stopped(str(exc)) from None
        if stopped is not None:
            raise _Stopped(stopped)

    def _answer(self, number: int, lease: str, state: str | None, response: Any) -> dict[str, Any]:
        status = response.status_code
        if status >= 400:
            outcome, detail = FAILED, f"{status}: {_errors(response)}"
        elif state == "live":
            outcome, detail = REVOKED, f"{status}; looked up live before"
        else:
            outcome, detail = NOT_CONFIRMED, f"{status}; not looked up before ({_NO_LOOKUP})"
        self._row(lease, number, outcome, detail, sent=True)
        return {"lease": lease, "status": status, "outcome": outcome, "detail": detail}

    def _look_up(self, batch: Sequence[str]) -> dict[str, str]:
        """Each lease: ``live``, ``gone``, or absent (could not be looked up)."""
        if not self.can_look_up:
            return {}
        calls = [
            Request(
                "POST",
                "/" + LOOKUP_PATH,
                json={"lease_id": lease},
                idempotent=True,
                ok_statuses=_ANSWERED,
            )
            for lease in batch
        ]
        found: dict[str, str] = {}
        try:
            for lease, response in zip(batch, self.http.many(calls), strict=False):
                status = response.status_code
                if status == 200:
                    found[lease] = "live"
                    self.coverage.note_read()
                elif status == 400 and "invalid lease" in _errors(response):
                    found[lease] = "gone"
                    self.coverage.note_read()
                elif status == 403:
                    self.can_look_up = False
                    self.coverage.note_gap(LOOKUP_PATH, 403, _NO_LOOKUP)
                    return {}
                else:
                    self.coverage.note_gap(f"{LOOKUP_PATH} {lease}", status, _errors(response))
        except ToolkitError as exc:
            raise _Stopped(one_line(f"a lookup failed ({type(exc).__name__}: {exc})")) from None
        return found


class _Stopped(Exception):
    """The run stops here: the connection or the journal failed."""


def _errors(response: Any) -> str:
    try:
        payload = response.json()
    except ValueError:
        return one_line(response.text[:200]) or str(response.status_code)
    errors = payload.get("errors") if isinstance(payload, Mapping) else None
    return "; ".join(one_line(str(e)) for e in errors or []) or str(response.status_code)


# -- throttled bulk revoke, without a journal ---------------------------------------------
REVOKE_BATCHES = Schema.of("lease_id batch:int action detail", index="lease_id")
# Answers to a revocation that are reported on its row rather than raised.
_REVOKE_REPORTED = frozenset(range(400, 500))


def revoke_in_batches(
    http: HTTPLayer,
    ids: Iterable[str],
    *,
    rate: float,
    batch_size: int = 100,
    dry_run: bool = True,
    sync: bool = True,
    on_batch: Callable[[int, int], None] | None = None,
) -> OutcomeFrame:
    """Revoke leases in batches, at most ``rate`` leases a second on average.

    ``POST /sys/leases/revoke`` each (a write: never retried nor pipelined, so
    none is sent twice). A batch's revocations go concurrently; before the next
    batch the call waits until the average rate is back under ``rate``, so a
    backend (a database dropping users) is not flooded. With ``dry_run`` (the
    default) nothing is sent. One row per lease: ``batch``, ``action``
    (``would revoke``, ``revoked``, ``failed``), ``detail`` (the server's
    error). A refused revocation never stops the rest; ``on_batch(done,
    total)`` is called after each batch. Nothing is kept across runs: for
    that, :meth:`~toolkit.secrets.leases.Leases.revocation_plan` with a journal.
    """
    if not rate or rate <= 0:
        raise InputError(f"rate must be a positive number of leases a second, not {rate!r}")
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, not {batch_size}")
    todo = list(dict.fromkeys(ids))
    if any(not i for i in todo):
        raise InputError("an empty lease id was given")
    batches = [todo[i : i + batch_size] for i in range(0, len(todo), batch_size)]
    if dry_run:
        rows = [
            {"lease_id": lid, "batch": b, "action": "would revoke", "detail": ""}
            for b, batch in enumerate(batches)
            for lid in batch
        ]
        return build_frame(rows, REVOKE_BATCHES)
    rows = []
    started = time.monotonic()
    sent = 0
    for number, batch in enumerate(batches):
        # Wait until sending this batch keeps the average at or under ``rate``.
        due = started + sent / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        calls = [
            Request(
                "POST",
                "/sys/leases/revoke",
                json={"lease_id": lid, "sync": sync},
                idempotent=False,
                ok_statuses=_REVOKE_REPORTED,
            )
            for lid in batch
        ]
        for lid, response in zip(batch, http.many(calls), strict=True):
            if response.status_code >= 400:
                detail = f"{response.status_code}: {_errors(response)}"
                rows.append(
                    {"lease_id": lid, "batch": number, "action": "failed", "detail": detail}
                )
            else:
                rows.append({"lease_id": lid, "batch": number, "action": "revoked", "detail": ""})
        sent += len(batch)
        if on_batch is not None:
            on_batch(sent, len(todo))
    return build_frame(rows, REVOKE_BATCHES)
