"""Tokens (``auth/token/*``): the area and its features, one module each.

- :mod:`.area`: :class:`Tokens`, the calls (``client.tokens``) and :func:`token_findings`;
- :mod:`.sprawl`: every token by accessor, streamed and resumable, and its summaries;
- :mod:`._common`: the inventory's columns and one token's row.

The features take the HTTP layer, never the area.
"""

from __future__ import annotations

from ._common import TOKEN_INVENTORY
from .area import TOKEN_ROLES, Tokens, token_findings
from .sprawl import TOKEN_SPRAWL, TokenScan, policies_carried, token_sprawl, widest_access

__all__ = [
    "TOKEN_INVENTORY",
    "TOKEN_ROLES",
    "TOKEN_SPRAWL",
    "TokenScan",
    "Tokens",
    "policies_carried",
    "token_findings",
    "token_sprawl",
    "widest_access",
]
