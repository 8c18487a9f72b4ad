"""The message-broker engine through the client: each call, the permission views, hidden secrets."""

from __future__ import annotations

import logging

import pytest

from toolkit import BadRequest, InputError, Sensitive
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.engines.broker.state import BrokerEngine
from toolkit.secrets import SecretsClient
from toolkit.secrets.broker import BROKER_ROLES, TOPIC_PERMISSIONS, VHOST_PERMISSIONS

VHOSTS = {"/jobs": {"configure": "^jobs-.*", "write": "^jobs-.*", "read": ".*"}}
TOPICS = {"/jobs": {"amq.topic": {"write": "^jobs\\.", "read": ""}}}


def state(sandbox: Sandbox, mount: str = "broker") -> BrokerEngine:
    backend = sandbox.secrets.mounts.engine(mount).backend
    assert isinstance(backend, BrokerEngine)
    return backend


def fresh_mount(client: SecretsClient, path: str = "mq"):
    client.enable_engine(path, "rabbitmq")
    return client.broker.at(path)


# -- views on the demo data --------------------------------------------------------------


def test_the_roles_frame_counts_vhosts_and_exchanges(demo_client):
    frame = demo_client.broker.roles_frame()
    assert list(frame.columns) == BROKER_ROLES.names[1:] and frame.index.name == "name"
    assert frame.loc["producer", "vhosts"] == 2 and frame.loc["producer", "exchanges"] == 1
    assert frame.loc["consumer", "exchanges"] == 2
    assert frame.loc["monitoring", "tags"] == ["monitoring"]
    assert frame.loc["ops-admin", "tags"] == ["administrator", "management"]


def test_vhost_permissions_have_one_row_per_role_and_vhost(demo_client):
    frame = demo_client.broker.vhost_permissions()
    assert list(frame.columns) == VHOST_PERMISSIONS.names
    producer = frame[frame["role"] == "producer"].set_index("vhost")
    assert list(producer.index) == ["/billing", "/orders"]
    assert producer.loc["/orders", ["configure", "write", "read"]].tolist() == [
        "",
        "^orders\\..*",
        "",
    ]
    assert len(frame[frame["role"] == "ops-admin"]) == 3
    monitoring = frame[frame["role"] == "monitoring"]
    assert len(monitoring) == 1 and monitoring["vhost"].isna().all()
    assert monitoring["tags"].iloc[0] == "monitoring"
    assert str(frame["vhost"].dtype) == "string"


def test_topic_permissions_have_one_row_per_role_vhost_and_exchange(demo_client):
    frame = demo_client.broker.topic_permissions()
    assert list(frame.columns) == TOPIC_PERMISSIONS.names
    consumer = frame[frame["role"] == "consumer"]
    assert consumer[["vhost", "exchange", "write", "read"]].values.tolist() == [
        ["/orders", "amq.topic", "", "^orders\\..*"],
        ["/orders", "events", "", ".*"],
    ]
    assert set(frame["role"]) == {"producer", "consumer"}


def test_the_views_are_empty_with_their_columns_on_a_fresh_mount(client):
    mq = fresh_mount(client)
    assert mq.list_roles() == []
    assert mq.roles_frame().empty and list(mq.roles_frame().columns) == BROKER_ROLES.names[1:]
    assert mq.vhost_permissions().empty
    assert list(mq.topic_permissions().columns) == TOPIC_PERMISSIONS.names
    assert mq.read_lease() is None


# -- calls ----------------------------------------------------------------------------------


def test_a_role_written_with_maps_reads_back_the_same(client):
    mq = fresh_mount(client)
    role = mq.write_role("jobs", tags=["management"], vhosts=VHOSTS, vhost_topics=TOPICS)
    assert role == {
        "name": "jobs",
        "tags": ["management"],
        "vhosts": VHOSTS,
        "vhost_topics": TOPICS,
    }
    assert mq.list_roles() == ["jobs"]
    mq.delete_role("jobs")
    assert mq.list_roles() == []


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"vhosts": {"/": {"configure": ".*", "admin": ".*"}}},
        {"vhosts": {"/": {"read": 1}}},
        {"vhosts": {"/": ".*"}},
        {"tags": "x", "vhost_topics": {"/": {"amq.topic": {"configure": ".*"}}}},
        {"tags": "x", "vhost_topics": {"/": ["amq.topic"]}},
    ],
)
def test_a_bad_role_is_refused_before_anything_is_sent(client, sandbox, options):
    with pytest.raises(InputError):
        client.broker.write_role("bad", **options)
    assert "bad" not in state(sandbox).roles


def test_the_servers_refusal_of_a_bad_json_string_reaches_the_caller(client, sandbox):
    with pytest.raises(BadRequest, match="failed to unmarshal vhosts"):
        client.broker.write_role("bad", vhosts="{oops")
    assert "bad" not in state(sandbox).roles


def test_connection_lease_and_creds_through_the_client(client, sandbox):
    mq = fresh_mount(client)
    mq.configure_connection(
        "http://rabbit:15672", "admin", Sensitive("admin-secret", "password"), password_policy=""
    )
    assert state(sandbox, "mq").connection.password == "admin-secret"
    assert mq.configure_lease("10m", 3600) == {"ttl": 600, "max_ttl": 3600}
    mq.write_role("jobs", vhosts=VHOSTS)
    creds = mq.generate_credentials("jobs")
    assert isinstance(creds["password"], Sensitive) and len(creds["password"]) == 36
    assert creds["password"].reveal() not in repr(creds)
    assert creds["lease_id"].startswith("mq/creds/jobs/") and creds["lease_duration"] == 600
    assert state(sandbox, "mq").users()[creds["username"]].permissions == VHOSTS
    client.leases.revoke(creds["lease_id"])
    assert creds["username"] not in state(sandbox, "mq").users()


def test_bad_connection_input_is_refused_before_sending(client, sandbox):
    kept = state(sandbox).connection
    with pytest.raises(InputError):
        client.broker.configure_connection("http://rabbit:15672", "admin", "")
    with pytest.raises(InputError):
        client.broker.configure_connection("", "admin", "pw")
    with pytest.raises(BadRequest, match="unsupported protocol scheme"):
        client.broker.configure_connection("amqp://rabbit", "admin", "pw")
    assert state(sandbox).connection == kept


def test_the_demo_broker_issues_creds_with_its_password_policy(client):
    creds = client.broker.generate_credentials("producer")
    assert len(creds["password"]) == 20  # the demo connection's alnum-20 policy
    assert creds["lease_duration"] == 3600


def test_nothing_the_client_returns_raises_or_logs_shows_a_password(client, sandbox, caplog):
    caplog.set_level(logging.DEBUG)
    mq = fresh_mount(client)
    mq.configure_connection("http://rabbit:15672", "admin", "admin-secret-77")
    outputs: list[object] = [mq.write_role("jobs", vhosts=VHOSTS, vhost_topics=TOPICS)]
    creds = mq.generate_credentials("jobs")
    outputs += [creds, mq.roles_frame(), mq.vhost_permissions(), mq.topic_permissions()]
    try:
        mq.configure_connection("ftp://admin:admin-secret-77@x", "admin", "admin-secret-77")
    except BadRequest as exc:
        outputs.append(exc)
    text = "".join(repr(o) + str(o) for o in outputs) + caplog.text
    for secret in ("admin-secret-77", creds["password"].reveal()):
        assert secret not in text
