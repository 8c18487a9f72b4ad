"""The machinery of the differential tests: a target server, what a step observed, and the
comparison against the table of intended differences in ``docs/differences.md``.

A scenario (``scenarios.py``) is a function of a :class:`Target`; it calls endpoints
with :meth:`Target.call`, naming each step. The same scenario runs against the
sandbox and against the real OpenBao, and the two lists of observations are
compared step by step: the status code, the keys of the body (top level, and of
``data`` and ``auth``), and the values the step names as deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

DIFFERENCES_DOC = Path(__file__).resolve().parents[2] / "docs" / "differences.md"
# The section of that document that holds the table.
SECTION = "## The sandbox against OpenBao"
# The section listing differences that are the sandbox's mistakes, not yet fixed.
PENDING = "## Not yet fixed in the sandbox"
# Nested objects whose keys are compared as well as the top level's.
NESTED = ("data", "auth")


def normalise_error(message: str) -> str:
    """The real server wraps some messages as ``1 error occurred:\\n\\t* <message>\\n\\n``."""
    found = re.fullmatch(r"\d+ errors? occurred:\s*\n\t\* (.*?)\s*", message, re.S)
    return found.group(1) if found else message.strip()


@dataclass
class Observation:
    """What one step saw: the status, the key sets, the deterministic values."""

    step: str
    status: int
    keys: dict[str, tuple[str, ...]]
    values: dict[str, Any]

    def aspects(self) -> dict[str, Any]:
        """Every compared aspect by name: ``status``, ``keys``, ``keys.data``, ``value:<name>``."""
        found: dict[str, Any] = {"status": self.status}
        for where, keys in self.keys.items():
            found["keys" if where == "" else f"keys.{where}"] = ", ".join(keys)
        for name, value in self.values.items():
            found[f"value:{name}"] = value
        return found


Check = Callable[[Any], Any]


@dataclass
class Target:
    """A server a scenario runs against: its address, root token, and (for rekey) its shares."""

    name: str  # "sandbox" or "openbao"
    address: str
    token: str
    shares: list[str] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._http = httpx.Client(base_url=f"{self.address}/v1", timeout=60)

    def close(self) -> None:
        self._http.close()

    def call(
        self,
        step: str,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, str] | None = None,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        checks: dict[str, Check] | None = None,
        errors: bool = False,
        record: bool = True,
    ) -> Any:
        """Send one request and record what it saw; returns the decoded body (``None`` if empty).

        ``checks`` name values computed from the body that must agree on both
        servers; ``errors=True`` compares the error messages too.
        """
        sent = {"X-Vault-Token": self.token if token is None else token, **(headers or {})}
        reply = self._http.request(method, path, json=json, params=params, headers=sent)
        body: Any = None
        if reply.content:
            try:
                body = reply.json()
            except ValueError:
                body = reply.text
        if record:
            self.observations.append(self._observe(step, reply.status_code, body, checks, errors))
        return body

    def _observe(
        self, step: str, status: int, body: Any, checks: dict[str, Check] | None, errors: bool
    ) -> Observation:
        if any(o.step == step for o in self.observations):
            raise AssertionError(f"step {step!r} appears twice in the scenario")
        keys: dict[str, tuple[str, ...]] = {}
        if isinstance(body, dict):
            keys[""] = tuple(sorted(body))
            for nested in NESTED:
                if isinstance(body.get(nested), dict):
                    keys[nested] = tuple(sorted(body[nested]))
        values: dict[str, Any] = {}
        for name, check in (checks or {}).items():
            try:
                values[name] = check(body)
            except (KeyError, TypeError, IndexError, AttributeError) as exc:
                values[name] = f"<{type(exc).__name__}>"
        if errors:
            found = body.get("errors") if isinstance(body, dict) else None
            values["errors"] = [normalise_error(str(m)) for m in found or []]
        return Observation(step, status, keys, values)


# -- the table of intended differences ---------------------------------------------------
@dataclass(frozen=True)
class Difference:
    scenario: str
    step: str
    aspect: str
    sandbox: str
    openbao: str
    reason: str


def read_differences(doc: Path = DIFFERENCES_DOC, section: str = SECTION) -> list[Difference]:
    """The rows of a table in ``docs/differences.md``: by default the intended differences;
    with ``section=PENDING`` the known ones the sandbox still has to fix."""
    rows: list[Difference] = []
    text = doc.read_text()
    start = text.index(section)
    end = text.find("\n## ", start + len(section))
    for line in text[start : end if end != -1 else len(text)].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if (
            not line.startswith("|")
            or len(cells) != 6
            or cells[0] in ("scenario", "")
            or set(cells[0]) <= set("-: ")
        ):
            continue
        cells = [_unquote(c) for c in cells]
        rows.append(Difference(*cells))
    return rows


def _unquote(cell: str) -> str:
    cell = cell.replace("\\|", "|")
    return cell[1:-1] if len(cell) >= 2 and cell[0] == cell[-1] == "`" else cell


def render(value: Any) -> str:
    """How an aspect's value is written in the table."""
    if isinstance(value, str):
        return value.replace("\n", "\\n")
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, list | tuple):
        return "[" + ", ".join(render(v) for v in value) + "]"
    return str(value)


def differences(
    scenario: str, sandbox: list[Observation], openbao: list[Observation]
) -> Iterator[Difference]:
    """Every aspect in which the two runs differ (reason left empty)."""
    steps = [o.step for o in openbao]
    if [o.step for o in sandbox] != steps:
        yield Difference(
            scenario, "*", "steps", render([o.step for o in sandbox]), render(steps), ""
        )
        return
    for mine, theirs in zip(sandbox, openbao, strict=True):
        a, b = mine.aspects(), theirs.aspects()
        for aspect in sorted(set(a) | set(b)):
            if aspect.startswith("keys"):
                # Key sets are written as what only each side has.
                left_keys = set(str(a.get(aspect, "")).split(", ")) - {""}
                right_keys = set(str(b.get(aspect, "")).split(", ")) - {""}
                left, right = (
                    ", ".join(sorted(left_keys - right_keys)),
                    ", ".join(sorted(right_keys - left_keys)),
                )
                if aspect not in a or aspect not in b:
                    left, right = (
                        render(a.get(aspect, "<absent>")),
                        render(b.get(aspect, "<absent>")),
                    )
            else:
                left, right = render(a.get(aspect, "<absent>")), render(b.get(aspect, "<absent>"))
            if left != right:
                yield Difference(scenario, mine.step, aspect, left, right, "")


def matches(row: Difference, found: Difference) -> bool:
    """Whether a table row explains a difference found; ``*`` in a row's scenario or step
    stands for any."""
    return (
        row.scenario in ("*", found.scenario)
        and row.step in ("*", found.step)
        and (row.aspect, row.sandbox, row.openbao) == (found.aspect, found.sandbox, found.openbao)
    )


def unexplained(found: list[Difference], table: list[Difference]) -> list[Difference]:
    """The differences found that no row of the table explains."""
    return [d for d in found if not any(matches(row, d) for row in table)]
