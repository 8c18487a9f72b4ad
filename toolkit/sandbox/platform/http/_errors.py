"""JSON:API error documents of the platform sandbox: the HTTP side of every refusal.

:class:`ErrorDocument` is what the HTTP layer answers with: a status and the
members of its JSON:API error objects (``title``, ``detail``, ``source.pointer``
or ``source.parameter``; ``status`` is filled in by the one error shaper,
:func:`toolkit.sandbox._wire.error_response`). The HTTP side raises it for what only the wire can
get wrong (a body that is not a document, an attribute of the wrong JSON
type, a query parameter the service cannot use), and :func:`from_state` turns
a typed refusal of the state (:mod:`.errors`) into one, pointing at the member
of the request document that carried the value.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from ..._wire import error_response
from ..errors import (
    InUse,
    LimitReached,
    NotRemovable,
    PlatformError,
    RecordNotFound,
    RuleViolation,
    UnknownCaller,
)

__all__ = ["ErrorDocument", "bad_parameter", "from_state", "invalid", "pointer_of"]


class ErrorDocument(Exception):
    """A refusal as the wire carries it: ``status`` and the JSON:API error objects
    (their members after ``status``)."""

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
    ) -> ErrorDocument:
        """An error document with a single error object."""
        obj: dict[str, Any] = {"title": title}
        if detail is not None:
            obj["detail"] = detail
        if pointer is not None:
            obj["source"] = {"pointer": pointer}
        elif parameter is not None:
            obj["source"] = {"parameter": parameter}
        return cls(status, [obj])

    def response(self) -> JSONResponse:
        """The answer that carries this refusal."""
        return error_response("platform", self.status, *self.errors)


def invalid(detail: str, pointer: str | None = None) -> ErrorDocument:
    """422 for a body that is malformed or breaks a rule; ``pointer`` names the member."""
    return ErrorDocument.one(422, "invalid attribute", detail, pointer=pointer)


def bad_parameter(title: str, detail: str, parameter: str) -> ErrorDocument:
    """400 for a query parameter the service cannot use (an unknown ``include``, ``sort``)."""
    return ErrorDocument.one(400, title, detail, parameter=parameter)


# Where a state field that is not an attribute came from in the request document.
_RELATIONSHIP_POINTERS = {
    "allowed_workspaces": "/data/relationships/allowed-workspaces/data",
    "team": "/data/relationships/team/data/id",
    "policy_set": "/data",
}


def pointer_of(field: str | None, index: int | None = None) -> str | None:
    """The JSON pointer of the request member that carried the state's ``field``
    (attributes are spelled with hyphens: ``organization_scoped`` is
    ``/data/attributes/organization-scoped``)."""
    if field is None:
        return None
    if field == "allowed_workspaces":
        base = _RELATIONSHIP_POINTERS[field]
        return base if index is None else f"{base}/{index}/id"
    if field in _RELATIONSHIP_POINTERS:
        return _RELATIONSHIP_POINTERS[field]
    return "/data/attributes/" + field.replace("_", "-")


def from_state(exc: PlatformError) -> ErrorDocument:
    """The error document of a refusal by the state's rules."""
    detail = str(exc)
    if isinstance(exc, UnknownCaller):
        return ErrorDocument.one(401, "unauthorized", detail)
    if isinstance(exc, RecordNotFound):
        # The same answer for a missing record and one the caller may not see (spec part 5).
        return ErrorDocument.one(404, "not found")
    if isinstance(exc, RuleViolation):
        return invalid(detail, pointer_of(exc.field, exc.index))
    if isinstance(exc, LimitReached):
        return ErrorDocument.one(422, "agent pool limit reached", detail)
    if isinstance(exc, InUse):
        return ErrorDocument.one(422, "agent pool in use", detail)
    if isinstance(exc, NotRemovable):
        return ErrorDocument.one(412, "precondition failed", detail)
    # A refusal this table does not know yet is still the client's doing: 422.
    return ErrorDocument.one(422, "unprocessable", detail)
