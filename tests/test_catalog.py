"""SQL over the live views: a table read only when a query names it, kept with its time, joined
across both services and with the history."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import toolkit
from toolkit import InputError, PlatformClient, SecretsClient, history, report
from toolkit.catalog import Catalog
from toolkit.sandbox import Sandbox


def test_a_table_is_read_when_a_query_names_it_and_kept_with_the_time_it_was_read(
    demo_sandbox: Sandbox,
) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        catalog = Catalog(client)
        assert catalog.tables_frame()["read_at"].isna().all()
        rules = catalog.sql(
            "select policy, count(*) as n from policy_rules group by policy order by policy"
        )
        assert len(rules) > 0 and (rules["n"] > 0).all()
        read = catalog.tables_frame()
        assert read["read_at"].notna().sum() == 1 and pd.notna(read.loc["policy_rules", "read_at"])
        when = read.loc["policy_rules", "read_at"]
        catalog.sql("select * from policy_rules")
        assert catalog.tables_frame().loc["policy_rules", "read_at"] == when  # kept
        catalog.refresh("policy_rules")
        assert pd.isna(catalog.tables_frame().loc["policy_rules", "read_at"])


def test_a_query_no_single_call_answers_tokens_beside_their_policies_rules(
    demo_sandbox: Sandbox,
) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        answer = toolkit.sql(
            client,
            """
            select t.accessor, t.display_name, r.path, r.capabilities
            from tokens t, unnest(t.policies) as p(policy)
            join policy_rules r on r.policy = p.policy
            where list_contains(r.capabilities, 'sudo')
            """,
        )
    assert len(answer) > 0
    assert answer["capabilities"].map(lambda c: "sudo" in list(c)).all()


def test_joins_across_both_services_and_the_history(demo_sandbox: Sandbox, tmp_path: Path) -> None:
    secrets = SecretsClient(demo_sandbox.address, demo_sandbox.token)
    platform = PlatformClient(demo_sandbox.address, demo_sandbox.token)
    counts = secrets.leases.lease_counts()
    history.append(tmp_path, {"lease_counts": counts}, report.header_of(secrets), target="demo")
    catalog = Catalog(secrets, platform, organization="acme", history=tmp_path)
    both = catalog.sql(
        """
        select (select count(*) from agents) as agents, (select count(*) from mounts) as mounts,
               (select sum("count") from history.lease_counts) as kept
        """
    ).iloc[0]
    assert both["agents"] > 0 and both["mounts"] > 0 and both["kept"] == counts["count"].sum()
    assert set(catalog.tables_frame().dropna(subset=["read_at"]).index) == {"agents", "mounts"}
    secrets.close()
    platform.close()


def test_an_unknown_table_or_a_bad_query_is_a_one_line_error(demo_sandbox: Sandbox) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        catalog = Catalog(client)
        with pytest.raises(InputError, match="the live tables are auth_roles, certificates"):
            catalog.sql("select * from agents")  # a platform table, no platform client
        with pytest.raises(InputError, match="does not parse"):
            catalog.sql("select from where")
        with pytest.raises(InputError, match="no table 'nope'"):
            catalog.refresh("nope")
    with pytest.raises(InputError, match="organization"):
        Catalog(None, PlatformClient(demo_sandbox.address, demo_sandbox.token))


def test_secret_values_never_reach_a_table(demo_sandbox: Sandbox) -> None:
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as client:
        values = toolkit.sql(client, "select value from parameters", organization="acme")
    assert "demo-cost-api-key" not in " ".join(map(str, values["value"]))


def test_a_mount_the_token_may_not_read_is_a_gap_not_a_smaller_table(sandbox: Sandbox) -> None:
    with SecretsClient(sandbox.address, sandbox.token) as root:
        root.policies.write("acl", "mounts-only", 'path "sys/mounts" { capabilities = ["read"] }')
        made = root.tokens.create(policies=["mounts-only"], ttl="1h")
        token = made["client_token"].reveal()
    with SecretsClient(sandbox.address, token) as limited:
        catalog = Catalog(limited)
        certificates = catalog.sql("select * from certificates")
        gaps = catalog.gaps_frame()
    assert len(certificates) == 0
    assert list(gaps["table"]) == ["certificates"] and list(gaps["part"]) == ["pki/"]
    assert "permission denied" in gaps["reason"].iloc[0]
