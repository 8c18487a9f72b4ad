"""What the demo data set's loaders say the sandbox holds in leases, read from their own tables.

The lease manager fills the bulk (``demo_leases``); the engines then issue a few live
leases of their own (database and broker creds, directory check-outs) and every demo
token has one. Tests compare the server with these counts rather than with totals
written out by hand, so a new demo lease changes one table, not every test.
"""

from __future__ import annotations

from collections import Counter

from toolkit.sandbox.secrets import demo_leases
from toolkit.sandbox.secrets.demo import DEMO_TOKENS
from toolkit.sandbox.secrets.engines.ad import demo as demo_ad
from toolkit.sandbox.secrets.engines.broker import demo as demo_broker
from toolkit.sandbox.secrets.engines.database import demo as demo_database
from toolkit.sandbox.secrets.leases import Lease

__all__ = [
    "demo_lease_folders",
    "demo_roles",
    "engine_lease_ids",
    "folder_of",
    "irrevocable_folders",
]


def folder_of(lease: Lease) -> str:
    """The path a lease was issued under: its id without the random suffix."""
    return lease.lease_id.rpartition("/")[0]


def irrevocable_folders() -> Counter[str]:
    """How many irrevocable leases each folder holds in the demo set."""
    return Counter(prefix for prefix, _ in demo_leases._IRREVOCABLE)


def demo_lease_folders() -> Counter[str]:
    """How many leases each folder holds right after the demo set is loaded."""
    folders: Counter[str] = Counter()
    for prefix, share, *_ in demo_leases._ROLES:
        folders[prefix] += share
    folders.update(irrevocable_folders())
    folders.update(f"database/creds/{role}" for role, *_ in demo_database._LIVE_CREDS)
    folders.update(f"broker/creds/{role}" for role, *_ in demo_broker._LIVE_CREDS)
    folders.update(f"ad/library/{name}/check-out" for name, *_ in demo_ad._LENT)
    folders["auth/token/create"] += len(DEMO_TOKENS)
    return folders


def engine_lease_ids() -> set[str]:
    """The ids of the live leases the engines' demo loaders issue (their suffixes are fixed)."""
    return {
        *(f"database/creds/{role}/{suffix}" for role, suffix, _ in demo_database._LIVE_CREDS),
        *(f"broker/creds/{role}/{suffix}" for role, suffix, _ in demo_broker._LIVE_CREDS),
        *(f"ad/library/{name}/check-out/{lent[-1]}" for name, *lent in demo_ad._LENT),
    }


def demo_roles(mount: str) -> set[str]:
    """The roles (or library sets) the demo leases of ``mount`` were issued for."""
    roles = set()
    for folder in demo_lease_folders():
        if folder.startswith(mount):
            parts = folder.removeprefix(mount).split("/")
            roles.add(parts[1])
    return roles
