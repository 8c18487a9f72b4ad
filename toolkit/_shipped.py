"""The runbooks that ship with the package, and copying them out for a pip-installed user.

The wheel carries them as package data (``toolkit/notebooks/*.ipynb``); in a
checkout or an editable install ``toolkit/notebooks`` is a link to ``notebooks/``.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

__all__ = ["copy_runbooks", "runbooks"]


def runbooks() -> list[Traversable]:
    """The shipped runbooks, in their numbered order."""
    folder = files("toolkit") / "notebooks"
    if not folder.is_dir():
        return []
    return sorted((f for f in folder.iterdir() if f.name.endswith(".ipynb")), key=lambda f: f.name)


def copy_runbooks(target: Path, *, force: bool = False) -> list[Path]:
    """Copy every runbook into ``target`` (created if missing) and return the new files.

    Refuses, copying nothing, when a runbook of the same name is already there,
    unless ``force``: an operator's edited runbook is not overwritten by surprise.
    """
    found = runbooks()
    if not found:
        raise FileNotFoundError("this installation of the toolkit carries no runbooks")
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{target} exists and is not a folder")
    there = [target / f.name for f in found if (target / f.name).exists()]
    if there and not force:
        names = ", ".join(p.name for p in there)
        raise FileExistsError(
            f"{target} already has {names}; nothing was copied (--force overwrites them)"
        )
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for runbook in found:
        path = target / runbook.name
        path.write_bytes(runbook.read_bytes())
        written.append(path)
    return written
