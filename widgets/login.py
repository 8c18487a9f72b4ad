"""A form to log a secrets client in: choose the method, fill its fields, Log in.

    client = SecretsClient.for_login("https://bao.example:8200")
    form = LoginForm(client)
    form                         # method, fields, Log in
    form.login                   # the login record once done (token hidden)

Secrets (password, secret id, JWT) are typed in password fields that update
only on Enter or leaving the field, and are emptied as soon as the form reads
them, before the request is sent, whatever its outcome: the widget state a
notebook saves never holds them. The form calls ``client.auth.<method>`` and
shows what comes back; the client is then logged in.
"""

from __future__ import annotations

import html
from typing import Any

from toolkit import InputError, Record, Sensitive, ToolkitError
from toolkit.secrets import SecretsClient

from ._common import Form

__all__ = ["METHODS", "LoginForm"]

# (label, method): the methods a person types credentials into. OIDC opens a browser;
# certificates come from the client's TLS settings: both take only the fields below.
METHODS = (
    ("Username and password", "userpass"),
    ("LDAP", "ldap"),
    ("AppRole", "approle"),
    ("JWT", "jwt"),
    ("Kubernetes", "kubernetes"),
    ("OIDC (browser)", "oidc"),
    ("TLS certificate", "cert"),
)
# Which fields each method shows: the plain ones, then the secret one (or None).
_FIELDS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "userpass": (("username",), "password"),
    "ldap": (("username",), "password"),
    "approle": (("role_id",), "secret_id"),
    "jwt": (("role",), "jwt"),
    "kubernetes": (("role", "token_file"), None),
    "oidc": (("role",), None),
    "cert": (("name",), None),
}


class LoginForm(Form):
    """Log ``client`` in with the chosen method; ``login`` is the record afterwards."""

    title = "Log in"

    def __init__(self, client: SecretsClient, method: str = "userpass") -> None:
        super().__init__()
        import ipywidgets as w

        self.client = client
        self.login: Record | None = None
        self.method = w.Dropdown(options=METHODS, value=method, description="Method")
        self.mount = w.Text(
            description="Mount", placeholder="the method's path (default: its type)"
        )
        self.username = w.Text(description="Username")
        self.role_id = w.Text(description="Role id")
        self.role = w.Text(description="Role")
        self.name = w.Text(description="Cert role", placeholder="optional")
        self.token_file = w.Text(
            description="Token file",
            placeholder="/var/run/secrets/kubernetes.io/serviceaccount/token",
        )
        # Password widgets that do not send each keystroke to the kernel.
        self.password = w.Password(description="Password", continuous_update=False)
        self.secret_id = w.Password(description="Secret id", continuous_update=False)
        self.jwt = w.Password(description="JWT", continuous_update=False)
        self.login_button = self._button(
            self.submit, description="Log in", button_style="primary", icon="sign-in"
        )
        self.result = w.HTML(value="")

        self._on_change(self._changed, self.method)
        self._layout(
            self.method,
            self.mount,
            self.username,
            self.role_id,
            self.role,
            self.name,
            self.token_file,
            self.password,
            self.secret_id,
            self.jwt,
            self.login_button,
            self.result,
        )
        self._changed()

    def _field(self, name: str) -> Any:
        return getattr(self, name)

    def _changed(self) -> None:
        plain, secret = _FIELDS[str(self.method.value)]
        shown = {*plain, *([secret] if secret else [])}
        for name in (
            "username",
            "role_id",
            "role",
            "name",
            "token_file",
            "password",
            "secret_id",
            "jwt",
        ):
            self._field(name).layout.display = None if name in shown else "none"

    def _take_secret(self, name: str) -> Sensitive | None:
        """The typed secret, wrapped at once, and the field emptied."""
        widget = self._field(name)
        value = str(widget.value)
        widget.value = ""
        return Sensitive(value, name.replace("_", " ")) if value else None

    def _clear_secrets(self) -> None:
        for name in ("password", "secret_id", "jwt"):
            self._field(name).value = ""

    def submit(self) -> Record | None:
        """Log in with what the form holds (``client.auth.<method>``); show the outcome."""
        method = str(self.method.value)
        plain, secret_name = _FIELDS[method]
        secret = self._take_secret(secret_name) if secret_name else None
        self._clear_secrets()  # a secret typed for another method goes too
        args: dict[str, Any] = {name: str(self._field(name).value).strip() for name in plain}
        mount = self.mount.value.strip()
        if mount:
            args["mount"] = mount
        auth = self.client.auth
        self.login = None
        try:
            if method in ("userpass", "ldap"):
                if secret is None:
                    raise InputError("a password is required")
                login = getattr(auth, method)(args.pop("username"), secret, **args)
            elif method == "approle":
                login = auth.approle(args.pop("role_id"), secret, **args)
            elif method == "jwt":
                if secret is None:
                    raise InputError("a JWT is required")
                login = auth.jwt(args.pop("role") or None, secret, **args)
            elif method == "kubernetes":
                if not args.get("token_file"):
                    args.pop("token_file", None)
                login = auth.kubernetes(args.pop("role"), **args)
            elif method == "oidc":
                login = auth.oidc(args.pop("role") or None, **args)
            else:
                login = auth.cert(args.pop("name") or None, **args)
        except ToolkitError as exc:
            self.result.value = ""
            self.show_error(exc)
            return None
        self.login = login
        self.show_ok(f"Logged in with {method} as {login.display_name or login.accessor}")
        self.result.value = (
            f"<div>policies: {html.escape(', '.join(login.policies))}; "
            f"ttl: {int(login.ttl)} s; renewable: {'yes' if login.renewable else 'no'}</div>"
        )
        return login
