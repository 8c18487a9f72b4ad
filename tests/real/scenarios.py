"""Scenarios written once, run against the sandbox and against a real OpenBao.

Each scenario is a function of a :class:`~tests.real._differential.Target` that
names its steps; ``SCENARIOS`` maps a scenario's name to it and to the kind of
real server it needs (``dev``: the dev server; ``legacy-rekey`` / ``rotate-root``:
a raft server with 5 shares / threshold 3, with or without the legacy rekey
endpoints; ``static-seal`` / ``static-seal-legacy``: the same with a ``seal "static"``
stanza, whose shares are recovery shares; ``postgres`` / ``rabbitmq``: the dev server
with that real backend).
The names used are fixed, so a scenario runs once per server.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._differential import Target
from ._seed import CREATE_ROLE, DROP_ROLE
from .scenarios_identity import identity, role_options, routes, token_options, token_roles

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


def data_fields(*names: str) -> dict[str, Callable[[Any], Any]]:
    """Checks comparing the values of these fields of ``data`` on both sides."""
    return {name: (lambda body, name=name: body["data"][name]) for name in names}


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
        checks=data_fields("sha256", "command", "args", "builtin", "version", "name"),
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


def plugin_sha256(t: Target) -> None:
    """A registered plugin is run only when its binary's sum is the catalog's: one registered
    with a sum of zeros (its file present) cannot back a database connection or a mount."""
    folder = t.context.get("plugin_directory")
    if folder is not None:
        path = folder / "diff-sha-plugin"
        path.write_bytes(PLUGIN_BYTES)
        path.chmod(0o755)
    zeros = {"sha256": "0" * 64, "command": "diff-sha-plugin"}
    t.call("register database plugin", "POST", "sys/plugins/catalog/database/diff-sha", json=zeros)
    t.call("register secret plugin", "POST", "sys/plugins/catalog/secret/diff-sha", json=zeros)
    t.call("mount database", "POST", "sys/mounts/db-sha", json={"type": "database"})
    t.call(
        "connection on the plugin",
        "POST",
        "db-sha/config/main",
        json={"plugin_name": "diff-sha", "connection_url": "x", "verify_connection": False},
    )
    t.call("connection not stored", "GET", "db-sha/config/main")
    t.call("mount the secret plugin", "POST", "sys/mounts/diff-sha", json={"type": "diff-sha"})
    t.call("unmount database", "DELETE", "sys/mounts/db-sha")
    t.call("delete database plugin", "DELETE", "sys/plugins/catalog/database/diff-sha")
    t.call("delete secret plugin", "DELETE", "sys/plugins/catalog/secret/diff-sha")


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


# -- a seal with stored shares (OpenBao with a seal "static" stanza) --------------------------
def _seal_checks() -> dict[str, Callable[[Any], Any]]:
    return {
        "type": lambda b: b["type"],
        "recovery_seal": lambda b: b["recovery_seal"],
        "recovery_seal_type": lambda b: b.get("recovery_seal_type"),
        "t": lambda b: b["t"],
        "n": lambda b: b["n"],
    }


def recovery_seal_rotate(t: Target) -> None:
    """Auto-unseal with recovery shares, on the authenticated endpoints (legacy ones off)."""
    shares = t.shares
    t.call("seal status", "GET", "sys/seal-status", checks=_seal_checks())
    stored = t.call(
        "root init coerced",
        "POST",
        "sys/rotate/root/init",
        json={"secret_shares": 3, "secret_threshold": 2},
        checks={k: (lambda b, k=k: b["data"][k]) for k in ("t", "n", "required", "started")},
    )
    nonce = stored["data"]["nonce"]
    for i, share in enumerate(shares[:2], 1):
        t.call(
            f"root update {i}",
            "POST",
            "sys/rotate/root/update",
            json={"key": share, "nonce": nonce},
        )
    t.call(
        "root update 3",
        "POST",
        "sys/rotate/root/update",
        json={"key": shares[2], "nonce": nonce},
        checks={
            "complete": lambda b: b["data"]["complete"],
            "keys": lambda b: b["data"]["keys"],
            "keys_base64": lambda b: b["data"]["keys_base64"],
        },
    )
    t.call(
        "root init with verification",
        "POST",
        "sys/rotate/root/init",
        json={"secret_shares": 1, "secret_threshold": 1, "require_verification": True},
        errors=True,
    )
    t.call("legacy recovery status", "GET", "sys/rekey-recovery-key/init")
    t.call(
        "recovery status idle",
        "GET",
        "sys/rotate/recovery/init",
        checks={"required": lambda b: b["data"]["required"]},
    )
    t.call(
        "recovery threshold above shares",
        "POST",
        "sys/rotate/recovery/init",
        json={"secret_shares": 3, "secret_threshold": 4},
    )
    started = t.call(
        "recovery init",
        "POST",
        "sys/rotate/recovery/init",
        json={"secret_shares": 3, "secret_threshold": 2},
        checks={k: (lambda b, k=k: b["data"][k]) for k in ("t", "n", "required")},
    )
    nonce = started["data"]["nonce"]
    for i, share in enumerate(shares[:2], 1):
        t.call(
            f"recovery update {i}",
            "POST",
            "sys/rotate/recovery/update",
            json={"key": share, "nonce": nonce},
            checks={"progress": lambda b: b["data"]["progress"]},
        )
    t.call(
        "recovery update 3",
        "POST",
        "sys/rotate/recovery/update",
        json={"key": shares[2], "nonce": nonce},
        checks={
            "complete": lambda b: b["data"]["complete"],
            "keys": lambda b: len(b["data"]["keys"]),
        },
    )
    t.call("seal status after", "GET", "sys/seal-status", checks=_seal_checks())
    t.call("recovery backup none", "GET", "sys/rotate/recovery/backup", errors=True)


def recovery_seal_legacy(t: Target) -> None:
    """Auto-unseal with recovery shares, on the legacy endpoints a listener re-enables."""
    shares = t.shares
    stored = t.call(
        "root init coerced",
        "POST",
        "sys/rekey/init",
        json={"secret_shares": 3, "secret_threshold": 2},
        checks={k: (lambda b, k=k: b[k]) for k in ("t", "n", "required", "started")},
    )
    for i, share in enumerate(shares[:2], 1):
        t.call(
            f"root update {i}",
            "POST",
            "sys/rekey/update",
            json={"key": share, "nonce": stored["nonce"]},
            checks={k: (lambda b, k=k: b[k]) for k in ("t", "n", "progress")},
        )
    t.call(
        "root update 3",
        "POST",
        "sys/rekey/update",
        json={"key": shares[2], "nonce": stored["nonce"]},
        checks={"complete": lambda b: b["complete"], "keys": lambda b: b["keys"]},
    )
    started = t.call(
        "recovery init",
        "POST",
        "sys/rekey-recovery-key/init",
        json={"secret_shares": 2, "secret_threshold": 2},
        checks={k: (lambda b, k=k: b[k]) for k in ("t", "n", "required", "started")},
    )
    for i, share in enumerate(shares[:3], 1):
        t.call(
            f"recovery update {i}",
            "POST",
            "sys/rekey-recovery-key/update",
            json={"key": share, "nonce": started["nonce"]},
            checks={"complete": lambda b: bool(b.get("complete"))},
        )
    t.call("recovery backup path", "GET", "sys/rekey-recovery-key/backup")
    t.call("seal status after", "GET", "sys/seal-status", checks=_seal_checks())


# -- database engine ----------------------------------------------------------------------
def database(t: Target) -> None:
    """Needs ``context["postgres"]``: ``url`` (templated), ``username``, ``password``, and a
    login role ``diff_static`` existing on the real database."""
    pg = t.context["postgres"]
    t.call("mount", "POST", "sys/mounts/db-diff", json={"type": "database"})
    connection = {
        "plugin_name": "postgresql-database-plugin",
        "connection_url": pg["url"],
        "username": pg["username"],
        "password": pg["password"],
        "allowed_roles": ["dyn", "static"],
    }
    t.call("config write", "POST", "db-diff/config/main", json=connection)
    t.call(
        "config read",
        "GET",
        "db-diff/config/main",
        checks={
            "plugin_name": lambda b: b["data"]["plugin_name"],
            "allowed_roles": lambda b: b["data"]["allowed_roles"],
            "details": lambda b: sorted(b["data"]["connection_details"]),
        },
    )
    t.call("config list", "LIST", "db-diff/config", checks={"keys": keys_of})
    t.call(
        "config unknown plugin",
        "POST",
        "db-diff/config/other",
        json={**connection, "plugin_name": "no-such-plugin"},
    )
    t.call("config without plugin", "POST", "db-diff/config/other", json={"connection_url": "x"})
    role = {
        "db_name": "main",
        "creation_statements": [CREATE_ROLE],
        "revocation_statements": [DROP_ROLE],
        "default_ttl": "1h",
        "max_ttl": "24h",
    }
    t.call("role write", "POST", "db-diff/roles/dyn", json=role)
    t.call(
        "role read",
        "GET",
        "db-diff/roles/dyn",
        checks=data_fields("db_name", "default_ttl", "max_ttl", "creation_statements"),
    )
    t.call("role list", "LIST", "db-diff/roles", checks={"keys": keys_of})
    t.call("role without statements", "POST", "db-diff/roles/bad", json={"db_name": "main"})
    t.call("role write not allowed", "POST", "db-diff/roles/other", json=role)
    creds = t.call(
        "creds",
        "GET",
        "db-diff/creds/dyn",
        checks={
            "lease_duration": lambda b: b["lease_duration"],
            "renewable": lambda b: b["renewable"],
            "lease prefix": lambda b: b["lease_id"].rsplit("/", 1)[0],
        },
    )
    lease_id = creds["lease_id"]
    t.call("creds not allowed", "GET", "db-diff/creds/other")
    t.call("creds missing role", "GET", "db-diff/creds/nope", errors=True)
    t.call(
        "lease lookup",
        "PUT",
        "sys/leases/lookup",
        json={"lease_id": lease_id},
        checks={"renewable": lambda b: b["data"]["renewable"]},
    )
    t.call(
        "lease renew",
        "PUT",
        "sys/leases/renew",
        json={"lease_id": lease_id, "increment": 600},
        checks={"lease_duration": lambda b: b["lease_duration"]},
    )
    t.call("lease revoke", "PUT", "sys/leases/revoke", json={"lease_id": lease_id, "sync": True})
    static = {"db_name": "main", "username": "diff_static", "rotation_period": "1h"}
    t.call("static write", "POST", "db-diff/static-roles/static", json=static)
    t.call(
        "static read",
        "GET",
        "db-diff/static-roles/static",
        checks={k: (lambda b, k=k: b["data"][k]) for k in ("username", "rotation_period")},
    )
    t.call("static list", "LIST", "db-diff/static-roles", checks={"keys": keys_of})
    first = t.call(
        "static creds",
        "GET",
        "db-diff/static-creds/static",
        checks={"username": lambda b: b["data"]["username"]},
    )
    t.call("static rotate", "POST", "db-diff/rotate-role/static")
    t.call(
        "static creds after rotate",
        "GET",
        "db-diff/static-creds/static",
        checks={"changed": lambda b: b["data"]["password"] != first["data"]["password"]},
    )
    t.call(
        "static too short",
        "POST",
        "db-diff/static-roles/short",
        json={**static, "rotation_period": "2s"},
    )
    t.call("static delete", "DELETE", "db-diff/static-roles/static")
    t.call("role delete", "DELETE", "db-diff/roles/dyn")
    t.call("config delete", "DELETE", "db-diff/config/main")
    t.call("unmount", "DELETE", "sys/mounts/db-diff")


# -- broker engine ---------------------------------------------------------------------------
def broker(t: Target) -> None:
    """Needs ``context["rabbitmq"]``: ``uri`` (management API), ``username``, ``password``."""
    mq = t.context["rabbitmq"]
    t.call("mount", "POST", "sys/mounts/mq-diff", json={"type": "rabbitmq"})
    t.call(
        "connection",
        "POST",
        "mq-diff/config/connection",
        json={"connection_uri": mq["uri"], "username": mq["username"], "password": mq["password"]},
    )
    t.call("connection without uri", "POST", "mq-diff/config/connection", json={"username": "x"})
    t.call("lease write", "POST", "mq-diff/config/lease", json={"ttl": 1800, "max_ttl": 7200})
    t.call(
        "lease read",
        "GET",
        "mq-diff/config/lease",
        checks={"ttl": lambda b: b["data"]["ttl"], "max_ttl": lambda b: b["data"]["max_ttl"]},
    )
    vhosts = '{"/": {"configure": ".*", "write": ".*", "read": ".*"}}'
    t.call("role write", "POST", "mq-diff/roles/app", json={"tags": "management", "vhosts": vhosts})
    t.call(
        "role read",
        "GET",
        "mq-diff/roles/app",
        checks={
            "tags": lambda b: b["data"]["tags"],
            "vhosts": lambda b: json.dumps(b["data"]["vhosts"], sort_keys=True),
        },
    )
    t.call("role list", "LIST", "mq-diff/roles", checks={"keys": keys_of})
    t.call("role bad vhosts", "POST", "mq-diff/roles/bad", json={"vhosts": "not json"})
    creds = t.call(
        "creds",
        "GET",
        "mq-diff/creds/app",
        checks={
            "lease_duration": lambda b: b["lease_duration"],
            "renewable": lambda b: b["renewable"],
            "lease prefix": lambda b: b["lease_id"].rsplit("/", 1)[0],
        },
    )
    t.call("creds missing role", "GET", "mq-diff/creds/nope", errors=True)
    t.call(
        "lease renew",
        "PUT",
        "sys/leases/renew",
        json={"lease_id": creds["lease_id"], "increment": 600},
        checks={"lease_duration": lambda b: b["lease_duration"]},
    )
    t.call(
        "lease revoke",
        "PUT",
        "sys/leases/revoke",
        json={"lease_id": creds["lease_id"], "sync": True},
    )
    t.call("role delete", "DELETE", "mq-diff/roles/app")
    t.call("role read deleted", "GET", "mq-diff/roles/app")
    t.call("unmount", "DELETE", "sys/mounts/mq-diff")


# -- certificate engine -------------------------------------------------------------------------
def _csr(common_name: str) -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .sign(key, hashes.SHA256())
    )
    return csr.public_bytes(serialization.Encoding.PEM).decode()


def pki(t: Target) -> None:
    t.call(
        "mount",
        "POST",
        "sys/mounts/pki-diff",
        json={"type": "pki", "config": {"max_lease_ttl": "87600h"}},
    )
    t.call(
        "generate root",
        "POST",
        "pki-diff/root/generate/internal",
        json={"common_name": "Diff Root", "key_type": "ec", "issuer_name": "root", "ttl": "8760h"},
        checks={"issuer_name": lambda b: b["data"]["issuer_name"]},
    )
    t.call(
        "issuers", "LIST", "pki-diff/issuers", checks={"count": lambda b: len(b["data"]["keys"])}
    )
    t.call(
        "issuer read",
        "GET",
        "pki-diff/issuer/root",
        checks={"issuer_name": lambda b: b["data"]["issuer_name"]},
    )
    role = {
        "allowed_domains": ["example.test"],
        "allow_subdomains": True,
        "max_ttl": "72h",
        "key_type": "ec",
    }
    t.call("role write", "POST", "pki-diff/roles/web", json=role)
    t.call(
        "role read",
        "GET",
        "pki-diff/roles/web",
        checks=data_fields("allowed_domains", "allow_subdomains", "max_ttl", "key_type"),
    )
    t.call("role list", "LIST", "pki-diff/roles", checks={"keys": keys_of})
    issued = t.call(
        "issue",
        "POST",
        "pki-diff/issue/web",
        json={"common_name": "www.example.test", "alt_names": "api.example.test", "ttl": "1h"},
        checks={
            "private_key_type": lambda b: b["data"]["private_key_type"],
            "chain": lambda b: len(b["data"]["ca_chain"]),
        },
    )
    t.call(
        "issue refused name",
        "POST",
        "pki-diff/issue/web",
        json={"common_name": "www.evil.org"},
        errors=True,
    )
    t.call(
        "issue refused san",
        "POST",
        "pki-diff/issue/web",
        json={"common_name": "a.example.test", "alt_names": "evil.org"},
        errors=True,
    )
    t.call(
        "issue ttl too long",
        "POST",
        "pki-diff/issue/web",
        json={"common_name": "a.example.test", "ttl": "100h"},
    )
    t.call(
        "issue missing role", "POST", "pki-diff/issue/nope", json={"common_name": "a.example.test"}
    )
    t.call("sign", "POST", "pki-diff/sign/web", json={"csr": _csr("app.example.test"), "ttl": "1h"})
    t.call("sign bad csr", "POST", "pki-diff/sign/web", json={"csr": "not a csr"})
    serial = issued["data"]["serial_number"]
    t.call(
        "certs",
        "LIST",
        "pki-diff/certs",
        checks={"lists the issued serial": lambda b: serial in b["data"]["keys"]},
    )
    t.call(
        "cert read",
        "GET",
        f"pki-diff/cert/{serial}",
        checks={
            "same certificate": lambda b: b["data"]["certificate"] == issued["data"]["certificate"]
        },
    )
    t.call("role delete", "DELETE", "pki-diff/roles/web")
    t.call("unmount", "DELETE", "sys/mounts/pki-diff")


def _crl_serials(pem: str) -> list[str]:
    from cryptography import x509

    return sorted(f"{r.serial_number:x}" for r in x509.load_pem_x509_crl(pem.encode()))


def _crl_facts(pem: str, issuer_pem: str) -> dict[str, Any]:
    """What both servers' CRLs must agree on: signed by the issuer, its lifetime, a delta or not."""
    from cryptography import x509

    crl = x509.load_pem_x509_crl(pem.encode())
    issuer = x509.load_pem_x509_certificate(issuer_pem.encode())
    assert crl.next_update_utc is not None
    try:
        crl.extensions.get_extension_for_class(x509.DeltaCRLIndicator)
        delta = True
    except x509.ExtensionNotFound:
        delta = False
    return {
        "signed by the issuer": crl.is_signature_valid(issuer.public_key()),  # type: ignore[arg-type]
        "lifetime": str(crl.next_update_utc - crl.last_update_utc),
        "delta": delta,
        "entries": len(list(crl)),
    }


def _extensions(pem: str) -> list[str]:
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(pem.encode())
    return sorted(e.oid.dotted_string for e in cert.extensions)


def pki_revocation(t: Target) -> None:
    """Revocation, CRLs, tidy, URLs, sign-verbatim and key and issuer management."""
    mount = "pki-rev"
    t.call(
        "mount",
        "POST",
        f"sys/mounts/{mount}",
        json={"type": "pki", "config": {"max_lease_ttl": "87600h"}},
    )
    t.call("crl before any issuer", "GET", f"{mount}/crl")
    t.call(
        "crl config defaults",
        "GET",
        f"{mount}/config/crl",
        checks={"config": lambda b: sorted(b["data"].items())},
    )
    t.call(
        "urls defaults",
        "GET",
        f"{mount}/config/urls",
        checks={"urls": lambda b: sorted(b["data"].items())},
    )
    t.call(
        "urls write",
        "POST",
        f"{mount}/config/urls",
        json={
            "issuing_certificates": ["http://ca.example.test/v1/pki-rev/ca"],
            "crl_distribution_points": "http://ca.example.test/v1/pki-rev/crl",
        },
        checks={"urls": lambda b: sorted(b["data"].items())},
    )
    t.call(
        "urls bad",
        "POST",
        f"{mount}/config/urls",
        json={"ocsp_servers": ["not a url"]},
        errors=True,
    )
    root = t.call(
        "generate root",
        "POST",
        f"{mount}/root/generate/internal",
        json={"common_name": "Rev Root", "key_type": "ec", "issuer_name": "root", "ttl": "8760h"},
        checks={"warnings": lambda b: b["warnings"]},
    )
    root_pem = root["data"]["certificate"]
    t.call(
        "role write",
        "POST",
        f"{mount}/roles/web",
        json={"allowed_domains": ["example.test"], "allow_subdomains": True, "key_type": "ec"},
    )
    issued = t.call(
        "issue",
        "POST",
        f"{mount}/issue/web",
        json={"common_name": "www.example.test", "ttl": "1h"},
        checks={"extensions": lambda b: _extensions(b["data"]["certificate"])},
    )
    serial = issued["data"]["serial_number"]
    t.call(
        "certs list colon serials",
        "LIST",
        f"{mount}/certs",
        checks={"lists the issued serial": lambda b: serial in b["data"]["keys"]},
    )
    t.call("revoked list empty", "LIST", f"{mount}/certs/revoked")
    t.call(
        "crl empty",
        "GET",
        f"{mount}/cert/crl",
        checks={"crl": lambda b: _crl_facts(b["data"]["certificate"], root_pem)},
    )
    t.call(
        "revoke",
        "POST",
        f"{mount}/revoke",
        json={"serial_number": serial},
        checks={"state": lambda b: b["data"]["state"]},
    )
    t.call(
        "revoke again hyphenated",
        "POST",
        f"{mount}/revoke",
        json={"serial_number": serial.replace(":", "-")},
        checks={"state": lambda b: b["data"]["state"]},
    )
    t.call(
        "revoke unknown", "POST", f"{mount}/revoke", json={"serial_number": "aa:bb"}, errors=True
    )
    t.call("revoke nothing", "POST", f"{mount}/revoke", json={}, errors=True)
    t.call(
        "revoke both",
        "POST",
        f"{mount}/revoke",
        json={"serial_number": serial, "certificate": issued["data"]["certificate"]},
        errors=True,
    )
    t.call(
        "revoke the root",
        "POST",
        f"{mount}/revoke",
        json={"serial_number": root["data"]["serial_number"]},
    )
    t.call(
        "revoked list",
        "LIST",
        f"{mount}/certs/revoked",
        checks={"keys": lambda b: b["data"]["keys"] == [serial]},
    )
    t.call(
        "cert read revoked",
        "GET",
        f"{mount}/cert/{serial}",
        checks={"has issuer": lambda b: bool(b["data"]["issuer_id"])},
    )
    t.call(
        "crl lists the revoked serial",
        "GET",
        f"{mount}/issuer/root/crl",
        checks={
            "crl": lambda b: _crl_facts(b["data"]["crl"], root_pem),
            "serials": lambda b: (
                _crl_serials(b["data"]["crl"]) == [serial.replace(":", "").lstrip("0")]
            ),
        },
    )
    t.call("crl rotate", "GET", f"{mount}/crl/rotate", checks={"data": lambda b: b["data"]})
    t.call(
        "crl rotate delta disabled",
        "GET",
        f"{mount}/crl/rotate-delta",
        checks={"warnings": lambda b: b["warnings"]},
    )
    t.call(
        "crl config delta without auto rebuild",
        "POST",
        f"{mount}/config/crl",
        json={"enable_delta": True},
        errors=True,
    )
    t.call("crl config bad expiry", "POST", f"{mount}/config/crl", json={"expiry": "bogus"})
    t.call(
        "crl config auto rebuild",
        "POST",
        f"{mount}/config/crl",
        json={"auto_rebuild": True, "enable_delta": True, "expiry": "48h"},
        checks={"config": lambda b: sorted(b["data"].items())},
    )
    second = t.call(
        "issue second",
        "POST",
        f"{mount}/issue/web",
        json={"common_name": "b.example.test", "ttl": "1h"},
    )
    second_serial = second["data"]["serial_number"]
    t.call("revoke second", "POST", f"{mount}/revoke", json={"serial_number": second_serial})
    t.call(
        "crl waits for rotate",
        "GET",
        f"{mount}/issuer/root/crl",
        checks={"entries": lambda b: len(_crl_serials(b["data"]["crl"]))},
    )
    t.call(
        "crl rotate delta", "GET", f"{mount}/crl/rotate-delta", checks={"data": lambda b: b["data"]}
    )
    t.call(
        "delta crl carries it",
        "GET",
        f"{mount}/issuer/root/crl/delta",
        checks={"crl": lambda b: _crl_facts(b["data"]["crl"], root_pem)},
    )
    t.call("crl rotate after", "GET", f"{mount}/crl/rotate")
    t.call(
        "crl has both",
        "GET",
        f"{mount}/cert/crl",
        checks={"entries": lambda b: len(_crl_serials(b["data"]["certificate"]))},
    )
    t.call(
        "sign revocation list",
        "POST",
        f"{mount}/issuer/root/sign-revocation-list",
        json={
            "crl_number": 7,
            "next_update": "1h",
            "revoked_certs": [
                {"serial_number": "11:22", "revocation_time": "2024-01-01T00:00:00Z"}
            ],
        },
        checks={
            "crl": lambda b: _crl_facts(b["data"]["crl"], root_pem),
            "serials": lambda b: _crl_serials(b["data"]["crl"]),
        },
    )
    t.call(
        "sign revocation list bad next update",
        "POST",
        f"{mount}/issuer/root/sign-revocation-list",
        json={"next_update": "bogus"},
    )
    t.call(
        "sign revocation list unknown issuer",
        "POST",
        f"{mount}/issuer/nope/sign-revocation-list",
        json={},
        errors=True,
    )
    t.call(
        "tidy status before",
        "GET",
        f"{mount}/tidy-status",
        checks={"state": lambda b: b["data"]["state"]},
    )
    t.call(
        "tidy nothing",
        "POST",
        f"{mount}/tidy",
        json={},
        checks={"warnings": lambda b: b["warnings"]},
    )
    # OpenBao runs a tidy in the background: on a busy machine the empty one can
    # still be running, and the next would be refused as "already in progress".
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status = t.call("tidy wait", "GET", f"{mount}/tidy-status", record=False)
        if (status or {}).get("data", {}).get("state") != "Running":
            break
        time.sleep(0.1)
    t.call(
        "tidy",
        "POST",
        f"{mount}/tidy",
        json={"tidy_cert_store": True, "tidy_revoked_certs": True},
        checks={"warnings": lambda b: b["warnings"]},
    )
    t.call(
        "tidy status",
        "GET",
        f"{mount}/tidy-status",
        checks={
            name: (lambda b, name=name: b["data"][name])
            for name in ("state", "tidy_cert_store", "tidy_revoked_certs", "safety_buffer")
        },
    )
    t.call(
        "tidy cancel", "POST", f"{mount}/tidy-cancel", checks={"warnings": lambda b: b["warnings"]}
    )
    t.call("tidy bad", "POST", f"{mount}/tidy", json={"tidy_cert_store": "x"})
    t.call(
        "sign verbatim",
        "POST",
        f"{mount}/sign-verbatim",
        json={"csr": _csr("any.name.org"), "ttl": "1h"},
        checks={"extensions": lambda b: _extensions(b["data"]["certificate"])},
    )
    t.call(
        "sign verbatim role",
        "POST",
        f"{mount}/sign-verbatim/web",
        json={"csr": _csr("any.name.org"), "ttl": "1h"},
    )
    t.call(
        "sign verbatim unknown role",
        "POST",
        f"{mount}/sign-verbatim/nope",
        json={"csr": _csr("x")},
        errors=True,
    )
    t.call(
        "sign verbatim bad csr", "POST", f"{mount}/sign-verbatim", json={"csr": "junk"}, errors=True
    )
    t.call(
        "key generate internal",
        "POST",
        f"{mount}/keys/generate/internal",
        json={"key_type": "ec", "key_name": "spare"},
        checks={"key_type": lambda b: b["data"]["key_type"]},
    )
    t.call(
        "key generate exported",
        "POST",
        f"{mount}/keys/generate/exported",
        json={"key_type": "ec", "key_bits": 384},
        checks={"is a key": lambda b: "PRIVATE KEY" in b["data"]["private_key"]},
    )
    t.call(
        "key generate name taken",
        "POST",
        f"{mount}/keys/generate/internal",
        json={"key_name": "spare"},
        errors=True,
    )
    t.call("key delete", "DELETE", f"{mount}/key/spare")
    t.call("key delete again", "DELETE", f"{mount}/key/spare")
    t.call(
        "key delete in use",
        "DELETE",
        f"{mount}/key/{root['data']['key_id']}",
        checks={"error": lambda b: b["errors"][0].split(": ")[0]},
    )
    t.call("issuer delete unknown", "DELETE", f"{mount}/issuer/nope")
    t.call(
        "issuer delete default",
        "DELETE",
        f"{mount}/issuer/root",
        checks={"warnings": lambda b: len(b["warnings"])},
    )
    t.call(
        "config issuers after",
        "GET",
        f"{mount}/config/issuers",
        checks={"default": lambda b: b["data"]["default"]},
    )
    t.call("crl without issuers", "GET", f"{mount}/crl")
    t.call("crl json without issuers", "GET", f"{mount}/cert/crl", errors=True)
    t.call("unmount", "DELETE", f"sys/mounts/{mount}")


@dataclass(frozen=True)
class Scenario:
    run: Callable[[Target], None]
    server: str  # dev, legacy-rekey, rotate-root, static-seal(-legacy), postgres, rabbitmq


SCENARIOS: dict[str, Scenario] = {
    "password-policies": Scenario(password_policies, "dev"),
    "acl-policies": Scenario(acl_policies, "dev"),
    "leases": Scenario(leases, "dev"),
    "plugins": Scenario(plugins, "dev"),
    "plugin-sha256": Scenario(plugin_sha256, "dev"),
    "rekey-legacy": Scenario(rekey_legacy_with_verification, "legacy-rekey"),
    "rekey-rotate-root": Scenario(rekey_rotate_root, "rotate-root"),
    "recovery-seal-rotate": Scenario(recovery_seal_rotate, "static-seal"),
    "recovery-seal-legacy": Scenario(recovery_seal_legacy, "static-seal-legacy"),
    "database": Scenario(database, "postgres"),
    "broker": Scenario(broker, "rabbitmq"),
    "pki": Scenario(pki, "dev"),
    "pki-revocation": Scenario(pki_revocation, "dev"),
    "identity": Scenario(identity, "dev"),
    "token-roles": Scenario(token_roles, "dev"),
    "token-options": Scenario(token_options, "dev"),
    "role-options": Scenario(role_options, "dev"),
    "routes": Scenario(routes, "dev"),
}
