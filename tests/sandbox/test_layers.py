"""The sandbox's shape: its state knows nothing of the wire, and no class grows past 500 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SANDBOX = Path(__file__).resolve().parents[2] / "toolkit" / "sandbox"
# The HTTP side: the ``http/`` package and each engine's ``http.py`` and ``bodies.py``;
# an engine's descriptor (``engines/<name>/__init__.py``) names its handlers, so it is
# the seam, not state.
_WIRE_FILES = ("http.py", "bodies.py")


def _is_descriptor(path: Path) -> bool:
    return path.name == "__init__.py" and path.parent.parent.name == "engines"


SECRETS_STATE = sorted(
    p
    for p in (SANDBOX / "secrets").rglob("*.py")
    if "http" not in p.relative_to(SANDBOX).parts
    and p.name not in _WIRE_FILES
    and not _is_descriptor(p)
)
MAX_CLASS_LINES = 500


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports, relative imports written with their leading dots."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found += [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return found


@pytest.mark.parametrize("path", SECRETS_STATE, ids=lambda p: str(p.relative_to(SANDBOX)))
def test_the_secrets_state_imports_nothing_of_http(path: Path) -> None:
    wire = ("starlette", "uvicorn", "importlib")
    bad = [
        name
        for name in _imports(path)
        if name.startswith(wire) or ".http" in name or name.lstrip(".").startswith("http")
    ]
    assert bad == [], f"{path.name} imports {bad}"


def test_no_sandbox_class_is_longer_than_500_lines() -> None:
    long = []
    for path in sorted(SANDBOX.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    long.append(f"{path.relative_to(SANDBOX)}:{node.name} ({lines} lines)")
    assert long == []


def test_the_engine_states_take_typed_arguments_not_request_bodies() -> None:
    import inspect

    from toolkit.sandbox.secrets.engines.ad.library import Library
    from toolkit.sandbox.secrets.engines.ad.state import ADEngine
    from toolkit.sandbox.secrets.engines.broker.state import BrokerEngine
    from toolkit.sandbox.secrets.engines.database.state import DatabaseEngine

    takes_a_body = [
        f"{cls.__name__}.{name}"
        for cls in (ADEngine, Library, DatabaseEngine, BrokerEngine)
        for name, method in inspect.getmembers(cls, inspect.isfunction)
        if "body" in inspect.signature(method).parameters
    ]
    assert takes_a_body == []
