"""The secrets server's demo data set: deterministic, written against the sandbox clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .demo_identity import load_demo_identity
from .demo_leases import load_demo_leases
from .demo_logins import load_demo_logins

if TYPE_CHECKING:
    from .models import SecretsService

# Demo tokens with fixed ids, so runbooks can show what each role may and may not do.
DEMO_TOKENS = {
    "demo-operator-token": ["operators"],
    "demo-auditor-token": ["auditors"],
    "demo-db-reader-token": ["db-readers"],
    "demo-library-user-token": ["library-users"],
}

_ACL_POLICIES = {
    "operators": """\
# Operators run the server: policies, leases, plugins and tokens.
path "sys/policies/*" {
  capabilities = ["create", "read", "update", "delete", "list"]
}

path "sys/leases/*" {
  capabilities = ["create", "read", "update", "delete", "list", "sudo"]
}

path "sys/plugins/catalog/*" {
  capabilities = ["create", "read", "update", "delete", "list", "sudo"]
}

path "auth/token/create" {
  capabilities = ["create", "update"]
}
""",
    "auditors": """\
# Auditors read configuration but change nothing and see no secrets.
path "sys/policies/*" {
  capabilities = ["read", "list"]
}

path "sys/policies/password/+/generate" {
  capabilities = ["deny"]
}

path "sys/leases/lookup/*" {
  capabilities = ["list"]
}

path "sys/plugins/catalog/*" {
  capabilities = ["read", "list"]
}
""",
    "db-readers": """\
# Applications that read database credentials.
path "database/creds/readonly" {
  capabilities = ["read"]
}

path "database/roles" {
  capabilities = ["list"]
}
""",
    "library-users": """\
# People who borrow directory service accounts from the library.
path "ad/library" {
  capabilities = ["list"]
}

path "ad/library/+/check-out" {
  capabilities = ["update"]
}

path "ad/library/+/check-in" {
  capabilities = ["update"]
}

path "ad/library/+/status" {
  capabilities = ["read"]
}
""",
}

# The sandbox stores RGP and EGP policies and serves them back, but never evaluates
# them (docs/decisions.md): the demo's texts say so where a reviewer reads them.
NOT_EVALUATED = "# Stored, not evaluated by the sandbox.\n"

_RGP_POLICIES = {
    "business-hours": (
        "soft-mandatory",
        NOT_EVALUATED
        + 'import "time"\n\nmain = rule { time.now.hour >= 8 and time.now.hour < 18 }\n',
    ),
}

_EGP_POLICIES = {
    "protect-policies": (
        "hard-mandatory",
        ["sys/policies/acl/*"],
        NOT_EVALUATED + 'main = rule { request.operation in ["read", "list"] }\n',
    ),
    "internal-network": (
        "advisory",
        ["database/*", "sys/leases/*"],
        NOT_EVALUATED
        + 'import "sockaddr"\n\nmain = rule { sockaddr.is_contained(request.connection.remote_addr, '
        '"10.0.0.0/8") }\n',
    ),
}

_PASSWORD_POLICIES = {
    "alnum-20": """\
length = 20
rule "charset" {
  charset   = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
  min-chars = 1
}
""",
    "strong-32": """\
length = 32
rule "charset" {
  charset   = "abcdefghijklmnopqrstuvwxyz"
  min-chars = 2
}
rule "charset" {
  charset   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
  min-chars = 2
}
rule "charset" {
  charset   = "0123456789"
  min-chars = 2
}
rule "charset" {
  charset   = "!@#$%^&*-_=+"
  min-chars = 2
}
""",
}


def _load_access(service: SecretsService) -> None:
    """Access policies, password policies and the demo tokens."""
    for name, text in _ACL_POLICIES.items():
        service.policies.put("acl", name, text)
    for name, (level, text) in _RGP_POLICIES.items():
        service.policies.put("rgp", name, text, enforcement_level=level)
    for name, (level, paths, text) in _EGP_POLICIES.items():
        service.policies.put("egp", name, text, enforcement_level=level, paths=paths)
    for name, text in _PASSWORD_POLICIES.items():
        service.password_policies.put(name, text)
    for token_id, policies in DEMO_TOKENS.items():
        service.tokens.add(
            token_id,
            [*policies, "default"],
            display_name="token-" + token_id.removesuffix("-token"),
        )


def load_demo(service: SecretsService) -> None:
    """Fill ``service`` with the demo data of every area."""
    _load_access(service)
    load_demo_leases(service)
    for engine in service.engines:
        if engine.demo is not None:
            engine.demo(service)
    load_demo_logins(service)
    load_demo_identity(service)
