"""Mutation testing of the modules that carry the toolkit's claims (``make mutation``).

    python -m tests.mutation.run                 # every mutant, module by module
    python -m tests.mutation.run --sample        # CI: a fixed, seeded sample a module
    python -m tests.mutation.run --module toolkit/_coverage.py

The modules, the fast tests that hold each, the score and the sample are read from
``tests/mutation/modules.toml`` (one line a module). mutmut (3.8.1, pinned: two of its
functions are extended here) writes every mutant of those modules into ``mutants/``,
finds which of the tests listed for its module call each function, and runs each
mutant against those. Here, besides:

- functions decorated with ``property``, ``functools.cache``/``lru_cache`` or
  ``cached_property`` are mutated too (mutmut leaves every decorated function but
  ``staticmethod``/``classmethod`` alone): the decorators stay on mutmut's trampoline,
  its copies of the function (the original and each mutant) are left bare;
- every ``functools`` cache of the toolkit is cleared when a mutant's test run starts
  (``tests/mutation/fresh_caches.py``), so a value cached with no mutant active never
  answers for a mutant;
- the mutants listed as equivalent in ``docs/decisions.md`` (section "Mutation
  testing", matched by module, function and the line changed) are left out of the score.

A module whose score (mutants killed, of those not equivalent) is below the minimum
fails the run (exit 1); the table of scores is printed and written to
``mutants/scores.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "tests" / "mutation" / "modules.toml"
DECISIONS = ROOT / "docs" / "decisions.md"
EQUIVALENTS_HEADING = "## Mutation testing (issue 37)"
# The decorators whose functions are mutated here too (mutmut takes the last two itself).
CACHING = {"property", "cached_property", "cache", "lru_cache"}
OWN = {"staticmethod", "classmethod"}
CAUGHT = {"killed", "timeout", "segfault"}
# Hypothesis draws the same examples in every mutant's run: a score that does not move.
PYTEST_ARGS = ["-p", "tests.mutation.fresh_caches", "--hypothesis-seed=37", "-m", "not slow"]


@dataclass(frozen=True)
class Settings:
    modules: dict[str, list[str]]
    minimum: float
    sample: int
    seed: int


def settings(path: Path = SETTINGS) -> Settings:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    score = data.get("score", {})
    return Settings(
        modules={str(m): [str(t) for t in tests] for m, tests in data["modules"].items()},
        minimum=float(score.get("minimum", 90)),
        sample=int(score.get("sample", 30)),
        seed=int(score.get("seed", 0)),
    )


def module_name(path: str) -> str:
    """``toolkit/_spec/acl.py`` as mutmut names its mutants' module: ``toolkit._spec.acl``."""
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


# -- mutmut, extended ----------------------------------------------------------------------


def _decorator_name(decorator: Any) -> str:
    """``lru_cache`` for ``@functools.lru_cache(maxsize=1)``, ``property`` for ``@property``."""
    import libcst as cst

    node = decorator.func if isinstance(decorator, cst.Call) else decorator
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else ""


def extend_mutmut() -> None:
    """Let mutmut mutate functions decorated with a property or a cache (see the module),
    and keep the results of one module's run when the next runs with other tests."""
    import libcst as cst
    from mutmut import __main__ as mutmut_main
    from mutmut.mutation import file_mutation as fm

    if getattr(fm, "_toolkit_extended", False):
        return
    skip = fm.MutationVisitor._skip_node_and_children
    arrange = fm.function_trampoline_arrangement

    def only_ours(node: Any) -> bool:
        names = [_decorator_name(d.decorator) for d in node.decorators]
        return bool(names) and all(n in CACHING for n in names)

    def skip_node_and_children(self: Any, node: Any) -> bool:
        if not (isinstance(node, cst.FunctionDef) and only_ours(node)):
            return bool(skip(self, node))
        # As mutmut judges an undecorated function: its pragmas and its list of never-mutated names.
        position = self.get_metadata(fm.PositionProvider, node, None)
        if position and position.start.line in self._ignored_node_lines:
            self.ignored_functions.add(node.name.value)
            return True
        return node.name.value in fm.NEVER_MUTATE_FUNCTION_NAMES

    def trampoline_arrangement(function: Any, mutants: Any, class_name: str | None) -> Any:
        if not only_ours(function):
            return arrange(function, mutants, class_name)
        declared, nodes, assigned, names = arrange(
            function.with_changes(decorators=[]), mutants, class_name
        )
        nodes = list(nodes)
        # The trampoline (first) is what the class or module holds: the decorators wrap it.
        nodes[0] = nodes[0].with_changes(decorators=[*function.decorators, *nodes[0].decorators])
        return declared, nodes, assigned, names

    fm.MutationVisitor._skip_node_and_children = skip_node_and_children
    fm.function_trampoline_arrangement = trampoline_arrangement
    # Each module has its own test selection, and mutmut takes a changed selection for a
    # reason to forget every result: the runner names the mutants it runs (so mutmut runs
    # them whatever it kept), and the stats follow each selection as new tests come in.
    mutmut_main._apply_config_change_invalidation = lambda *args, **kwargs: False
    fm._toolkit_extended = True


def configure(chosen: Settings, module: str | None = None) -> None:
    """mutmut's configuration, from ``modules.toml`` rather than pyproject: the tests
    of ``module`` (those listed for it), or of every module."""
    from mutmut import configuration

    configuration.reset_config()
    config = configuration.config()
    config.source_paths = [Path("toolkit"), Path("widgets")]
    config.resolved_mutated_source_paths = [ROOT / "mutants" / p for p in config.source_paths]
    config.only_mutate = list(chosen.modules)
    config.pytest_add_cli_args = list(PYTEST_ARGS)
    listed = [chosen.modules[module]] if module else chosen.modules.values()
    config.pytest_add_cli_args_test_selection = sorted({t for tests in listed for t in tests})
    config.also_copy = [*config.also_copy, Path("notebooks"), Path("docs"), Path("benchmarks")]
    config.use_git_change_detection = False
    config.mutate_only_covered_lines = False
    # One process imports pytest, the tests and the toolkit once, and forks a child for
    # each mutant: seconds of imports saved a mutant (fresh_caches empties what it cached).
    config.process_isolation = configuration.ProcessIsolation.FORKSERVER
    config.forkserver_warmup = configuration.ForkServerWarmup.COLLECT


def generate(max_children: int) -> None:
    """Write the mutants into ``mutants/`` (unchanged files are not written again)."""
    from mutmut import __main__ as mutmut_main
    from mutmut.utils import file_utils

    os.makedirs("mutants", exist_ok=True)
    file_utils.copy_src_dir()
    file_utils.copy_also_copy_files()
    file_utils.setup_source_paths()
    mutmut_main.create_mutants(max_children)


def mutants_of(path: str) -> dict[str, int | None]:
    """Each mutant of ``path`` and its exit code (None: not run yet)."""
    meta = ROOT / "mutants" / f"{path}.meta"
    if not meta.exists():
        return {}
    return dict(json.loads(meta.read_text())["exit_code_by_key"])


def sample(names: Sequence[str], size: int, seed: int) -> list[str]:
    """A fixed draw of ``size`` of ``names`` (all when fewer): the same for the same mutants."""
    ordered = sorted(names)
    if size >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, size))


# -- equivalent mutants --------------------------------------------------------------------


def function_of(mutant: str) -> str:
    """``PathRule.matches`` for ``toolkit._spec.acl.xǁPathRuleǁmatches__mutmut_3``."""
    mangled = mutant.rpartition(".")[2].rpartition("__mutmut_")[0]
    if mangled.startswith("x_"):
        return mangled[2:]
    return ".".join(part for part in mangled.split("ǁ")[1:] if part)


def changed_lines(mutant: str, path: str) -> tuple[str, str]:
    """The line as written and as the mutant has it (several joined by `` / ``)."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    diff = get_diff_for_mutant(mutant, path=path).splitlines()
    old = [line[1:].strip() for line in diff if line.startswith("-") and not line.startswith("---")]
    new = [line[1:].strip() for line in diff if line.startswith("+") and not line.startswith("+++")]
    return " / ".join(old), " / ".join(new)


def _cells(row: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", row.strip().strip("|"))
    return [c.strip().replace("\\|", "|").strip("`").strip() for c in cells]


def equivalents(text: str | None = None) -> set[tuple[str, str, str, str]]:
    """(module path, function, line as written, line as mutated) of each mutant listed as
    equivalent in the table of the "Mutation testing" section of docs/decisions.md."""
    text = DECISIONS.read_text(encoding="utf-8") if text is None else text
    _, found, section = text.partition(EQUIVALENTS_HEADING)
    if not found:
        return set()
    section = section.split("\n## ", 1)[0]
    listed = set()
    for row in section.splitlines():
        cells = _cells(row) if row.startswith("|") else []
        if len(cells) >= 5 and cells[0].endswith(".py"):
            listed.add((cells[0], cells[1], cells[2], cells[3]))
    return listed


# -- the run ---------------------------------------------------------------------------------


def run_module(
    path: str,
    chosen: Settings,
    *,
    sampled: bool,
    survivors: bool = False,
    pending: bool = False,
    max_children: int = 2,
) -> None:
    """Run the mutants of one module (all, the sample, or those the last run left alive)
    in this process."""
    from mutmut import __main__ as mutmut_main
    from mutmut.stats import status_by_exit_code

    codes = mutants_of(path)
    names = list(codes)
    if sampled:
        names = sample(names, chosen.sample, chosen.seed)
    if survivors:
        names = [n for n in names if status_by_exit_code[codes[n]] not in CAUGHT]
    if pending:
        names = [n for n in names if codes[n] is None]
    print(f"== {path}: {len(names)} mutants", flush=True)
    if not names:
        return
    collect = mutmut_main.collect_or_load_stats

    def timed_collect(*args: Any, **kwargs: Any) -> None:
        began = time.monotonic()
        collect(*args, **kwargs)
        print(f"\n== {path}: which tests call what, {time.monotonic() - began:.0f} s", flush=True)

    mutmut_main.collect_or_load_stats = timed_collect
    mutmut_main._run(names, max_children)


@dataclass
class Score:
    module: str
    mutants: int
    killed: int
    equivalent: int
    survivors: list[tuple[str, str, str, str]]

    @property
    def percent(self) -> float:
        counted = self.mutants - self.equivalent
        return 100.0 * self.killed / counted if counted else 100.0


def score(path: str, names: Sequence[str] | None, listed: set[tuple[str, str, str, str]]) -> Score:
    from mutmut.stats import status_by_exit_code

    codes = mutants_of(path)
    chosen = list(codes) if names is None else [n for n in names if n in codes]
    killed = equivalent = 0
    survivors = []
    for name in chosen:
        status = status_by_exit_code[codes[name]]
        if status in CAUGHT:
            killed += 1
            continue
        old, new = changed_lines(name, path)
        if (path, function_of(name), old, new) in listed:
            equivalent += 1
        else:
            survivors.append((name, status, old, new))
    return Score(path, len(chosen), killed, equivalent, survivors)


def table(scores: Sequence[Score]) -> str:
    lines = [
        "| Module | Mutants | Killed | Equivalent | Score |",
        "|---|---|---|---|---|",
    ]
    for s in scores:
        lines.append(
            f"| `{s.module}` | {s.mutants} | {s.killed} | {s.equivalent} | {s.percent:.1f}% |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sample", action="store_true", help="the seeded sample of each module")
    parser.add_argument("--module", action="append", help="only this module (repeatable)")
    parser.add_argument(
        "--survivors", action="store_true", help="only the mutants the last run left alive"
    )
    parser.add_argument(
        "--pending", action="store_true", help="only the mutants no run has tried yet"
    )
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child run of one module
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    chosen = settings()
    unknown = [m for m in args.module or () if m not in chosen.modules]
    if unknown:
        print(f"error: {unknown[0]} is not in {SETTINGS.relative_to(ROOT)}", file=sys.stderr)
        return 2
    extend_mutmut()
    configure(chosen, args.one)
    if args.one:
        run_module(
            args.one,
            chosen,
            sampled=args.sample,
            survivors=args.survivors,
            pending=args.pending,
            max_children=args.max_children,
        )
        return 0
    generate(args.max_children)
    modules = args.module or list(chosen.modules)
    for path in modules:
        # One module at a time, each in a process of its own (mutmut keeps global state).
        child = [sys.executable, "-m", "tests.mutation.run", "--one", path]
        child += ["--max-children", str(args.max_children)]
        child += ["--sample"] * args.sample + ["--survivors"] * args.survivors
        child += ["--pending"] * args.pending
        began = time.monotonic()
        subprocess.run(child, check=True, cwd=ROOT)
        print(f"== {path}: {time.monotonic() - began:.0f} s", flush=True)
    listed = equivalents()
    scores = []
    for path in modules:
        names = None
        if args.sample:
            names = sample(list(mutants_of(path)), chosen.sample, chosen.seed)
        scores.append(score(path, names, listed))
    report = table(scores)
    for s in scores:
        for name, status, old, new in s.survivors:
            report += f"\n{status}: {name} ({function_of(name)}): `{old}` -> `{new}`"
    print(report)
    (ROOT / "mutants" / ("sample-scores.md" if args.sample else "scores.md")).write_text(
        report + "\n"
    )
    low = [s for s in scores if s.percent < chosen.minimum]
    for s in low:
        print(
            f"error: {s.module} scores {s.percent:.1f}%, below {chosen.minimum:g}%: kill the "
            "survivors above with tests that state the rule, or list an equivalent one in "
            "docs/decisions.md",
            file=sys.stderr,
        )
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
