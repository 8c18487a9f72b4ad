"""What a Jupyter user meets: tab completion of the lazy modules and records, area reprs
that explain themselves, and the helpers at hand from the clients and the package."""

from __future__ import annotations

import json
import re
import types
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import toolkit
import widgets
from toolkit import PlatformClient, Record, SecretsClient
from toolkit._spec import team_access as permissions
from toolkit.platform import _base as platform_base
from toolkit.sandbox import Sandbox
from toolkit.secrets import _base as secrets_base
from toolkit.secrets.leases import lease_summary


@pytest.fixture
def bao(demo_sandbox: Sandbox) -> Iterator[SecretsClient]:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        yield client


@pytest.fixture
def platform(demo_sandbox: Sandbox) -> Iterator[PlatformClient]:
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as client:
        yield client


def _areas(client: object, base: type) -> dict[str, object]:
    return {name: value for name, value in vars(client).items() if isinstance(value, base)}


# -- dir() of the lazy modules and of records ---------------------------------------------


def test_dir_of_toolkit_lists_what_it_serves_lazily_and_its_public_names() -> None:
    listed = dir(toolkit)
    for name in [*toolkit.__all__, "SecretsClient", "lease_summary", "scrolling", "plots"]:
        assert name in listed
    # Imported helpers would crowd tab completion.
    assert "Any" not in listed and "annotations" not in listed
    # Every public name listed is really there.
    for name in listed:
        if not name.startswith("_"):
            assert getattr(toolkit, name) is not None


def test_dir_of_widgets_lists_every_form_and_each_resolves() -> None:
    listed = [n for n in dir(widgets) if not n.startswith("_")]
    assert set(widgets.__all__) <= set(listed)
    for name in widgets.__all__:
        assert isinstance(getattr(widgets, name), type)
    # Beyond the forms, only the form modules already imported: no imported helpers.
    extra = set(listed) - set(widgets.__all__)
    assert all(isinstance(getattr(widgets, n), types.ModuleType) for n in extra), extra
    assert "module_dir" not in listed and "Any" not in listed


def test_a_records_keys_are_offered_by_dir_when_they_read_as_attributes() -> None:
    record = Record({"display_name": "x", "not an attribute": 1, "ttl": 3}, kind="token")
    listed = dir(record)
    assert "display_name" in listed and "ttl" in listed
    assert "not an attribute" not in listed
    assert "items" in listed  # still a dict


# -- area reprs ------------------------------------------------------------------------


def test_every_secrets_area_repr_names_its_service_its_address_and_its_calls(
    bao: SecretsClient, demo_sandbox: Sandbox
) -> None:
    areas = _areas(bao, secrets_base.SecretsArea)
    assert len(areas) >= 12
    for name, area in areas.items():
        text = repr(area)
        assert text.startswith(f"<{type(area).__name__}: secrets "), name
        assert demo_sandbox.address in text
        calls = [
            c for c in dir(type(area)) if not c.startswith("_") and callable(getattr(type(area), c))
        ]
        calls = [c for c in calls if not isinstance(getattr(type(area), c), type)]
        assert calls, name
        for call in calls:
            assert call in text, (name, call)
        assert demo_sandbox.token not in text


def test_an_engines_repr_names_its_mount_also_after_at(bao: SecretsClient) -> None:
    assert "mount 'database'" in repr(bao.database)
    assert "secrets engine at" in repr(bao.database)
    moved = bao.database.at("databases/eu")
    assert "mount 'databases/eu'" in repr(moved)
    assert "configure_connection" in repr(moved)


def test_every_platform_area_repr_names_the_platform_and_its_calls(
    platform: PlatformClient, demo_sandbox: Sandbox
) -> None:
    areas = _areas(platform, platform_base.PlatformArea)
    assert set(areas) >= {"organizations", "agent_pools", "policy_set_parameters", "team_access"}
    for name, area in areas.items():
        text = repr(area)
        assert text.startswith(f"<{type(area).__name__}: platform at {demo_sandbox.address}")
        assert "calls: " in text, name
        assert demo_sandbox.token not in text
    assert "permissions_matrix" in repr(platform.team_access)
    # Tables are attributes, not calls.
    assert "IMPLIED_PERMISSIONS" not in repr(platform.team_access)


def test_a_repr_keeps_its_lines_short_enough_for_a_cell(bao: SecretsClient) -> None:
    assert all(len(line) <= 100 for line in repr(bao.pki).splitlines())


# -- helpers at hand ---------------------------------------------------------------------


def test_the_lease_summary_is_reachable_from_the_package_and_the_client(
    bao: SecretsClient,
) -> None:
    assert toolkit.lease_summary is lease_summary
    leases = bao.leases.leases_by_mount(mounts=["broker/", "ad/"])
    assert len(leases)
    summary = bao.leases.summary(leases)
    pd.testing.assert_frame_equal(summary, lease_summary(leases))
    assert int(summary["count"].sum()) == len(leases)


def test_the_scrolling_view_is_reachable_from_the_package() -> None:
    from toolkit.display import scrolling

    assert toolkit.scrolling is scrolling
    assert "<table" in toolkit.scrolling(pd.DataFrame({"a": [1]}))._repr_html_()


def test_the_permission_tables_are_reachable_from_the_platform_client(
    platform: PlatformClient,
) -> None:
    team_access = platform.team_access
    assert team_access.ACCESS_LEVELS == permissions.ACCESS_LEVELS
    assert team_access.IMPLIED_PERMISSIONS == permissions.IMPLIED_PERMISSIONS
    assert team_access.PERMISSION_ATTRIBUTES == permissions.PERMISSION_ATTRIBUTES
    assert team_access.PERMISSION_VALUES == permissions.PERMISSION_VALUES
    assert platform.agent_pools.AGENT_STATUSES == permissions.AGENT_STATUSES
    assert platform.agent_pools.REMOVABLE_AGENT_STATUSES == permissions.REMOVABLE_AGENT_STATUSES


def test_the_package_offers_what_users_call_or_catch() -> None:
    # toolkit.__all__ is what ``from toolkit import *`` and the docs offer: each name is
    # used by a runbook or the README, or is an error a user catches.
    root = Path(__file__).resolve().parents[1]
    texts = [(root / "README.md").read_text()]
    for path in sorted((root / "notebooks").rglob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        texts += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    used = "\n".join(texts)
    unused = [
        name
        for name in toolkit.__all__
        if not re.search(rf"\b{name}\b", used)
        and not (
            isinstance(getattr(toolkit, name), type)
            and issubclass(getattr(toolkit, name), Exception)
        )
    ]
    assert unused == []
    assert "Record" not in toolkit.__all__ and "lease_summary" not in toolkit.__all__
