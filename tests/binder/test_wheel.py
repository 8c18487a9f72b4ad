"""The wheel a pip user installs: the runbooks inside it, the extras in its metadata,
and ``python -m toolkit runbooks DIR`` working from the installed files alone.

Building needs pip to fetch the build backend (setuptools) into an isolated
environment, so this lives with the slow suites.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("notebooks", "toolkit", "widgets", "pyproject.toml", "README.md")


def _wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            # The link toolkit/notebooks -> ../notebooks is kept, as git keeps it.
            shutil.copytree(path, source / name, symlinks=True, ignore=_caches)
        else:
            shutil.copy2(path, source / name)
    out = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        check=True,
        timeout=300,
    )
    (wheel,) = out.glob("operator_toolkit-*.whl")
    return wheel


def _caches(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n in ("__pycache__", ".ipynb_checkpoints")]


def test_the_wheel_carries_the_runbooks_and_copies_them_out_once_installed(
    tmp_path: Path,
) -> None:
    wheel = _wheel(tmp_path)
    runbooks = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        shipped = sorted(
            n.removeprefix("toolkit/notebooks/")
            for n in names
            if n.startswith("toolkit/notebooks/")
        )
        assert shipped == runbooks
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
        site = tmp_path / "site"
        archive.extractall(site)

    extras = set(metadata.get_all("Provides-Extra") or [])
    assert {"notebook", "sandbox", "all"} <= extras
    core = [r for r in metadata.get_all("Requires-Dist") or [] if "extra ==" not in r]
    core_names = " ".join(core)
    for needed in ("pandas", "orjson", "cryptography", "pysequoia", "python-hcl2", "aiohttp"):
        assert needed in core_names
    for optional in ("ipywidgets", "matplotlib", "papermill", "starlette", "uvicorn", "zttp"):
        assert optional not in core_names

    # The installed files alone: not the checkout (another folder, no PYTHONPATH to it).
    target = tmp_path / "mine"
    done = subprocess.run(
        [sys.executable, "-m", "toolkit", "runbooks", str(target)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in target.iterdir()) == runbooks
    for name in runbooks:
        assert (target / name).read_bytes() == (ROOT / "notebooks" / name).read_bytes()
