"""The message-broker engine (spec 4.9) over real HTTP: connection, lease, roles, creds."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.sandbox.secrets._access_api import assert_error, issue, put_acl, v1
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.engines.broker.state import BrokerEngine

ADMIN_PASSWORD = "broker-admin-pw-91x"
VHOSTS = {
    "/orders": {"configure": "", "write": "^orders\\..*", "read": ".*"},
    "/": {"configure": ".*", "write": ".*", "read": ".*"},
}
TOPICS = {"/orders": {"amq.topic": {"write": "^orders\\..*", "read": ""}}}


def engine(sandbox: Sandbox, mount: str = "broker") -> BrokerEngine:
    backend = sandbox.secrets.mounts.engine(mount).backend
    assert isinstance(backend, BrokerEngine)
    return backend


def connect(api: httpx.Client, mount: str = "broker", **extra: object) -> httpx.Response:
    body: dict[str, object] = {
        "connection_uri": "http://rabbit.internal:15672",
        "username": "admin",
        "password": ADMIN_PASSWORD,
    }
    body.update(extra)
    return api.post(f"{mount}/config/connection", json=body)


def role(api: httpx.Client, name: str = "app", mount: str = "broker", **body: object):
    sent = {"tags": "management", "vhosts": json.dumps(VHOSTS), "vhost_topics": json.dumps(TOPICS)}
    sent.update({k: v for k, v in body.items()})
    return api.post(f"{mount}/roles/{name}", json=sent)


# -- configuration ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"connection_uri": ""}, "missing connection_uri"),
        ({"username": ""}, "missing username"),
        ({"password": ""}, "missing password"),
        ({"connection_uri": "amqp://rabbit:5672"}, "unsupported protocol scheme 'amqp'"),
        ({"connection_uri": "http://"}, "no host in connection_uri"),
        ({"verify_connection": "sometimes"}, "verify_connection"),
    ],
)
def test_a_bad_connection_is_refused_naming_the_field_and_the_old_one_stays(
    api, sandbox, body, fragment
):
    assert connect(api).status_code == 204
    kept = engine(sandbox).connection
    assert_error(connect(api, **body), 400, fragment)
    assert engine(sandbox).connection == kept


def test_without_verification_any_uri_is_stored(api, sandbox):
    assert connect(api, connection_uri="amqp://rabbit", verify_connection=False).status_code == 204
    assert engine(sandbox).connection is not None
    assert engine(sandbox).connection.connection_uri == "amqp://rabbit"


def test_the_connection_cannot_be_read_back(api):
    connect(api)
    answer = api.get("broker/config/connection")
    assert answer.status_code == 405
    assert ADMIN_PASSWORD not in answer.text


def test_the_lease_setting_is_written_and_read_in_seconds(api):
    assert api.post("brokers/none/config/lease").status_code == 404  # no such mount
    assert api.post("sys/mounts/mq", json={"type": "rabbitmq"}).status_code == 204
    assert api.get("mq/config/lease").status_code == 404
    assert api.post("mq/config/lease", json={"ttl": "30m", "max_ttl": 7200}).status_code == 204
    assert api.get("mq/config/lease").json()["data"] == {"ttl": 1800, "max_ttl": 7200}
    assert_error(api.post("mq/config/lease", json={"ttl": "3h", "max_ttl": "1h"}), 400, "ttl")
    assert_error(api.post("mq/config/lease", json={"ttl": "often"}), 400, "ttl")
    assert api.get("mq/config/lease").json()["data"] == {"ttl": 1800, "max_ttl": 7200}


# -- roles -----------------------------------------------------------------------------


def test_a_role_reads_back_with_its_permission_maps(api):
    assert role(api).status_code == 204
    assert api.get("broker/roles/app").json()["data"] == {
        "tags": "management",
        "vhosts": VHOSTS,
        "vhost_topics": TOPICS,
    }
    assert "app" in api.request("LIST", "broker/roles").json()["data"]["keys"]
    assert api.delete("broker/roles/app").status_code == 204
    assert api.get("broker/roles/app").status_code == 404


def test_tags_alone_or_vhosts_alone_make_a_role(api):
    assert role(api, "tagged", vhosts="", vhost_topics="").status_code == 204
    assert role(api, "vhosted", tags="", vhost_topics="").status_code == 204
    assert api.get("broker/roles/tagged").json()["data"]["vhosts"] == {}


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"tags": "", "vhosts": ""}, "both tags and vhosts not specified"),
        ({"vhosts": "{not json"}, "failed to unmarshal vhosts"),
        ({"vhosts": '["/"]'}, "vhosts: expected a JSON object"),
        ({"vhosts": '{"/": "all"}'}, "vhosts: '/' must be an object"),
        ({"vhosts": '{"/": {"configure": 1}}'}, "vhosts: '/'.configure must be a string"),
        ({"vhosts": '{"/": {"delete": ".*"}}'}, "vhosts: '/' has unknown key 'delete'"),
        ({"vhosts": '{"/": {"read": "("}}'}, "vhosts: '/'.read is not a valid pattern"),
        ({"vhosts": {"/": {"read": ".*"}}}, "vhosts: expected a string holding a JSON object"),
        ({"vhost_topics": "nope"}, "failed to unmarshal vhost_topics"),
        ({"vhost_topics": '{"/": {"amq.topic": ".*"}}'}, "vhost_topics: '/' / 'amq.topic' must be"),
        ({"vhost_topics": '{"/": {"x": {"configure": ""}}}'}, "unknown key 'configure'"),
        ({"vhost_topics": '{"/": []}'}, "vhost_topics: '/' must be an object of exchange"),
        ({"tags": ["a"]}, "tags: expected a string"),
    ],
)
def test_a_bad_role_is_refused_naming_the_field_and_changes_nothing(api, body, fragment):
    assert role(api).status_code == 204
    before = api.get("broker/roles/app").json()["data"]
    assert_error(role(api, **body), 400, fragment)
    assert api.get("broker/roles/app").json()["data"] == before


# -- creds -------------------------------------------------------------------------------


def test_creds_create_a_broker_user_with_the_roles_permissions(api, sandbox):
    connect(api)
    role(api, tags="management,policymaker")
    api.post("broker/config/lease", json={"ttl": 600, "max_ttl": 3600})
    answer = api.get("broker/creds/app").json()
    username, password = answer["data"]["username"], answer["data"]["password"]
    assert username.startswith("root-")
    assert len(password) == 36 and password.isalnum()
    assert answer["lease_id"].startswith("broker/creds/app/")
    assert answer["renewable"] is True and answer["lease_duration"] == 600
    user = engine(sandbox).users()[username]
    assert user.tags == ["management", "policymaker"]
    assert user.permissions == VHOSTS and user.topic_permissions == TOPICS
    renewed = api.put("sys/leases/renew", json={"lease_id": answer["lease_id"], "increment": 7200})
    assert renewed.json()["lease_duration"] <= 3600


def test_without_a_lease_setting_creds_get_the_mount_ttl(api):
    api.post("sys/mounts/mq", json={"type": "rabbitmq", "config": {"default_lease_ttl": "2h"}})
    connect(api, mount="mq")
    role(api, mount="mq")
    answer = api.get("mq/creds/app").json()
    assert answer["lease_duration"] == 7200
    assert answer["lease_id"].startswith("mq/creds/app/")


def test_revoking_the_lease_deletes_the_broker_user(api, sandbox):
    connect(api)
    role(api)
    answer = api.get("broker/creds/app").json()
    username = answer["data"]["username"]
    assert username in engine(sandbox).users()
    revoked = api.put("sys/leases/revoke", json={"lease_id": answer["lease_id"], "sync": True})
    assert revoked.status_code == 204
    assert username not in engine(sandbox).users()


def test_the_connections_password_policy_shapes_the_passwords(api):
    policy = 'length = 12\nrule "charset" {\n  charset = "abc"\n  min-chars = 1\n}\n'
    api.post("sys/policies/password/abc-only", json={"policy": policy})
    connect(api, password_policy="abc-only")
    role(api)
    password = api.get("broker/creds/app").json()["data"]["password"]
    assert len(password) == 12 and set(password) <= set("abc")
    api.delete("sys/policies/password/abc-only")
    assert_error(api.get("broker/creds/app"), 400, "policy does not exist")


def test_creds_are_refused_for_an_unknown_role_or_without_a_connection(api):
    api.post("sys/mounts/mq", json={"type": "rabbitmq"})
    role(api, mount="mq")
    assert_error(api.get("mq/creds/nobody"), 400, "unknown role: nobody")
    assert_error(
        api.get("mq/creds/app"), 400, "no connection is configured at mq/config/connection"
    )
    assert api.request("LIST", "mq/roles").json()["data"]["keys"] == ["app"]


def test_the_demo_broker_has_roles_and_live_creds(demo_api):
    keys = demo_api.request("LIST", "broker/roles").json()["data"]["keys"]
    assert {"producer", "consumer", "monitoring", "ops-admin"} <= set(keys)
    live = demo_api.request("LIST", "sys/leases/lookup/broker/creds/producer").json()["data"]
    assert "demoLiveProducer00000001" in live["keys"]


# -- access and secrecy ---------------------------------------------------------------------


def test_role_writes_need_update_as_this_engine_knows_no_create(api, sandbox):
    put_acl(api, "mq-create", 'path "broker/roles/*" { capabilities = ["create"] }')
    put_acl(api, "mq-update", 'path "broker/roles/*" { capabilities = ["update"] }')
    with v1(sandbox, issue(api, policies=["mq-create"])) as creator:
        assert_error(role(creator, "fresh"), 403, "permission denied")
    with v1(sandbox, issue(api, policies=["mq-update"])) as updater:
        assert role(updater, "fresh").status_code == 204


def test_no_answer_or_error_carries_a_password(api, sandbox):
    connect(api)
    role(api)
    password = api.get("broker/creds/app").json()["data"]["password"]
    answers = [
        api.get("broker/roles/app"),
        connect(api, connection_uri="ftp://admin:" + ADMIN_PASSWORD + "@x"),
        api.request("LIST", "sys/leases/lookup/broker/creds/app"),
    ]
    for answer in answers:
        assert ADMIN_PASSWORD not in answer.text and password not in answer.text
    assert ADMIN_PASSWORD not in repr(engine(sandbox).connection)
