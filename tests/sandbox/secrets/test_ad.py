"""The `ad` engine (`ADEngine`) over HTTP: config, roles, creds rotation, rotate-root."""

from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.sandbox.secrets._access_api import assert_error, issue, v1
from toolkit._time import parse_time
from toolkit.sandbox import Sandbox
from toolkit.sandbox._plain import round_trip
from toolkit.sandbox.secrets.engines.ad.demo import BIND_DN
from toolkit.sandbox.secrets.engines.ad.state import ADEngine, borrower_token

CONFIG_FIELDS = {
    "binddn",
    "certificate",
    "insecure_tls",
    "length",
    "max_ttl",
    "starttls",
    "tls_max_version",
    "tls_min_version",
    "ttl",
    "upndomain",
    "url",
    "userdn",
}
SPARE = "svc-spare-01@corp.example"
SPARE2 = "svc-spare-02@corp.example"
DBA = [f"dba-admin-0{i}@corp.example" for i in (1, 2, 3)]


def engine(sandbox: Sandbox, mount: str = "ad") -> ADEngine:
    found = sandbox.secrets.mounts.engine(mount)
    assert found is not None and isinstance(found.backend, ADEngine)
    return found.backend


def data(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()["data"]


def ok(response: httpx.Response) -> None:
    assert response.status_code == 204, response.text


def config(api: httpx.Client) -> dict[str, Any]:
    return dict(data(api.get("ad/config")))


def configure(api: httpx.Client, mount: str = "ad", **options: Any) -> None:
    body = {"binddn": BIND_DN, "bindpass": "bind-secret", "max_ttl": "720h", **options}
    ok(api.post(f"{mount}/config", json=body))


def role_password(api: httpx.Client, role: str = "spare") -> str:
    return str(data(api.get(f"ad/creds/{role}"))["current_password"])


@pytest.fixture
def spare_role(api: httpx.Client) -> str:
    ok(api.post("ad/roles/spare", json={"service_account_name": SPARE, "ttl": 3600}))
    return "spare"


@pytest.fixture
def library_user(sandbox: Sandbox, api: httpx.Client) -> Iterator[httpx.Client]:
    with v1(sandbox, issue(api, policies=["library-users"])) as client:
        yield client


@pytest.fixture
def other_user(sandbox: Sandbox, api: httpx.Client) -> Iterator[httpx.Client]:
    with v1(sandbox, issue(api, policies=["library-users"])) as client:
        yield client


def status(api: httpx.Client, name: str = "dba-oncall") -> dict[str, Any]:
    return dict(data(api.get(f"ad/library/{name}/status")))


def check_out(
    client: httpx.Client, name: str = "dba-oncall", mount: str = "ad", **body: Any
) -> dict[str, Any]:
    response = client.post(f"{mount}/library/{name}/check-out", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


# -- config ----------------------------------------------------------------------------


def test_config_read_shows_exactly_the_documented_fields_and_never_the_bind_password(
    api: httpx.Client,
) -> None:
    configure(api, length=20, userdn="OU=x,DC=corp,DC=example")
    shown = config(api)
    assert set(shown) == CONFIG_FIELDS
    assert shown["length"] == 20 and shown["url"] == "ldap://127.0.0.1"
    assert "bind-secret" not in api.get("ad/config").text


def test_password_policy_is_exclusive_with_length_and_formatter_and_a_refusal_changes_nothing(
    api: httpx.Client,
) -> None:
    before = config(api)
    for extra in ({"length": 20}, {"formatter": "x{{PASSWORD}}"}):
        response = api.post(
            "ad/config",
            json={"binddn": "CN=other", "bindpass": "p", "password_policy": "alnum-20", **extra},
        )
        assert_error(response, 400, "password_policy", "exclusive")
    assert config(api) == before


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"length": 13}, "length"),
        ({"formatter": "abc"}, "formatter"),
        ({"formatter": "{{PASSWORD}}-{{PASSWORD}}"}, "formatter"),
        ({"length": 14, "formatter": "prefix-long-{{PASSWORD}}"}, "formatter"),
        ({"password_policy": "no-such-policy"}, "password_policy"),
        ({"ttl": "2h", "max_ttl": "1h"}, "ttl"),
        ({"tls_min_version": "tls13", "tls_max_version": "tls12"}, "tls_min_version"),
        ({"url": "http://dc1"}, "url"),
        ({"bindpass": ""}, "bindpass"),
        ({"insecure_tls": "maybe"}, "insecure_tls"),
    ],
)
def test_bad_config_is_refused_naming_the_field_and_changes_nothing(
    api: httpx.Client, options: dict[str, Any], named: str
) -> None:
    before = config(api)
    body = {"binddn": "CN=other", "bindpass": "p", **options}
    assert_error(api.post("ad/config", json=body), 400, named)
    assert config(api) == before


def test_length_without_formatter_gives_passwords_of_that_length_starting_with_the_prefix(
    api: httpx.Client, spare_role: str
) -> None:
    configure(api, length=30)
    password = role_password(api)
    assert password.startswith("?@09AZ") and len(password) == 30
    assert password[6:].isalnum()


def test_a_formatter_wraps_the_generated_part_and_length_counts_the_whole(
    api: httpx.Client, spare_role: str
) -> None:
    configure(api, length=24, formatter="corp-{{PASSWORD}}!")
    password = role_password(api)
    assert password.startswith("corp-") and password.endswith("!") and len(password) == 24
    assert not password.startswith("?@09AZ")


def test_the_default_length_is_64(api: httpx.Client, spare_role: str) -> None:
    configure(api)
    assert config(api)["length"] == 64
    assert len(role_password(api)) == 64


def test_a_password_policy_generates_the_passwords(api: httpx.Client, spare_role: str) -> None:
    configure(api, password_policy="alnum-20")
    password = role_password(api)
    assert len(password) == 20 and set(password) <= set(string.ascii_letters + string.digits)
    assert config(api)["length"] == 0


def test_roles_and_sets_need_a_configured_engine(api: httpx.Client) -> None:
    ok(api.delete("ad/config"))
    assert api.get("ad/config").status_code == 404
    assert_error(api.post("ad/roles/x", json={"service_account_name": SPARE}), 400, "config")
    assert_error(api.post("ad/library/x", json={"service_account_names": SPARE}), 400, "config")


# -- roles and creds ---------------------------------------------------------------------


def test_roles_are_listed_by_get_and_list_and_read_with_rotation_times(
    api: httpx.Client,
) -> None:
    assert data(api.get("ad/roles"))["keys"] == ["backup", "reporting", "webapp"]
    assert data(api.request("LIST", "ad/roles"))["keys"] == ["backup", "reporting", "webapp"]
    role = data(api.get("ad/roles/backup"))
    assert set(role) == {
        "service_account_name",
        "ttl",
        "last_service_rotation",
        "password_last_set",
    }
    assert role["service_account_name"] == "svc-backup@corp.example" and role["ttl"] == 86400
    assert parse_time(role["last_service_rotation"]) == parse_time(role["password_last_set"])


def test_a_role_for_an_account_missing_from_the_directory_is_refused_naming_it(
    api: httpx.Client,
) -> None:
    response = api.post("ad/roles/ghost", json={"service_account_name": "ghost@corp.example"})
    assert_error(response, 400, "ghost@corp.example", "does not exist")
    assert_error(api.post("ad/roles/ghost", json={}), 400, "service_account_name")
    assert "ghost" not in data(api.get("ad/roles"))["keys"]


def test_a_role_ttl_above_the_config_max_ttl_is_refused(api: httpx.Client) -> None:
    response = api.post("ad/roles/spare", json={"service_account_name": SPARE, "ttl": "31d"})
    assert_error(response, 400, "ttl", "max_ttl")
    assert api.get("ad/roles/spare").status_code == 404
    ok(api.post("ad/roles/spare", json={"service_account_name": SPARE}))
    assert data(api.get("ad/roles/spare"))["ttl"] == config(api)["ttl"]


def test_an_account_serves_one_role_or_one_set(api: httpx.Client) -> None:
    response = api.post("ad/roles/other", json={"service_account_name": "svc-backup@corp.example"})
    assert_error(response, 400, "svc-backup@corp.example", "backup")
    response = api.post("ad/roles/other", json={"service_account_name": DBA[1]})
    assert_error(response, 400, DBA[1], "dba-oncall")
    response = api.post(
        "ad/library/more", json={"service_account_names": ["svc-webapp@corp.example"]}
    )
    assert_error(response, 400, "svc-webapp@corp.example", "webapp")
    assert api.get("ad/roles/other").status_code == 404
    assert api.get("ad/library/more").status_code == 404


def test_creds_rotate_only_once_the_ttl_has_passed(
    sandbox: Sandbox, api: httpx.Client, spare_role: str
) -> None:
    first = data(api.get("ad/creds/spare"))
    assert first["username"] == SPARE and first["last_password"] == ""
    rotated = data(api.get("ad/roles/spare"))["last_service_rotation"]
    sandbox.clock.advance(1800)
    assert data(api.get("ad/creds/spare")) == first
    sandbox.clock.advance(1801)
    second = data(api.get("ad/creds/spare"))
    assert second["current_password"] != first["current_password"]
    assert second["last_password"] == first["current_password"]
    role = data(api.get("ad/roles/spare"))
    before, after = parse_time(rotated), parse_time(role["last_service_rotation"])
    assert before is not None and after is not None and after > before
    assert role["password_last_set"] == role["last_service_rotation"]


def test_a_password_changed_in_the_directory_by_someone_else_is_rotated_again(
    sandbox: Sandbox, api: httpx.Client, spare_role: str
) -> None:
    first = role_password(api)
    sandbox.clock.advance(10)
    with sandbox.secrets.lock:
        engine(sandbox).reset_password(SPARE)
    assert role_password(api) != first


def test_a_deleted_role_is_gone(api: httpx.Client, spare_role: str) -> None:
    ok(api.delete("ad/roles/spare"))
    assert api.get("ad/roles/spare").status_code == 404
    assert api.get("ad/creds/spare").status_code == 404


# -- library sets --------------------------------------------------------------------------


def test_a_set_takes_its_accounts_as_a_string_or_a_list_with_24h_defaults(
    api: httpx.Client,
) -> None:
    ok(api.post("ad/library/spares", json={"service_account_names": f"{SPARE}, {SPARE2}"}))
    assert data(api.get("ad/library/spares")) == {
        "service_account_names": [SPARE, SPARE2],
        "ttl": 86400,
        "max_ttl": 86400,
        "disable_check_in_enforcement": False,
    }
    ok(
        api.post(
            "ad/library/spares", json={"service_account_names": [SPARE], "ttl": 0, "max_ttl": 0}
        )
    )
    read = data(api.get("ad/library/spares"))
    assert read["service_account_names"] == [SPARE] and read["ttl"] == read["max_ttl"] == 0
    assert "spares" in data(api.request("LIST", "ad/library"))["keys"]
    ok(api.delete("ad/library/spares"))
    assert api.get("ad/library/spares").status_code == 404


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"service_account_names": ["ghost@corp.example"]}, "ghost@corp.example"),
        ({"service_account_names": [SPARE, DBA[0]]}, "dba-oncall"),
        ({}, "service_account_names"),
        ({"service_account_names": [SPARE], "ttl": "2d", "max_ttl": "1d"}, "ttl"),
        ({"service_account_names": [SPARE], "ttl": "soon"}, "ttl"),
        ({"service_account_names": 7}, "service_account_names"),
    ],
)
def test_a_bad_set_is_refused_naming_the_problem_and_nothing_is_saved(
    sandbox: Sandbox, api: httpx.Client, body: dict[str, Any], named: str
) -> None:
    before = engine(sandbox).entries["cn=svc-spare-01,ou=service accounts,dc=corp,dc=example"]
    password = before.password
    assert_error(api.post("ad/library/spares", json=body), 400, named)
    assert api.get("ad/library/spares").status_code == 404
    assert before.password == password


def test_a_set_with_accounts_out_cannot_be_deleted_nor_lose_them(api: httpx.Client) -> None:
    assert_error(api.delete("ad/library/dba-oncall"), 400, DBA[0])
    response = api.post("ad/library/dba-oncall", json={"service_account_names": DBA[1:]})
    assert_error(response, 400, DBA[0], "checked out")
    assert data(api.get("ad/library/dba-oncall"))["service_account_names"] == DBA


# -- check-out and check-in ------------------------------------------------------------------


def test_check_out_lends_the_first_free_account_under_a_renewable_lease(
    sandbox: Sandbox, api: httpx.Client, library_user: httpx.Client
) -> None:
    answer = check_out(library_user)
    assert answer["data"]["service_account_name"] == DBA[1]
    assert answer["data"]["password"]
    assert answer["renewable"] is True and answer["lease_duration"] == 8 * 3600
    assert answer["lease_id"].startswith("ad/library/dba-oncall/check-out/")
    lease = data(api.put("sys/leases/lookup", json={"lease_id": answer["lease_id"]}))
    assert lease["renewable"] is True
    assert status(api)[DBA[1]]["available"] is False


def test_a_check_out_ttl_is_capped_at_the_sets(api: httpx.Client) -> None:
    assert check_out(api, ttl="48h")["lease_duration"] == 8 * 3600
    assert check_out(api, ttl="10m")["lease_duration"] == 600


def test_a_set_with_ttl_and_max_ttl_0_puts_no_cap_and_the_mount_lease_ttls_apply(
    api: httpx.Client,
) -> None:
    # The spec says 0 is "unlimited"; as on the real server, a 0 only removes the set's own
    # cap: a check-out gets the mount's default lease, and asks up to the mount's maximum.
    mount_default = mount_max = 768 * 3600
    ok(api.post("sys/mounts/ad/tune", json={"max_lease_ttl": "100h"}))
    ok(
        api.post(
            "ad/library/spares", json={"service_account_names": [SPARE], "ttl": 0, "max_ttl": 0}
        )
    )
    assert check_out(api, "spares")["lease_duration"] == 100 * 3600
    ok(api.post("sys/mounts/ad/tune", json={"max_lease_ttl": 0}))
    data(api.post("ad/library/manage/spares/check-in", json={"service_account_names": [SPARE]}))
    assert check_out(api, "spares")["lease_duration"] == mount_default
    data(api.post("ad/library/manage/spares/check-in", json={"service_account_names": [SPARE]}))
    assert check_out(api, "spares", ttl="1000h")["lease_duration"] == mount_max


def test_check_out_is_400_when_no_account_is_free(api: httpx.Client) -> None:
    check_out(api)
    check_out(api)
    before = status(api)
    assert_error(api.post("ad/library/dba-oncall/check-out", json={}), 400, "no service accounts")
    assert status(api) == before


def test_status_names_the_borrower_by_entity_and_token_hash_never_the_token(
    sandbox: Sandbox, api: httpx.Client, library_user: httpx.Client
) -> None:
    token = library_user.headers["X-Vault-Token"]
    with sandbox.secrets.lock:
        sandbox.secrets.tokens.get(token).entity_id = "entity-ops-1"  # type: ignore[union-attr]
    check_out(library_user)
    shown = status(api)
    assert shown[DBA[2]] == {"available": True}
    assert shown[DBA[1]]["borrower_entity_id"] == "entity-ops-1"
    assert shown[DBA[1]]["borrower_client_token"] not in ("", token)
    assert token not in api.get("ad/library/dba-oncall/status").text


def test_only_the_borrower_may_check_in_and_the_account_then_gets_a_new_password(
    sandbox: Sandbox, api: httpx.Client, library_user: httpx.Client, other_user: httpx.Client
) -> None:
    first = check_out(library_user)
    lent = first["data"]["service_account_name"]
    response = other_user.post(
        "ad/library/dba-oncall/check-in", json={"service_account_names": [lent]}
    )
    assert_error(response, 400, lent, "another")
    assert status(api)[lent]["available"] is False
    done = library_user.post("ad/library/dba-oncall/check-in", json={"service_account_names": lent})
    assert data(done) == {"check_ins": [lent]}
    assert status(api)[lent]["available"] is True
    assert api.put("sys/leases/lookup", json={"lease_id": first["lease_id"]}).status_code == 400
    again = check_out(other_user)
    assert again["data"]["service_account_name"] == lent
    assert again["data"]["password"] != first["data"]["password"]


def test_the_same_entity_may_check_in_from_another_token(
    sandbox: Sandbox, library_user: httpx.Client, other_user: httpx.Client
) -> None:
    with sandbox.secrets.lock:
        for client in (library_user, other_user):
            sandbox.secrets.tokens.get(client.headers["X-Vault-Token"]).entity_id = "ent-7"  # type: ignore[union-attr]
    lent = check_out(library_user)["data"]["service_account_name"]
    done = other_user.post("ad/library/dba-oncall/check-in", json={})
    assert data(done) == {"check_ins": [lent]}


def test_an_account_already_in_checks_in_successfully_and_is_not_listed(
    api: httpx.Client,
) -> None:
    response = api.post("ad/library/dba-oncall/check-in", json={"service_account_names": [DBA[2]]})
    assert data(response) == {"check_ins": []}


def test_without_names_the_callers_one_account_is_checked_in_and_two_need_naming(
    api: httpx.Client, library_user: httpx.Client
) -> None:
    assert data(library_user.post("ad/library/dba-oncall/check-in", json={})) == {"check_ins": []}
    one = check_out(library_user)["data"]["service_account_name"]
    two = check_out(library_user)["data"]["service_account_name"]
    response = library_user.post("ad/library/dba-oncall/check-in", json={})
    assert_error(response, 400, "service_account_names", one, two)
    assert status(api)[one]["available"] is False
    library_user.post("ad/library/dba-oncall/check-in", json={"service_account_names": [two]})
    assert data(library_user.post("ad/library/dba-oncall/check-in", json={})) == {
        "check_ins": [one]
    }


def test_an_account_outside_the_set_cannot_be_checked_in(api: httpx.Client) -> None:
    response = api.post("ad/library/dba-oncall/check-in", json={"service_account_names": [SPARE]})
    assert_error(response, 400, SPARE, "dba-oncall")


def test_with_enforcement_disabled_anyone_may_check_in(
    api: httpx.Client, library_user: httpx.Client, other_user: httpx.Client
) -> None:
    lent = check_out(library_user, "break-glass")["data"]["service_account_name"]
    done = other_user.post("ad/library/break-glass/check-in", json={"service_account_names": lent})
    assert data(done) == {"check_ins": [lent]}


def test_the_manage_path_forces_a_check_in_and_needs_its_own_grant(
    api: httpx.Client, library_user: httpx.Client
) -> None:
    body = {"service_account_names": [DBA[0]]}
    assert library_user.post("ad/library/manage/dba-oncall/check-in", json=body).status_code == 403
    assert data(api.post("ad/library/manage/dba-oncall/check-in", json=body)) == {
        "check_ins": [DBA[0]]
    }
    assert status(api)[DBA[0]] == {"available": True}


def test_an_expired_lease_checks_the_account_in(
    sandbox: Sandbox, api: httpx.Client, library_user: httpx.Client
) -> None:
    lent = check_out(library_user, ttl="5m")["data"]["service_account_name"]
    sandbox.clock.advance(299)
    assert status(api)[lent]["available"] is False
    sandbox.clock.advance(2)
    assert status(api)[lent] == {"available": True}


def test_a_renewal_is_capped_at_the_sets_max_ttl(sandbox: Sandbox, api: httpx.Client) -> None:
    lease_id = check_out(api, "break-glass")["lease_id"]
    renewed = api.put("sys/leases/renew", json={"lease_id": lease_id, "increment": 86400})
    assert renewed.status_code == 200 and renewed.json()["lease_duration"] <= 2 * 3600
    sandbox.clock.advance(2 * 3600 + 1)
    assert status(api, "break-glass")["breakglass-admin@corp.example"]["available"] is True


def test_revoking_the_lease_or_the_borrowers_token_checks_the_account_in(
    sandbox: Sandbox, api: httpx.Client, library_user: httpx.Client
) -> None:
    first = check_out(library_user)
    revoked = api.put("sys/leases/revoke", json={"lease_id": first["lease_id"], "sync": True})
    assert revoked.status_code == 204, revoked.text
    assert status(api)[first["data"]["service_account_name"]]["available"] is True
    second = check_out(library_user)["data"]["service_account_name"]
    ok(library_user.post("auth/token/revoke-self"))
    assert status(api)[second]["available"] is True


def test_the_demo_check_outs_belong_to_the_demo_tokens(sandbox: Sandbox, api: httpx.Client) -> None:
    token = sandbox.secrets.tokens.get("demo-library-user-token")
    assert token is not None
    assert status(api)[DBA[0]]["borrower_client_token"] == borrower_token(token)
    with v1(sandbox, "demo-library-user-token") as user:
        done = user.post("ad/library/dba-oncall/check-in", json={})
        assert data(done) == {"check_ins": [DBA[0]]}


# -- rotate-root --------------------------------------------------------------------------------


def test_rotate_root_is_204_and_200_with_a_warning_while_one_runs(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    backend = engine(sandbox)
    before = backend.config.bindpass  # type: ignore[union-attr]
    response = api.get("ad/rotate-root")
    assert response.status_code == 204 and response.content == b""
    assert backend.root_rotation_running
    rotated = backend.config.bindpass  # type: ignore[union-attr]
    assert rotated != before
    busy = api.get("ad/rotate-root")
    assert busy.status_code == 200 and "in progress" in busy.json()["warnings"][0]
    assert backend.config.bindpass == rotated  # type: ignore[union-attr]
    sandbox.clock.advance(backend.root_rotation_seconds)
    assert not backend.root_rotation_running
    assert api.get("ad/rotate-root").status_code == 204
    assert backend.root_rotations == 2


def test_rotate_root_fails_when_binddn_matches_more_than_one_entry(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    with sandbox.secrets.lock:
        engine(sandbox).add_account("vault-ad", "CN=vault-ad,OU=Legacy,DC=corp,DC=example")
    configure(api, binddn="vault-ad")
    assert_error(api.get("ad/rotate-root"), 400, "binddn", "2 directory entries")
    assert engine(sandbox).config.bindpass == "bind-secret"  # type: ignore[union-attr]


# -- another mount ---------------------------------------------------------------------------------


def test_the_engine_works_mounted_elsewhere_with_its_own_directory(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    ok(api.post("sys/mounts/corp/ad", json={"type": "ad"}))
    assert_error(api.post("corp/ad/roles/x", json={"service_account_name": "a"}), 400, "corp/ad/")
    configure(api, "corp/ad")
    assert_error(
        api.post("corp/ad/library/team", json={"service_account_names": ["alice"]}), 400, "alice"
    )
    with sandbox.secrets.lock:
        engine(sandbox, "corp/ad").set_directory([("alice", "CN=alice,DC=corp")])
    ok(api.post("corp/ad/library/team", json={"service_account_names": ["alice"]}))
    answer = check_out(api, "team", "corp/ad")
    assert answer["lease_id"].startswith("corp/ad/library/team/check-out/")
    assert data(api.request("LIST", "corp/ad/library"))["keys"] == ["team"]
    assert "team" not in data(api.request("LIST", "ad/library"))["keys"]
    ok(api.delete("sys/mounts/corp/ad"))
    assert api.put("sys/leases/lookup", json={"lease_id": answer["lease_id"]}).status_code == 400


def test_names_are_case_insensitive_unless_configured(api: httpx.Client) -> None:
    assert data(api.get("ad/library/DBA-Oncall"))["ttl"] == 8 * 3600
    configure(api, case_sensitive_names=True)
    assert api.get("ad/library/DBA-Oncall").status_code == 404


def test_bad_check_out_and_check_in_requests_change_nothing(api: httpx.Client) -> None:
    before = status(api)
    assert_error(api.post("ad/library/dba-oncall/check-out", json={"ttl": "soon"}), 400, "ttl")
    assert_error(api.post("ad/library/nope/check-out", json={}), 400, "nope")
    body = {"service_account_names": [DBA[0], "ghost@corp.example"]}
    assert_error(api.post("ad/library/manage/dba-oncall/check-in", json=body), 400, "ghost")
    assert status(api) == before
    assert api.get("ad/library/nope/status").status_code == 404


def test_the_engine_state_survives_a_copy_and_its_leases_still_check_in(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    lent = check_out(api, ttl="10m")["data"]["service_account_name"]
    with sandbox.secrets.lock:
        copy = round_trip({"secrets": sandbox.secrets})["secrets"]
    backend = copy.mounts.engine("ad").backend
    assert lent in backend.library.sets["dba-oncall"].check_outs
    copy.clock.advance(601)
    copy.leases.count_irrevocable()  # any call lets due leases expire
    assert lent not in backend.library.sets["dba-oncall"].check_outs
    assert status(api)[lent]["available"] is False  # the original is untouched


def test_a_password_that_cannot_be_made_leaves_the_account_out_and_its_lease_irrevocable(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    lent = check_out(api, ttl="5m")
    account = lent["data"]["service_account_name"]
    ok(api.delete("sys/policies/password/strong-32"))
    response = api.post("ad/library/dba-oncall/check-in", json={"service_account_names": account})
    assert_error(response, 400, "password_policy", "strong-32")
    assert status(api)[account]["available"] is False
    sandbox.clock.advance(301)
    assert status(api)[account]["available"] is False
    listed = data(api.get("sys/leases", params={"type": "irrevocable"}))
    assert lent["lease_id"] in [item["lease_id"] for item in listed["leases"]]
