"""What the token views share: the inventory's columns, and one token's row of them."""

from __future__ import annotations

from typing import Any

from ..._frames import Schema
from ..._time import from_epoch
from .._base import listed_keys

TOKEN_INVENTORY = Schema.of(
    """accessor display_name policies:object ttl:int creation_ttl:int issue_time:datetime
    expire_time:datetime orphan:bool path type""",
    index="accessor",
)


def inventory_row(accessor: str, data: dict[str, Any]) -> dict[str, Any]:
    """One token's inventory row (:data:`TOKEN_INVENTORY`) from its lookup by ``accessor``."""
    issue = data.get("issue_time")
    if not issue and data.get("creation_time"):
        when = from_epoch(data["creation_time"])
        issue = when.isoformat() if when else None
    return {
        "accessor": data.get("accessor") or accessor,
        "display_name": data.get("display_name"),
        "policies": sorted(listed_keys(data.get("policies"), "policies")),
        "ttl": data.get("ttl"),
        "creation_ttl": data.get("creation_ttl"),
        "issue_time": issue or None,
        "expire_time": data.get("expire_time") or None,
        "orphan": data.get("orphan"),
        "path": data.get("path"),
        "type": data.get("type"),
    }
