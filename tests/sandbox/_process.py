"""Starting ``python -m toolkit sandbox`` as a child process, for the tests that need one."""

from __future__ import annotations

import subprocess
import sys


def start(*args: str) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolkit", "sandbox", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("Press Ctrl-C"):
            break
    else:
        proc.wait(5)
        raise AssertionError("the sandbox ended before it was ready:\n" + "\n".join(lines))
    return proc, lines


def address_of(lines: list[str]) -> str:
    """The address the banner's first line names."""
    return lines[0].split()[-1]
