"""The secrets server's route table: every area's routes, under /v1, then the engines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.routing import Route

from . import (
    auth_logins,
    auth_token,
    sys_capabilities,
    sys_mounts,
    sys_namespaces,
    sys_password_policies,
    sys_policies,
    sys_rekey,
    sys_seal,
)
from .engines import EnginePathsFirst, dispatcher
from .sys_leases import lease_routes
from .sys_plugins import plugin_routes

if TYPE_CHECKING:
    from ..models import SecretsService


def routes(service: SecretsService) -> list[Route]:
    table: list[Route] = []
    table += auth_token.routes(service)
    table += auth_logins.routes(service)
    table += sys_policies.routes(service)
    table += sys_password_policies.routes(service)
    table += sys_seal.routes(service)
    table += sys_rekey.routes(service)
    table += lease_routes(service)
    table += plugin_routes(service)
    table += sys_mounts.routes(service)
    table += sys_capabilities.routes(service)
    table += sys_namespaces.routes(service)
    # Last: everything under an engine mount, wherever the engine is mounted; and the
    # same first for any path outside sys/ and auth/, which no system route serves.
    engines = dispatcher(service, list(table))
    return [EnginePathsFirst(engines), *table, engines]
