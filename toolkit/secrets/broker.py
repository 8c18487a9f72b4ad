"""Calls of the message-broker engine (spec 4.9), against any mount (default ``broker``)."""

from __future__ import annotations

from ._base import EngineArea

__all__ = ["Broker"]


class Broker(EngineArea):
    """The message-broker engine (spec 4.9); ``client.broker.at(path)`` for another mount."""

    DEFAULT_MOUNT = "broker"
