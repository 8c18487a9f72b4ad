"""The runbook checks' rules, each on its own: what a parameters cell may hold, which
value fits which default, and what a run says about what it saw (toolkit/runbook.py)."""

from __future__ import annotations

from typing import Any

import pytest

from toolkit import InputError
from toolkit.runbook import declared_parameters, refuse_undeclared


def test_a_parameters_cell_declares_names_with_plain_defaults() -> None:
    assert declared_parameters("a = 1\nb = 'x'\nc = None\nd = [1, 2]\n") == {
        "a": 1,
        "b": "x",
        "c": None,
        "d": [1, 2],
    }
    assert declared_parameters("") == {}


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("a = (", "the parameters cell is not Python"),
        ("import os", "only `name = value` lines (line 1)"),
        ("a = 1\nb = c = 2", "only `name = value` lines (line 2)"),
        ("a.b = 1", "only `name = value` lines"),
        ("a, b = 1, 2", "only `name = value` lines"),
        ("a = len('x')", "the parameter 'a' must have a plain value as its default"),
    ],
)
def test_a_parameters_cell_with_anything_but_plain_assignments_is_refused(
    source: str, says: str
) -> None:
    with pytest.raises(InputError, match=says.replace("(", r"\(").replace(")", r"\)")):
        declared_parameters(source)


def test_an_undeclared_parameter_is_refused_naming_what_the_runbook_takes() -> None:
    declared: dict[str, Any] = {"target": "sandbox", "role": ""}
    refuse_undeclared(["role"], declared, "rb")
    with pytest.raises(InputError) as caught:
        refuse_undeclared(["role", "rol"], declared, "rb", where="target a: ")
    assert str(caught.value) == (
        "target a: unknown parameter 'rol' (did you mean 'role'?): rb takes role, target"
    )
    with pytest.raises(InputError, match=r"^unknown parameter 'zzz': rb takes role, target$"):
        refuse_undeclared(["zzz"], declared, "rb")
