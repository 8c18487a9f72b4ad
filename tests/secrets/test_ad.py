"""The `ad` engine's client (`AD`) against a sandbox: every call, passwords hidden, views."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.secrets._ad import corp_ad
from toolkit import APIError, InputError, Sensitive
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.engines.ad.demo import BIND_DN
from toolkit.secrets import SecretsClient

DBA = [f"dba-admin-0{i}@corp.example" for i in (1, 2, 3)]
SPARE = "svc-spare-01@corp.example"


def shown(value: object) -> str:
    text = repr(value) + str(value)
    if isinstance(value, pd.DataFrame):
        text += value.to_string() + value.to_html()
    return text


def test_config_is_written_read_without_the_bind_password_and_deleted(
    client: SecretsClient,
) -> None:
    client.ad.configure(BIND_DN, Sensitive("bind-pw"), length=20, max_ttl="720h")
    config = client.ad.read_config()
    assert config["binddn"] == BIND_DN and config["length"] == 20
    assert "bindpass" not in config and "bind-pw" not in shown(config)
    client.ad.delete_config()
    with pytest.raises(APIError) as caught:
        client.ad.read_config()
    assert caught.value.status == 404


def test_exclusive_password_options_are_refused_before_sending(client: SecretsClient) -> None:
    with pytest.raises(InputError, match="password_policy"):
        client.ad.configure(BIND_DN, "pw", password_policy="alnum-20", length=20)
    with pytest.raises(InputError, match="bindpass"):
        client.ad.configure(BIND_DN, "")
    assert client.ad.read_config()["length"] == 0  # the demo's policy config still stands


def test_roles_are_written_read_and_give_hidden_rotating_creds(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    client.ad.write_role("spare", SPARE, ttl="1h")
    assert "spare" in client.ad.list_roles()
    creds = client.ad.creds("spare")
    assert creds["username"] == SPARE
    assert isinstance(creds["current_password"], Sensitive)
    assert creds["current_password"].reveal() not in shown(creds)
    role = client.ad.read_role("spare")
    assert role["ttl"] == 3600 and role["last_service_rotation"] is not None
    sandbox.clock.advance(3601)
    again = client.ad.creds("spare")
    assert again["last_password"] == creds["current_password"]
    assert again["current_password"] != creds["current_password"]
    client.ad.delete_role("spare")
    assert "spare" not in client.ad.list_roles()


def test_a_role_for_a_missing_account_is_an_api_error_naming_it(client: SecretsClient) -> None:
    with pytest.raises(APIError, match="ghost@corp.example"):
        client.ad.write_role("ghost", "ghost@corp.example")


def test_the_roles_frame_has_the_next_rotation_of_each_role(demo_client: SecretsClient) -> None:
    frame = demo_client.ad.roles_frame()
    assert list(frame.index) == ["backup", "reporting", "webapp"]
    assert list(frame.columns) == [
        "service_account_name",
        "ttl",
        "last_service_rotation",
        "password_last_set",
        "next_rotation",
    ]
    assert str(frame["next_rotation"].dtype) == "datetime64[ns, UTC]"
    backup = frame.loc["backup"]
    assert backup["next_rotation"] - backup["last_service_rotation"] == pd.Timedelta(days=1)


def test_sets_are_written_read_and_deleted(client: SecretsClient) -> None:
    client.ad.write_set("spares", SPARE, ttl="2h", max_ttl="4h")
    assert client.ad.read_set("spares")["service_account_names"] == [SPARE]
    client.ad.write_set("spares", disable_check_in_enforcement=True)
    assert client.ad.read_set("spares")["disable_check_in_enforcement"] is True
    assert "spares" in client.ad.list_sets()
    client.ad.delete_set("spares")
    assert "spares" not in client.ad.list_sets()
    with pytest.raises(InputError, match="ttl"):
        client.ad.write_set("spares", SPARE, ttl="soon")


def test_check_out_hides_the_password_and_check_in_returns_what_came_back(
    client: SecretsClient,
) -> None:
    lent = client.ad.check_out("dba-oncall", ttl="30m")
    assert lent["service_account_name"] == DBA[1]
    assert isinstance(lent["password"], Sensitive) and lent["password"].reveal() not in shown(lent)
    assert lent["lease_duration"] == 1800 and lent["renewable"] is True
    assert client.ad.status("dba-oncall")[DBA[1]]["available"] is False
    assert client.ad.check_in("dba-oncall") == [DBA[1]]
    assert client.ad.check_in("dba-oncall", DBA[1]) == []
    assert client.ad.manage_check_in("dba-oncall", [DBA[0]]) == [DBA[0]]
    assert client.ad.status("dba-oncall")[DBA[0]] == {"available": True}


def test_library_status_joins_accounts_with_their_leases(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    frame = client.ad.library_status()
    assert list(frame.columns) == ["set", "available", "borrower", "lease_id", "lease_expiry"]
    assert frame.index.name == "account" and len(frame) == 6
    assert str(frame["available"].dtype) == "boolean"
    assert str(frame["lease_expiry"].dtype) == "datetime64[ns, UTC]"
    # The demo's one borrowed account in its set is matched with the set's one lease.
    demo = frame.loc[DBA[0]]
    assert not demo["available"] and demo["lease_id"].startswith("ad/library/dba-oncall/")
    assert demo["lease_expiry"] == pd.Timestamp(sandbox.clock.start) + pd.Timedelta(minutes=390)
    assert frame["borrower"].isna()[DBA[1]] and frame["lease_id"].isna()[DBA[1]]

    mine = [client.ad.check_out("dba-oncall", ttl="1h") for _ in range(2)]
    frame = client.ad.library_status(["dba-oncall"])
    assert list(frame.index) == DBA
    for lent in mine:
        row = frame.loc[lent["service_account_name"]]
        assert row["lease_id"] == lent["lease_id"]
        assert (row["lease_expiry"] - pd.Timestamp(sandbox.clock.now())).total_seconds() <= 3600
    assert frame.loc[DBA[0], "lease_id"] == demo["lease_id"]
    client.ad.check_in("dba-oncall", mine[0]["service_account_name"])
    frame = client.ad.library_status(["dba-oncall"])
    assert frame["lease_id"].isna()[mine[0]["service_account_name"]]


def test_library_status_is_right_when_a_set_is_empty_of_sets(client: SecretsClient) -> None:
    for name in client.ad.list_sets():
        client.ad.manage_check_in(name, client.ad.read_set(name)["service_account_names"])
        client.ad.delete_set(name)
    frame = client.ad.library_status()
    assert frame.empty and list(frame.columns) == [
        "set",
        "available",
        "borrower",
        "lease_id",
        "lease_expiry",
    ]


def test_rotate_root_returns_the_warning_while_a_rotation_runs(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    assert client.ad.rotate_root() == []
    warnings = client.ad.rotate_root()
    assert len(warnings) == 1 and "in progress" in warnings[0]


def test_every_call_works_against_another_mount(sandbox: Sandbox, client: SecretsClient) -> None:
    corp = corp_ad(sandbox, client)
    lent = corp.check_out("team")
    assert lent["lease_id"].startswith("corp-ad/library/team/check-out/")
    frame = corp.library_status()
    assert frame.loc["alice", "lease_id"] == lent["lease_id"]
    assert "team" not in client.ad.list_sets()


def test_a_library_user_sees_only_the_leases_of_their_own_check_outs(
    sandbox: Sandbox,
) -> None:
    with SecretsClient(sandbox.address, "demo-library-user-token") as user:
        frame = user.ad.library_status()
        assert len(frame) == 6 and frame["lease_id"].isna().all()
        lent = user.ad.check_out("dba-oncall")
        frame = user.ad.library_status(["dba-oncall"])
        assert frame["lease_id"][lent["service_account_name"]] == lent["lease_id"]
        assert frame["lease_expiry"].isna().all() and frame["lease_id"].notna().sum() == 1
        assert sorted(user.ad.check_in("dba-oncall", [DBA[0], lent["service_account_name"]])) == [
            DBA[0],
            lent["service_account_name"],
        ]
        with pytest.raises(APIError) as caught:
            user.ad.manage_check_in("release-engineers", "release-02@corp.example")
        assert caught.value.status == 403
