"""A certificate request form: role, names checked against the role, ttl or not-after, format.

    form = CertificateRequestForm(client)           # client.pki; mount="pki-eu" for another
    form                                            # pick a role, fill the names, Request

Check and Request first apply the role's name policy in the client
(``PKI.check_request``), so a name the role refuses is named in the form and
nothing is sent. The issued certificate is shown without its key; the key is
offered only by the "Download key" button, as a link whose data is made on
that click and cleared after ``link_seconds`` (or by "Forget link"), so it
never sits in a cell output or in saved widget state.
"""

from __future__ import annotations

import base64
import html
import threading
from typing import Any

from toolkit import InputError, ToolkitError
from toolkit.secrets import SecretsClient
from toolkit.secrets.pki import FORMATS, IssuedCertificate

from ._common import Form

__all__ = ["CertificateRequestForm"]

VALIDITY = (("TTL", "ttl"), ("Not after (UTC)", "not_after"))


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


class CertificateRequestForm(Form):
    """Request a certificate from a role; offer its private key as a one-time download link."""

    title = "Request a certificate"

    def __init__(
        self, client: SecretsClient, *, mount: str | None = None, link_seconds: float = 60.0
    ) -> None:
        super().__init__()
        import ipywidgets as w

        self.pki = client.pki.at(mount) if mount else client.pki
        self.link_seconds = link_seconds
        self.issued: IssuedCertificate | None = None
        self._timer: threading.Timer | None = None

        self.role = w.Dropdown(description="Role", options=[])
        self.role_summary = w.HTML()
        self.common_name = w.Text(description="Common name", placeholder="www.example.com")
        self.alt_names = w.Text(
            description="Alt names", placeholder="comma-separated DNS names or e-mails"
        )
        self.ip_sans = w.Text(description="IP SANs", placeholder="10.0.0.1, ...")
        self.uri_sans = w.Text(description="URI SANs", placeholder="spiffe://...")
        self.validity = w.ToggleButtons(options=VALIDITY, value="ttl")
        self.ttl = w.Text(description="TTL", placeholder="empty: the role's ttl (e.g. 24h)")
        self.not_after = w.Text(description="Not after", placeholder="YYYY-MM-ddTHH:MM:SSZ")
        self.format = w.Dropdown(description="Format", options=list(FORMATS), value="pem")
        self.private_key_format = w.Dropdown(
            description="Key format", options=["der", "pkcs8"], value="der"
        )
        self.check_button = self._button(self.check, description="Check names", icon="check")
        self.request_button = self._button(
            self.request, description="Request", button_style="primary", icon="certificate"
        )
        self.result = w.HTML()
        self.download_button = self._button(
            self.offer_key, description="Download key", icon="download", disabled=True
        )
        self.forget_button = self._button(
            self.clear_key_link, description="Forget link", icon="eraser", disabled=True
        )
        self.key_link = w.HTML()

        self._on_change(self._role_changed, self.role)
        self._on_change(self._validity_changed, self.validity)

        self._layout(
            self.role,
            self.role_summary,
            self.common_name,
            self.alt_names,
            self.ip_sans,
            self.uri_sans,
            self.validity,
            self.ttl,
            self.not_after,
            w.HBox([self.format, self.private_key_format]),
            w.HBox([self.check_button, self.request_button]),
            self.result,
            w.HBox([self.download_button, self.forget_button]),
            self.key_link,
        )
        self._validity_changed()
        self.refresh_roles()

    # -- the role and the names ---------------------------------------------------------
    def refresh_roles(self) -> None:
        """Read the mount's roles into the role list. ``PKI.list_roles``."""
        try:
            self.role.options = self.pki.list_roles()
        except ToolkitError as exc:
            self.show_error(exc)

    def _role_changed(self) -> None:
        if not self.role.value:
            self.role_summary.value = ""
            return
        try:
            role = self.pki.read_role(str(self.role.value))
        except ToolkitError as exc:
            self.show_error(exc)
            return
        domains = ", ".join(role.get("allowed_domains") or []) or "none"
        flags = [
            f for f in ("allow_subdomains", "allow_bare_domains", "allow_any_name") if role.get(f)
        ]
        self.role_summary.value = (
            f"<small>domains: {html.escape(domains)}"
            f"{' (' + ', '.join(flags) + ')' if flags else ''}; "
            f"ttl {role.get('ttl', 0)} s, max {role.get('max_ttl', 0) or 'mount'} s; "
            f"issuer {html.escape(str(role.get('issuer_ref', 'default')))}</small>"
        )

    def _validity_changed(self) -> None:
        by_ttl = self.validity.value == "ttl"
        self.ttl.layout.display = None if by_ttl else "none"
        self.not_after.layout.display = "none" if by_ttl else None

    def _request_names(self) -> dict[str, Any]:
        return {
            "alt_names": _names(self.alt_names.value),
            "ip_sans": _names(self.ip_sans.value),
            "uri_sans": _names(self.uri_sans.value),
        }

    def check(self) -> str:
        """The role's refusal of the names, shown in the form ("" when the role takes them)."""
        if not self.role.value:
            self.show_note("Pick a role first.")
            return "no role"
        try:
            refusal = self.pki.check_request(
                str(self.role.value), self.common_name.value.strip(), **self._request_names()
            )
        except ToolkitError as exc:
            self.show_error(exc)
            return str(exc)
        if refusal:
            self.show_error(
                InputError(f"The role {self.role.value} refuses this request: {refusal}")
            )
        else:
            self.show_ok(f"The role {self.role.value} allows these names.")
        return refusal

    # -- the request ---------------------------------------------------------------------
    def request(self) -> IssuedCertificate | None:
        """Check the names, then issue. ``PKI.check_request`` then ``PKI.issue``."""
        self.clear_key_link()
        if self.check():
            return None
        by_ttl = self.validity.value == "ttl"
        try:
            issued = self.pki.issue(
                str(self.role.value),
                self.common_name.value.strip(),
                ttl=(self.ttl.value.strip() or None) if by_ttl else None,
                not_after=None if by_ttl else (self.not_after.value.strip() or None),
                format=str(self.format.value),
                private_key_format=str(self.private_key_format.value),
                **self._request_names(),
            )
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        self.issued = issued
        self.result.value = issued._repr_html_()
        self.download_button.disabled = issued.private_key is None
        warnings = f" Warnings: {'; '.join(issued.warnings)}" if issued.warnings else ""
        self.show_ok(
            f"Issued {issued.common_name}, not after {issued.not_after:%Y-%m-%d %H:%M} UTC.{warnings}"
        )
        return issued

    # -- the private key, as a link made on click and cleared after -------------------------
    def offer_key(self) -> None:
        """Put a download link for the key in the form, for ``link_seconds`` at most."""
        if self.issued is None or self.issued.private_key is None:
            self.show_note("No private key to offer: request a certificate first.")
            return
        data = base64.b64encode(self.issued.private_key_pem().encode()).decode()
        name = (
            html.escape((self.issued.common_name or "certificate").replace("*", "wildcard"))
            + ".key"
        )
        self.key_link.value = (
            f"<a download='{name}' href='data:application/x-pem-file;base64,{data}' "
            "onclick=\"setTimeout(() => this.removeAttribute('href'), 0)\">"
            f"Save {name}</a> <small>(the link is removed after {self.link_seconds:g} s)</small>"
        )
        self.forget_button.disabled = False
        self._cancel_timer()
        self._timer = threading.Timer(self.link_seconds, self.clear_key_link)
        self._timer.daemon = True
        self._timer.start()

    def clear_key_link(self) -> None:
        """Remove the download link (and its data) from the form."""
        self._cancel_timer()
        self.key_link.value = ""
        self.forget_button.disabled = True

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def __repr__(self) -> str:
        return f"<CertificateRequestForm mount={self.pki.mount!r} role={self.role.value!r}>"
