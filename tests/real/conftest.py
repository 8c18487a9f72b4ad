"""Fixtures that start the real servers (OpenBao, PostgreSQL, RabbitMQ) for the slow suite.

A server whose binary is missing fails the test in CI (``CI`` set) and skips it
elsewhere, with a message that says how to install it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TypeVar

import pytest

from tests.servers import ServerMissing
from tests.servers.openbao import OpenBao
from tests.servers.postgres import Postgres
from tests.servers.rabbitmq import RabbitMQ
from toolkit.secrets import SecretsClient

S = TypeVar("S", bound=AbstractContextManager[object])


def missing(reason: str) -> None:
    """Fail in CI, skip elsewhere: a real server (or its Python client) is not installed."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must have it)", pytrace=False)
    pytest.skip(reason)


def launch(factory: Callable[[], S]) -> S:
    try:
        return factory()
    except ServerMissing as exc:
        missing(str(exc))
        raise  # unreachable: missing() fails or skips


def require_module(name: str) -> None:
    """Import ``name`` (a real server's Python client) or fail / skip as :func:`missing` says."""
    try:
        __import__(name)
    except ImportError:
        missing(f"the Python package {name!r} is not installed: run `make setup`")


@pytest.fixture(scope="session")
def bao() -> Iterator[OpenBao]:
    """A real OpenBao dev server for the whole session (root token ``bao.token``)."""
    with launch(OpenBao) as server:
        yield server


@pytest.fixture
def bao_client(bao: OpenBao) -> Iterator[SecretsClient]:
    """The toolkit's secrets client on the session's real OpenBao, as root."""
    with SecretsClient(bao.address, bao.token) as client:
        yield client


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A real PostgreSQL cluster for the whole session."""
    require_module("psycopg")
    with launch(Postgres) as server:
        yield server


@pytest.fixture(scope="session")
def rabbitmq() -> Iterator[RabbitMQ]:
    """A real RabbitMQ node with the management plugin for the whole session."""
    require_module("pika")
    with launch(RabbitMQ) as server:
        yield server


@pytest.fixture(params=[True, False], ids=["legacy-rekey", "rotate-root"])
def raft_bao(request: pytest.FixtureRequest) -> Iterator[OpenBao]:
    """A fresh initialised, unsealed raft OpenBao (5 shares, threshold 3), started with and
    without the listener option that re-enables the legacy ``sys/rekey/*`` endpoints."""
    with launch(lambda: OpenBao(dev=False, legacy_rekey=request.param)) as server:
        yield server


@pytest.fixture(params=[True, False], ids=["legacy-rekey", "rotate-only"])
def static_seal_bao(request: pytest.FixtureRequest) -> Iterator[OpenBao]:
    """A fresh raft OpenBao with a ``seal "static"`` stanza (auto-unseal): 5 recovery shares,
    threshold 3, with and without the legacy rekey endpoints."""
    with launch(lambda: OpenBao(dev=False, legacy_rekey=request.param, static_seal=True)) as server:
        yield server


DATABASE_MOUNT = "database"
DATABASE_CONNECTION = "pg"


@pytest.fixture(scope="session")
def database_mount(bao: OpenBao, postgres: Postgres) -> str:
    """The database engine at ``database/`` on the session's OpenBao, with a connection
    ``pg`` to the session's PostgreSQL; returns the mount path."""
    from tests.real import _seed

    _seed.database_connection(bao, postgres, DATABASE_MOUNT, DATABASE_CONNECTION)
    return DATABASE_MOUNT
