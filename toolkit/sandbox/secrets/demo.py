"""The secrets server's demo data set: deterministic, written against the sandbox clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import SecretsService


def load_demo(service: SecretsService) -> None:
    """Fill ``service`` with the demo data of every area."""
