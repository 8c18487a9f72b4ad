"""The secrets server's route table: every area's routes, under /v1."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.routing import Route

if TYPE_CHECKING:
    from .models import SecretsService


def routes(service: SecretsService) -> list[Route]:
    table: list[Route] = []
    return table
