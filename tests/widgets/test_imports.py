"""ipywidgets is loaded when a form is built, never by importing the packages."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import widgets

# Every module of a form that ``widgets.__all__`` exports, by the package's own table.
FORM_MODULES = sorted({f"widgets.{widgets._MODULES[name]}" for name in widgets.__all__})


def test_every_form_in_all_has_a_module() -> None:
    assert set(widgets.__all__) == set(widgets._MODULES)
    assert len(FORM_MODULES) == len(widgets.__all__)


@pytest.mark.slow
def test_importing_the_toolkit_and_every_form_module_does_not_load_ipywidgets() -> None:
    check = f"import sys, toolkit, {', '.join(FORM_MODULES)}; print('ipywidgets' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_every_form_is_exported_by_the_widgets_package_as_the_class_of_its_module() -> None:
    for name in widgets.__all__:
        module = importlib.import_module(f"widgets.{widgets._MODULES[name]}")
        form = getattr(widgets, name)
        assert form is getattr(module, name), name
        assert isinstance(form, type) and form.__module__ == module.__name__


def test_every_form_module_is_in_the_table_and_every_form_has_the_one_suffix() -> None:
    root = Path(widgets.__file__).parent
    modules = {p.stem for p in root.glob("*.py") if not p.stem.startswith("_")}
    assert modules == set(widgets._FORM_MODULES)
    assert all(name.endswith("Form") for name in widgets.__all__)
    for name in widgets.__all__:
        module = importlib.import_module(f"widgets.{widgets._MODULES[name]}")
        forms = [
            v
            for v in vars(module).values()
            if isinstance(v, type)
            and v.__module__ == module.__name__
            and v.__name__.endswith(("Form", "Editor", "Widget"))
        ]
        assert [f.__name__ for f in forms] == [name]


def test_the_type_checkers_imports_name_every_form() -> None:
    tree = ast.parse(Path(widgets.__file__).read_text())
    guarded = next(
        n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
    )
    imported = {
        alias.name
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == set(widgets.__all__)
