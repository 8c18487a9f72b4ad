"""Password policies: named rules for generated passwords (spec parts 2, 4.1, 7).

A policy document is the server's HCL::

    length = 20
    rule "charset" {
      charset   = "abcdefghijklmnopqrstuvwxyz"
      min-chars = 1
    }

Passwords are drawn with :mod:`secrets` from the union of the rules' character
sets, and a draw that misses some rule's ``min-chars`` is thrown away and drawn
again (so every valid password is equally likely). A policy is tried before it
is saved: one that cannot be satisfied, or whose draws almost never satisfy it,
is refused. Engines generate through :meth:`PasswordPolicyStore.generate`.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from ..._spec.hcl import PolicyParseError, blocks, parse_hcl
from .errors import PathNotFound, bad_request
from .policies import policy_text

__all__ = [
    "MAX_ATTEMPTS",
    "MAX_LENGTH",
    "MIN_LENGTH",
    "CharsetRule",
    "PasswordPolicy",
    "PasswordPolicyStore",
    "parse_password_policy",
]

MIN_LENGTH = 4
MAX_LENGTH = 100
# The "too slow" guard: a policy whose draws fail this often is refused.
MAX_ATTEMPTS = 20_000
MAX_SECONDS = 1.0


@dataclass(frozen=True)
class CharsetRule:
    """``rule "charset"``: at least ``min_chars`` characters from ``charset``."""

    charset: str
    min_chars: int

    def satisfied_by(self, password: str) -> bool:
        return sum(1 for ch in password if ch in self.charset) >= self.min_chars


@dataclass(frozen=True)
class PasswordPolicy:
    """A parsed password policy: its length, its rules and the document it came from."""

    name: str
    text: str
    length: int
    rules: tuple[CharsetRule, ...]

    @property
    def alphabet(self) -> str:
        """Every character any rule allows, each once, in first-seen order."""
        return "".join(dict.fromkeys("".join(rule.charset for rule in self.rules)))

    def draw(self) -> str | None:
        """One random draw of ``length`` characters; None when it misses a rule."""
        alphabet = self.alphabet
        password = "".join(secrets.choice(alphabet) for _ in range(self.length))
        return password if all(rule.satisfied_by(password) for rule in self.rules) else None

    def generate(self) -> str:
        """A password meeting every rule; 400 when draws keep failing (the guard)."""
        deadline = time.monotonic() + MAX_SECONDS
        for _ in range(MAX_ATTEMPTS):
            password = self.draw()
            if password is not None:
                return password
            if time.monotonic() > deadline:
                break
        raise bad_request(
            "unable to generate password from provided policy: random draws almost never "
            "meet every rule's min-chars (too slow); widen the charsets or lower min-chars"
        )


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise bad_request(f"{what} must be an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise bad_request(f"{what} must be an integer, got {value!r}")


def parse_password_policy(name: str, document: Any) -> PasswordPolicy:
    """Parse and validate a password policy document (base64 accepted); 400 naming the problem."""
    text = policy_text(document)
    try:
        parsed = parse_hcl(text)
        rule_blocks = blocks(parsed, "rule")
    except PolicyParseError as exc:
        raise bad_request(f"unable to parse policy: {exc}") from None
    unknown = sorted(set(parsed) - {"length", "rule"})
    if unknown:
        raise bad_request(f'unable to parse policy: invalid key "{unknown[0]}"')
    if "length" not in parsed:
        raise bad_request("unable to parse policy: length is required")
    length = _int(parsed["length"], "length")
    if length < MIN_LENGTH:
        raise bad_request(f"length must be >= {MIN_LENGTH}, got {length}")
    if length > MAX_LENGTH:
        raise bad_request(f"length must be <= {MAX_LENGTH}, got {length}")
    rules: list[CharsetRule] = []
    for kind, body in rule_blocks:
        if kind != "charset":
            raise bad_request(f'unable to parse policy: unrecognized rule type "{kind}"')
        extra = sorted(set(body) - {"charset", "min-chars"})
        if extra:
            raise bad_request(f'unable to parse policy: invalid key "{extra[0]}" in rule "charset"')
        charset = body.get("charset")
        if not isinstance(charset, str) or not charset:
            raise bad_request('rule "charset": charset must be a non-empty string')
        min_chars = _int(body.get("min-chars", 0), 'rule "charset": min-chars')
        if min_chars < 0:
            raise bad_request(f'rule "charset": min-chars must be >= 0, got {min_chars}')
        rules.append(CharsetRule(charset, min_chars))
    if not rules:
        raise bad_request('unable to parse policy: at least one rule "charset" is required')
    required = sum(rule.min_chars for rule in rules)
    if required > length:
        raise bad_request(
            f"the rules' min-chars add up to {required}, more than the length {length}"
        )
    return PasswordPolicy(name, text, length, tuple(rules))


class PasswordPolicyStore:
    """Named password policies, and password generation for every engine."""

    def __init__(self) -> None:
        self._policies: dict[str, PasswordPolicy] = {}

    def names(self) -> list[str]:
        return sorted(self._policies)

    def get(self, name: str) -> PasswordPolicy:
        """A policy by name; 404 ``policy does not exist`` when there is none."""
        policy = self._policies.get(name)
        if policy is None:
            raise PathNotFound("policy does not exist")
        return policy

    def put(self, name: str, document: Any) -> PasswordPolicy:
        """Save or replace a policy once a trial generation shows it can be met."""
        if not name.strip():
            raise bad_request("missing policy name")
        policy = parse_password_policy(name, document)
        policy.generate()
        self._policies[name] = policy
        return policy

    def delete(self, name: str) -> None:
        """Remove a policy, whether or not an engine uses it."""
        self._policies.pop(name, None)

    def generate(self, name: str) -> str:
        """A new password from the named policy (the call engines use)."""
        return self.get(name).generate()
