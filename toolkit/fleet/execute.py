"""One runbook on one target: what a local process or a Dask worker does.

:func:`execute_target` takes only plain data (the runbook's text, the target
as :meth:`Target.as_dict`, options) and returns plain data, so the same call
runs in a local process pool or on a Dask worker and gives the same result.
Credentials never travel with it: the worker resolves the target's token from
its own environment or files and hands it to the kernel in the kernel's
environment only (as ``TOOLKIT_FLEET_TOKEN``), never as a parameter, so it is
in no notebook and no result.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ._kernel import (
    ENV_FLEET_TARGET,
    ENV_FLEET_TOKEN_SOURCE,
    ENV_RUNBOOK_SHA256,
    SUMMARY_MIME,
    summary,
)
from .targets import Target, resolve_token

__all__ = ["OUTCOMES", "SUMMARY_MIME", "TOKEN_VARIABLE", "execute_target", "skipped", "summary"]

TOKEN_VARIABLE = "TOOLKIT_FLEET_TOKEN"
# A target's outcome, in the order the index lists them.
OUTCOMES = ("failed", "incomplete", "passed", "skipped")
# The error a runbook raises when a view could not read everything (toolkit.PartialCoverage).
_INCOMPLETE = "PartialCoverage"
# A run that finished without proving it saw everything is not passed: the coverage
# verdict its summary gives (toolkit.runbook.Run.verdict) and what the index says.
_NOT_WHOLE = {
    "incomplete": "finished marked incomplete (allow_incomplete): see its coverage",
    "unproven": "finished, but a frame it checked carried no coverage record: nothing "
    "proves it saw everything",
}
# What a failure may say: the error's type and first line, cut to this length.
_ERROR_LENGTH = 300


def execute_target(
    runbook_text: str, runbook_name: str, target_data: dict[str, Any], options: dict[str, Any]
) -> dict[str, Any]:
    """Run the runbook against one target; a result dict (never raises for the target's fault).

    The result: ``name``, ``kind``, ``address``, ``status`` (``passed``,
    ``incomplete`` or ``failed``), ``error`` (the error's type and first line, or
    why the run is incomplete), ``seconds``,
    ``summary`` (the runbook's key numbers), ``notebook`` (the executed
    notebook's text, or None), ``evidence`` (file name → bytes of what the
    runbook filed).
    """
    target = Target.from_dict(target_data)
    started = time.monotonic()
    result: dict[str, Any] = {
        "name": target.name,
        "kind": target.kind,
        "address": target.address,
        "status": "failed",
        "error": None,
        "seconds": 0.0,
        "summary": {},
        "notebook": None,
        "evidence": {},
    }
    with tempfile.TemporaryDirectory(prefix="toolkit-fleet-") as work:
        folder = Path(work)
        source = folder / runbook_name
        output = folder / f"executed-{runbook_name}"
        evidence = folder / "evidence"
        source.write_text(runbook_text, encoding="utf-8")
        try:
            _run_papermill(source, output, evidence, target, options)
            result["status"] = "passed"
        except Exception as exc:  # noqa: BLE001 - every failure is this target's result
            result["error"] = _describe(exc)
            if getattr(exc, "ename", None) == _INCOMPLETE:
                result["status"] = "incomplete"
        if output.exists():
            text = output.read_text(encoding="utf-8")
            result["notebook"] = text
            result["summary"] = _summaries(text)
        not_whole = _NOT_WHOLE.get(str(result["summary"].get("coverage")))
        if result["status"] == "passed" and not_whole:
            result["status"] = "incomplete"
            result["error"] = not_whole
        if evidence.is_dir():
            result["evidence"] = {
                str(p.relative_to(evidence)): p.read_bytes()
                for p in sorted(evidence.rglob("*"))
                if p.is_file()
            }
    result["seconds"] = round(time.monotonic() - started, 3)
    return result


def skipped(target: Target, kind: str) -> dict[str, Any]:
    """The result of a target the runbook is not for (its kind is the other one)."""
    return {
        "name": target.name,
        "kind": target.kind,
        "address": target.address,
        "status": "skipped",
        "error": f"a {kind} runbook; this target is a {target.kind} server",
        "seconds": 0.0,
        "summary": {},
        "notebook": None,
        "evidence": {},
    }


def _kernel_environment(target: Target, options: dict[str, Any]) -> dict[str, str]:
    env = dict(os.environ)
    token = resolve_token(target)
    env[TOKEN_VARIABLE] = token.reveal()
    # Provenance for the evidence: which target, where its token came from, which runbook.
    env[ENV_FLEET_TARGET] = target.name
    env[ENV_FLEET_TOKEN_SOURCE] = (
        f"token_env {target.token_env}" if target.token_env else f"token_file {target.token_file}"
    )
    if options.get("sha256"):
        env[ENV_RUNBOOK_SHA256] = str(options["sha256"])
    env.pop("TOOLKIT_HISTORY", None)  # the runner appends the evidence to the history itself
    if target.kind == "secrets":
        env["VAULT_ADDR"] = env["BAO_ADDR"] = target.address
        for name in ("VAULT_TOKEN", "BAO_TOKEN"):
            env.pop(name, None)  # the runbook reads the token from TOKEN_VARIABLE only
        if target.ca_file:
            env["VAULT_CACERT"] = env["BAO_CACERT"] = os.path.expanduser(target.ca_file)
        if target.namespace:
            env["VAULT_NAMESPACE"] = env["BAO_NAMESPACE"] = target.namespace
    else:
        env["TFE_ADDRESS"] = target.address
        env.pop("TFE_TOKEN", None)
    return env


def _run_papermill(
    source: Path, output: Path, evidence: Path, target: Target, options: dict[str, Any]
) -> None:
    """Execute ``source`` into ``output`` in a kernel of its own that holds the
    target's token, the runbook filing its evidence in ``evidence``."""
    import papermill
    from jupyter_client.manager import AsyncKernelManager

    env = _kernel_environment(target, options)

    class _TargetKernel(AsyncKernelManager):  # type: ignore[misc]
        async def start_kernel(self, **kw: Any) -> None:  # type: ignore[override]
            # The token reaches the kernel in its environment, and nowhere else.
            kw["env"] = env
            if os.name == "posix":
                # The kernel's channels as Unix sockets in this target's own
                # folder. Over TCP, each kernel's five ports are picked free and
                # bound later by the kernel: kernels started at once by other
                # processes took the same port, and a target failed for it.
                self.transport = "ipc"
                self.ip = str(source.parent / "kernel")
            await super().start_kernel(**kw)

    parameters = {
        **target.parameters,
        "target": "live",
        "token_env": TOKEN_VARIABLE,
        "evidence_dir": str(evidence),
    }
    if target.organization:
        parameters["organization"] = target.organization
    papermill.execute_notebook(
        str(source),
        str(output),
        parameters=parameters,
        kernel_name=options.get("kernel_name", "python3"),
        kernel_manager_class=_TargetKernel,
        execution_timeout=target.timeout,
        start_timeout=options.get("start_timeout", 60),
        progress_bar=False,
        cwd=str(source.parent),
    )


def _describe(exc: BaseException) -> str:
    ename = getattr(exc, "ename", None)  # papermill's error names the kernel's exception
    evalue = getattr(exc, "evalue", None)
    if ename:
        text = f"{ename}: {evalue}"
    elif "Timeout" in type(exc).__name__ or "timed out" in str(exc).lower():
        text = f"timed out: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first[:_ERROR_LENGTH]


def _summaries(notebook_text: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    try:
        notebook = json.loads(notebook_text)
    except ValueError:
        return found
    for cell in notebook.get("cells", []):
        for out in cell.get("outputs", []):
            data = out.get("data") or {}
            if SUMMARY_MIME in data and isinstance(data[SUMMARY_MIME], dict):
                found.update(data[SUMMARY_MIME])
    return found
