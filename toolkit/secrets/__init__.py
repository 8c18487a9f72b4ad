"""The secrets-management server (spec 001): client, system areas and views."""

from .ceremony import RekeyCeremony
from .client import SecretsClient

__all__ = ["RekeyCeremony", "SecretsClient"]
