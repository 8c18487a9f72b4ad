"""Every shipped runbook declares its kind, and the kind is the service it connects to.

The fleet runs a runbook only on targets of its kind (``metadata.toolkit.kind``); a
runbook without one runs on every target, so a secrets runbook would be run against
a platform target and fail there on a missing address instead of being skipped."""

from __future__ import annotations

import json

import pytest

from tests._runbooks import NOTEBOOKS, services_of
from toolkit.fleet.targets import KINDS

# The runbooks and the rehearsals, as paths under notebooks/.
SHIPPED = sorted(
    str(p.relative_to(NOTEBOOKS))
    for p in [*NOTEBOOKS.glob("*.ipynb"), *NOTEBOOKS.glob("rehearsals/*.ipynb")]
)


def test_the_runbooks_and_the_rehearsals_are_found() -> None:
    assert len([n for n in SHIPPED if not n.startswith("rehearsals/")]) >= 14
    assert any(n.startswith("rehearsals/") for n in SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_a_runbook_declares_the_kind_of_the_service_it_connects_to(name: str) -> None:
    metadata = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))["metadata"]
    kind = (metadata.get("toolkit") or {}).get("kind")
    assert kind in KINDS, f"{name}: metadata.toolkit.kind is {kind!r}, not one of {KINDS}"
    assert services_of(name) == {kind}, f"{name} declares {kind!r}, connects to {services_of(name)}"
