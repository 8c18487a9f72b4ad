"""The workspace automation platform (spec 000): client, areas and views."""

from .client import PlatformClient

__all__ = ["PlatformClient"]
