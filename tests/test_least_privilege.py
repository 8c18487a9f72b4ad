"""Least privilege from a log written in OpenBao 2.7's file audit format, with the
principals and policies of a sandbox read over HTTP (the real-server proof is in
tests/real/test_least_privilege.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolkit import InputError, SecretsClient, least_privilege
from toolkit.sandbox import Sandbox

APP = """
path "secret/data/app/*" { capabilities = ["read", "create", "update"] }
path "secret/data/app/x/deep" { capabilities = ["deny"] }
path "secret/data/config" {
  capabilities = ["update"]
  allowed_parameters = { "level" = ["low", "high"] }
}
path "sys/policies/acl/*" { capabilities = ["update"] }
"""
END = datetime(2026, 6, 30, tzinfo=UTC)


@dataclass
class World:
    client: SecretsClient
    accessors: dict[str, str]  # token name -> accessor


def entry(
    when: datetime,
    accessor: str,
    path: str,
    operation: str = "read",
    *,
    policies: tuple[str, ...] = ("app", "default"),
    allowed: bool = True,
    granting: tuple[str, ...] = ("app",),
) -> str:
    """One request entry as OpenBao 2.7's file device writes it (log_raw)."""
    results: dict[str, Any] = {"allowed": allowed}
    if allowed and granting:
        results["granting_policies"] = [
            {"name": g, "namespace_id": "root", "type": "acl"} for g in granting
        ]
    record: dict[str, Any] = {
        "time": when.isoformat().replace("+00:00", "Z"),
        "type": "request",
        "auth": {"accessor": accessor, "display_name": "token", "policies": list(policies),
                 "token_policies": list(policies), "policy_results": results,
                 "token_type": "service"},
        "request": {"id": f"{when.timestamp()}-{path}", "operation": operation, "path": path,
                    "mount_point": path.split("/")[0] + "/", "namespace": {"id": "root"},
                    "remote_address": "127.0.0.1"},
    }  # fmt: skip
    if not allowed:
        record["error"] = "1 error occurred:\n\t* permission denied\n\n"
    return json.dumps(record)


@pytest.fixture
def world(empty_sandbox: Sandbox) -> Iterator[World]:
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as client:
        client.policies.write("acl", "app", APP)
        accessors = {}
        for name in ("web", "batch"):
            answer = httpx.post(
                f"{empty_sandbox.address}/v1/auth/token/create",
                headers={"X-Vault-Token": empty_sandbox.token},
                json={"policies": ["app"], "display_name": name},
            )
            accessors[name] = answer.json()["auth"]["accessor"]
        yield World(client, accessors)


def write_log(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def token(world: World, name: str) -> str:
    return f"auth/token/accessors/{world.accessors[name]}"


def test_a_request_the_policies_now_decide_otherwise_is_a_finding_with_its_cause(
    world: World, tmp_path: Path
) -> None:
    web = world.accessors["web"]
    log = write_log(tmp_path / "audit.log", [
        entry(END - timedelta(days=3), web, "secret/data/app/a"),
        entry(END - timedelta(days=2), web, "secret/data/old/b"),  # allowed then, not now
        entry(END - timedelta(days=1), web, "secret/data/z", policies=("gone",),
              granting=("gone",)),
        # Refused for a parameter value the log shows only as an HMAC.
        entry(END, web, "secret/data/config", "update", allowed=False),
    ])  # fmt: skip
    review = least_privilege.review(world.client, log)
    decisions = review.decisions()
    assert list(decisions.columns[:8]) == ["time", "principal", "operation", "path",
                                           "capability", "policy", "pattern", "allowed"]  # fmt: skip
    assert str(decisions["time"].dtype) == "datetime64[us, UTC]"
    first = decisions.iloc[0]
    assert (first["principal"], first["policy"], first["pattern"], first["agrees"]) == (
        token(world, "web"), "app", "secret/data/app/*", True
    )  # fmt: skip
    findings = review.findings()
    assert list(findings["path"]) == ["secret/data/old/b", "secret/data/z", "secret/data/config"]
    assert findings["cause"].iloc[1] == "policy gone no longer exists"
    assert "tests parameters, whose values the log does not show" in findings["cause"].iloc[2]
    assert "changed since" in findings["cause"].iloc[0]
    assert "identity store as it is now" in decisions.attrs["identity"]


def test_held_against_used_counts_only_the_window_and_the_window_never_passes_the_log(
    world: World, tmp_path: Path
) -> None:
    web = world.accessors["web"]
    log = write_log(tmp_path / "audit.log", [
        entry(END - timedelta(days=200), web, "sys/policies/acl/x", "update"),
        entry(END - timedelta(days=10), web, "secret/data/app/a"),
        entry(END, web, "secret/data/app/a"),
    ])  # fmt: skip
    review = least_privilege.review(world.client, log, days=90)
    standing = review.standing([token(world, "web")]).set_index(["pattern", "capability"])
    assert standing.loc[("secret/data/app/*", "read"), "requests"] == 2
    assert standing.loc[("secret/data/app/*", "read"), "last_used"] == END
    # Used 200 days ago: outside a 90-day window, so standing privilege.
    assert standing.loc[("sys/policies/acl/*", "update"), "unused"]
    assert standing.attrs["window"]["cut_to_log"] is False
    wide = least_privilege.review(world.client, log, days=365)
    assert wide.window()["cut_to_log"] is True
    used = wide.standing([token(world, "web")]).set_index(["pattern", "capability"])
    assert not used.loc[("sys/policies/acl/*", "update"), "unused"]
    ranking = review.ranking([token(world, "web"), token(world, "batch")])
    assert list(ranking["principal"]) == [token(world, "batch"), token(world, "web")]
    assert "policy writes" in ranking["dangers"].iloc[0]


def test_a_generated_policy_keeps_parameter_rules_as_written_and_refuses_a_widening_generalisation(
    world: World, tmp_path: Path
) -> None:
    web = world.accessors["web"]
    paths = ["secret/data/app/a/k", "secret/data/app/b/k", "secret/data/app/c"]
    log = write_log(tmp_path / "audit.log", [
        *(entry(END - timedelta(hours=i), web, p) for i, p in enumerate(paths)),
        entry(END, web, "secret/data/config", "update"),
    ])  # fmt: skip
    review = least_privilege.review(world.client, log)
    generated = review.generate(token(world, "web"), generalise_above=3)
    # secret/data/app/* would reach secret/data/app/x/deep, which no logged path names:
    # the check runs on the patterns, and app denies it there.
    assert not generated.rules["generalised"].any()
    assert "secret/data/app/x/deep" in generated.proof["not_generalised"][0]
    assert set(generated.rules["pattern"]) == {*paths, "secret/data/config"}
    decided = review.decisions().set_index("path")
    assert decided.loc["secret/data/config", "constrained"]
    assert not decided.loc["secret/data/app/c", "constrained"]
    kept = generated.rules.set_index("pattern").loc["secret/data/config"]
    assert kept["kept_as_written"]
    assert '"level" = ["low", "high"]' in generated.hcl
    assert generated.proof["covers"] and generated.proof["never_widens"]
    lost = generated.lost.set_index(["pattern", "capability"])
    assert ("sys/policies/acl/*", "update") in lost.index
    with pytest.raises(InputError, match="generalise_above must be at least 2"):
        review.generate(token(world, "web"), generalise_above=1)
    with pytest.raises(InputError, match="no principal 'nobody'"):
        review.generate("nobody")


def test_a_generalisation_the_policies_allow_is_made_and_says_from_how_many_paths(
    world: World, tmp_path: Path
) -> None:
    web = world.accessors["web"]
    paths = ["secret/data/app/a", "secret/data/app/b", "secret/data/app/c"]
    log = write_log(tmp_path / "audit.log",
                    [entry(END - timedelta(hours=i), web, p) for i, p in enumerate(paths)])  # fmt: skip
    review = least_privilege.review(world.client, log)
    generated = review.generate(token(world, "web"), generalise_above=3)
    assert list(generated.rules["pattern"]) == ["secret/data/app/+"]
    assert generated.rules["paths"].iloc[0] == 3
    assert "# generalised from 3 path(s) under secret/data/app/" in generated.hcl
    assert len(review.generate(token(world, "web"), generalise_above=4).rules) == 3


def test_the_impact_of_a_change_replays_the_whole_log_and_flags_recent_denials_first(
    world: World, tmp_path: Path
) -> None:
    web, batch = world.accessors["web"], world.accessors["batch"]
    log = write_log(tmp_path / "audit.log", [
        entry(END - timedelta(days=60), batch, "secret/data/app/old"),
        entry(END - timedelta(days=1), web, "secret/data/app/new"),
        entry(END - timedelta(days=1), web, "secret/data/app/kept"),
        entry(END, web, "sys/policies/acl/x", "update"),
    ])  # fmt: skip
    review = least_privilege.review(world.client, log)
    tighter = APP.replace('path "secret/data/app/*"', 'path "secret/data/app/kept"')
    impact = review.impact({"app": tighter}, recent_days=7)
    assert list(impact["path"]) == ["secret/data/app/new", "secret/data/app/old"]
    assert list(impact["recent"]) == [True, False]
    assert impact.attrs["flag"].startswith("DENIES RECENT USE: 1 request(s)")
    new = impact.iloc[0]
    assert (new["old_pattern"], new["new_pattern"], new["new_allowed"]) == (
        "secret/data/app/*", "", False
    )  # fmt: skip
    removed = review.impact({"app": None}, recent_days=7)
    assert len(removed) == 4
    with pytest.raises(InputError, match="at least one policy change"):
        review.impact({})


def test_policies_filed_into_the_history_decide_a_later_review_as_they_stood(
    world: World, tmp_path: Path
) -> None:
    web = world.accessors["web"]
    then = {"app": APP + 'path "secret/data/old/*" { capabilities = ["read"] }\n'}
    header = {"runbook": "15_least_privilege", "server": "http://bao.example:8200"}
    least_privilege.file_policies(tmp_path / "h", then, header, target="prod",
                                  taken_at=END - timedelta(days=5))  # fmt: skip
    least_privilege.file_policies(tmp_path / "h", {"app": APP}, header, target="prod",
                                  taken_at=END - timedelta(days=1))  # fmt: skip
    log = write_log(
        tmp_path / "audit.log", [entry(END - timedelta(days=4), web, "secret/data/old/b")]
    )
    assert len(least_privilege.review(world.client, log).findings()) == 1
    texts = least_privilege.policies_as_of(tmp_path / "h", END - timedelta(days=4), target="prod")
    assert texts == then
    assert least_privilege.review(world.client, log, policies=texts).findings().empty
    with pytest.raises(InputError, match="no policy texts of target 'prod' filed on or before"):
        least_privilege.policies_as_of(tmp_path / "h", END - timedelta(days=30), target="prod")


def test_the_sudo_paths_are_the_servers_root_protected_ones() -> None:
    assert least_privilege.needs_sudo("sys/auth/userpass")
    assert least_privilege.needs_sudo("auth/token/accessors/")
    assert least_privilege.needs_sudo("sys/leases/lookup/database/creds/x")
    assert not least_privilege.needs_sudo("sys/mounts")
    assert not least_privilege.needs_sudo("sys/auth")


@pytest.mark.slow  # forks two processes
def test_keys_decided_in_two_forked_processes_get_the_same_verdicts(
    world: World, tmp_path: Path
) -> None:
    web, batch = world.accessors["web"], world.accessors["batch"]
    lines = [
        entry(END - timedelta(minutes=i), (web, batch)[i % 2], f"secret/data/app/k{i}",
              policies=(("app", "default"), ("app",), ("default",))[i % 3])
        for i in range(60)
    ]  # fmt: skip
    log = write_log(tmp_path / "audit.log", lines)
    one = least_privilege.review(world.client, log)
    one.workers = 1
    two = least_privilege.review(world.client, log)
    two.workers = 2
    first, second = one.decisions(), two.decisions()
    assert first.equals(second)
    assert (~first["agrees"]).sum() == 20  # granted by app, logged so; "default" alone denies


def test_lines_the_review_cannot_read_are_gaps_not_silence(world: World, tmp_path: Path) -> None:
    web = world.accessors["web"]
    log = write_log(tmp_path / "audit.log", [
        entry(END - timedelta(days=1), web, "secret/data/app/a"),
        "Nov 28 12:00:01 host bao[12]: not an audit entry",
        entry(END, web, "secret/data/app/b"),
    ])  # fmt: skip
    review = least_privilege.review(world.client, log)
    standing = review.standing([token(world, "web")])
    reasons = [g["reason"] for g in standing.attrs["coverage"]["gaps"]]
    assert any("1 lines that are not audit entries" in r for r in reasons), reasons
    clean = write_log(tmp_path / "clean.log", [entry(END, web, "secret/data/app/b")])
    clean_reasons = [
        g["reason"]
        for g in least_privilege.review(world.client, clean).standing().attrs["coverage"]["gaps"]
    ]
    assert not any("not audit entries" in r for r in clean_reasons)
    assert len(review.decisions()) == 2
