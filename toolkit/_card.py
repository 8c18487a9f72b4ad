"""The connection card a client shows in Jupyter: where it points, what answers, who it is.

Both clients gather a :class:`~toolkit.Record` of facts (``connection()``) and
render it here. Rendering never raises and never shows a token: the facts come
from the server's answers (a token's display name, policies and ttl), never
from the client's headers, and every value is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._masking import Sensitive

__all__ = ["connection_card", "format_duration", "format_seconds", "render_card"]

# Shown in this order when present; other fields follow as they come.
_LABELS: dict[str, str] = {
    "address": "address",
    "state": "state",
    "problem": "problem",
    "version": "server version",
    "api_version": "API version",
    "app": "application",
    "cluster": "cluster",
    "namespace": "namespace",
    "organizations": "organizations",
    "seal": "seal",
    "authenticated": "token accepted",
    "token_owner": "token owner",
    "display_name": "token name",
    "policies": "policies",
    "ttl": "token ttl",
    "expire_time": "token expires",
}
_COLOURS = {"ok": "#1a7f37", "warn": "#9a6700", "down": "#cf222e"}


def format_seconds(seconds: Any) -> str:
    """``3d 4h``, ``2h 30m``, ``45s``; ``0`` or nothing reads as "never expires"."""
    try:
        total = int(seconds)
    except (TypeError, ValueError):
        return "unknown"
    if total <= 0:
        return "never expires"
    return _two_units(total)


def format_duration(value: Any) -> str:
    """A duration (a ``timedelta``, pandas ``Timedelta`` or seconds) as people write
    it: ``6h 11m``, ``3d 4h``, ``45s``, ``0s``; ``-2m`` for a negative one; ``""``
    for a missing value. Never ``0 days 06:11:43.508485``."""
    if value is None or type(value).__name__ == "NaTType" or value != value:
        return ""
    seconds = value.total_seconds() if hasattr(value, "total_seconds") else value
    try:
        total = int(round(float(seconds)))
    except (TypeError, ValueError):
        return str(value)
    sign = "-" if total < 0 else ""
    return sign + (_two_units(abs(total)) or "0s")


def _two_units(total: int) -> str:
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [
        f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")) if n
    ]
    # The two largest units are precise enough to judge a remaining life or an age.
    return " ".join(parts[:2])


def _text(value: Any) -> str:
    if isinstance(value, Sensitive):
        return value._repr_html_()
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "—"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return html.escape(", ".join(str(v) for v in value) or "none")
    return html.escape(str(value))


def render_card(title: str, facts: Mapping[str, Any], health: str) -> str:
    """An HTML table of ``facts`` under ``title``, with a dot coloured by ``health``
    (``ok``, ``warn`` or ``down``)."""
    colour = _COLOURS.get(health, _COLOURS["warn"])
    ordered = [k for k in _LABELS if k in facts] + [k for k in facts if k not in _LABELS]
    rows = "".join(
        "<tr><th style='text-align:left;padding-right:1em'>"
        f"{html.escape(_LABELS.get(k, k.replace('_', ' ')))}</th>"
        f"<td style='text-align:left'>{_text(facts[k])}</td></tr>"
        for k in ordered
    )
    return (
        "<div class='toolkit-connection'>"
        f"<div><span style='color:{colour}'>&#9679;</span> <b>{html.escape(title)}</b></div>"
        f"<table>{rows}</table></div>"
    )


def connection_card(
    title: str, address: str, read: Callable[[], Mapping[str, Any]], healthy_state: str
) -> str:
    """A client's card from ``read()`` (its ``connection()``); never raises.

    Green when the server is in ``healthy_state`` and the token is accepted, red
    when nothing answers, amber otherwise (sealed, standby, token refused).
    """
    try:
        facts: dict[str, Any] = dict(read())
    except Exception as exc:  # noqa: BLE001 - a card in a notebook must never raise
        facts = {"address": address, "problem": f"{type(exc).__name__}: {exc}"}
    ok = facts.get("state") == healthy_state and facts.get("authenticated") is True
    down = facts.get("state") in (None, "unreachable")
    return render_card(title, facts, "down" if down else "ok" if ok else "warn")
