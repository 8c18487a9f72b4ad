"""The message-broker engine (spec 4.9): its state, HTTP handlers and demo data, and its descriptor."""

from __future__ import annotations

from ...backends import Engine
from . import demo, http, state

__all__ = ["ENGINE"]

ENGINE = Engine.in_folder(
    # The real server's plugin is named for the broker it drives; the spec mounts it at broker/.
    type="rabbitmq",
    mount="broker/",
    description="message broker credentials",
    state=state.BrokerEngine,
    http=http,
    demo=demo,
)
