"""Differential tests: each scenario of ``scenarios.py`` runs against the sandbox and against
a real OpenBao; every difference must be one the table in ``docs/differences.md`` lists.

A failure prints the unexplained differences as table rows: either the sandbox is
wrong (fix it), or the difference is intended (add the row, with its reason).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.openbao import OpenBao
from toolkit.sandbox import Sandbox

from . import _differential as diff
from .conftest import launch
from .scenarios import SCENARIOS, Scenario


@pytest.fixture(scope="module")
def dev_bao() -> Iterator[OpenBao]:
    """A dev OpenBao of the differential tests' own, so other tests' leases do not show."""
    with launch(OpenBao) as server:
        yield server


def run_on_sandbox(name: str, scenario: Scenario, tmp_path: Path) -> diff.Target:
    with Sandbox(demo=False) as sandbox:
        shares: list[str] = []
        if scenario.server in ("legacy-rekey", "rotate-root"):
            init = tmp_path / "init.json"
            sandbox.secrets.write_init_file(str(init))
            shares = list(json.loads(init.read_text())["keys"])
            sandbox.secrets.legacy_rekey = scenario.server == "legacy-rekey"
        target = diff.Target("sandbox", sandbox.address, sandbox.token, shares)
        try:
            scenario.run(target)
        finally:
            target.close()
    return target


def run_on_openbao(scenario: Scenario, server: OpenBao) -> diff.Target:
    target = diff.Target("openbao", server.address, server.token, list(server.shares))
    target.context["plugin_directory"] = server.plugin_directory
    try:
        scenario.run(target)
    finally:
        target.close()
    return target


def real_server(scenario: Scenario, request: pytest.FixtureRequest) -> Iterator[OpenBao]:
    if scenario.server in ("legacy-rekey", "rotate-root"):
        legacy = scenario.server == "legacy-rekey"
        with launch(lambda: OpenBao(dev=False, legacy_rekey=legacy)) as server:
            yield server
    else:
        yield request.getfixturevalue("dev_bao")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_sandbox_answers_as_openbao_does(
    name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    scenario = SCENARIOS[name]
    sandbox = run_on_sandbox(name, scenario, tmp_path)
    for server in real_server(scenario, request):
        openbao = run_on_openbao(scenario, server)
    found = list(diff.differences(name, sandbox.observations, openbao.observations))
    table = diff.read_differences()
    unexplained = diff.unexplained(found, table)
    assert not unexplained, "differences the table does not list:\n" + "\n".join(
        row(d) for d in unexplained
    )
    # A row of this scenario that explains nothing any more must go.
    stale = [r for r in table if r.scenario == name and not any(diff.matches(r, d) for d in found)]
    assert not stale, "table rows no longer observed:\n" + "\n".join(row(d) for d in stale)


def row(d: diff.Difference) -> str:
    def cell(text: str) -> str:
        return "`" + text.replace("|", "\\|") + "`" if text else ""

    return f"| {d.scenario} | {d.step} | {d.aspect} | {cell(d.sandbox)} | {cell(d.openbao)} | {d.reason} |"


def test_the_table_parses_and_names_known_scenarios_with_a_reason_each() -> None:
    table = diff.read_differences()
    assert table, "docs/differences.md has no table rows"
    for d in table:
        assert d.scenario in (*SCENARIOS, "*"), d
        assert d.reason.strip(), f"no reason given for {d}"
    assert len(set(table)) == len(table), "a row appears twice"
