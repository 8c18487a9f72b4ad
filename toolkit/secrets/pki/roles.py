"""Roles (spec 4.10): create, read, list, delete, and the roles frame."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..._frames import build_frame
from ..._records import Record
from ..._spec import certificate_names as policy
from .._base import listed_keys, unwrap, warnings_of
from ._area import PKIBase
from ._common import (
    _LIST_FIELDS,
    PKI_ROLES,
)


class RoleCalls(PKIBase):
    """Roles (spec 4.10)."""

    # -- roles ------------------------------------------------------------------------
    def list_roles(self) -> list[str]:
        """Role names. ``LIST /pki/roles``."""
        return self._list(self._path("roles"))

    def read_role(self, name: str) -> Record:
        """A role with every field (part 2). ``GET /pki/roles/:name``."""
        return self._record(self._read(self._path("roles/{name}", name=name)), "pki_role")

    def write_role(self, name: str, **fields: Any) -> Record:
        """Create or replace a role (fields not given take their defaults). ``POST /pki/roles/:name``.

        Returns the role as written; ``warnings`` from the server are in
        ``record.warnings`` (for example when ``issuer_ref`` names no issuer yet).
        """
        payload = self._send("POST", self._path("roles/{name}", name=name), fields)
        record = Record(unwrap(payload), kind="pki_role")
        record.warnings = warnings_of(payload)  # type: ignore[attr-defined]
        return record

    def delete_role(self, name: str) -> None:
        """Delete a role. ``DELETE /pki/roles/:name``."""
        self._send("DELETE", self._path("roles/{name}", name=name))

    def roles_frame(self) -> pd.DataFrame:
        """Every role of the mount, one row each (:data:`PKI_ROLES`).

        ``LIST /pki/roles``, then ``GET /pki/roles/:name`` each, concurrently;
        ``attrs["coverage"]`` notes a role whose read was refused."""
        cov = self._coverage("roles_frame")
        rows = []
        for name, read in self._read_each_named(cov, self.list_roles(), self.read_role, "roles"):
            role = dict(read)
            for field in _LIST_FIELDS:
                value = role.get(field)
                role[field] = (
                    value if isinstance(value, str) else ", ".join(listed_keys(value, field))
                )
            rows.append({"name": name, **role})
        return cov.attach(build_frame(rows, PKI_ROLES))

    def check_request(
        self,
        role: str | Mapping[str, Any],
        common_name: str,
        *,
        alt_names: Sequence[str] = (),
        ip_sans: Sequence[str] = (),
        uri_sans: Sequence[str] = (),
        other_sans: Sequence[str] = (),
        user_ids: Sequence[str] = (),
        exclude_cn_from_sans: bool = False,
    ) -> str:
        """Why the role would refuse these names ("" when it would not), without sending them.

        ``role`` is a role name (read from the mount) or a role as read. The rules
        are the engine's (:mod:`toolkit._spec.certificate_names`); the server still
        decides.
        """
        fields = self.read_role(role) if isinstance(role, str) else role
        try:
            others = [policy.parse_other_san(o) for o in other_sans]
        except ValueError as exc:
            return f"other_sans: {exc}"
        dns, emails = policy.split_alt_names(list(alt_names))
        if common_name and not exclude_cn_from_sans:
            policy.add_common_name(common_name, dns, emails)
        for ip in ip_sans:
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                return f"the value {ip!r} is not a valid IP address"
        return policy.refusal(
            fields,
            common_name=common_name,
            dns_names=dns,
            emails=emails,
            ip_sans=list(ip_sans),
            uri_sans=list(uri_sans),
            other_sans=others,
            user_ids=list(user_ids),
        )
