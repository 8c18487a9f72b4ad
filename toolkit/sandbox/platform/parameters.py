"""Policy set parameters (spec 4.2): key/value pairs a Sentinel policy set passes to its runtime."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import RecordNotFound, RuleViolation

if TYPE_CHECKING:
    from .ids import IdSource
    from .organizations import Caller, OrganizationStore, PolicySet

__all__ = ["CATEGORY", "PARAMETER_KIND", "Parameter", "ParameterFields", "ParameterStore"]

# Parameters are passed to the Sentinel runtime only (spec part 1).
PARAMETER_KIND = "sentinel"
# The one category a parameter may have (spec part 2).
CATEGORY = "policy-set"


@dataclass
class Parameter:
    id: str
    policy_set_id: str
    key: str
    value: str = field(repr=False)
    sensitive: bool = False
    category: str = CATEGORY


@dataclass(frozen=True)
class ParameterFields:
    """A parameter's fields as a create or update sends them; None: not sent (on an update,
    left as they are; on a create, the defaults: an empty value, the one category, not
    sensitive)."""

    key: str | None = None
    value: str | None = None
    category: str | None = None
    sensitive: bool | None = None


class ParameterStore:
    """Every policy set's parameters, by policy set id and then parameter id."""

    def __init__(self, *, ids: IdSource, orgs: OrganizationStore) -> None:
        self.ids = ids
        self.orgs = orgs
        self.by_policy_set: dict[str, dict[str, Parameter]] = {}

    def __repr__(self) -> str:
        count = sum(len(p) for p in self.by_policy_set.values())
        return f"<ParameterStore parameters={count}>"

    def list_parameters(self, caller: Caller, policy_set_id: str) -> list[Parameter]:
        """``GET /policy-sets/:id/parameters``."""
        ps = self.orgs.policy_set(caller, policy_set_id)
        return list(self.by_policy_set.get(ps.id, {}).values())

    def get(
        self, caller: Caller, policy_set_id: str, parameter_id: str, *, owner: bool = False
    ) -> Parameter:
        """``GET /policy-sets/:id/parameters/:parameter_id``; ``owner``: the right to change it."""
        ps = self.orgs.policy_set(caller, policy_set_id, owner=owner)
        param = self.by_policy_set.get(ps.id, {}).get(parameter_id)
        if param is None:
            raise RecordNotFound()
        return param

    def create(self, caller: Caller, policy_set_id: str, fields: ParameterFields) -> Parameter:
        """``POST /policy-sets/:id/parameters`` (owners); a key not sent is refused as blank."""
        ps = self.orgs.policy_set(caller, policy_set_id, owner=True)
        return self.add(
            ps,
            fields.key or "",
            fields.value or "",
            category=CATEGORY if fields.category is None else fields.category,
            sensitive=bool(fields.sensitive),
        )

    def add(
        self, ps: PolicySet, key: str, value: str, *, category: str, sensitive: bool
    ) -> Parameter:
        """A new parameter of ``ps``, every rule checked before anything changes."""
        if ps.kind != PARAMETER_KIND:
            raise RuleViolation(
                f"policy set {ps.name} is of kind {ps.kind!r}; parameters exist only for "
                f"{PARAMETER_KIND} policy sets",
                "policy_set",
            )
        params = self.by_policy_set.setdefault(ps.id, {})
        self._check(params, None, ParameterFields(key, category=category, sensitive=sensitive))
        param = Parameter(self.ids.new("var-", ps.id, key), ps.id, key, value, sensitive)
        params[param.id] = param
        return param

    def update(
        self, caller: Caller, policy_set_id: str, parameter_id: str, changes: ParameterFields
    ) -> Parameter:
        """``PATCH /policy-sets/:id/parameters/:parameter_id``: what is None stays unchanged."""
        param = self.get(caller, policy_set_id, parameter_id, owner=True)
        params = self.by_policy_set[param.policy_set_id]
        self._check(params, param, changes)
        if changes.key is not None:
            param.key = changes.key
        if changes.value is not None:
            param.value = changes.value
        if changes.sensitive is not None:
            param.sensitive = changes.sensitive
        return param

    def delete(self, caller: Caller, policy_set_id: str, parameter_id: str) -> None:
        """``DELETE /policy-sets/:id/parameters/:parameter_id`` (owners)."""
        param = self.get(caller, policy_set_id, parameter_id, owner=True)
        del self.by_policy_set[param.policy_set_id][param.id]

    @staticmethod
    def _check(
        params: dict[str, Parameter], current: Parameter | None, sent: ParameterFields
    ) -> None:
        """Refuse a blank or taken key, another category, or un-hiding a sensitive value."""
        key, category = sent.key, sent.category
        if key is not None:
            if not key.strip():
                raise RuleViolation("key must be a non-empty string", "key")
            for other in params.values():
                if other is not current and other.key == key:
                    raise RuleViolation(f"key {key!r} has already been taken", "key")
        if category is not None and category != CATEGORY:
            raise RuleViolation(
                f"category {category!r} is not allowed; it must be {CATEGORY!r}", "category"
            )
        if current is not None and current.sensitive and sent.sensitive is False:
            raise RuleViolation("a sensitive parameter cannot be made non-sensitive", "sensitive")
