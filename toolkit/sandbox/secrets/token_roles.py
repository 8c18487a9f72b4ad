"""Token roles (``auth/token/roles/:name``) and the rules a token request is held to.

A token role fixes what tokens created through it (``auth/token/create/:role``)
may carry: allowed and disallowed policies, each also as globs, whether
``default`` is added, whether the token is an orphan, renewable, periodic,
limited in uses, of which type, and which entity aliases a creator may name.
:func:`resolve_policies` decides a new token's policies as OpenBao's token
store does, with or without a role.

Plain state, no HTTP: :mod:`.http.auth_token` turns request bodies into
:class:`TokenRequest` and :class:`StoredTokenRole`.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from .errors import InvalidRequest, bad_request

__all__ = ["TOKEN_TYPES", "TokenRequest", "StoredTokenRole", "glob_match", "resolve_policies"]

# Token types a role (or a login method's role) may name; "default" is the service type.
TOKEN_TYPES = ("default", "service", "batch", "default-service", "default-batch")


@dataclass(frozen=True)
class TokenRequest:
    """What a caller asked of ``auth/token/create`` (None: not given)."""

    policies: list[str] | None = None
    no_default_policy: bool = False
    no_parent: bool = False
    ttl: int | None = None
    explicit_max_ttl: int | None = None
    period: int | None = None
    num_uses: int = 0
    type: str = ""
    renewable: bool = True
    meta: dict[str, str] = field(default_factory=dict)
    display_name: str = ""
    id: str = ""
    entity_alias: str = ""


@dataclass
class StoredTokenRole:
    """One token role, as ``auth/token/roles/:name`` keeps it."""

    name: str
    allowed_policies: list[str] = field(default_factory=list)
    disallowed_policies: list[str] = field(default_factory=list)
    allowed_policies_glob: list[str] = field(default_factory=list)
    disallowed_policies_glob: list[str] = field(default_factory=list)
    orphan: bool = False
    renewable: bool = True
    path_suffix: str = ""
    token_type: str = "default-service"
    token_no_default_policy: bool = False
    allowed_entity_aliases: list[str] = field(default_factory=list)
    token_period: int = 0
    token_explicit_max_ttl: int = 0
    token_ttl: int = 0
    token_max_ttl: int = 0
    token_num_uses: int = 0
    token_bound_cidrs: list[str] = field(default_factory=list)

    def check(self) -> None:
        """Refuse what OpenBao refuses when a role is written (a ``token_ttl`` above
        ``token_max_ttl`` is kept, as OpenBao's token roles keep it)."""
        if self.token_type not in TOKEN_TYPES:
            raise InvalidRequest(f"invalid 'token_type' value {self.token_type!r}")
        if self.token_type == "batch":
            for reason, bad in (
                ("non-orphan tokens", not self.orphan),
                ("periodic tokens", bool(self.token_period)),
                ("renewable tokens", self.renewable),
                ("tokens with an explicit max TTL", bool(self.token_explicit_max_ttl)),
            ):
                if bad:
                    raise InvalidRequest(
                        f"'token_type' cannot be 'batch' when role is set to generate {reason}"
                    )

    @property
    def has_policy_lists(self) -> bool:
        return bool(
            self.allowed_policies
            or self.disallowed_policies
            or self.allowed_policies_glob
            or self.disallowed_policies_glob
        )


def glob_match(patterns: list[str], value: str) -> bool:
    """Whether ``value`` matches one of ``patterns`` (``*`` anywhere, as OpenBao's globs)."""
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


def _sanitize(names: list[str], add_default: bool) -> list[str]:
    """Policy names trimmed, lowered and deduplicated; ``root`` alone when present;
    ``default`` added when asked (never beside ``root``)."""
    kept = {n.strip().lower() for n in names if n.strip()}
    if "root" in kept:
        return ["root"]
    if add_default:
        kept.add("default")
    return sorted(kept)


def resolve_policies(
    request: TokenRequest,
    role: StoredTokenRole | None,
    parent_policies: list[str],
    *,
    privileged: bool,
) -> list[str]:
    """The policies of a new token, decided as OpenBao's token store decides them.

    A role with policy lists fixes them (the requested ones must fit the allowed
    lists and none may be disallowed); otherwise the parent's policies are the
    default, and a caller without root or sudo may only ask for a subset of its own.
    """
    asked = request.policies or []
    no_default = request.no_default_policy
    add_default = False
    if role is not None and role.has_policy_lists:
        local_default = (
            not no_default
            and not role.token_no_default_policy
            and "default" not in role.disallowed_policies
            and not glob_match(role.disallowed_policies_glob, "default")
        )
        final = _sanitize(asked, local_default) if asked else []
        if role.allowed_policies or role.allowed_policies_glob:
            allowed = _sanitize(role.allowed_policies, local_default)
            if not final:
                final = allowed
            else:
                globs = _sanitize(role.allowed_policies_glob, False)
                for name in final:
                    if name not in allowed and not glob_match(globs, name):
                        raise bad_request(
                            f"token policies ({_quoted(final)}) must be subset of the role's "
                            f"allowed policies ({_quoted(allowed)}) or glob policies "
                            f"({_quoted(globs)})"
                        )
        elif not final:
            final = _sanitize(parent_policies, local_default)
        for name in final:
            if name in role.disallowed_policies or glob_match(role.disallowed_policies_glob, name):
                raise bad_request(f'token policy "{name}" is disallowed by this role')
        policies = final
    elif not asked:
        policies = _sanitize(parent_policies, False)
    elif not privileged:
        if not set(_sanitize(asked, False)) <= set(_sanitize(parent_policies, False)):
            raise bad_request("child policies must be subset of parent")
        policies = asked
        add_default = not no_default and "default" in parent_policies
    else:
        policies = asked
        add_default = not no_default
    final = _sanitize(policies, add_default)
    if no_default:
        final = [p for p in final if p != "default"]
    return final


def _quoted(names: list[str]) -> str:
    """A list as Go's ``%q`` writes a slice of strings: ``["a" "b"]``."""
    return "[" + " ".join(f'"{n}"' for n in names) + "]"
