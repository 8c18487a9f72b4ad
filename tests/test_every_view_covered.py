"""Every view of both clients carries its completeness record (issue 23).

The views are derived, as the naming test derives them: each public call of every
area annotated to return a DataFrame, less the actions (verbs that return what they
did) and the few listed in ``tests/_area_views.py`` with why. Each is run against the demo sandbox with
its required parameters filled from the demo's own names; a view that returns a frame
without ``attrs["coverage"]`` fails here, so a new view cannot read as "unproven", and
a new required parameter with no filler fails too, naming it.
"""

from __future__ import annotations

import inspect
from typing import Any

import pandas as pd
import pytest

from tests._area_views import _area, _views, clients, fillers
from toolkit._coverage import coverage_of

__all__ = ["clients", "fillers"]  # the shared fixtures, used here


@pytest.mark.parametrize(("class_name", "name"), _views(), ids=lambda v: str(v))
def test_every_view_files_what_it_could_read(
    clients: dict[str, Any], fillers: dict[str, Any], class_name: str, name: str
) -> None:
    method = getattr(_area(clients, class_name), name)
    kwargs = {}
    for param, spec in inspect.signature(method).parameters.items():
        if spec.default is spec.empty and spec.kind not in (spec.VAR_POSITIONAL, spec.VAR_KEYWORD):
            assert param in fillers, f"{class_name}.{name}: add a filler for {param!r} here"
            kwargs[param] = fillers[param]
    frame = method(**kwargs)
    assert isinstance(frame, pd.DataFrame)
    (record,) = coverage_of(frame)
    assert record.view
    # The demo's owner token reads everything but the users of teams (the sandbox's
    # teams carry no users relationship), which effective_access says.
    assert record.complete or name == "effective_access", record.summary()
