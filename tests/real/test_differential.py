"""Differential tests: each scenario of ``scenarios.py`` runs against the sandbox and against
a real OpenBao; every difference must be one the table in ``docs/differences.md`` lists.

A failure prints the unexplained differences as table rows: either the sandbox is
wrong (fix it), or the difference is intended (add the row, with its reason).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.servers.openbao import OpenBao
from tests.servers.postgres import Postgres
from tests.servers.rabbitmq import RabbitMQ
from toolkit.sandbox import Sandbox

from . import _differential as diff
from .conftest import launch
from .scenarios import SCENARIOS, Scenario


@pytest.fixture(scope="module")
def dev_bao() -> Iterator[OpenBao]:
    """A dev OpenBao of the differential tests' own, so other tests' leases do not show."""
    with launch(OpenBao) as server:
        yield server


def backends(scenario: Scenario, request: pytest.FixtureRequest) -> dict[str, Any]:
    """What an engine scenario connects to: the real PostgreSQL or RabbitMQ (the sandbox is
    given the same settings, which it keeps without connecting)."""
    if scenario.server == "postgres":
        postgres: Postgres = request.getfixturevalue("postgres")
        with postgres.connect() as conn:
            conn.execute("DROP ROLE IF EXISTS diff_static")
            conn.execute("CREATE ROLE diff_static LOGIN PASSWORD 'diff-initial'")
        return {
            "postgres": {
                "url": postgres.template_url,
                "username": postgres.user,
                "password": postgres.password,
            }
        }
    if scenario.server == "rabbitmq":
        rabbitmq: RabbitMQ = request.getfixturevalue("rabbitmq")
        return {
            "rabbitmq": {
                "uri": rabbitmq.management_url,
                "username": rabbitmq.user,
                "password": rabbitmq.password,
            }
        }
    return {}


def run_on_sandbox(
    name: str, scenario: Scenario, tmp_path: Path, context: dict[str, Any]
) -> diff.Target:
    static = scenario.server.startswith("static-seal")
    with Sandbox(demo=False, recovery_seal=static) as sandbox:
        shares: list[str] = []
        if scenario.server in ("legacy-rekey", "rotate-root") or static:
            init = tmp_path / "init.json"
            sandbox.secrets.write_init_file(str(init))
            shares = list(json.loads(init.read_text())["recovery_keys" if static else "keys"])
            sandbox.secrets.legacy_rekey = scenario.server.endswith("legacy-rekey") or (
                scenario.server == "static-seal-legacy"
            )
        target = diff.Target("sandbox", sandbox.address, sandbox.token, shares)
        target.context.update(context)
        try:
            scenario.run(target)
        finally:
            target.close()
    return target


def run_on_openbao(scenario: Scenario, server: OpenBao, context: dict[str, Any]) -> diff.Target:
    shares = server.recovery_shares if server.static_seal else server.shares
    target = diff.Target("openbao", server.address, server.token, list(shares))
    target.context.update(context)
    target.context["plugin_directory"] = server.plugin_directory
    try:
        scenario.run(target)
    finally:
        target.close()
    return target


def real_server(scenario: Scenario, request: pytest.FixtureRequest) -> Iterator[OpenBao]:
    if scenario.server in ("legacy-rekey", "rotate-root", "static-seal", "static-seal-legacy"):
        legacy = scenario.server in ("legacy-rekey", "static-seal-legacy")
        static = scenario.server.startswith("static-seal")
        with launch(lambda: OpenBao(dev=False, legacy_rekey=legacy, static_seal=static)) as server:
            yield server
    else:
        yield request.getfixturevalue("dev_bao")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_sandbox_answers_as_openbao_does(
    name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    scenario = SCENARIOS[name]
    context = backends(scenario, request)
    sandbox = run_on_sandbox(name, scenario, tmp_path, context)
    for server in real_server(scenario, request):
        openbao = run_on_openbao(scenario, server, context)
    found = list(diff.differences(name, sandbox.observations, openbao.observations))
    table = diff.read_differences() + diff.read_differences(section=diff.PENDING)
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
    table = diff.read_differences() + diff.read_differences(section=diff.PENDING)
    assert diff.read_differences(), "docs/differences.md has no table rows"
    for d in table:
        assert d.scenario in (*SCENARIOS, "*"), d
        assert d.reason.strip(), f"no reason given for {d}"
    assert len(set(table)) == len(table), "a row appears twice"


def test_the_comparison_finds_a_changed_status_key_or_value_and_honours_wildcards() -> None:
    def seen(status: int, keys: tuple[str, ...], value: object) -> diff.Observation:
        return diff.Observation("read", status, {"": keys}, {"policy": value})

    same = list(diff.differences("s", [seen(200, ("a",), 1)], [seen(200, ("a",), 1)]))
    assert same == []
    found = list(diff.differences("s", [seen(200, ("a", "b"), 1)], [seen(404, ("a", "c"), 2)]))
    assert {(d.aspect, d.sandbox, d.openbao) for d in found} == {
        ("status", "200", "404"),
        ("keys", "b", "c"),
        ("value:policy", "1", "2"),
    }
    any_step = diff.Difference("*", "*", "status", "200", "404", "why")
    other_value = diff.Difference("s", "read", "status", "200", "500", "why")
    assert [d.aspect for d in diff.unexplained(found, [any_step, other_value])] == [
        "keys",
        "value:policy",
    ]
    assert diff.normalise_error("1 error occurred:\n\t* permission denied\n\n") == (
        "permission denied"
    )
