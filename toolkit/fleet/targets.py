"""The targets file: which servers a fleet run visits, and where each one's credentials are.

A TOML file with one ``[[target]]`` table per server::

    [[target]]
    name = "prod-eu"
    kind = "secrets"                      # or "platform"
    address = "https://bao.eu.example.com:8200"
    token_env = "PROD_EU_VAULT_TOKEN"     # or token_file = "~/.config/toolkit/prod-eu.token"
    ca_file = "/etc/ssl/bao-ca.pem"       # optional
    namespace = "team-a/"                 # optional (secrets)
    organization = "acme"                 # optional (platform)
    timeout = 300                         # optional: seconds a runbook cell may take
    parameters = { soon_seconds = 7200 }  # optional: the runbook's papermill parameters

An optional ``[defaults]`` table holds ``parameters`` and ``timeout`` for every
target. No secret is ever in the file: a key or parameter that names one is
refused, and credentials are named by variable or file, resolved where the run
happens (:func:`resolve_token`), never sent with it.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError, InputError
from .._masking import Sensitive

__all__ = ["KINDS", "Target", "load_targets", "parse_targets", "resolve_token"]

KINDS = ("secrets", "platform")
_KEYS = frozenset(
    {
        "name",
        "kind",
        "address",
        "token_env",
        "token_file",
        "ca_file",
        "namespace",
        "organization",
        "timeout",
        "parameters",
    }
)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SECRET = re.compile(r"token|password|passwd|secret|share|private|credential", re.I)
# Parameters the runner sets itself for every target.
RESERVED_PARAMETERS = frozenset({"target", "token_env", "evidence_dir"})
DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Target:
    """One server of a fleet run. Holds where its credentials are, never a credential."""

    name: str
    kind: str
    address: str
    token_env: str | None = None
    token_file: str | None = None
    ca_file: str | None = None
    namespace: str | None = None
    organization: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Plain data (what travels to a worker: names of variables and files only)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "address": self.address,
            "token_env": self.token_env,
            "token_file": self.token_file,
            "ca_file": self.ca_file,
            "namespace": self.namespace,
            "organization": self.organization,
            "timeout": self.timeout,
            "parameters": dict(self.parameters),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Target:
        return cls(**{k: v for k, v in data.items() if k in _KEYS})


def load_targets(path: str | Path) -> list[Target]:
    """The targets of the TOML file at ``path``; :class:`InputError` naming what is wrong."""
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the targets file {where}: {exc.strerror}") from None
    return parse_targets(text, source=str(where))


def parse_targets(text: str, *, source: str = "targets file") -> list[Target]:
    """The targets of a targets file's text (see the module doc)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source} is not valid TOML: {exc}") from None
    unknown_top = sorted(set(document) - {"target", "defaults"})
    if unknown_top:
        raise InputError(f"{source}: unknown table {unknown_top[0]!r} (use [[target]], [defaults])")
    defaults = document.get("defaults") or {}
    if not isinstance(defaults, dict) or set(defaults) - {"parameters", "timeout"}:
        raise InputError(f"{source}: [defaults] takes only 'parameters' and 'timeout'")
    default_params = _parameters(defaults.get("parameters") or {}, f"{source} [defaults]")
    tables = document.get("target") or []
    if not isinstance(tables, list) or not tables:
        raise InputError(f"{source}: no [[target]] tables")
    targets: list[Target] = []
    seen: set[str] = set()
    for number, table in enumerate(tables, start=1):
        where = f"{source}, target {number}"
        targets.append(_target(table, where, default_params, defaults.get("timeout")))
        if targets[-1].name in seen:
            raise InputError(f"{where}: the name {targets[-1].name!r} is used twice")
        seen.add(targets[-1].name)
    return targets


def _target(table: Any, where: str, default_params: dict[str, Any], default_timeout: Any) -> Target:
    if not isinstance(table, dict):
        raise InputError(f"{where}: not a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        key = unknown[0]
        if _SECRET.search(key):
            raise InputError(
                f"{where}: {key!r} looks like a secret; never put one in the targets file: "
                "name the variable that holds it (token_env) or a file (token_file)"
            )
        raise InputError(f"{where}: unknown key {key!r} (allowed: {', '.join(sorted(_KEYS))})")
    for key in ("name", "kind", "address"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise InputError(f"{where}: {key!r} is required (a string)")
    name = table["name"]
    where = f"{where} ({name})"
    if not _NAME.match(name):
        raise InputError(f"{where}: the name may hold letters, digits, '.', '_' and '-' only")
    if table["kind"] not in KINDS:
        raise InputError(f"{where}: kind must be one of {', '.join(KINDS)}, not {table['kind']!r}")
    if not table["address"].startswith(("http://", "https://")):
        raise InputError(f"{where}: address must start with http:// or https://")
    if ("token_env" in table) == ("token_file" in table):
        raise InputError(f"{where}: name exactly one of token_env or token_file")
    token_env = table.get("token_env")
    if token_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(token_env)):
        # Never echoed: what was given may be the token itself, pasted in the wrong place.
        raise InputError(
            f"{where}: token_env must name an environment variable (letters, digits, '_'); "
            "the value given is not one and is not shown: put the token in a variable and name it"
        )
    timeout = table.get(
        "timeout", default_timeout if default_timeout is not None else DEFAULT_TIMEOUT
    )
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise InputError(f"{where}: timeout must be a positive number of seconds")
    params = {**default_params, **_parameters(table.get("parameters") or {}, where)}
    return Target(
        name=name,
        kind=table["kind"],
        address=table["address"].rstrip("/"),
        token_env=token_env,
        token_file=table.get("token_file"),
        ca_file=table.get("ca_file"),
        namespace=table.get("namespace"),
        organization=table.get("organization"),
        timeout=float(timeout),
        parameters=params,
    )


def _parameters(params: Any, where: str) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise InputError(f"{where}: parameters must be a table")
    for key, value in params.items():
        if key.endswith("_env") and not (
            isinstance(value, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value)
        ):
            raise InputError(
                f"{where}: the parameter {key!r} must name an environment variable; the value "
                "given is not one and is not shown"
            )
        if key in RESERVED_PARAMETERS:
            raise InputError(f"{where}: the runner sets the parameter {key!r} itself")
        if _SECRET.search(key) and not key.endswith("_env"):
            raise InputError(
                f"{where}: the parameter {key!r} looks like a secret; never put one in the "
                "targets file"
            )
    return dict(params)


def resolve_token(target: Target) -> Sensitive:
    """The target's token, from the variable or file it names, read where the run happens.

    A token file must be the caller's own and readable by nobody else (as
    ``ssh`` insists for keys); a missing or empty source is a
    :class:`ConfigurationError` naming the variable or file, never the value.
    """
    if target.token_env:
        value = os.environ.get(target.token_env, "")
        if not value:
            raise ConfigurationError(
                f"target {target.name}: the variable {target.token_env} is not set here"
            )
        return Sensitive(value.strip(), "token")
    assert target.token_file
    path = Path(os.path.expanduser(target.token_file))
    try:
        info = path.stat()
    except OSError as exc:
        raise ConfigurationError(
            f"target {target.name}: cannot read the token file {path}: {exc.strerror}"
        ) from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigurationError(
            f"target {target.name}: the token file {path} is open to group or others (chmod 600 it)"
        )
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise ConfigurationError(f"target {target.name}: the token file {path} is not yours")
    value = path.read_text(encoding="utf-8").strip()
    if not value:
        raise ConfigurationError(f"target {target.name}: the token file {path} is empty")
    return Sensitive(value, "token")
