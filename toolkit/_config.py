"""Configuration from explicit arguments or the environment, as each ecosystem does.

Platform: ``TFE_ADDRESS``; the token from ``TFE_TOKEN``, else where the
Terraform CLI finds one for the address's host, in its order:
``TF_TOKEN_<host>`` variables, ``credentials "<host>"`` blocks in the CLI
configuration (``TF_CLI_CONFIG_FILE``, else ``~/.terraformrc``), then
``~/.terraform.d/credentials.tfrc.json`` (what ``terraform login`` writes).

Secrets server: ``VAULT_ADDR``, ``VAULT_NAMESPACE``, ``VAULT_CACERT``,
``VAULT_SKIP_VERIFY``, ``VAULT_CLIENT_CERT``, ``VAULT_CLIENT_KEY``,
``VAULT_TLS_SERVER_NAME``, each also spelled ``BAO_...``; the token from
``VAULT_TOKEN`` / ``BAO_TOKEN``, else the CLI's token file ``~/.vault-token``
(unless the CLI is configured with a token helper, which is the helper's to read).

An explicit argument always wins; nothing falls back to the sandbox silently.
``Settings.token_source`` names where the token came from (never the token).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ._errors import ConfigurationError
from ._masking import Sensitive, hidden
from ._spec.hcl import hcl_document
from ._tls import ClientTLS

__all__ = [
    "Settings",
    "hidden_token",
    "platform_settings",
    "secrets_settings",
    "terraform_token",
]

_TRUE = {"1", "true", "yes", "on", "t", "y"}


@dataclass(frozen=True)
class Settings:
    """Where a client connects and with what. ``token`` is never shown by ``repr``.

    ``token`` is empty for a client that will log in (``SecretsClient.for_login``).
    """

    address: str
    token: str
    namespace: str | None = None
    ca_file: str | None = None
    verify: bool = True
    client_cert: str | None = None
    client_key: str | None = None
    server_name: str | None = None
    token_source: str = ""

    def __repr__(self) -> str:
        return (
            f"Settings(address={self.address!r}, token=<hidden>, "
            f"token_source={self.token_source!r}, namespace={self.namespace!r}, "
            f"ca_file={self.ca_file!r}, verify={self.verify!r}, "
            f"client_cert={self.client_cert!r}, client_key={self.client_key!r}, "
            f"server_name={self.server_name!r})"
        )

    @property
    def tls(self) -> ClientTLS:
        """The TLS options, as the HTTP layer takes them."""
        # In ClientTLS's field order: verify, ca_file, client_cert, client_key, server_name.
        return ClientTLS(
            self.verify, self.ca_file, self.client_cert, self.client_key, self.server_name
        )


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def _first_env(*names: str) -> tuple[str, str] | None:
    """(name, value) of the first variable set and not empty."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return name, value
    return None


def _private_text(path: Path, what: str) -> str | None:
    """The text of a credentials file, or None when there is none.

    A file that others may read is refused, as ssh refuses such a key: the
    secret in it is no longer only the operator's, and using it quietly would
    hide that. The message names the file and the fix, never the content.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigurationError(f"cannot read {what} {str(path)!r}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        return None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigurationError(
            f"{what} {str(path)!r} can be read by other users (mode "
            f"{stat.S_IMODE(info.st_mode):04o}); it was not used. Run `chmod 600 {path}`."
        )
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(
            f"cannot read {what} {str(path)!r}: {type(exc).__name__}"
        ) from None


def _home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def hidden_token(token: str | Sensitive | None) -> Sensitive | None:
    """A token given to a client, hidden at once (None or "" for none): what a client's
    constructor does first, so that a traceback of a failed construction shows no
    frame holding the token plain."""
    return hidden(token, "token") if token else None


def _plain_token(token: str | Sensitive | None) -> str | None:
    """A token given as text or as the :class:`Sensitive` a create or login returned."""
    if isinstance(token, Sensitive):
        value = token.reveal()
        return value if isinstance(value, str) else str(value)
    return token


def _checked_address(address: str, prefix: str, variable: str) -> str:
    """``address``, refused when it ends with the API's own prefix (``/v1``,
    ``/api/v2``): the client adds that to every path, and ``…/v1/v1/…`` answers 404."""
    path = urlsplit(address).path.rstrip("/")
    if path == prefix or path.endswith(prefix):
        base = address.rstrip("/")[: -len(prefix)]
        raise ConfigurationError(
            f"the server address {address!r} ends with the API prefix {prefix}, which the "
            f"client adds itself: use {base!r} (in {variable} or address=...)"
        )
    return address


# -- the secrets server ---------------------------------------------------------------
def _cli_token_helper() -> str | None:
    """The ``token_helper`` the CLI is configured with (``BAO_CONFIG_PATH`` / ``~/.bao``,
    ``VAULT_CONFIG_PATH`` / ``~/.vault``), or None."""
    candidates = [
        Path(p)
        for p in (os.environ.get("BAO_CONFIG_PATH"), os.environ.get("VAULT_CONFIG_PATH"))
        if p
    ]
    candidates += [_home() / ".bao", _home() / ".vault"]
    for path in candidates:
        if not path.is_file():
            continue
        try:
            config = _parse_hcl(path.read_text(encoding="utf-8"), path)
        except (OSError, UnicodeDecodeError):
            continue
        helper = config.get("token_helper")
        if isinstance(helper, str) and helper:
            return helper
    return None


def _cli_token() -> tuple[str, str] | None:
    """(token, source) from the CLI's token file ``~/.vault-token``, when it is what
    the CLI would use: no token helper configured."""
    if _cli_token_helper():
        return None
    path = _home() / ".vault-token"
    text = _private_text(path, "the CLI token file")
    if text is None or not text.strip():
        return None
    return text.strip(), "~/.vault-token"


def secrets_settings(
    address: str | None = None,
    token: str | Sensitive | None = None,
    *,
    namespace: str | None = None,
    ca_file: str | None = None,
    verify: bool | None = None,
    client_cert: str | None = None,
    client_key: str | None = None,
    server_name: str | None = None,
    require_token: bool = True,
) -> Settings:
    """Settings for the secrets client: arguments, else ``VAULT_*`` / ``BAO_*`` variables,
    else (for the token) the CLI's token file ``~/.vault-token``.

    ``require_token=False`` is for a client that will log in: no token is looked for.
    """
    address = address or _env("VAULT_ADDR", "BAO_ADDR")
    namespace = namespace if namespace is not None else _env("VAULT_NAMESPACE", "BAO_NAMESPACE")
    ca_file = ca_file or _env("VAULT_CACERT", "BAO_CACERT")
    client_cert = client_cert or _env("VAULT_CLIENT_CERT", "BAO_CLIENT_CERT")
    client_key = client_key or _env("VAULT_CLIENT_KEY", "BAO_CLIENT_KEY")
    server_name = server_name or _env("VAULT_TLS_SERVER_NAME", "BAO_TLS_SERVER_NAME")
    if verify is None:
        skip = (_env("VAULT_SKIP_VERIFY", "BAO_SKIP_VERIFY") or "").strip().lower()
        verify = skip not in _TRUE
    if not address:
        raise ConfigurationError(
            "no secrets server address: pass address=... or set VAULT_ADDR (or BAO_ADDR) "
            "(for the local sandbox, use toolkit.connect_secrets(sandbox=True))"
        )
    address = _checked_address(address, "/v1", "VAULT_ADDR")
    # Unwrapped only now: a refused address leaves no frame holding the token plain.
    token = _plain_token(token)
    source = ""
    if token:
        source = "argument"
    elif require_token:
        found = _first_env("VAULT_TOKEN", "BAO_TOKEN")
        if found is not None:
            source, token = found
        else:
            from_file = _cli_token()
            if from_file is not None:
                token, source = from_file
    if require_token and not token:
        helper = _cli_token_helper()
        hint = (
            f" (the CLI uses the token helper {helper!r}, which the toolkit does not run)"
            if helper
            else ""
        )
        raise ConfigurationError(
            "no secrets server token: pass token=..., set VAULT_TOKEN (or BAO_TOKEN), "
            f"log in with the CLI (~/.vault-token){hint}, or log in with "
            "SecretsClient.for_login(...).auth"
        )
    return Settings(
        address,
        token or "",
        namespace,
        ca_file,
        verify,
        client_cert,
        client_key,
        server_name,
        source,
    )


# -- the platform ---------------------------------------------------------------------
def _parse_hcl(text: str, path: Path) -> dict[str, Any]:
    try:
        return hcl_document(text)
    except Exception as exc:  # the parser raises several types (lark's, its own)
        # Only the type: the text may hold a token, and a parser's message quotes it.
        raise ConfigurationError(
            f"cannot parse {str(path)!r} as HCL: {type(exc).__name__}"
        ) from None


def _host_of(address: str) -> str:
    parts = urlsplit(address)
    host = (parts.hostname or "").lower()
    if parts.port and parts.port not in (80, 443):
        host = f"{host}:{parts.port}"
    return host


def _env_token_name(host: str) -> str:
    """``TF_TOKEN_<host>`` as a shell can set it: dots as underscores, dashes as double
    underscores (the Terraform CLI's encoding). A port cannot be spelt in a variable
    name; the Terraform CLI has no variable for a host with a port, and the toolkit
    reads ``TF_TOKEN_<host>`` for that host on any port."""
    name = host.split(":", 1)[0]
    return "TF_TOKEN_" + name.replace("-", "__").replace(".", "_")


def _token_from_env(host: str) -> tuple[str, str] | None:
    name = host.split(":", 1)[0]
    wanted = {_env_token_name(name).lower(), ("TF_TOKEN_" + name.replace(".", "_")).lower()}
    # Host names compare without case; the variable's spelling of the host may differ.
    for key, value in os.environ.items():
        if key.lower() in wanted and key[:9] == "TF_TOKEN_" and value:
            return value, key
    return None


def _credentials_blocks(config: dict[str, Any]) -> dict[str, Any]:
    """``credentials "host" { token = ... }`` blocks, as python-hcl2 parses them
    (a list of one-key dicts; some versions keep the label's quotes)."""
    found: dict[str, Any] = {}
    blocks = config.get("credentials") or []
    if isinstance(blocks, dict):
        blocks = [blocks]
    for block in blocks:
        if isinstance(block, dict):
            for label, body in block.items():
                found[str(label).strip('"').lower()] = body
    return found


def _token_from_cli_config(host: str) -> tuple[str, str] | None:
    configured = os.environ.get("TF_CLI_CONFIG_FILE")
    path = Path(configured) if configured else _home() / ".terraformrc"
    text = _private_text(path, "the Terraform CLI configuration")
    if text is None:
        return None
    body = _credentials_blocks(_parse_hcl(text, path)).get(host)
    if isinstance(body, list) and body:
        body = body[0]
    token = body.get("token") if isinstance(body, dict) else None
    if isinstance(token, str) and token:
        return token, f"credentials block in {path}"
    return None


def _token_from_credentials_file(host: str) -> tuple[str, str] | None:
    path = _home() / ".terraform.d" / "credentials.tfrc.json"
    text = _private_text(path, "the Terraform credentials file")
    if text is None:
        return None
    try:
        document = json.loads(text)
    except ValueError:
        raise ConfigurationError(f"{str(path)!r} is not valid JSON") from None
    entries = document.get("credentials") if isinstance(document, dict) else None
    if not isinstance(entries, dict):
        return None
    for name, entry in entries.items():
        if str(name).lower() == host and isinstance(entry, dict):
            token = entry.get("token")
            if isinstance(token, str) and token:
                return token, str(path)
    return None


def terraform_token(address: str) -> tuple[str, str] | None:
    """(token, where it came from) for ``address`` as the Terraform CLI finds it, or None.

    Order: ``TF_TOKEN_<host>``; a ``credentials "<host>"`` block in
    ``TF_CLI_CONFIG_FILE`` (else ``~/.terraformrc``); the host's entry in
    ``~/.terraform.d/credentials.tfrc.json``.
    """
    host = _host_of(address)
    if not host:
        return None
    return (
        _token_from_env(host) or _token_from_cli_config(host) or _token_from_credentials_file(host)
    )


def platform_settings(
    address: str | None = None,
    token: str | Sensitive | None = None,
    *,
    ca_file: str | None = None,
    verify: bool | None = None,
) -> Settings:
    """Settings for the platform client: arguments, else ``TFE_ADDRESS`` and
    ``TFE_TOKEN``, else the token the Terraform CLI would use for the host
    (:func:`terraform_token`)."""
    address = address or _env("TFE_ADDRESS")
    if not address:
        raise ConfigurationError(
            "no platform address: pass address=... or set TFE_ADDRESS "
            "(for the local sandbox, use toolkit.connect_platform(sandbox=True))"
        )
    address = _checked_address(address, "/api/v2", "TFE_ADDRESS")
    token = _plain_token(token)  # only now, as for the secrets server
    source = "argument" if token else ""
    if not token:
        found = _first_env("TFE_TOKEN")
        if found is not None:
            source, token = found
        else:
            from_cli = terraform_token(address)
            if from_cli is not None:
                token, source = from_cli
    if not token:
        host = _host_of(address)
        raise ConfigurationError(
            f"no platform token: pass token=..., set TFE_TOKEN or {_env_token_name(host)}, "
            f"or run `terraform login {host}`"
        )
    return Settings(
        address, token, None, ca_file, True if verify is None else verify, token_source=source
    )
