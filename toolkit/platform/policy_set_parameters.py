"""Policy-set parameters (spec 000 section 4.2)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .._coverage import Coverage
from .._errors import InputError
from .._frames import Schema, build_frame
from .._http import api_path
from .._masking import HIDDEN, Sensitive
from .._records import Record
from ._base import PlatformArea
from ._jsonapi import flatten, iter_resources

__all__ = ["PolicySetParameters", "PARAMETERS"]

PARAMETERS = Schema.of("id key value sensitive:bool category policy_set_id", index="id")


def _parameter(resource: dict[str, Any], policy_set_id: str) -> Record:
    flat = flatten(resource)
    flat["policy_set_id"] = flat.pop("configurable_id", None) or policy_set_id
    if flat.get("sensitive"):
        # The server does not return a sensitive value; say so rather than show null.
        flat["value"] = HIDDEN
    return Record(flat, kind="policy-set-parameter")


class PolicySetParameters(PlatformArea):
    """Parameters of a policy set: key/value pairs passed to the policy runtime."""

    def _path(self, policy_set_id: str, parameter_id: str | None = None) -> str:
        base = api_path("/policy-sets/{policy_set_id}/parameters", policy_set_id=policy_set_id)
        if parameter_id is None:
            return base
        return base + api_path("/{parameter_id}", parameter_id=parameter_id)

    def parameters_frame(self, policy_set_id: str) -> pd.DataFrame:
        """Every parameter; sensitive values show as ``<hidden>``.

        ``GET /policy-sets/:policy_set_id/parameters`` (all pages: whole, or raised; a
        missing policy set raises naming it).
        """
        path = self._path(policy_set_id)
        records = [_parameter(r, policy_set_id) for r in iter_resources(self._http, path)]
        cov = Coverage("policy_set_parameters.parameters_frame", asked=[path.lstrip("/")])
        cov.note_read(len(records))
        return cov.attach(build_frame(records, PARAMETERS))

    def create(
        self,
        policy_set_id: str,
        key: str,
        value: str | Sensitive = "",
        *,
        sensitive: bool = False,
    ) -> Record:
        """Create a parameter. ``POST /policy-sets/:policy_set_id/parameters``.

        ``value`` may be a :class:`~toolkit.Sensitive`; the returned record never
        holds a sensitive value.
        """
        if not key:
            raise InputError("a policy-set parameter needs a key")
        attributes = {
            "key": key,
            "value": value.reveal() if isinstance(value, Sensitive) else value,
            "category": "policy-set",
            "sensitive": sensitive,
        }
        doc = self._send(
            "POST", self._path(policy_set_id), {"data": {"type": "vars", "attributes": attributes}}
        )
        return _parameter(doc["data"], policy_set_id)

    def update(
        self,
        policy_set_id: str,
        parameter_id: str,
        *,
        key: str | None = None,
        value: str | Sensitive | None = None,
        sensitive: bool | None = None,
        category: str | None = None,
    ) -> Record:
        """Update a parameter; what is not given stays as it is.

        ``PATCH /policy-sets/:policy_set_id/parameters/:parameter_id``.
        ``category`` is sent as given: the service accepts only ``policy-set``
        (spec 000, 4.2) and refuses anything else with 422
        (:class:`~toolkit.Unprocessable`), changing nothing.
        """
        attributes: dict[str, Any] = {}
        if key is not None:
            attributes["key"] = key
        if value is not None:
            attributes["value"] = value.reveal() if isinstance(value, Sensitive) else value
        if sensitive is not None:
            attributes["sensitive"] = sensitive
        if category is not None:
            attributes["category"] = category
        body = {"data": {"type": "vars", "id": parameter_id, "attributes": attributes}}
        doc = self._send("PATCH", self._path(policy_set_id, parameter_id), body)
        return _parameter(doc["data"], policy_set_id)

    def delete(self, policy_set_id: str, parameter_id: str) -> None:
        """Delete a parameter. ``DELETE /policy-sets/:policy_set_id/parameters/:parameter_id``."""
        self._send("DELETE", self._path(policy_set_id, parameter_id))
