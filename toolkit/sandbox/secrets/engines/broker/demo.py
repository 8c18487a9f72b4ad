"""Demo data of the message-broker engine at ``broker/``: written through the engine.

The management API connection, a lease setting, the ``producer`` and
``consumer`` roles the demo leases name plus a monitoring and an operations
role, with permissions over three virtual hosts and topic permissions on
their exchanges, and a few live creds leases issued at the clock's start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._credentials import Requester
from ...backends import demo_at
from .state import BrokerEngine

if TYPE_CHECKING:
    from ...host import EngineHost

__all__ = ["load_demo"]

_ROLES: dict[str, dict[str, object]] = {
    "producer": {
        "vhosts": {
            "/orders": {"configure": "", "write": "^orders\\..*", "read": ""},
            "/billing": {"configure": "", "write": "^invoices$", "read": ""},
        },
        "vhost_topics": {
            "/orders": {"amq.topic": {"write": "^orders\\.(created|paid)$", "read": ""}},
        },
    },
    "consumer": {
        "vhosts": {
            "/orders": {"configure": "^consumer-.*", "write": "^consumer-.*", "read": ".*"},
        },
        "vhost_topics": {
            "/orders": {
                "amq.topic": {"write": "", "read": "^orders\\..*"},
                "events": {"write": "", "read": ".*"},
            },
        },
    },
    "monitoring": {"tags": "monitoring"},
    "ops-admin": {
        "tags": "administrator,management",
        "vhosts": {
            "/": {"configure": ".*", "write": ".*", "read": ".*"},
            "/orders": {"configure": ".*", "write": ".*", "read": ".*"},
            "/billing": {"configure": ".*", "write": ".*", "read": ".*"},
        },
    },
}

# (role, lease id suffix, display name of the token that asked)
_LIVE_CREDS = (
    ("producer", "demoLiveProducer00000001", "token-orders-api"),
    ("producer", "demoLiveProducer00000002", "token-orders-api"),
    ("consumer", "demoLiveConsumer00000001", "token-orders-worker"),
)


@demo_at("broker", BrokerEngine)
def load_demo(service: EngineHost, broker: BrokerEngine) -> None:
    """Fill the ``broker/`` mount with the demo set."""
    start = service.clock.start.replace(microsecond=0)
    broker.configure_connection(
        connection_uri="https://rabbitmq.internal:15671",
        username="vault-admin",
        password="demo-broker-root",
        password_policy="alnum-20",
    )
    broker.configure_lease(ttl=3600, max_ttl=24 * 3600)
    for name, role in _ROLES.items():
        broker.write_role(
            name,
            tags=str(role.get("tags", "")),
            vhosts=role.get("vhosts"),
            vhost_topics=role.get("vhost_topics"),
        )
    for role_name, suffix, display_name in _LIVE_CREDS:
        broker.issue_creds(role_name, Requester(display_name, issued_at=start, lease_suffix=suffix))
