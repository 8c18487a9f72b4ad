"""The toolkit's broker engine calls and frames on a real OpenBao with a real RabbitMQ:
a role with vhost permissions, credentials that really connect, revocation that deletes
the user."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.openbao import OpenBao
from tests.servers.rabbitmq import RabbitMQ
from toolkit import Sensitive
from toolkit.secrets import SecretsClient
from toolkit.secrets.broker import Broker

MOUNT = "mq-toolkit"
VHOST = "app"


@pytest.fixture(scope="module")
def engine(bao: OpenBao, rabbitmq: RabbitMQ) -> Iterator[Broker]:
    with rabbitmq.management() as admin:
        assert admin.put(f"vhosts/{VHOST}").status_code in (201, 204)
    with SecretsClient(bao.address, bao.token) as client:
        client.enable_engine(MOUNT, "rabbitmq")
        broker = client.broker.at(MOUNT)
        broker.configure_connection(
            rabbitmq.management_url, rabbitmq.user, Sensitive(rabbitmq.password, "password")
        )
        yield broker


def amqp_connects(rabbitmq: RabbitMQ, user: str, password: str, vhost: str = VHOST) -> bool:
    """Open a real AMQP connection and a channel, declare and delete a queue."""
    import pika
    import pika.exceptions

    params = pika.ConnectionParameters(
        host="127.0.0.1",
        port=rabbitmq.port,
        virtual_host=vhost,
        credentials=pika.PlainCredentials(user, password),
        connection_attempts=1,
        socket_timeout=5,
    )
    try:
        connection = pika.BlockingConnection(params)
    except pika.exceptions.AMQPError:
        return False
    try:
        channel = connection.channel()
        channel.queue_declare("toolkit-check", auto_delete=True)
        channel.queue_delete("toolkit-check")
        return True
    finally:
        connection.close()


def test_lease_settings_are_written_and_read_back(engine: Broker) -> None:
    assert engine.configure_lease("30m", "2h") == {"ttl": 1800, "max_ttl": 7200}
    assert engine.read_lease() == {"ttl": 1800, "max_ttl": 7200}


def test_a_role_with_vhost_permissions_issues_users_that_really_connect(
    bao_client: SecretsClient, engine: Broker, rabbitmq: RabbitMQ
) -> None:
    perms = {"configure": "toolkit-.*", "write": "toolkit-.*", "read": ".*"}
    role = engine.write_role(
        "app-user",
        tags=["management"],
        vhosts={VHOST: perms},
        vhost_topics={VHOST: {"amq.topic": {"write": "events.*", "read": ".*"}}},
    )
    assert role["tags"] == ["management"] and role["vhosts"] == {VHOST: perms}
    assert "app-user" in engine.list_roles()
    frame = engine.vhost_permissions()
    assert frame[frame["role"] == "app-user"]["configure"].tolist() == ["toolkit-.*"]
    assert engine.topic_permissions()["exchange"].tolist() == ["amq.topic"]
    assert engine.roles_frame().loc["app-user", "vhosts"] == 1

    creds = engine.generate_credentials("app-user")
    assert isinstance(creds["password"], Sensitive) and creds["renewable"] is True
    user, password = creds["username"], creds["password"].reveal()
    assert amqp_connects(rabbitmq, user, password)
    assert not amqp_connects(rabbitmq, user, password, vhost="/")  # no permissions there
    with rabbitmq.management(user, password) as own:
        assert own.get("whoami").json() == {"name": user, "tags": ["management"]}
    with rabbitmq.management() as admin:
        granted = admin.get(f"users/{user}/permissions").json()
        assert [(p["vhost"], p["configure"], p["write"], p["read"]) for p in granted] == [
            (VHOST, "toolkit-.*", "toolkit-.*", ".*")
        ]
        topics = admin.get(f"users/{user}/topic-permissions").json()
        assert [(t["exchange"], t["write"]) for t in topics] == [("amq.topic", "events.*")]

    assert creds["lease_id"] in bao_client.leases.leases_by_mount(mounts=[f"{MOUNT}/"]).index
    bao_client.leases.revoke(creds["lease_id"])
    with rabbitmq.management() as admin:
        assert admin.get(f"users/{user}").status_code == 404
    assert not amqp_connects(rabbitmq, user, password)


def test_a_deleted_role_issues_nothing_more(engine: Broker) -> None:
    engine.write_role("short-lived", vhosts={VHOST: {"configure": "", "write": "", "read": ".*"}})
    engine.delete_role("short-lived")
    assert "short-lived" not in engine.list_roles()
