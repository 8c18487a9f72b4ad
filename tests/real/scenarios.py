"""Scenarios written once, run against the sandbox and against a real OpenBao.

Each scenario is a function of a :class:`~tests.real._differential.Target` that
names its steps; ``SCENARIOS`` maps a scenario's name to it and to the kind of
real server it needs (``dev``: the dev server; ``legacy-rekey`` / ``rotate-root``:
a raft server with 5 shares / threshold 3, with or without the legacy rekey
endpoints; ``postgres`` / ``rabbitmq``: the dev server with that real backend).
The names used are fixed, so a scenario runs once per server.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._differential import Target

PASSWORD_POLICY = """length = 20
rule "charset" {
  charset = "abcdefghijklmnopqrstuvwxyz"
  min-chars = 1
}
rule "charset" {
  charset = "0123456789"
  min-chars = 2
}
"""
ACL_POLICY = """path "secret/data/diff/*" {
  capabilities = ["read", "list"]
}
"""


def keys_of(body: Any) -> list[str]:
    return sorted(body["data"]["keys"])


# -- password policies --------------------------------------------------------------------
def password_policies(t: Target) -> None:
    encoded = base64.b64encode(PASSWORD_POLICY.encode()).decode()
    t.call("write", "POST", "sys/policies/password/diff-pw", json={"policy": encoded})
    t.call(
        "read",
        "GET",
        "sys/policies/password/diff-pw",
        checks={"policy": lambda b: b["data"]["policy"].strip()},
    )
    t.call("list", "LIST", "sys/policies/password", checks={"keys": keys_of})
    t.call(
        "generate",
        "GET",
        "sys/policies/password/diff-pw/generate",
        checks={
            "length": lambda b: len(b["data"]["password"]),
            "digits>=2": lambda b: sum(c.isdigit() for c in b["data"]["password"]) >= 2,
        },
    )
    t.call(
        "write plain text",
        "POST",
        "sys/policies/password/diff-plain",
        json={"policy": PASSWORD_POLICY},
    )
    t.call(
        "unsatisfiable",
        "POST",
        "sys/policies/password/diff-bad",
        json={"policy": 'length = 3\nrule "charset" {\n  charset = "ab"\n  min-chars = 4\n}\n'},
    )
    t.call("not parsable", "POST", "sys/policies/password/diff-bad", json={"policy": "length ="})
    t.call("read missing", "GET", "sys/policies/password/diff-bad", errors=True)
    t.call("generate missing", "GET", "sys/policies/password/diff-bad/generate", errors=True)
    t.call("delete", "DELETE", "sys/policies/password/diff-pw")
    t.call("delete plain", "DELETE", "sys/policies/password/diff-plain")
    t.call("read deleted", "GET", "sys/policies/password/diff-pw", errors=True)
    t.call("list empty", "LIST", "sys/policies/password")


# -- ACL policies ---------------------------------------------------------------------------
def acl_policies(t: Target) -> None:
    t.call("write", "PUT", "sys/policies/acl/diff-acl", json={"policy": ACL_POLICY})
    t.call(
        "read",
        "GET",
        "sys/policies/acl/diff-acl",
        checks={"name": lambda b: b["data"]["name"], "policy": lambda b: b["data"]["policy"]},
    )
    t.call("list", "LIST", "sys/policies/acl", checks={"keys": keys_of})
    t.call(
        "write base64",
        "PUT",
        "sys/policies/acl/diff-b64",
        json={"policy": base64.b64encode(ACL_POLICY.encode()).decode()},
    )
    t.call(
        "read base64",
        "GET",
        "sys/policies/acl/diff-b64",
        checks={"policy": lambda b: b["data"]["policy"]},
    )
    t.call("write invalid", "PUT", "sys/policies/acl/diff-bad", json={"policy": "path {"})
    t.call("write empty", "PUT", "sys/policies/acl/diff-bad", json={"policy": ""})
    t.call("read missing", "GET", "sys/policies/acl/diff-bad")
    token = t.call(
        "token with policy",
        "POST",
        "auth/token/create",
        json={"policies": ["diff-acl"], "ttl": "10m"},
        checks={"policies": lambda b: sorted(b["auth"]["policies"])},
    )["auth"]["client_token"]
    t.call("denied", "LIST", "sys/policies/acl", token=token, errors=True)
    t.call("legacy list", "GET", "sys/policy", checks={"policies": lambda b: sorted(b["policies"])})
    t.call("delete root", "DELETE", "sys/policies/acl/root")
    t.call("delete", "DELETE", "sys/policies/acl/diff-acl")
    t.call("delete base64", "DELETE", "sys/policies/acl/diff-b64")
    t.call("list after delete", "LIST", "sys/policies/acl", checks={"keys": keys_of})


# -- leases -----------------------------------------------------------------------------------
def _token_leases(t: Target) -> list[str]:
    body = t.call("", "LIST", "sys/leases/lookup/auth/token/create/", record=False)
    keys = (body or {}).get("data", {}).get("keys", []) if isinstance(body, dict) else []
    return sorted(k for k in keys if not k.endswith("/"))


def leases(t: Target) -> None:
    before = set(_token_leases(t))
    t.call(
        "create token",
        "POST",
        "auth/token/create",
        json={"ttl": "1h", "policies": ["default"]},
        checks={
            "lease_duration": lambda b: b["auth"]["lease_duration"],
            "renewable": lambda b: b["auth"]["renewable"],
        },
    )
    for i in range(2):
        t.call("", "POST", "auth/token/create", json={"ttl": f"{2 + i}h"}, record=False)
    ids = [f"auth/token/create/{k}" for k in _token_leases(t) if k not in before]
    assert len(ids) == 3, ids
    first = ids[0]
    t.call(
        "list root",
        "LIST",
        "sys/leases/lookup/",
        checks={"has auth/": lambda b: "auth/" in b["data"]["keys"]},
    )
    t.call(
        "list tokens",
        "LIST",
        "sys/leases/lookup/auth/token/create/",
        checks={
            "lists ours": lambda b: (
                set(ids) <= {f"auth/token/create/{k}" for k in b["data"]["keys"]}
            )
        },
    )
    t.call(
        "list without slash",
        "LIST",
        "sys/leases/lookup/auth/token/create",
        checks={
            "lists ours": lambda b: (
                set(ids) <= {f"auth/token/create/{k}" for k in b["data"]["keys"]}
            )
        },
    )
    t.call("list nothing", "LIST", "sys/leases/lookup/nothing/here/")
    t.call(
        "lookup",
        "PUT",
        "sys/leases/lookup",
        json={"lease_id": first},
        checks={
            "id": lambda b: b["data"]["id"] == first,
            "renewable": lambda b: b["data"]["renewable"],
        },
    )
    t.call(
        "lookup unknown",
        "PUT",
        "sys/leases/lookup",
        json={"lease_id": "auth/token/create/nope"},
        errors=True,
    )
    t.call("lookup empty", "PUT", "sys/leases/lookup", json={"lease_id": ""}, errors=True)
    t.call(
        "renew token lease",
        "PUT",
        "sys/leases/renew",
        json={"lease_id": first, "increment": 60},
        errors=True,
    )
    t.call(
        "renew unknown",
        "PUT",
        "sys/leases/renew",
        json={"lease_id": "auth/token/create/nope"},
        errors=True,
    )
    t.call(
        "revoke unknown", "PUT", "sys/leases/revoke", json={"lease_id": "auth/token/create/nope"}
    )
    t.call("revoke", "PUT", "sys/leases/revoke", json={"lease_id": first})
    t.call(
        "revoke synchronously", "PUT", "sys/leases/revoke", json={"lease_id": first, "sync": True}
    )
    t.call("lookup revoked", "PUT", "sys/leases/lookup", json={"lease_id": first}, errors=True)
    t.call("revoke by path", "PUT", f"sys/leases/revoke/{ids[1]}")
    t.call(
        "revoke-prefix with slash",
        "PUT",
        "sys/leases/revoke-prefix/auth/token/create/",
        errors=True,
    )
    t.call("revoke-prefix unknown", "PUT", "sys/leases/revoke-prefix/nothing/here")
    t.call("revoke-force", "PUT", "sys/leases/revoke-force/auth/token/create/nope")
    # A whole lease id is a prefix too (revoking all of auth/token/create would take the
    # dev server's root token with it).
    t.call("revoke-prefix", "PUT", f"sys/leases/revoke-prefix/{ids[2]}")
    t.call(
        "lookup after revoke-prefix",
        "PUT",
        "sys/leases/lookup",
        json={"lease_id": ids[2]},
        errors=True,
    )
    t.call(
        "revoke-prefix synchronously",
        "PUT",
        f"sys/leases/revoke-prefix/{ids[2]}",
        json={"sync": True},
    )
    t.call("tidy", "POST", "sys/leases/tidy", checks={"warnings": lambda b: len(b["warnings"])})
    t.call(
        "count irrevocable",
        "GET",
        "sys/leases/count",
        params={"type": "irrevocable"},
        checks={
            "lease_count": lambda b: b["data"]["lease_count"],
            "counts": lambda b: b["data"]["counts"],
        },
    )
    t.call("count without type", "GET", "sys/leases/count")
    t.call(
        "list irrevocable",
        "GET",
        "sys/leases",
        params={"type": "irrevocable"},
        checks={"lease_count": lambda b: b["data"]["lease_count"]},
    )


# -- plugin catalog ------------------------------------------------------------------------
PLUGIN_BYTES = b"#!/bin/sh\n# a plugin of the differential tests\nexit 1\n"
PLUGIN_SHA256 = hashlib.sha256(PLUGIN_BYTES).hexdigest()


def plugins(t: Target) -> None:
    folder = t.context.get("plugin_directory")
    if folder is not None:  # the real server checks the command is a file in its folder
        path = folder / "diff-plugin"
        path.write_bytes(PLUGIN_BYTES)
        path.chmod(0o755)
    entry = {"sha256": PLUGIN_SHA256, "command": "diff-plugin", "args": ["-x"], "env": ["A=1"]}
    t.call(
        "register",
        "POST",
        "sys/plugins/catalog/secret/diff-plugin",
        json={**entry, "version": "v1.0.0"},
    )
    t.call("register unversioned", "POST", "sys/plugins/catalog/secret/diff-plugin", json=entry)
    t.call(
        "read",
        "GET",
        "sys/plugins/catalog/secret/diff-plugin",
        params={"version": "v1.0.0"},
        checks={
            k: (lambda b, k=k: b["data"][k])
            for k in ("sha256", "command", "args", "builtin", "version", "name")
        },
    )
    t.call(
        "read unversioned",
        "GET",
        "sys/plugins/catalog/secret/diff-plugin",
        checks={"version": lambda b: b["data"]["version"]},
    )
    t.call(
        "list type",
        "LIST",
        "sys/plugins/catalog/secret",
        checks={"has it": lambda b: "diff-plugin" in b["data"]["keys"]},
    )
    t.call(
        "catalog",
        "GET",
        "sys/plugins/catalog",
        checks={
            "detailed entry": lambda b: sorted(
                (d["name"], d["version"], d["builtin"])
                for d in b["data"]["detailed"]
                if d["name"] == "diff-plugin"
            ),
            "has postgres": lambda b: "postgresql-database-plugin" in b["data"]["database"],
        },
    )
    t.call(
        "read builtin",
        "GET",
        "sys/plugins/catalog/database/postgresql-database-plugin",
        checks={"builtin": lambda b: b["data"]["builtin"]},
    )
    t.call(
        "register bad sha",
        "POST",
        "sys/plugins/catalog/secret/diff-bad",
        json={**entry, "sha256": "xyz"},
    )
    t.call(
        "register no command",
        "POST",
        "sys/plugins/catalog/secret/diff-bad",
        json={"sha256": PLUGIN_SHA256},
    )
    t.call("register bad type", "POST", "sys/plugins/catalog/nonsense/diff-bad", json=entry)
    t.call(
        "register missing file",
        "POST",
        "sys/plugins/catalog/secret/diff-missing",
        json={**entry, "command": "no-such-file", "version": "v1.0.0"},
    )
    t.call(
        "delete", "DELETE", "sys/plugins/catalog/secret/diff-plugin", params={"version": "v1.0.0"}
    )
    t.call("delete unversioned", "DELETE", "sys/plugins/catalog/secret/diff-plugin")
    t.call(
        "read deleted",
        "GET",
        "sys/plugins/catalog/secret/diff-plugin",
        params={"version": "v1.0.0"},
    )
    t.call(
        "delete again",
        "DELETE",
        "sys/plugins/catalog/secret/diff-plugin",
        params={"version": "v1.0.0"},
    )


# -- rekey --------------------------------------------------------------------------------------
def rekey_legacy_with_verification(t: Target) -> None:
    """The spec's ``sys/rekey/*`` with verification, on a server that enables them."""
    shares = t.shares
    t.call(
        "status idle",
        "GET",
        "sys/rekey/init",
        checks={"started": lambda b: b["started"], "required": lambda b: b["required"]},
    )
    t.call(
        "threshold above shares",
        "POST",
        "sys/rekey/init",
        json={"secret_shares": 3, "secret_threshold": 4},
    )
    t.call(
        "backup without pgp",
        "POST",
        "sys/rekey/init",
        json={"secret_shares": 3, "secret_threshold": 2, "backup": True},
        errors=True,
    )
    started = t.call(
        "init",
        "POST",
        "sys/rekey/init",
        json={"secret_shares": 3, "secret_threshold": 2, "require_verification": True},
        checks={
            "t": lambda b: b["t"],
            "n": lambda b: b["n"],
            "progress": lambda b: b["progress"],
            "verification_required": lambda b: b["verification_required"],
            "started": lambda b: b["started"],
        },
    )
    nonce = started["nonce"]
    t.call("init again", "POST", "sys/rekey/init", json={"secret_shares": 3, "secret_threshold": 2})
    t.call(
        "wrong nonce",
        "POST",
        "sys/rekey/update",
        json={"key": shares[0], "nonce": "nope"},
        checks={"error": lambda b: b["errors"][0].replace(nonce, "<nonce>")},
    )
    t.call(
        "update 1",
        "POST",
        "sys/rekey/update",
        json={"key": shares[0], "nonce": nonce},
        checks={"progress": lambda b: b["progress"], "started": lambda b: b["started"]},
    )
    t.call("same share again", "POST", "sys/rekey/update", json={"key": shares[0], "nonce": nonce})
    t.call("update 2", "POST", "sys/rekey/update", json={"key": shares[1], "nonce": nonce})
    done = t.call(
        "update 3",
        "POST",
        "sys/rekey/update",
        json={"key": shares[2], "nonce": nonce},
        checks={
            "complete": lambda b: b["complete"],
            "keys": lambda b: len(b["keys"]),
            "verification_required": lambda b: b["verification_required"],
        },
    )
    new = done["keys"]
    t.call(
        "status while verifying",
        "GET",
        "sys/rekey/init",
        checks={
            "started": lambda b: b["started"],
            "verification_required": lambda b: b["verification_required"],
        },
    )
    vnonce = t.call(
        "verify status",
        "GET",
        "sys/rekey/verify",
        checks={"t": lambda b: b["t"], "n": lambda b: b["n"], "progress": lambda b: b["progress"]},
    )["nonce"]
    t.call("verify wrong nonce", "POST", "sys/rekey/verify", json={"key": new[0], "nonce": "nope"})
    t.call(
        "verify 1",
        "POST",
        "sys/rekey/verify",
        json={"key": new[0], "nonce": vnonce},
        checks={"progress": lambda b: b["progress"]},
    )
    t.call("verify bad share", "POST", "sys/rekey/verify", json={"key": shares[3], "nonce": vnonce})
    fresh = t.call(
        "verify status after bad share",
        "GET",
        "sys/rekey/verify",
        checks={"progress": lambda b: b["progress"], "new nonce": lambda b: b["nonce"] != vnonce},
    )["nonce"]
    t.call("verify again 1", "POST", "sys/rekey/verify", json={"key": new[1], "nonce": fresh})
    t.call(
        "verify again 2",
        "POST",
        "sys/rekey/verify",
        json={"key": new[2], "nonce": fresh},
        checks={"complete": lambda b: b["complete"]},
    )
    t.call(
        "seal status",
        "GET",
        "sys/seal-status",
        checks={"t": lambda b: b["t"], "n": lambda b: b["n"]},
    )
    t.call("status after", "GET", "sys/rekey/init", checks={"started": lambda b: b["started"]})
    t.call("cancel nothing", "DELETE", "sys/rekey/init")
    t.call("backup none", "GET", "sys/rekey/backup", errors=True)
    t.context["new_shares"] = new


def rekey_rotate_root(t: Target) -> None:
    """OpenBao 2.5+ defaults: the legacy endpoints answer 405; ``sys/rotate/root/*`` works."""
    shares = t.shares
    t.call("legacy status", "GET", "sys/rekey/init", errors=True)
    t.call(
        "legacy init",
        "POST",
        "sys/rekey/init",
        json={"secret_shares": 3, "secret_threshold": 2},
        errors=True,
    )
    t.call(
        "status idle",
        "GET",
        "sys/rotate/root/init",
        checks={"started": lambda b: b["data"]["started"]},
    )
    t.call("unauthenticated", "GET", "sys/rotate/root/init", token="")
    started = t.call(
        "init",
        "POST",
        "sys/rotate/root/init",
        json={"secret_shares": 3, "secret_threshold": 2},
        checks={"t": lambda b: b["data"]["t"], "n": lambda b: b["data"]["n"]},
    )
    nonce = started["data"]["nonce"]
    t.call(
        "update 1",
        "POST",
        "sys/rotate/root/update",
        json={"key": shares[0], "nonce": nonce},
        checks={"progress": lambda b: b["data"]["progress"]},
    )
    t.call("update 2", "POST", "sys/rotate/root/update", json={"key": shares[1], "nonce": nonce})
    done = t.call(
        "update 3",
        "POST",
        "sys/rotate/root/update",
        json={"key": shares[2], "nonce": nonce},
        checks={
            "complete": lambda b: b["data"]["complete"],
            "keys": lambda b: len(b["data"]["keys"]),
        },
    )
    t.call(
        "seal status",
        "GET",
        "sys/seal-status",
        checks={"t": lambda b: b["t"], "n": lambda b: b["n"]},
    )
    t.call("backup none", "GET", "sys/rotate/root/backup", errors=True)
    t.context["new_shares"] = done["data"]["keys"]


@dataclass(frozen=True)
class Scenario:
    run: Callable[[Target], None]
    server: str  # dev, legacy-rekey, rotate-root, postgres, rabbitmq


SCENARIOS: dict[str, Scenario] = {
    "password-policies": Scenario(password_policies, "dev"),
    "acl-policies": Scenario(acl_policies, "dev"),
    "leases": Scenario(leases, "dev"),
    "plugins": Scenario(plugins, "dev"),
    "rekey-legacy": Scenario(rekey_legacy_with_verification, "legacy-rekey"),
    "rekey-rotate-root": Scenario(rekey_rotate_root, "rotate-root"),
}
