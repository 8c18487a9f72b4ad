"""Policy set parameters (spec 4.2): list, show, create, update, delete.

Their state is :mod:`..parameters`; these are their endpoints and documents.
A sensitive parameter's value is written once and never shown again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from ..parameters import CATEGORY
from ._base import (
    BASE,
    PlatformRequest,
    RouteRow,
    answer,
    attribute_pointer,
    attributes,
    bool_attribute,
    listing,
    no_content,
    primary_data,
    ref,
    string_attribute,
)
from ._errors import invalid

if TYPE_CHECKING:
    from ..parameters import Parameter

__all__ = ["ROUTES", "parameter_resource"]


def parameter_resource(param: Parameter) -> dict[str, Any]:
    ps_path = f"{BASE}/policy-sets/{param.policy_set_id}"
    return {
        "id": param.id,
        "type": "vars",
        "attributes": {
            "key": param.key,
            # Written once, never shown again, as the real service does.
            "value": None if param.sensitive else param.value,
            "category": param.category,
            "sensitive": param.sensitive,
        },
        "relationships": {
            "configurable": {
                "data": ref("policy-sets", param.policy_set_id),
                "links": {"related": ps_path},
            }
        },
        "links": {"self": f"{ps_path}/parameters/{param.id}"},
    }


_CATEGORY_MESSAGE = "category {value!r} is not allowed; it must be " + repr(CATEGORY)


def _parameter_fields(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The typed key, value, category and sensitive of a parameter document (None: not sent)."""
    return {
        "key": string_attribute(attrs, "key", "key must be a non-empty string"),
        "category": string_attribute(attrs, "category", _CATEGORY_MESSAGE),
        "value": string_attribute(attrs, "value", "value must be a string", nullable=True),
        "sensitive": bool_attribute(attrs, "sensitive", "sensitive must be a boolean"),
    }


async def list_parameters(call: PlatformRequest) -> Response:
    """``GET /policy-sets/:id/parameters``: every parameter unless a page parameter is sent."""
    found = call.service.parameter_store.list_parameters(call.caller, call.params["id"])
    return listing(call, found, parameter_resource, always=False)


async def show_parameter(call: PlatformRequest) -> Response:
    """``GET /policy-sets/:id/parameters/:parameter_id``."""
    param = call.service.parameter_store.get(
        call.caller, call.params["id"], call.params["parameter_id"]
    )
    return answer({"data": parameter_resource(param)})


async def create_parameter(call: PlatformRequest) -> Response:
    """``POST /policy-sets/:id/parameters``: 201."""
    call.service.org_store.policy_set(call.caller, call.params["id"], owner=True)  # 404 before 422
    attrs = attributes(primary_data(call.body, "vars"))
    if "key" not in attrs:
        raise invalid("key is required", attribute_pointer("key"))
    if "category" not in attrs:
        raise invalid(
            f"category is required and must be {CATEGORY!r}", attribute_pointer("category")
        )
    fields = _parameter_fields(attrs)
    param = call.service.parameter_store.create(
        call.caller,
        call.params["id"],
        key=fields["key"],
        value=fields["value"] or "",
        category=fields["category"],
        sensitive=bool(fields["sensitive"]),
    )
    return answer({"data": parameter_resource(param)}, 201)


async def update_parameter(call: PlatformRequest) -> Response:
    """``PATCH /policy-sets/:id/parameters/:parameter_id``: 200."""
    ps_id, param_id = call.params["id"], call.params["parameter_id"]
    call.service.parameter_store.get(call.caller, ps_id, param_id, owner=True)  # 404 before 422
    data = primary_data(call.body, "vars")
    if data.get("id") != param_id:
        raise invalid(
            f"data.id must be the id of the parameter in the path ({param_id})", "/data/id"
        )
    fields = _parameter_fields(attributes(data))
    param = call.service.parameter_store.update(call.caller, ps_id, param_id, **fields)
    return answer({"data": parameter_resource(param)})


async def delete_parameter(call: PlatformRequest) -> Response:
    """``DELETE /policy-sets/:id/parameters/:parameter_id``: 204."""
    call.service.parameter_store.delete(call.caller, call.params["id"], call.params["parameter_id"])
    return no_content()


ROUTES: list[RouteRow] = [
    ("GET", "/policy-sets/{id}/parameters", list_parameters),
    ("POST", "/policy-sets/{id}/parameters", create_parameter),
    ("GET", "/policy-sets/{id}/parameters/{parameter_id}", show_parameter),
    ("PATCH", "/policy-sets/{id}/parameters/{parameter_id}", update_parameter),
    ("DELETE", "/policy-sets/{id}/parameters/{parameter_id}", delete_parameter),
]
