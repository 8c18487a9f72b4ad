"""ipywidgets is loaded when a form is built, never by importing the packages."""

from __future__ import annotations

import pytest

import importlib
import subprocess
import sys

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
