"""Fleet runs: one runbook against many targets, unattended.

``python -m toolkit fleet RUNBOOK --targets targets.toml [--parallel N] [--out DIR]
[--dask ADDRESS]`` runs the runbook once per target with papermill, N at a time
in local processes or on an existing Dask cluster, and writes into ``DIR``:

- ``<target>/<runbook>.ipynb``: the executed notebook (also for a failed run, as
  far as it got), and ``<target>/<runbook>.html``, the same rendered by nbconvert;
- ``<target>/evidence/...``: what the runbook filed (its ``evidence_dir``);
- ``index.html``: each target's outcome, failures and incomplete runs first with
  the reason on the row, the key numbers each run reported (:func:`summary`),
  links to each rendered notebook and its evidence folder;
- ``results.json``: the same, for machines;
- ``history/``: every target's Parquet evidence appended to a history
  (:mod:`toolkit.history`), or to ``--history DIR`` shared across runs.

Each target has one of four outcomes: ``passed``; ``incomplete`` (the runbook
could not read everything: it stopped, or finished marked incomplete because
``allow_incomplete`` was set, or finished ``unproven``: a frame it checked carried no
coverage record); ``failed``; ``skipped`` (a target of the other
kind than the runbook's ``metadata.toolkit.kind``, never run). A target that is
down, refuses the token or times out is reported and never stops the others.
The exit status is 1 when any target failed, else 2 when any is incomplete, else
0; skipped targets change nothing. The targets file names where each target's
credentials are, never the credentials (:mod:`toolkit.fleet.targets`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from .._errors import InputError
from ._kernel import SUMMARY_MIME, summary
from .execute import OUTCOMES, TOKEN_VARIABLE, execute_target, skipped
from .index import write_index
from .targets import Target, load_targets, parse_targets, resolve_token

__all__ = [
    "FleetRun",
    "SUMMARY_MIME",
    "TOKEN_VARIABLE",
    "Target",
    "execute_target",
    "load_targets",
    "parse_targets",
    "resolve_token",
    "run_fleet",
    "summary",
]


@dataclass(frozen=True)
class FleetRun:
    """What a fleet run did: a result per target (in the targets file's order), and where."""

    runbook: str
    out: Path
    results: list[dict[str, Any]]
    # What the run says besides the targets' results (a history not compacted, and why).
    notes: tuple[str, ...] = ()

    def named(self, outcome: str) -> list[str]:
        """The targets whose outcome is ``outcome`` (passed, incomplete, failed, skipped)."""
        return [r["name"] for r in self.results if r["status"] == outcome]

    @property
    def failed(self) -> list[str]:
        return self.named("failed")

    @property
    def incomplete(self) -> list[str]:
        return self.named("incomplete")

    @property
    def ok(self) -> bool:
        return not self.failed and not self.incomplete

    @property
    def exit_status(self) -> int:
        """1 when any target failed, else 2 when any is incomplete, else 0."""
        return 1 if self.failed else 2 if self.incomplete else 0

    def counts(self) -> str:
        """``3 passed, 1 incomplete, 0 failed, 1 skipped``."""
        return ", ".join(f"{len(self.named(o))} {o}" for o in OUTCOMES)

    def __repr__(self) -> str:
        return f"<FleetRun {self.runbook}: {self.counts()}, in {self.out}>"


def run_fleet(
    runbook: str | Path,
    targets: Sequence[Target],
    out: str | Path,
    *,
    parallel: int = 1,
    dask: str | Any | None = None,
    show_progress: bool = True,
    options: dict[str, Any] | None = None,
    history: str | Path | None = None,
) -> FleetRun:
    """Run ``runbook`` against every target and write what each run left into ``out``.

    ``parallel`` runs at a time in local processes (1: in this process, one
    after another); ``dask`` an address of (or a ``distributed.Client`` to) an
    existing Dask cluster, whose workers then run them, resolving credentials
    from their own environment and files. ``history`` (default ``out/history``)
    is the history every target's Parquet evidence is appended to.
    """
    source = Path(runbook)
    if not source.is_file():
        raise InputError(f"no runbook at {source}")
    if parallel < 1:
        raise InputError("--parallel must be at least 1")
    if not targets:
        raise InputError("no targets to run")
    folder = Path(out)
    clashes = [t.name for t in targets if (folder / t.name).exists()]
    if clashes:
        raise InputError(f"{folder / clashes[0]} exists already: give each run its own --out")
    if dask is None:
        from ..extras import require

        require("fleet", "fleet runs", "papermill")
    text = source.read_text(encoding="utf-8")
    notebook = _notebook(text, source)
    kind = ((notebook.get("metadata") or {}).get("toolkit") or {}).get("kind")
    # A target of the other kind is skipped before its parameters are checked: the
    # platform target's `organization` means nothing to a secrets runbook.
    runs = [t for t in targets if kind in (None, t.kind)]
    _check_parameters(notebook, source.name, runs)
    options = {**(options or {}), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    jobs = [(text, source.name, t.as_dict(), dict(options)) for t in runs]
    if dask is not None:
        finished = _on_dask(dask, jobs)
    elif parallel == 1:
        finished = ((k, execute_target(*job)) for k, job in enumerate(jobs))
    else:
        finished = _on_processes(jobs, parallel)
    results: dict[str, dict[str, Any]] = {}
    keep = Path(history) if history is not None else folder / "history"
    for k, result in _progress(finished, len(jobs), show_progress):
        results[runs[k].name] = record = _file(folder, source.name, result)
        kept = _keep_history(keep, result)
        if kept:
            record["history_error"] = kept
    notes = _compact_history(keep) if keep.is_dir() else []
    for target in targets:
        if target.name not in results:
            results[target.name] = _file(folder, source.name, skipped(target, kind or ""))
    done = [results[t.name] for t in targets]
    write_index(folder, source.name, done, notes)
    return FleetRun(source.name, folder, done, tuple(notes))


def _compact_history(root: Path) -> list[str]:
    """Compact the history (a year's daily files merged once there are a few); what to say.

    A compaction that cannot run (another holds the history, a full disk, a file it
    cannot read) is skipped and said: the run's results are filed already.
    """
    from ..history import compact

    try:
        done = compact(root, min_files=8)
    except (InputError, OSError, ValueError) as exc:  # pyarrow's errors are ValueErrors
        return [f"history {root} not compacted: {str(exc).splitlines()[0][:300]}"]
    return list(done.refused)


def _notebook(text: str, source: Path) -> dict[str, Any]:
    try:
        notebook = json.loads(text)
    except ValueError:
        raise InputError(f"{source} is not a notebook (not JSON)") from None
    if not isinstance(notebook, dict):
        raise InputError(f"{source} is not a notebook")
    return notebook


def _check_parameters(notebook: dict[str, Any], runbook: str, targets: Sequence[Target]) -> None:
    """Refuse, before anything starts, a target parameter the runbook does not declare."""
    from ..runbook import declared_parameters, refuse_undeclared

    cells = [
        c
        for c in notebook.get("cells", [])
        if "parameters" in ((c.get("metadata") or {}).get("tags") or [])
    ]
    if not cells:
        return
    source = cells[0].get("source")
    declared = declared_parameters("".join(source) if isinstance(source, list) else str(source))
    for target in targets:
        given = [*target.parameters, *(["organization"] if target.organization else [])]
        refuse_undeclared(given, declared, runbook, where=f"target {target.name}: ")


def _on_processes(
    jobs: list[tuple[Any, ...]], parallel: int
) -> Iterator[tuple[int, dict[str, Any]]]:
    # spawn: a forked copy of a process with threads (Jupyter, tqdm) can deadlock.
    with ProcessPoolExecutor(max_workers=parallel, mp_context=get_context("spawn")) as pool:
        futures: dict[Future[dict[str, Any]], int] = {
            pool.submit(execute_target, *job): k for k, job in enumerate(jobs)
        }
        for future in as_completed(futures):
            yield futures[future], _outcome(future.result, jobs[futures[future]])


def _on_dask(dask: str | Any, jobs: list[tuple[Any, ...]]) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError:
        raise InputError(
            "--dask needs the distributed package: pip install 'operator-toolkit[fleet]'"
        ) from None
    client = Client(dask) if isinstance(dask, str) else dask
    try:
        futures = {
            client.submit(execute_target, *job, pure=False, key=f"fleet-{k}-{job[2]['name']}"): k
            for k, job in enumerate(jobs)
        }
        for future in dask_completed(list(futures)):
            k = futures[future]
            yield k, _outcome(future.result, jobs[k])
    finally:
        if isinstance(dask, str):
            client.close()


def _outcome(get: Callable[[], dict[str, Any]], job: tuple[Any, ...]) -> dict[str, Any]:
    """The job's result, or a failed result when the worker itself broke."""
    try:
        return get()
    except Exception as exc:  # noqa: BLE001 - a lost worker is that target's failure
        target = job[2]
        return {
            "name": target["name"],
            "kind": target["kind"],
            "address": target["address"],
            "status": "failed",
            "error": f"the worker failed: {type(exc).__name__}: {str(exc)[:200]}",
            "seconds": 0.0,
            "summary": {},
            "notebook": None,
            "evidence": {},
        }


def _progress(
    items: Iterable[tuple[int, dict[str, Any]]], total: int, enabled: bool
) -> Iterator[tuple[int, dict[str, Any]]]:
    from .._progress import progress

    yield from progress(items, desc="targets", total=total, enabled=enabled)


def _file(folder: Path, runbook: str, result: dict[str, Any]) -> dict[str, Any]:
    """Write the run's notebook and evidence under ``folder/<target>``; the result's summary."""
    home = folder / result["name"]
    home.mkdir(parents=True, exist_ok=False)
    record = {k: v for k, v in result.items() if k not in ("notebook", "evidence")}
    record["notebook_path"] = None
    record["notebook_html"] = None
    record["evidence_folder"] = None
    record["evidence_paths"] = []
    if result.get("notebook") is not None:
        path = home / runbook
        path.write_text(result["notebook"], encoding="utf-8")
        record["notebook_path"] = str(path.relative_to(folder))
        page = _rendered(path)
        if page is not None:
            record["notebook_html"] = str(page.relative_to(folder))
    if result.get("evidence"):
        record["evidence_folder"] = str((home / "evidence").relative_to(folder))
    for name, blob in sorted((result.get("evidence") or {}).items()):
        path = (home / "evidence" / name).resolve()
        if home.resolve() not in path.parents:
            continue  # a file name that climbs out of the target's folder is not written
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
        record["evidence_paths"].append(str(path.relative_to(folder.resolve())))
    return record


def _rendered(path: Path) -> Path | None:
    """The executed notebook as one HTML page (nbconvert), beside it; None without nbconvert."""
    try:
        from nbconvert import HTMLExporter
    except ImportError:
        return None
    try:
        body, _ = HTMLExporter(template_name="classic").from_filename(str(path))
    except Exception:  # noqa: BLE001 - a page that cannot be drawn leaves the notebook linked
        return None
    page = path.with_suffix(".html")
    page.write_text(body, encoding="utf-8")
    return page


def _keep_history(root: Path, result: dict[str, Any]) -> str | None:
    """Append the target's Parquet evidence to the history; what went wrong, or None.

    A history that cannot take a run's frames is that target's note, never the
    end of the fleet run: the evidence itself is filed already."""
    evidence = result.get("evidence") or {}
    if not any(name.endswith(".parquet") for name in evidence):
        return None
    from ..history import append_evidence

    try:
        append_evidence(root, evidence, target=result["name"])
    except (InputError, OSError, ValueError) as exc:  # pyarrow's errors are ValueErrors
        return f"not kept in the history {root}: {str(exc).splitlines()[0][:200]}"
    return None
