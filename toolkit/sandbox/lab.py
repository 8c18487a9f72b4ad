"""Run a command beside a sandbox: ``python -m toolkit.sandbox.lab --port PORT -- CMD...``.

Starts ``python -m toolkit sandbox --port PORT`` as a child process (or reuses a
sandbox already answering on that port), waits until ``GET /api/v2/ping``
answers, runs ``CMD`` with ``TOOLKIT_SANDBOX_ADDRESS`` and
``TOOLKIT_SANDBOX_TOKEN`` set, and stops the sandbox it started when ``CMD``
exits. ``make lab`` uses it to open the runbooks in JupyterLab.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence

import httpx

from . import DEFAULT_TOKEN, ENV_ADDRESS, ENV_TOKEN

__all__ = ["main", "sandbox_answers", "start_sandbox", "stop_sandbox", "wait_for_sandbox"]


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


def start_sandbox(port: int, host: str, token: str) -> subprocess.Popen[bytes]:
    """``python -m toolkit sandbox`` as a child process, its output passed through."""
    command = [sys.executable, "-m", "toolkit", "sandbox", "--host", host, "--port", str(port)]
    command += ["--token", token]
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
    else:
        process = start_sandbox(args.port, args.host, args.token)
    try:
        try:
            wait_for_sandbox(address, args.token, process, args.wait)
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        env = {**os.environ, ENV_ADDRESS: address, ENV_TOKEN: args.token}
        try:
            return subprocess.call(command, env=env)
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
