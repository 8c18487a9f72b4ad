"""SQL over the live views: a table read only when a query names it, kept with its time, joined
across both services and with the history."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import toolkit
from toolkit import InputError, PlatformClient, SecretsClient, history, report
from toolkit.sandbox import Sandbox
from toolkit.sql_tables import PartialAnswer, SQLTables


def test_a_table_is_read_when_a_query_names_it_and_kept_with_the_time_it_was_read(
    demo_sandbox: Sandbox,
) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        tables = SQLTables(client)
        assert tables.tables_frame()["read_at"].isna().all()
        rules = tables.sql(
            "select policy, count(*) as n from policy_rules group by policy order by policy"
        )
        assert len(rules) > 0 and (rules["n"] > 0).all()
        read = tables.tables_frame()
        assert read["read_at"].notna().sum() == 1 and pd.notna(read.loc["policy_rules", "read_at"])
        when = read.loc["policy_rules", "read_at"]
        tables.sql("select * from policy_rules")
        assert tables.tables_frame().loc["policy_rules", "read_at"] == when  # kept
        tables.refresh("policy_rules")
        assert pd.isna(tables.tables_frame().loc["policy_rules", "read_at"])


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


def _readme_sudo_query() -> str:
    """The README's "which tokens hold sudo" query, as it is printed there."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = readme.split("which tokens hold `sudo`", 1)[1].split("```python", 1)[1]
    return block.split('toolkit.sql(secrets, """', 1)[1].split('""")', 1)[0]


def test_the_readme_s_sudo_query_counts_root_tokens(demo_sandbox: Sandbox) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        tokens = client.tokens.inventory()
        answer = toolkit.sql(client, _readme_sudo_query())
    roots = {str(a) for a, p in zip(tokens.index, tokens["policies"], strict=True) if "root" in p}
    assert roots, "the demo has a root token"
    # A root token holds sudo everywhere, though the root policy has no rules to join.
    assert roots <= set(answer["accessor"])
    assert set(answer.loc[answer["policy"] == "root", "path"]) == {"*"}
    granted = answer[answer["policy"] != "root"]
    assert len(granted) > 0  # the rules that grant sudo are still there


def test_joins_across_both_services_and_the_history(demo_sandbox: Sandbox, tmp_path: Path) -> None:
    secrets = SecretsClient(demo_sandbox.address, demo_sandbox.token)
    platform = PlatformClient(demo_sandbox.address, demo_sandbox.token)
    counts = secrets.leases.lease_counts()
    history.append(tmp_path, {"lease_counts": counts}, report.header_of(secrets), target="demo")
    tables = SQLTables(secrets, platform, organization="acme", history=tmp_path)
    both = tables.sql(
        """
        select (select count(*) from agents) as agents, (select count(*) from mounts) as mounts,
               (select sum("count") from history.lease_counts) as kept
        """
    ).iloc[0]
    assert both["agents"] > 0 and both["mounts"] > 0 and both["kept"] == counts["count"].sum()
    assert set(tables.tables_frame().dropna(subset=["read_at"]).index) == {"agents", "mounts"}
    secrets.close()
    platform.close()


def test_an_unknown_table_or_a_bad_query_is_a_one_line_error(demo_sandbox: Sandbox) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        tables = SQLTables(client)
        with pytest.raises(InputError, match="the live tables are auth_roles, certificates"):
            tables.sql("select * from agents")  # a platform table, no platform client
        with pytest.raises(InputError, match="does not parse"):
            tables.sql("select from where")
        with pytest.raises(InputError, match="no table 'nope'"):
            tables.refresh("nope")
    with pytest.raises(InputError, match="organization"):
        SQLTables(None, PlatformClient(demo_sandbox.address, demo_sandbox.token))


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
        tables = SQLTables(limited)
        with pytest.warns(PartialAnswer):
            certificates = tables.sql("select * from certificates")
        gaps = tables.gaps_frame()
    assert len(certificates) == 0
    assert list(gaps["table"]) == ["certificates"] and list(gaps["part"]) == ["pki/"]
    assert "permission denied" in gaps["reason"].iloc[0]


def test_an_answer_that_read_a_table_not_read_whole_says_so(sandbox: Sandbox) -> None:
    with SecretsClient(sandbox.address, sandbox.token) as root:
        policy = 'path "sys/mounts" { capabilities = ["read"] }\npath "sys/auth" { capabilities = ["read"] }'
        root.policies.write("acl", "mount-tables", policy)
        token = root.tokens.create(policies=["mount-tables"], ttl="1h")["client_token"]
    with SecretsClient(sandbox.address, token) as limited:
        tables = SQLTables(limited)
        with pytest.warns(PartialAnswer, match=r"pki/ \(.*permission denied"):
            answer = tables.sql("select count(*) as n from certificates")
        whole = tables.sql("select count(*) as n from mounts")
    assert int(answer["n"].iloc[0]) == 0
    gaps = toolkit.coverage(answer)
    assert not gaps.attrs["complete"] and list(gaps["path"]) == ["pki/"]
    assert toolkit.coverage(whole).attrs["complete"]


def test_a_table_put_together_from_several_mounts_keeps_their_records(sandbox: Sandbox) -> None:
    # pd.concat keeps attributes only when every part's are equal; two PKI mounts' records
    # differ (each names its mount), so the table had no record and could prove nothing.
    with SecretsClient(sandbox.address, sandbox.token) as root:
        root.enable_engine("pki2", "pki")
        root.pki.at("pki2").generate_root("second.example", ttl="8760h")
        tables = SQLTables(root)
        answer = tables.sql("select mount, count(*) as n from certificates group by mount")
        read = tables._read["certificates"].coverage
    assert set(answer["mount"]) == {"pki/", "pki2/"}
    assert toolkit.coverage(answer).attrs["complete"]
    assert read.asked == ["pki/", "pki2/"] and read.read == int(answer["n"].sum())


def test_parameters_of_every_policy_set_are_a_whole_table(demo_sandbox: Sandbox) -> None:
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as client:
        answer = toolkit.sql(client, "select * from parameters", organization="acme")
    record = toolkit.coverage(answer)
    assert record.attrs["complete"], record.attrs["views"]
    assert len(answer) > 0


def test_leases_policies_pools_and_team_access_hold_what_the_clients_views_hold(
    demo_sandbox: Sandbox,
) -> None:
    secrets = SecretsClient(demo_sandbox.address, demo_sandbox.token)
    platform = PlatformClient(demo_sandbox.address, demo_sandbox.token)
    tables = SQLTables(secrets, platform, organization="acme")
    per_mount = tables.sql("select mount, count(*) as n from leases group by mount")
    counts = secrets.leases.lease_counts().groupby("mount")["count"].sum()
    assert dict(zip(per_mount["mount"], per_mount["n"], strict=True)) == counts.to_dict()
    acl = tables.sql("select name from policies where kind = 'acl' order by name")
    assert list(acl["name"]) == sorted(secrets.policies.list_policies())
    pools = tables.sql(
        "select p.name, p.agent_count, count(a.id) as agents from pools p "
        "left join agents a on a.pool_id = p.id group by all"
    )
    assert list(pools["name"]) == ["acme-private"]
    assert pools["agent_count"].iloc[0] == pools["agents"].iloc[0] > 0
    access = tables.sql(
        "select team_name, access from team_access where workspace_name = 'web-frontend' "
        "order by team_name"
    )
    assert dict(zip(access["team_name"], access["access"], strict=True)) == {
        "contractors": "plan", "developers": "write", "readers": "read"
    }  # fmt: skip
    every = tables.sql("select count(*) as n from team_access")["n"].iloc[0]
    assert every == len(platform.team_access.organization_access("acme"))
    secrets.close()
    platform.close()


def test_sql_keeps_a_table_for_the_kernel_and_says_when_it_was_read(
    demo_sandbox: Sandbox,
) -> None:
    answers: list[object] = []
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        client.http.response_hooks.append(answers.append)
        query = "select name from policies order by name"
        first = toolkit.sql(client, query)
        sent = len(answers)
        again = toolkit.sql(client, query)
        assert sent > 0 and len(answers) == sent  # the kept table: no request the second time
        other = toolkit.sql(client, "select count(*) as n from policies where kind = 'acl'")
        assert len(answers) == sent
    assert again.equals(first) and other["n"].iloc[0] > 0
    when = first.attrs["read_at"]["policies"]
    assert (
        list(again.attrs["read_at"]) == ["policies"] and again.attrs["read_at"]["policies"] == when
    )
    assert pd.Timestamp(when).tzinfo is not None
    assert pd.Timestamp.now("UTC") - pd.Timestamp(when) < pd.Timedelta(minutes=5)
