"""Reading request fields the way the real server does, with 400s that name the field.

Every engine parses its bodies through these, so a wrong type, a bad duration
or a missing required field is always ``400`` with a message naming the field,
raised before anything changes. ``body`` is the decoded JSON object (or the
query parameters, for GET endpoints that take some).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..._time import parse_duration
from .errors import InvalidRequest, SecretsError

__all__ = [
    "boolean",
    "duration",
    "integer",
    "json_object",
    "required",
    "string",
    "string_list",
    "string_map",
]

_MISSING: Any = object()


def _bad(name: str, expected: str, value: Any) -> SecretsError:
    shown = (
        value if isinstance(value, int | float | bool) or value is None else type(value).__name__
    )
    if isinstance(value, str):
        shown = repr(value if len(value) <= 40 else value[:40] + "...")
    return InvalidRequest(f"{name}: expected {expected}, got {shown}")


def required(body: Mapping[str, Any], name: str) -> Any:
    """The value of ``name``; 400 ``missing <name>`` when absent or empty."""
    value = body.get(name)
    if value is None or value == "" or value == []:
        raise InvalidRequest(f"missing {name}")
    return value


def string(
    body: Mapping[str, Any], name: str, default: str | None = "", *, need: bool = False
) -> Any:
    """A string field (numbers are accepted as their text, as the server does)."""
    value = required(body, name) if need else body.get(name, _MISSING)
    if value is _MISSING or value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _bad(name, "a string", value)
    return str(value)


def boolean(body: Mapping[str, Any], name: str, default: bool = False) -> bool:
    """A boolean: JSON true/false, or ``true``/``false``/``1``/``0`` as text."""
    value = body.get(name, _MISSING)
    if value is _MISSING or value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "1", "false", "0", "t", "f"):
        return value.lower() in ("true", "1", "t")
    raise _bad(name, "a boolean", value)


def integer(
    body: Mapping[str, Any],
    name: str,
    default: int = 0,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    """An integer (or its text), within ``minimum``..``maximum`` when given."""
    value = body.get(name, _MISSING)
    if value is _MISSING or value is None or value == "":
        return default
    if isinstance(value, bool):
        raise _bad(name, "an integer", value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise _bad(name, "an integer", value) from None
    if not isinstance(value, int):
        raise _bad(name, "an integer", value)
    if minimum is not None and value < minimum:
        raise InvalidRequest(f"{name}: must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise InvalidRequest(f"{name}: must be at most {maximum}, got {value}")
    return value


def duration(body: Mapping[str, Any], name: str, default: int = 0) -> int:
    """A duration in seconds: an integer, or text such as ``90s``, ``1h30m``, ``24h``."""
    value = body.get(name, _MISSING)
    if value is _MISSING or value is None or value == "":
        return default
    try:
        return parse_duration(value, field=name)
    except (ValueError, TypeError) as exc:
        raise InvalidRequest(str(exc)) from None


def string_list(body: Mapping[str, Any], name: str, *, need: bool = False) -> list[str]:
    """A list of strings: a JSON array, or one comma-separated string (blanks dropped)."""
    value = required(body, name) if need else body.get(name)
    if value is None or value == "":
        return []
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = value
    else:
        raise _bad(name, "a list of strings or a comma-separated string", value)
    return [item.strip() for item in items if item.strip()]


def string_map(body: Mapping[str, Any], name: str) -> dict[str, str]:
    """A map of strings to strings (an object; null or absent is empty)."""
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise _bad(name, "a map of strings to strings", value)
    return dict(value)


def json_object(body: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A field holding a JSON object as a string (or the object itself); 400 when not one."""
    value = body.get(name)
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise InvalidRequest(f"{name}: not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise _bad(name, "a JSON object", value)
    return value
