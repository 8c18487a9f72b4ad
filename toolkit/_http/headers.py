"""A request's headers: where each is kept, and what cannot be sent.

A credential (a :class:`~toolkit.Sensitive`, or a header whose name says it is one) is
kept apart from the plain headers and revealed only in the coroutine that sends it; a
header with a line break or a NUL is refused before anything leaves, naming the header,
never its value.
"""

from __future__ import annotations

from .._errors import InputError
from .._masking import Sensitive

__all__ = ["check_header", "put_header"]


def put_header(
    plain: dict[str, str],
    secret: dict[str, Sensitive],
    name: str,
    value: str | Sensitive | None,
    credentials: frozenset[str],
) -> None:
    """Set ``name`` in whichever map it belongs to (a Sensitive value, or a header
    named in ``credentials``: hidden), or remove it."""
    plain.pop(name, None)
    secret.pop(name, None)
    if value is None:
        return
    check_header(name, value)
    if isinstance(value, Sensitive):
        secret[name] = value
    elif name.lower() in credentials:
        secret[name] = Sensitive(value, "credential")
    else:
        plain[name] = value


# What a header cannot carry: a line break would end it (and start another), a
# NUL is refused by servers; aiohttp refuses the first two before sending.
HEADER_BREAKS = ("\r", "\n", "\x00")


def check_header(name: str, value: str | Sensitive) -> None:
    """Refuse a header that cannot be sent, naming it (never its value)."""
    # The verdict comes from a call that has returned: no frame of this raise holds
    # a credential's plain value for a traceback's locals to show.
    what = _unsendable(value)
    if what:
        raise InputError(
            f"the {name} header {what}; remove it (a value read from a file "
            "often ends with a newline: strip it)"
        )
    if not name or any(c in name for c in (*HEADER_BREAKS, ":", " ")):
        raise InputError(f"the header name {name!r} cannot be sent")


def _unsendable(value: str | Sensitive) -> str:
    """What makes ``value`` unsendable as a header ("" when nothing does)."""
    text = value.reveal() if isinstance(value, Sensitive) else value
    if not isinstance(text, str):
        return "is not text"
    return "holds a line break or NUL" if any(c in text for c in HEADER_BREAKS) else ""
