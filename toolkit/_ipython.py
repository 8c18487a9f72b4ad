"""A toolkit error in Jupyter: its message and hint on one line, not a page of frames.

Registered when ``toolkit`` is imported inside an IPython kernel (or with
``%load_ext toolkit``): IPython's ``set_custom_exc`` renders a
:class:`~toolkit.ToolkitError` as ``PermissionDenied: <message> (hint: ...)``
and notes that ``%tb`` shows the full traceback. Other exceptions, scripts and
papermill are untouched (papermill runs kernels too, but reads the error's last
line, which stays the same).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["load_ipython_extension", "register", "unregister"]


def one_line(exc: BaseException) -> str:
    """``Kind: message (hint: ...)``, on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"


def _show(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> Any:
    # Shown as IPython shows any error (an error output: papermill and nbval see the
    # cell fail, with the same last line), but without the frames.
    shell.showtraceback((etype, value, None))
    # Kept for %tb, which then shows the frames.
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb
    if hasattr(sys, "last_exc"):
        sys.last_exc = value
    print("(the full traceback: %tb)", file=sys.stderr)
    return None


def register(shell: Any) -> None:
    """Render toolkit errors in one line in ``shell``."""
    from ._errors import ToolkitError

    shell.set_custom_exc((ToolkitError,), _show)


def unregister(shell: Any) -> None:
    shell.set_custom_exc((), None)


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext toolkit``."""
    register(shell)


def register_in_kernel() -> None:
    """Register in the running IPython kernel, if ``toolkit`` is imported inside one
    (a terminal IPython or a plain script are left alone)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001 - no shell is the common case
        return
    if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
        return
    register(shell)
