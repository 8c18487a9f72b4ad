"""What the credential engines (database, message broker) share: password generation."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .errors import SecretsError

if TYPE_CHECKING:
    from .models import SecretsService

__all__ = ["generate_password"]


def generate_password(
    service: SecretsService, policy: str, fallback: Callable[[], str], prefix: str = ""
) -> str:
    """A password from the named password policy, else from ``fallback``.

    A policy deleted since it was configured is a 400 (``prefix`` names the
    step that failed), as the engine's request cannot be served.
    """
    if not policy:
        return fallback()
    try:
        return service.password_policies.generate(policy)
    except SecretsError as exc:
        raise SecretsError(400, prefix + "; ".join(exc.messages)) from None
