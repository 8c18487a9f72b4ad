"""The principals of the access model: who ends up holding policies, and token roles.

A :class:`Principal` is named by where it is configured and holds a set of policies;
a :class:`TokenRole` resolves a token's policies as ``auth/token/create/NAME`` does
(``resolveTokenPolicies`` in OpenBao's token store). :func:`asked_capabilities` reads
the capability words a question names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..._errors import InputError
from ..._spec.acl import CAPABILITIES
from ..._spec.identity_templates import UNKNOWN_IDENTITY

__all__ = ["Principal", "PrincipalRef", "TokenRole", "asked_capabilities", "glob_any"]


@dataclass(frozen=True)
class TokenRole:
    """A token role's policy settings, as ``auth/token/create/NAME`` applies them."""

    allowed: tuple[str, ...] = ()
    allowed_glob: tuple[str, ...] = ()
    disallowed: tuple[str, ...] = ()
    disallowed_glob: tuple[str, ...] = ()
    no_default: bool = False
    orphan: bool = False
    entity_aliases: tuple[str, ...] = ()

    @property
    def lists(self) -> bool:
        return bool(self.allowed or self.allowed_glob or self.disallowed or self.disallowed_glob)

    @property
    def needs_caller(self) -> bool:
        """Whether a token of the role holds its caller's policies (no allowed list)."""
        return not (self.allowed or self.allowed_glob)

    def policies(self, caller: Sequence[str] | None) -> tuple[tuple[str, ...] | None, str]:
        """The policies of a token created with the role by a caller holding ``caller``
        (None: not known), asking for none: (policies, "") or (None, why it has none:
        the server refuses the token, or the answer depends on the caller).

        OpenBao: with an allowed, disallowed or glob list, ``default`` is added unless
        the role sets ``token_no_default_policy`` or disallows ``default``; the token
        gets the allowed list, else the caller's policies, and is refused when one of
        them is disallowed. Without any list the token gets the caller's policies as they
        are (``default`` only if the caller holds it; ``token_no_default_policy`` does
        not apply)."""
        if self.needs_caller and caller is None:
            return None, "the caller's policies (a token of this role holds them)"
        if not self.lists:
            return _sanitized(caller or (), add_default=False), ""
        add_default = (
            not self.no_default
            and "default" not in self.disallowed
            and not glob_any(self.disallowed_glob, "default")
        )
        chosen = self.allowed if not self.needs_caller else tuple(caller or ())
        final = _sanitized(chosen, add_default=add_default)
        for name in final:
            if name in self.disallowed or glob_any(self.disallowed_glob, name):
                return (
                    None,
                    f"refused: the server will not create it, policy {name!r} is disallowed",
                )
        return final, ""


def _sanitized(policies: Iterable[str], *, add_default: bool) -> tuple[str, ...]:
    """Policy names as the server sanitizes them: trimmed, lower case, ``root`` alone
    when present, ``default`` added when asked and absent."""
    names = [p.strip().lower() for p in policies if p.strip()]
    if "root" in names:
        return ("root",)
    if add_default and "default" not in names:
        names.append("default")
    return tuple(dict.fromkeys(names))


def glob_any(globs: Iterable[str], value: str) -> bool:
    """Whether one of ``globs`` matches ``value`` as the server's token roles match
    policy names: a leading and/or trailing ``*`` only (a lone ``*`` matches itself)."""
    for item in globs:
        if len(item) < 2:
            found = value == item
        elif item.startswith("*") and item.endswith("*"):
            found = item[1:-1] in value
        elif item.startswith("*"):
            found = value.endswith(item[1:])
        elif item.endswith("*"):
            found = value.startswith(item[:-1])
        else:
            found = value == item
        if found:
            return True
    return False


@dataclass(frozen=True)
class Principal:
    """Someone or something that ends up holding policies.

    ``principal`` is where it is configured (its id in every frame); ``identity``
    fills templated patterns: an :class:`~toolkit._spec.identity_templates.Identity`, None (a
    token with no entity), or ``UNKNOWN_IDENTITY`` (a role: each login may be
    another entity). ``depends_on`` says what an answer for it depends on when the
    model cannot know (the caller, identity); ``own`` are the policies its token holds
    itself (those of its entity left out), where they differ from ``policies``;
    ``role`` is a token role's settings (its policies follow the caller).
    """

    principal: str
    kind: str
    name: str
    policies: tuple[str, ...]
    identity: Any = UNKNOWN_IDENTITY
    depends_on: str = ""
    own: tuple[str, ...] | None = None
    role: TokenRole | None = None
    entity_policies: tuple[str, ...] = ()


# How a question names a principal: where it is configured, the principal itself, or
# the policies it holds (an ad-hoc principal).
PrincipalRef: TypeAlias = str | Principal | Sequence[str]


def asked_capabilities(capability: str | Sequence[str], *, one: bool = False) -> tuple[str, ...]:
    """``capability`` (a word or a list of them) as the server spells it; a word it does
    not know is refused in one line (``who_can("raed", ...)`` answering "nobody" would be
    a false finding), and so is ``write``, which the server splits in two."""
    words = [capability] if isinstance(capability, str) else list(capability)
    if not words or (one and len(words) != 1):
        raise InputError(
            "name one capability" if one else "name at least one capability, e.g. 'read'"
        )
    found = []
    for raw in words:
        word = str(raw).strip().lower()
        if word == "write":
            raise InputError(
                "'write' is not one capability: create or update? (create writes a new "
                "entry, update changes one; ask for ['create', 'update'] for both)"
            )
        if word not in CAPABILITIES or word == "deny":
            raise InputError(
                f"unknown capability {raw!r}: ask for one of "
                + ", ".join(c for c in CAPABILITIES if c != "deny")
            )
        found.append(word)
    return tuple(dict.fromkeys(found))
