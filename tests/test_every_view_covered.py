"""Every public view carries its coverage record (issues 23 and 33).

The views are derived from the return annotations: every public function of a public
module of the package, and every public method of a class defined there (the clients'
areas, :class:`~toolkit.auditlog.AuditLog`, the scans, the estate, the SQL tables ...),
annotated to return a DataFrame. A frame that reads nothing (a plan, an action's
outcome, a report on records, a frame built from records handed to it) says so in its
annotation (:class:`toolkit._coverage.ReadsNothing`, through ``PlanFrame``,
``OutcomeFrame``, ``CoverageReport``, ``BuiltFrame``): no list kept here names one.

Each view is run against the demo sandbox with its required parameters filled from the
demo's own names and frames; one returning a frame without ``attrs["coverage"]`` fails,
and a new required parameter with no filler fails too, naming it. Every frame handed to
a view carries a planted gap: a view derived from frames must keep the union of their
records, so the planted gap must be in what it returns.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
import typing
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import toolkit
from tests.test_naming_rule import _TYPE_ONLY
from toolkit import PlatformClient
from toolkit._area import Area
from toolkit._coverage import Coverage, Gap, ReadsNothing, coverage_of
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient

AUDIT_LOG = Path(__file__).parent / "data" / "openbao-2.7.2-audit.log"
PLANTED = Gap("planted/by/the/house/test/", None, "a gap the view was handed")


# -- discovery, from the annotations ---------------------------------------------------------
def _public_modules() -> Iterator[Any]:
    """The package's public modules (no part of the name private), the sandbox left out:
    it serves the APIs, it shows no frames."""
    for info in pkgutil.walk_packages(toolkit.__path__, "toolkit."):
        parts = info.name.split(".")
        if parts[1] == "sandbox" or any(p.startswith("_") for p in parts):
            continue
        yield importlib.import_module(info.name)


def _return_of(func: Callable[..., Any]) -> Any:
    """What ``func`` is annotated to return, resolved with its extras (``Annotated``) in
    its module (the return alone: a parameter may name a type imported for checking only)."""
    hint = func.__annotations__.get("return")
    if not isinstance(hint, str):
        return hint
    return eval(hint, vars(sys.modules[func.__module__]), dict(_TYPE_ONLY))  # noqa: S307


def _marker(hint: Any) -> ReadsNothing | None:
    if typing.get_origin(hint) is typing.Annotated:
        return next((m for m in hint.__metadata__ if isinstance(m, ReadsNothing)), None)
    return None


def _frame_calls() -> dict[str, tuple[Callable[..., Any], Any]]:
    """Every public call annotated to return a DataFrame: ``module.name`` or
    ``module.Class.name`` -> (the function, its resolved return hint)."""
    found: dict[str, tuple[Callable[..., Any], Any]] = {}
    for module in _public_modules():
        for name, value in vars(module).items():
            if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
                continue
            members = [(name, value)] if inspect.isfunction(value) else []
            if inspect.isclass(value):
                members = [
                    (f"{name}.{m}", inspect.unwrap(getattr(value, m)))
                    for m, raw in vars(value).items()
                    if not m.startswith("_")
                    and inspect.isfunction(raw.__func__ if isinstance(raw, staticmethod) else raw)
                ]
            for qualified, func in members:
                hint = _return_of(func)
                base = typing.get_args(hint)[0] if _marker(hint) else hint
                if base is pd.DataFrame:
                    found[f"{module.__name__}.{qualified}"] = (func, hint)
    return found


CALLS = _frame_calls()
VIEWS = sorted(name for name, (_, hint) in CALLS.items() if _marker(hint) is None)
READ_NOTHING = sorted(name for name, (_, hint) in CALLS.items() if _marker(hint) is not None)


def test_the_views_are_found_in_every_kind_of_home() -> None:
    # Area methods, module-level views, and classes that are not areas are all walked.
    for expected in (
        "toolkit.secrets.leases.area.Leases.leases_by_mount",
        "toolkit.platform.agent_pools.AgentPools.all_agents",
        "toolkit.secrets.tokens.sprawl.widest_access",
        "toolkit.secrets.leases.radar.ttl_buckets",
        "toolkit.auditlog.log.AuditLog.principals_frame",
        "toolkit.auditlog.unused.unused_frame",
    ):
        assert expected in VIEWS, expected
    # A plan and a removal read nothing, and say so in their annotation.
    for expected in (
        "toolkit.plan.plan",
        "toolkit.platform.agent_pools.AgentPools.remove_agents",
        "toolkit.platform.agent_pools.AgentPools.remove_planned",
    ):
        assert expected in READ_NOTHING, expected


def test_a_frame_that_reads_nothing_says_why_in_its_annotation() -> None:
    for name in READ_NOTHING:
        marker = _marker(CALLS[name][1])
        assert marker is not None and marker.why, name
    # An annotation without the marker is a view, and is held to a record.

    def unmarked() -> pd.DataFrame:
        return pd.DataFrame()

    assert _marker(_return_of(unmarked)) is None


# -- running each view against the demo ------------------------------------------------------
def _planted(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose record also holds the planted gap."""
    copy = frame.copy()
    records = coverage_of(frame) or [Coverage("house-test")]
    Coverage.merged(records[0].view, [*records, Coverage("planted", gaps=[PLANTED])]).attach(copy)
    return copy


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The demo's clients, and a value for each parameter a view takes."""
    from toolkit import auditlog
    from toolkit.drift import Snapshots
    from toolkit.report import header_of
    from toolkit.sql_tables import SQLTables

    folder = tmp_path_factory.mktemp("views")
    with (
        Sandbox() as sandbox,
        SecretsClient(sandbox.address, sandbox.token) as secrets,
        PlatformClient(sandbox.address, sandbox.token) as platform,
    ):
        now = secrets.http.server_now()
        leases = secrets.leases.leases_by_mount(mounts=["database/"])
        counts = secrets.leases.lease_counts()
        pools = platform.agent_pools.pools_frame("acme")
        agents = platform.agent_pools.all_agents("acme")
        grants = platform.team_access.grants_frame("acme")
        estate = secrets.pki.certificate_estate()
        versions = secrets.keymgmt.key_versions_frame()
        frames: dict[str, Any] = {
            "frame": leases,
            "leases": leases,
            "counts": counts,
            "previous": counts,
            "states": secrets.leases.expiry(leases),
            "pools": pools,
            "agents": agents,
            "grants": grants,
            "effective": platform.team_access.effective_access("acme"),
            "connections": secrets.database.connections_frame(),
            "versions": versions,
            "audit": secrets.keymgmt.rotation_audit(),
            "inventory": secrets.plugins.inventory(),
            "issuers": secrets.pki.issuers_frame(),
            "roles": secrets.pki.roles_frame(),
            "certificates": secrets.pki.certificates_frame(),
            "certs": estate.frame(),
            "rules": secrets.policies.rules_frame(),
            "old": counts,
            "new": counts,
        }
        planted = {k: _planted(v) for k, v in frames.items()}
        fillers: dict[str, Any] = {
            **planted,
            "organization": "acme",
            "pool_id": pools.index[0],
            "workspace_id": platform.organizations.workspaces_frame("acme").index[0],
            "policy_set_id": platform.organizations.policy_sets_frame("acme").index[0],
            "capability": "read",
            "path": "secret/data/app",
            "ref": ["default"],
            "principal": ["default"],
            "query": "select accessor from tokens",
            "client": secrets,
            "http": secrets.http,
            "pki": secrets.pki,
            "now": now,
            "older_than": timedelta(days=1),
            "period": timedelta(days=30),
            "mount": "pki",
            "scan": planted["frame"],
            "name": "house-test",
            "header": header_of(secrets),
            "teams": None,
            "workspaces": None,
            "min_level": None,
            "every": [None],
            "pairs": Counter(),
            "snapshots": Snapshots(folder / "snapshots"),
            "rate": 100.0,
        }
        instances_log = auditlog.open(AUDIT_LOG)
        # The join with the live tokens reads a log whose accessors are the demo's own.
        raw = folder / "audit.log"
        accessor = str(secrets.tokens.inventory().index[0])
        entry = {"time": "2026-01-01T00:00:00Z", "type": "request", "auth": {"accessor": accessor},
                 "request": {"id": "1", "operation": "read", "path": "secret/a"}}  # fmt: skip
        raw.write_text(json.dumps(entry) + "\n")
        fillers["log"] = auditlog.open(raw)
        instances: dict[str, Any] = {
            "AuditLog": instances_log,
            "SQLTables": SQLTables(secrets),
            "CertificateEstate": estate,
            "LeaseScan": secrets.leases.scan(mounts=["database/"]),
            "TokenScan": secrets.tokens.scan(),
            "AccessModel": secrets.access.load(),
            "Snapshots": Snapshots(folder / "kept"),
        }
        # The token views take the token inventory's frame as their scan.
        fillers["tokens"] = _planted(secrets.tokens.inventory())
        yield {
            "clients": {"secrets": secrets, "platform": platform},
            "fillers": fillers,
            "instances": instances,
            # Where a name means another frame (or value) in one module; given even where
            # the parameter has a default.
            "module_fillers": {
                "toolkit.secrets.tokens.sprawl": {"scan": fillers["tokens"], "now": now},
                "toolkit.secrets.tokens.area": {"inventory": fillers["tokens"]},
                "toolkit.secrets.database": {"mount": "database"},
                "toolkit.secrets.keymgmt": {"mount": "keymgmt"},
                "toolkit.secrets.namespaces": {
                    "frame": _planted(secrets.namespaces.policies_by_namespace()),
                    "call": lambda client: client.policies.policies_frame(),
                },
                "toolkit.platform.organizations": {
                    "call": lambda name: platform.agent_pools.pools_frame(name)
                },
                "toolkit.secrets.acl": {"rules": planted["rules"]},
                "toolkit.drift": {"frame": planted["counts"]},
                "toolkit.findings": {"frames": [_planted(secrets.policies.findings())]},
                "toolkit.secrets.leases.area": {"ids": list(leases.index[:5])},
                "toolkit.secrets.leases.revocation": {"ids": list(leases.index[:5])},
            },
        }


def _owner(demo: dict[str, Any], name: str) -> tuple[str, Any | None]:
    """The module of ``name`` and, for a method, an instance of its class."""
    module, _, rest = name.rpartition(".")
    while module not in {m.__name__ for m in _public_modules()}:
        module, _, head = module.rpartition(".")
        rest = f"{head}.{rest}"
    if "." not in rest:
        return module, None
    class_name = rest.split(".")[0]
    for client in demo["clients"].values():
        for area in vars(client).values():
            if isinstance(area, Area) and any(c.__name__ == class_name for c in type(area).__mro__):
                return module, area
    assert class_name in demo["instances"], f"add an instance of {class_name} to the demo fixture"
    return module, demo["instances"][class_name]


def view_call(
    demo: dict[str, Any], name: str
) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
    """The view ``name`` bound to its owner, and the arguments the demo fills it with."""
    module, owner = _owner(demo, name)
    attribute = name.rsplit(".", 1)[1]
    call = (
        getattr(owner, attribute)
        if owner is not None
        else getattr(importlib.import_module(module), attribute)
    )
    fillers = {**demo["fillers"], **demo["module_fillers"].get(module, {})}
    given = demo["module_fillers"].get(module, {})
    kwargs: dict[str, Any] = {}
    positional: list[Any] = []
    for param, spec in inspect.signature(call).parameters.items():
        if spec.kind is spec.VAR_POSITIONAL:
            positional = list(given.get(param, []))
            assert positional, f"{name}: add a filler for *{param} in the demo fixture"
        elif param in given or (spec.default is spec.empty and spec.kind is not spec.VAR_KEYWORD):
            assert param in fillers, f"{name}: add a filler for {param!r} in the demo fixture"
            kwargs[param] = fillers[param]
    return call, positional, kwargs


@pytest.mark.parametrize("name", VIEWS, ids=lambda v: v.removeprefix("toolkit."))
def test_every_view_files_what_it_could_read_and_keeps_what_it_was_handed(
    demo: dict[str, Any], name: str
) -> None:
    call, positional, kwargs = view_call(demo, name)
    attribute = name.rsplit(".", 1)[1]
    frame = call(*positional, **kwargs)
    assert isinstance(frame, pd.DataFrame)
    records = coverage_of(frame)
    assert records, f"{name} returned a frame with no coverage record"
    assert all(r.view for r in records)
    handed = [v for v in [*positional, *kwargs.values()] if isinstance(v, pd.DataFrame)]
    gaps = [g for r in records for g in r.gaps]
    if handed:
        # Derived from frames: their records' union, the planted gap included.
        assert PLANTED in gaps, f"{name} dropped the record of the frames it was given"
    else:
        # Read whole by the demo's owner token, but the users of teams (the sandbox's
        # teams carry no users relationship), which effective_access says.
        assert not gaps or attribute == "effective_access", [str(g) for g in gaps]


@pytest.mark.parametrize(
    "name",
    [v for v in VIEWS if "scan" in inspect.signature(CALLS[v][0]).parameters],
    ids=lambda v: v.removeprefix("toolkit."),
)
def test_a_view_of_a_scan_carries_the_scan_s_record(demo: dict[str, Any], name: str) -> None:
    # A scan is handed as the scan object (its parts spooled), not only as its frame.
    module, attribute = name.rsplit(".", 1)
    kind = "TokenScan" if module.endswith("sprawl") else "LeaseScan"
    frame = getattr(importlib.import_module(module), attribute)(demo["instances"][kind])
    (record,) = coverage_of(frame)
    assert record.view.endswith(".scan") and record.complete, record.summary()


def test_a_derived_view_that_drops_its_sources_record_is_caught() -> None:
    from toolkit._coverage import carries_coverage

    def dropping(frame: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"n": [len(frame)]})

    given = _planted(Coverage("x").attach(pd.DataFrame({"a": [1]})))
    assert coverage_of(dropping(given)) == []
    kept = carries_coverage("house.kept")(dropping)(given)
    assert PLANTED in coverage_of(kept)[0].gaps
