"""The one error type of the platform sandbox's logic.

:class:`PlatformError` carries the HTTP status and the JSON:API error objects
(``status``, ``title``, ``detail``, ``source.pointer`` or ``source.parameter``)
that the HTTP layer renders as ``{"errors": [...]}``. The logic raises it; the
handlers never build error bodies themselves.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "PlatformError",
    "bad_parameter",
    "invalid",
    "not_found",
    "unauthorized",
]


class PlatformError(Exception):
    """A refusal: ``status`` and the JSON:API error objects to answer with."""

    def __init__(self, status: int, errors: list[dict[str, Any]]) -> None:
        self.status = status
        self.errors = errors
        super().__init__("; ".join(str(e.get("detail") or e.get("title")) for e in errors))

    @classmethod
    def one(
        cls,
        status: int,
        title: str,
        detail: str | None = None,
        *,
        pointer: str | None = None,
        parameter: str | None = None,
    ) -> PlatformError:
        """An error with a single error object."""
        obj: dict[str, Any] = {"status": str(status), "title": title}
        if detail is not None:
            obj["detail"] = detail
        if pointer is not None:
            obj["source"] = {"pointer": pointer}
        elif parameter is not None:
            obj["source"] = {"parameter": parameter}
        return cls(status, [obj])


def not_found() -> PlatformError:
    """404, the same for a missing record and one the caller may not see (spec part 5)."""
    return PlatformError.one(404, "not found")


def unauthorized(detail: str) -> PlatformError:
    """401 for a missing or unknown token."""
    return PlatformError.one(401, "unauthorized", detail)


def invalid(detail: str, pointer: str | None = None) -> PlatformError:
    """422 for a body that is malformed or breaks a rule; ``pointer`` names the member."""
    return PlatformError.one(422, "invalid attribute", detail, pointer=pointer)


def bad_parameter(title: str, detail: str, parameter: str) -> PlatformError:
    """400 for a query parameter the service cannot use (an unknown ``include``, ``sort``)."""
    return PlatformError.one(400, title, detail, parameter=parameter)
