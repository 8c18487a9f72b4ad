"""Run a command beside a sandbox: ``python -m toolkit.sandbox.lab --port PORT -- CMD...``.

Starts ``python -m toolkit sandbox --port PORT`` as a child process (or reuses a
sandbox already answering on that port), waits until ``GET /api/v2/ping``
answers, runs ``CMD`` with ``TOOLKIT_SANDBOX_ADDRESS`` and
``TOOLKIT_SANDBOX_TOKEN`` set, and stops the sandbox it started when ``CMD``
exits. ``make lab`` uses it to open the runbooks in JupyterLab, ``make ceremony``
to serve the rekey ceremony with Voila.

Run as root (as in many containers), a Jupyter server refuses to start unless
given ``--allow-root``: the launcher adds it to such a command and says so.
Ctrl-C or SIGTERM stops the command (a Jupyter server gets SIGTERM, so it stops
without asking for a confirmation), then the sandbox.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

import httpx

from . import DEFAULT_TOKEN, ENV_ADDRESS, ENV_TOKEN

__all__ = [
    "main",
    "needs_allow_root",
    "run_command",
    "sandbox_answers",
    "start_sandbox",
    "stop_sandbox",
    "wait_for_sandbox",
]

# Jupyter's server applications, which refuse to run as root without --allow-root
# (Voila has no such check, and would refuse the unknown flag's value silently).
_JUPYTER_SERVER_SUBCOMMANDS = frozenset({"lab", "notebook", "server", "nbclassic"})
_JUPYTER_SERVER_SCRIPTS = frozenset({f"jupyter-{name}" for name in _JUPYTER_SERVER_SUBCOMMANDS})
_JUPYTER_SERVER_MODULES = frozenset({"jupyterlab", "notebook", "jupyter_server", "nbclassic"})
# Seconds a stopped command has to exit before it is killed.
_GRACE = 15.0


def needs_allow_root(command: Sequence[str], *, root: bool) -> bool:
    """True when ``command`` starts a Jupyter server as root without ``--allow-root``.

    Recognised: ``jupyter lab|notebook|server``, ``jupyter-lab`` and the like, and
    ``python -m jupyterlab`` (or ``-m jupyter lab``).
    """
    args = [*command, "", "", ""]
    if not root or not command or "--allow-root" in command:
        return False
    name = Path(args[0]).name
    if name in _JUPYTER_SERVER_SCRIPTS:
        return True
    if name == "jupyter":
        return args[1] in _JUPYTER_SERVER_SUBCOMMANDS
    if name.startswith("python") and args[1] == "-m":
        module, subcommand = args[2], args[3]
        return module in _JUPYTER_SERVER_MODULES or (
            module == "jupyter" and subcommand in _JUPYTER_SERVER_SUBCOMMANDS
        )
    return False


def _running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def run_command(command: Sequence[str], env: dict[str, str]) -> int:
    """Run ``command`` to its end and return its exit status.

    Ctrl-C (KeyboardInterrupt here) and SIGTERM stop it with SIGTERM, killing it
    after a grace period, so that the caller can stop the sandbox afterwards.
    """
    child = subprocess.Popen(list(command), env=env)

    def stop_child(signum: int, frame: FrameType | None) -> None:
        if child.poll() is None:
            child.terminate()

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, stop_child)
    try:
        try:
            return child.wait()
        except KeyboardInterrupt:
            # JupyterLab answers a lone Ctrl-C with a question; SIGTERM stops it at once.
            stop_child(signal.SIGTERM, None)
            try:
                child.wait(_GRACE)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def sandbox_answers(address: str, token: str, timeout: float = 1.0) -> bool:
    """True when a platform API answers ``GET {address}/api/v2/ping`` with a success."""
    try:
        response = httpx.get(
            f"{address}/api/v2/ping",
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )
    except httpx.HTTPError:
        return False
    return response.is_success


def port_taken(host: str, port: int) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


PORT_HINT = "set SANDBOX_PORT to a free port (make lab SANDBOX_PORT=8201)"


def start_sandbox(
    port: int, host: str, token: str, audit_file: str | None = None
) -> subprocess.Popen[bytes]:
    """``python -m toolkit sandbox`` as a child process, its output passed through; its
    audit device writes to ``audit_file`` when given."""
    command = [sys.executable, "-m", "toolkit", "sandbox", "--host", host, "--port", str(port)]
    command += ["--token", token]
    if audit_file:
        command += ["--audit-file", audit_file]
    return subprocess.Popen(command)


def wait_for_sandbox(
    address: str, token: str, process: subprocess.Popen[bytes] | None, timeout: float
) -> None:
    """Return once the sandbox answers; raise ``RuntimeError`` if it exits or never does."""
    deadline = time.monotonic() + timeout
    while not sandbox_answers(address, token):
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                f"the sandbox exited with status {process.returncode} before it answered"
            )
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the sandbox did not answer {address}/api/v2/ping within {timeout:g}s"
            )
        time.sleep(0.1)


def stop_sandbox(process: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """Ask the sandbox to stop (SIGTERM), then kill it if it lingers."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m toolkit.sandbox.lab",
        description="Run CMD with a sandbox serving on PORT, started for it unless one already is.",
    )
    p.add_argument("--port", type=int, default=8200, help="sandbox port (default 8200)")
    p.add_argument("--host", default="127.0.0.1", help="sandbox address (default 127.0.0.1)")
    p.add_argument("--token", default=DEFAULT_TOKEN, help="the sandbox's owner token")
    p.add_argument(
        "--wait", type=float, default=30.0, help="seconds to wait for the sandbox (default 30)"
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        print("error: give the command to run after --", file=sys.stderr)
        return 2
    host = f"[{args.host}]" if ":" in args.host else args.host
    address = f"http://{host}:{args.port}"
    process = None
    if sandbox_answers(address, args.token):
        print(f"Reusing the sandbox already serving on {address}.", flush=True)
    elif port_taken(args.host, args.port):
        print(
            f"error: port {args.port} is taken by a program that is not a sandbox: {PORT_HINT}",
            file=sys.stderr,
        )
        return 1
    else:
        # The audit device's file, in a folder of its own readable by this user only
        # (as binder/start's): the least-privilege runbook reads the sandbox's own log.
        audit = Path(tempfile.mkdtemp(prefix="toolkit-sandbox-audit-")) / "audit.log"
        process = start_sandbox(args.port, args.host, args.token, str(audit))
    try:
        try:
            wait_for_sandbox(address, args.token, process, args.wait)
        except RuntimeError as exc:
            print(f"error: {exc}; if port {args.port} is taken, {PORT_HINT}", file=sys.stderr)
            return 1
        env = {**os.environ, ENV_ADDRESS: address, ENV_TOKEN: args.token}
        if needs_allow_root(command, root=_running_as_root()):
            command.append("--allow-root")
            print("Running as root: passing --allow-root to the Jupyter server.", flush=True)
        try:
            return run_command(command, env)
        except KeyboardInterrupt:
            return 130
        except FileNotFoundError:
            print(f"error: command not found: {command[0]}", file=sys.stderr)
            return 127
    finally:
        if process is not None:
            stop_sandbox(process)


if __name__ == "__main__":
    raise SystemExit(main())
