"""What every runbook does the same way: check its parameters, see that it saw everything,
file its evidence with where it came from, and report its key numbers.

The cell after a runbook's parameters cell is::

    run = toolkit.runbook.check_parameters(globals(), "05_lease_audit")

It reads the parameters cell as declared (the cell before, or before papermill's
``injected-parameters`` cell) and refuses, in one line and before the first
request: a parameter the runbook does not declare (from papermill or a fleet's
targets file), a value of the wrong type (``apply="yes"`` is not ``True``), a
``target`` other than ``"sandbox"`` or ``"live"`` (a rehearsal takes only the
sandbox), a token where a variable name belongs, and an evidence folder that
already holds something. Then::

    run.choose("role", pki.list_roles())     # a demo name checked, or "" → the server's first
    run.seen(leases, tokens)                 # fails when a view could not read everything
    run.file(client, {"leases": leases}, organization=None)   # evidence + provenance + MANIFEST
    run.summary(leases=len(leases))          # the fleet's key numbers, marked incomplete if so

An audit that could not read everything fails with :class:`PartialCoverage`
unless ``allow_incomplete`` is true; then it finishes, and its summary and
evidence say "incomplete" and carry the coverage frame.
"""

from __future__ import annotations

import ast
import difflib
import getpass
import hashlib
import json
import os
import re
import socket
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from . import report
from ._card import format_duration
from ._coverage import Coverage, CoverageReport, coverage, coverage_of
from ._errors import InputError, PartialCoverage
from ._masking import secret_name
from .fleet._kernel import ENV_FLEET_TARGET, ENV_FLEET_TOKEN_SOURCE, ENV_RUNBOOK_SHA256, summary

__all__ = [
    "Run",
    "check_parameters",
    "declared_parameters",
    "human_duration",
    "refuse_undeclared",
]

TARGETS = ("sandbox", "live")
# What papermill puts first in the cell it injects after the parameters cell.
_INJECTED = "# Parameters"
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def declared_parameters(source: str) -> dict[str, Any]:
    """The names and default values a parameters cell's source declares.

    Every statement must be ``name = <literal>`` (what papermill can override);
    anything else is an :class:`InputError`.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise InputError(f"the parameters cell is not Python: {exc.msg}") from None
    declared: dict[str, Any] = {}
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            raise InputError(
                f"the parameters cell may hold only `name = value` lines (line {node.lineno})"
            )
        try:
            declared[node.targets[0].id] = ast.literal_eval(node.value)
        except ValueError:
            raise InputError(
                f"the parameter {node.targets[0].id!r} must have a plain value as its default"
            ) from None
    return declared


def _is_parameters_cell(source: str) -> bool:
    try:
        declared = declared_parameters(source)
    except InputError:
        return False
    return "target" in declared


def _cells(history: Sequence[str]) -> tuple[str | None, str | None]:
    """(the parameters cell, papermill's injected cell) from the kernel's input history,
    the newest last, each None when not there; the check's own cell is skipped."""
    for k in range(len(history) - 1, -1, -1):
        source = history[k]
        if source.lstrip().startswith(_INJECTED):
            continue
        if _is_parameters_cell(source):
            after = history[k + 1] if k + 1 < len(history) else None
            injected = after if after and after.lstrip().startswith(_INJECTED) else None
            return source, injected
    injected = next((h for h in reversed(history) if h.lstrip().startswith(_INJECTED)), None)
    return None, injected


def _runbook_file(name: str) -> Path | None:
    """The runbook's file: the one Jupyter names for this kernel, else ``<name>.ipynb`` in
    the kernel's folder (where papermill, nbval and the fleet start it)."""
    session = os.environ.get("JPY_SESSION_NAME")
    for candidate in (Path(session) if session else None, Path.cwd() / f"{name}.ipynb"):
        if candidate is not None and candidate.is_file() and candidate.stem == name:
            return candidate
    return None


def _parameters_cell_of(path: Path) -> str | None:
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(notebook, dict):  # JSON, but no notebook
        return None
    for cell in notebook.get("cells", []):
        if "parameters" in ((cell.get("metadata") or {}).get("tags") or []):
            source = cell.get("source", "")
            return "".join(source) if isinstance(source, list) else str(source)
    return None


def refuse_undeclared(
    given: Iterable[str], declared: Mapping[str, Any], runbook: str, *, where: str = ""
) -> None:
    """:class:`InputError` naming the first of ``given`` that ``declared`` lacks, with the
    closest declared name; ``where`` (``"target a: "``) starts the message."""
    for key in given:
        if key not in declared:
            close = difflib.get_close_matches(key, list(declared), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(
                f"{where}unknown parameter {key!r}{hint}: {runbook} takes "
                f"{', '.join(sorted(declared))}"
            )


def _same_kind(default: Any, value: Any) -> bool:
    if default is None:
        return value is None or isinstance(value, str | os.PathLike)
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(default, list | tuple):
        return isinstance(value, list | tuple)
    return isinstance(value, type(default))


def _kind_name(default: Any) -> str:
    if default is None:
        return "a path (or None)"
    return {bool: "True or False", int: "a whole number", float: "a number", str: "a string"}.get(
        type(default), f"a {type(default).__name__}"
    )


def _runbook_sha256(path: Path | None) -> str | None:
    given = os.environ.get(ENV_RUNBOOK_SHA256)
    if given:
        return given
    return hashlib.sha256(path.read_bytes()).hexdigest() if path is not None else None


def check_parameters(
    namespace: MutableMapping[str, Any],
    name: str,
    *,
    rehearsal: bool = False,
    history: Sequence[str] | None = None,
) -> Run:
    """Check the parameters in ``namespace`` (the notebook's ``globals()``) against
    the ones its parameters cell declares; the :class:`Run` that files the evidence.

    The declared parameters come from the kernel's input history (``history``,
    else ``In`` in ``namespace``): the nearest earlier cell of ``name = value``
    lines that declares ``target``; where the history does not keep cells (nbval),
    from the cell tagged ``parameters`` in the runbook's file. What papermill
    injected is the ``# Parameters`` cell in the history. Raises
    :class:`InputError` with one line naming the first problem.
    """
    started = datetime.now(UTC)
    inputs = list(history if history is not None else namespace.get("In", [])[:-1])
    source, injected = _cells(inputs)
    path = _runbook_file(name)
    if source is None and path is not None:
        source = _parameters_cell_of(path)
    if source is None:
        raise InputError("run the parameters cell first: no cell before this one declares `target`")
    declared = declared_parameters(source)
    if "target" not in declared:
        raise InputError(
            f"the parameters cell of {path} does not declare `target`: add "
            '`target = "sandbox"` (or "live") to it'
        )
    if injected is not None:
        given = declared_parameters(injected.split("\n", 1)[1] if "\n" in injected else "")
        refuse_undeclared(given, declared, name)
    values = {key: namespace.get(key, default) for key, default in declared.items()}
    for key, default in declared.items():
        value = values[key]
        if not _same_kind(default, value):
            shown = "a value" if secret_name(key) else repr(value)
            raise InputError(
                f"the parameter {key} must be {_kind_name(default)}, not {shown} "
                f"({type(value).__name__})"
            )
    target = values["target"]
    if target not in TARGETS:
        raise InputError(
            f"target must be 'sandbox' or 'live', not {target!r}: nothing was sent anywhere"
        )
    if rehearsal and target != "sandbox":
        raise InputError(
            f"{name} runs against the sandbox only (target={target!r}); "
            "the audit runbook reads a live server"
        )
    for key, value in values.items():
        if key.endswith("_env") and isinstance(value, str) and not _VARIABLE.match(value):
            raise InputError(
                f"{key} must name an environment variable (letters, digits, '_'); the value "
                "given is not one and is not shown: put the secret in a variable and name it"
            )
    evidence = values.get("evidence_dir")
    if evidence is not None:
        folder = Path(os.path.expanduser(str(evidence)))
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise InputError(
                f"evidence_dir {folder} exists already and is not empty: give each run its own "
                "folder (nothing was sent)"
            )
    allow = bool(values.get("allow_incomplete", False))
    return Run(
        name=name,
        parameters=values,
        defaults=declared,
        started_at=started,
        rehearsal=rehearsal,
        allow_incomplete=allow,
        sha256=_runbook_sha256(path),
    )


@dataclass
class Run:
    """One run of a runbook: its parameters as applied, what its views could read,
    and when it started. Made by :func:`check_parameters`."""

    name: str
    parameters: dict[str, Any]
    defaults: dict[str, Any]
    started_at: datetime
    rehearsal: bool = False
    allow_incomplete: bool = False
    sha256: str | None = None
    records: list[Coverage] = field(default_factory=list)
    unrecorded: list[str] = field(default_factory=list)

    # -- demo names ---------------------------------------------------------------------------

    def choose(
        self,
        key: str,
        available: Iterable[str],
        *,
        what: str | None = None,
        demo: str = "",
        passed_over: Iterable[str] = (),
    ) -> str:
        """The value of the parameter ``key``, checked against what the server has.

        A value the server does not have is an :class:`InputError` naming what it
        has. An empty value takes ``demo`` on the sandbox, else the first the server
        has (in sorted order) that is not ``passed_over`` (built-ins such as the
        ``default`` and ``root`` policies, taken only when nothing else is there),
        or stays empty when it has none. The evidence records the value chosen.
        """
        have = sorted(str(a) for a in available)
        value = self.parameters.get(key) or self._demo(demo)
        noun = what or key.replace("_", " ")
        if value:
            if value not in have:
                listed = ", ".join(have[:10]) + (" ..." if len(have) > 10 else "") or "none"
                raise InputError(
                    f"{key} = {value!r}: no {noun} of that name on this server (it has: "
                    f"{listed}); name one of them, or leave {key} empty to take the first"
                )
            chosen = str(value)
        else:
            skipped = set(passed_over)
            chosen = next((h for h in have if h not in skipped), have[0] if have else "")
        self.parameters[key] = chosen
        return chosen

    def choose_one(
        self, key: str, available: Iterable[str], *, what: str | None = None, demo: str = ""
    ) -> str:
        """As :meth:`choose`, but an empty value is taken only when the server has exactly
        one: what a runbook may change is never picked for the operator."""
        have = sorted(str(a) for a in available)
        if not (self.parameters.get(key) or self._demo(demo)) and len(have) != 1:
            noun = what or key.replace("_", " ")
            listed = ", ".join(have[:10]) or "none"
            raise InputError(f"set {key}: this token sees {len(have)} {noun}(s): {listed}")
        return self.choose(key, have, what=what, demo=demo)

    def _demo(self, demo: str) -> str:
        return demo if self.parameters.get("target") == "sandbox" else ""

    # -- coverage ----------------------------------------------------------------------------

    def seen(self, **frames: Any) -> CoverageReport:
        """Note what ``frames``' views could read; the coverage frame of all seen so far.

        A view that could not read everything makes this raise
        :class:`PartialCoverage` (one line naming what it could not read) unless
        the run allows incomplete audits, when it prints that line and goes on. A
        frame that carries no coverage record proves nothing whole: it is noted as
        unproven and stops the run the same way (a fleet reports an unproven run
        incomplete).
        """
        fresh: list[Coverage] = []
        unrecorded: list[str] = []
        for label, frame in frames.items():
            found = coverage_of(frame)
            if not found:
                unrecorded.append(label)
            fresh.extend(found)
        self.records.extend(fresh)
        self.unrecorded.extend(unrecorded)
        missing = [c.summary() for c in fresh if not c.complete]
        missing += [f"{label}: no coverage record (unproven)" for label in unrecorded]
        if missing:
            line = "; ".join(missing)
            if not self.allow_incomplete:
                raise PartialCoverage(
                    f"{line} — grant the token what it lacks, fix the name, or rerun with "
                    "allow_incomplete=True"
                )
            print(f"INCOMPLETE (allowed): {line}")
        else:
            print(self.coverage_line())
        return self.coverage_frame()

    def coverage_line(self) -> str:
        """One line: what the views seen so far could read."""
        if self.verdict == "incomplete":
            gaps = sum(len(c.gaps) for c in self.records)
            return f"Coverage: INCOMPLETE, {gaps} place(s) not read (allowed by allow_incomplete)"
        recorded = f"{len(self.records)} view(s) complete"
        if self.unrecorded:
            return f"Coverage: {recorded}; no record from {', '.join(self.unrecorded)} (unproven)"
        return f"Coverage: {recorded}"

    @property
    def complete(self) -> bool:
        return all(c.complete for c in self.records)

    @property
    def verdict(self) -> str:
        """``complete``, ``incomplete`` (a view said what it could not read), or
        ``unproven`` (no gap said, but a frame carried no record)."""
        if not self.complete:
            return "incomplete"
        return "unproven" if self.unrecorded else "complete"

    def coverage_frame(self) -> CoverageReport:
        """A row per place not read (``view``, ``path``, ``status``, ``reason``)."""
        return coverage(*self.records)  # attrs["complete"]: no record has a gap

    def coverage_record(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "views": [c.summary() for c in self.records],
            "without_record": list(self.unrecorded),
        }

    # -- evidence and summary -----------------------------------------------------------------

    def file(
        self,
        client: Any,
        frames: Mapping[str, pd.DataFrame],
        *,
        organization: str | None = None,
    ) -> list[Path]:
        """File ``frames`` and the coverage frame into ``evidence_dir`` with the run's
        provenance and a ``MANIFEST.json``; prints what was filed. Nothing when
        ``evidence_dir`` is None."""
        folder = self.parameters.get("evidence_dir")
        if folder is None:
            print("Not filed: evidence_dir is None.")
            return []
        header = report.header_of(
            client,
            runbook=self.name,
            parameters=self.filed_parameters(),
            organization=organization,
            provenance=self.provenance(),
        )
        evidence = {**frames, "coverage": self.coverage_frame()}
        filed = report.save(evidence, folder, header, name=self.name)
        marked = "" if self.verdict == "complete" else f" (marked {self.verdict})"
        print(f"Filed {len(filed)} file(s) into {folder}{marked}: {', '.join(sorted(evidence))}")
        return filed

    def filed_parameters(self) -> dict[str, Any]:
        """The parameters as applied; in a fleet run ``token_env`` names the targets file's
        variable, not the runner's own ``TOOLKIT_FLEET_TOKEN`` it was handed through."""
        source = os.environ.get(ENV_FLEET_TOKEN_SOURCE, "")
        if source.startswith("token_env ") and "token_env" in self.parameters:
            return {**self.parameters, "token_env": source.removeprefix("token_env ")}
        return dict(self.parameters)

    def provenance(self) -> dict[str, Any]:
        """Who ran it, where, which runbook, when and what it could see (no secret)."""
        return {
            "os_user": _os_user(),
            "host": socket.gethostname(),
            "runbook_sha256": self.sha256,
            "fleet_target": os.environ.get(ENV_FLEET_TARGET) or None,
            "token_source": os.environ.get(ENV_FLEET_TOKEN_SOURCE)
            or _token_source(self.parameters),
            "started_at": self.started_at,
            "finished_at": datetime.now(UTC),
            "coverage": self.coverage_record(),
        }

    def summary(self, **numbers: Any) -> None:
        """The runbook's key numbers (:func:`toolkit.fleet.summary`), with ``coverage``:
        the run's verdict, so a fleet run reports an incomplete one as incomplete."""
        summary(**numbers, coverage=self.verdict)


def _os_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def _token_source(parameters: Mapping[str, Any]) -> str | None:
    if parameters.get("target") != "live":
        return "the sandbox's token"
    env = parameters.get("token_env")
    return f"token_env {env}" if env else None


def human_duration(value: timedelta | pd.Timedelta | float | None) -> str:
    """A duration as an operator writes it, to its two largest units: ``6h 11m``,
    ``3d 4h``, ``25m``, ``45s`` (``0s``; ``-2m`` when negative; ``""`` when missing),
    never ``0 days 06:11:43.508485``. The same as the connection card and long
    frames show (:func:`toolkit._card.format_duration`)."""
    return format_duration(value)
