"""What the launchers share: free ports, waiting, stopping processes, running as an unprivileged user."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

INSTALL_HINT = "run `make system-deps` (Debian packages) and `make setup` (Python packages)"
# Where the Debian packages' files are looked for: "/" but for the test of the install
# hints (tests/test_makefile.py), which points it at an empty folder.
SYSTEM_ROOT_ENV = "TOOLKIT_TEST_SYSTEM_ROOT"


def system_path(path: str) -> Path:
    """``path`` (absolute, as Debian installs it) under the system root."""
    return Path(os.environ.get(SYSTEM_ROOT_ENV, "/")) / path.lstrip("/")


def chromium_missing(path: Path) -> str:
    """What the browser suite says when Debian's chromium is not at ``path``."""
    return f"{path} is missing: run `make system-deps` to install Debian's chromium"


def system_glob(pattern: str) -> list[str]:
    """The sorted matches of an absolute ``pattern`` under the system root."""
    return sorted(glob.glob(str(system_path(pattern))))


def system_which(name: str) -> str | None:
    """``name`` on PATH, unless the system root is moved (then only under it)."""
    if os.environ.get(SYSTEM_ROOT_ENV):
        return None
    return shutil.which(name)


class ServerMissing(RuntimeError):
    """A real server's binary is not installed on this machine."""


class ServerFailed(RuntimeError):
    """A real server did not start; the message carries the tail of its log."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_until(
    ready: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    process: subprocess.Popen[bytes] | None = None,
    log: Path | None = None,
) -> None:
    """Poll ``ready`` until it is true; fail with the log's tail on timeout or process exit."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise ServerFailed(
                f"{what} exited with {process.returncode}:\n{log_tail(log) if log else ''}"
            )
        try:
            if ready():
                return
        except Exception:  # noqa: BLE001 - not answering yet is any error
            pass
        time.sleep(0.1)
    raise ServerFailed(f"{what} not ready after {timeout:.0f}s:\n{log_tail(log) if log else ''}")


def stop_process(process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """SIGTERM the process (its group when it leads one), then SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
        process.wait(5)


# PostgreSQL and RabbitMQ refuse to run as root, or should not: as root, the
# launchers run them as this system user, created when missing.
SERVICE_USER = "toolkit-tests"


def unprivileged_prefix(folder: Path) -> list[str]:
    """The command prefix that drops root to :data:`SERVICE_USER` (empty when not root).

    The user gets ``folder`` (and its parents stay traversable) so it can write there;
    the caller sets ``HOME`` in the environment it passes.
    """
    if os.geteuid() != 0:
        return []
    try:
        entry = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SERVICE_USER,
            ],
            check=True,
            capture_output=True,
        )
        entry = pwd.getpwnam(SERVICE_USER)
    for path in [folder, *folder.parents]:
        if path == Path("/"):
            break
        mode = path.stat().st_mode
        path.chmod(mode | 0o011)  # traversable by others, nothing more
    for root, dirs, files in os.walk(folder):
        os.chown(root, entry.pw_uid, entry.pw_gid)
        for name in dirs + files:
            os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)
    return ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", "--"]


def free_port_pair() -> int:
    """A port P such that P and P + 1 are both free (servers that put a second listener at P + 1)."""
    for _ in range(50):
        port = free_port()
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind(("127.0.0.1", port + 1))
        except OSError:
            continue
        return port
    raise ServerFailed("no two adjacent free ports on 127.0.0.1")


class Launcher:
    """A server in a temporary folder of its own: ``start`` / ``stop``, or ``with``.

    Subclasses launch in ``_launch`` (the folder exists then) and stop their
    processes in ``_shutdown``; the folder is removed after.
    """

    folder_prefix = "server-"

    def __init__(self) -> None:
        self.folder: Path | None = None

    def _launch(self) -> None:
        raise NotImplementedError

    def _shutdown(self) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        self.folder = Path(tempfile.mkdtemp(prefix=self.folder_prefix))
        try:
            self._launch()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.folder is not None:
            self._shutdown()
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
