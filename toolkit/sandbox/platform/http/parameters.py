"""Policy set parameters (spec 4.2): list, show, create, update, delete.

Their state is :mod:`..parameters`; these are their endpoints and documents.
A sensitive parameter's value is written once and never shown again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..parameters import CATEGORY, ParameterFields
from ._base import (
    PlatformRequest,
    Routes,
    attributes,
    bool_attribute,
    listing,
    primary_data,
    related,
    require,
    resource,
    string_attribute,
)
from ._errors import invalid

if TYPE_CHECKING:
    from starlette.responses import Response

    from ..parameters import Parameter

__all__ = ["ROUTES", "parameter_resource"]


def parameter_resource(param: Parameter) -> dict[str, Any]:
    attrs = {
        "key": param.key,
        # Written once, never shown again, as the real service does.
        "value": None if param.sensitive else param.value,
        "category": param.category,
        "sensitive": param.sensitive,
    }
    configurable = related("policy-sets", param.policy_set_id)
    path = f"/policy-sets/{param.policy_set_id}/parameters/{param.id}"
    return resource("vars", param.id, attrs, {"configurable": configurable}, path=path)


_CATEGORY_MESSAGE = "category {value!r} is not allowed; it must be " + repr(CATEGORY)


def _parameter_fields(attrs: Mapping[str, Any]) -> ParameterFields:
    """The typed key, value, category and sensitive of a parameter document (None: not sent)."""
    return ParameterFields(
        key=string_attribute(attrs, "key", "key must be a non-empty string"),
        category=string_attribute(attrs, "category", _CATEGORY_MESSAGE),
        value=string_attribute(attrs, "value", "value must be a string", nullable=True),
        sensitive=bool_attribute(attrs, "sensitive", "sensitive must be a boolean"),
    )


ROUTES = Routes()


@ROUTES.handles("GET", "/policy-sets/{id}/parameters")
async def list_parameters(call: PlatformRequest) -> Response:
    """Every parameter unless a page parameter is sent."""
    found = call.service.parameter_store.list_parameters(call.caller, call.params["id"])
    return listing(call, found, parameter_resource, always=False)


@ROUTES.handles("GET", "/policy-sets/{id}/parameters/{parameter_id}", render=parameter_resource)
async def show_parameter(call: PlatformRequest) -> Parameter:
    ps_id, param_id = call.params["id"], call.params["parameter_id"]
    return call.service.parameter_store.get(call.caller, ps_id, param_id)


@ROUTES.handles("POST", "/policy-sets/{id}/parameters", status=201, render=parameter_resource)
async def create_parameter(call: PlatformRequest) -> Parameter:
    call.service.org_store.policy_set(call.caller, call.params["id"], owner=True)  # 404 before 422
    attrs = attributes(primary_data(call.body, "vars"))
    require(attrs, "key")
    require(attrs, "category", f"category is required and must be {CATEGORY!r}")
    fields = _parameter_fields(attrs)
    return call.service.parameter_store.create(call.caller, call.params["id"], fields)


@ROUTES.handles("PATCH", "/policy-sets/{id}/parameters/{parameter_id}", render=parameter_resource)
async def update_parameter(call: PlatformRequest) -> Parameter:
    ps_id, param_id = call.params["id"], call.params["parameter_id"]
    call.service.parameter_store.get(call.caller, ps_id, param_id, owner=True)  # 404 before 422
    data = primary_data(call.body, "vars")
    if data.get("id") != param_id:
        raise invalid(
            f"data.id must be the id of the parameter in the path ({param_id})", "/data/id"
        )
    changes = _parameter_fields(attributes(data))
    return call.service.parameter_store.update(call.caller, ps_id, param_id, changes)


@ROUTES.handles("DELETE", "/policy-sets/{id}/parameters/{parameter_id}")
async def delete_parameter(call: PlatformRequest) -> None:
    call.service.parameter_store.delete(call.caller, call.params["id"], call.params["parameter_id"])
