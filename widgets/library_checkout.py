"""A form to borrow a service account from the directory engine's library, and bring it back.

    form = LibraryCheckoutForm(client)            # or mount="corp-ad"
    form                                          # pick a set, Check out, Check in

The form shows the set's accounts (``AD.library_status``), the account
and lease of its check-out, and never the password, unless the operator
presses Reveal: the password then sits in a transient output that Hide, and
every other step of the form, empties; so do ``reveal_seconds`` passing (60 s
by default) and the kernel shutting down.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import pandas as pd

from toolkit import InputError, Record, ToolkitError
from toolkit.secrets import SecretsClient

from ._common import REVEAL_SECONDS, Form, RevealTimeout, show_frame

__all__ = ["LibraryCheckoutForm"]


class LibraryCheckoutForm(Form):
    """Check out and check in library accounts of one directory engine mount."""

    title = "Service account library"

    def __init__(
        self,
        client: SecretsClient,
        mount: str | None = None,
        *,
        reveal_seconds: float = REVEAL_SECONDS,
    ) -> None:
        super().__init__()
        import ipywidgets as w

        self.reveal_timeout = RevealTimeout(self.hide, reveal_seconds)
        self.directory = client.ad.at(mount) if mount else client.ad
        self.checkout: Record | None = None
        self.checkout_set = ""
        self.frame: pd.DataFrame | None = None

        self.set_name = w.Dropdown(description="Set", options=[])
        self.refresh_button = self._button(
            lambda: self._act(self.refresh), description="Refresh", icon="refresh"
        )
        self.ttl = w.Text(description="TTL", placeholder="the set's (e.g. 1h)")
        self.check_out_button = self._button(
            self.check_out, description="Check out", button_style="primary", icon="sign-out"
        )
        self.lease = w.HTML(value="")
        self.reveal_button = self._button(
            self.reveal, description="Reveal password", icon="eye", disabled=True
        )
        self.hide_button = self._button(
            self.hide, description="Hide", icon="eye-slash", disabled=True
        )
        self.password_output = w.Output()
        self.check_in_button = self._button(self.check_in, description="Check in", icon="sign-in")
        self.table = w.Output()

        self._on_change(lambda: self._act(self.show_status), self.set_name)

        self._layout(
            w.HBox([self.set_name, self.refresh_button]),
            w.HBox([self.ttl, self.check_out_button]),
            self.lease,
            w.HBox([self.reveal_button, self.hide_button, self.check_in_button]),
            self.password_output,
            self.table,
        )
        self._act(self.refresh)

    # -- steps ---------------------------------------------------------------------
    def refresh(self) -> None:
        """Reload the set names (``AD.sets``) and the chosen set's accounts."""
        names = self.directory.list_sets()
        current = self.set_name.value
        self.set_name.options = names
        self.set_name.value = current if current in names else (names[0] if names else None)
        self.show_status()

    def show_status(self) -> pd.DataFrame | None:
        """Show the chosen set's accounts, borrowers and leases (``AD.library_status``)."""
        name = self.set_name.value
        if not name:
            self.table.outputs = ()
            return None
        self.frame = self.directory.library_status([name])
        show_frame(self.table, self.frame)
        return self.frame

    def check_out(self) -> Record | None:
        """Borrow an account of the chosen set for the typed ttl (``AD.check_out``)."""
        self.hide()
        name = self.set_name.value
        ttl = self.ttl.value.strip() or None

        def step() -> None:
            if not name:
                raise InputError("pick a library set first")
            self.checkout = self.directory.check_out(name, ttl=ttl)
            self.checkout_set = name
            self.show_status()

        if not self._act(step):
            return None
        lent = self.checkout
        assert lent is not None
        self._show_lease(lent)
        self.show_ok(
            f"Checked out {lent['service_account_name']} from {name} "
            f"for {lent.get('lease_duration')} s."
        )
        return lent

    def reveal(self) -> None:
        """Show the borrowed account's password in the transient output."""
        password = self.checkout.get("password") if self.checkout else None
        if not password:
            self.show_note("There is no checked-out password to reveal.")
            return
        assert self.checkout is not None
        account = html.escape(str(self.checkout["service_account_name"]))
        text = html.escape(password.reveal())
        self.password_output.outputs = (
            {
                "output_type": "display_data",
                "data": {
                    "text/plain": "password shown",
                    "text/html": f"<div>Password of {account}:</div><pre>{text}</pre>",
                },
                "metadata": {},
            },
        )
        self.hide_button.disabled = False
        self.reveal_timeout.start()

    def hide(self) -> None:
        """Empty the transient output holding a revealed password."""
        self.reveal_timeout.cancel()
        self.password_output.outputs = ()
        self.hide_button.disabled = True

    def check_in(self) -> list[str] | None:
        """Bring back this form's check-out, else the caller's one account of the set.

        ``AD.check_in``; the server gives the account a new password.
        """
        self.hide()
        lent = self.checkout
        name = self.checkout_set if lent is not None else self.set_name.value
        account = str(lent["service_account_name"]) if lent is not None else None
        done: list[str] = []

        def step() -> None:
            if not name:
                raise InputError("pick a library set first")
            done.extend(self.directory.check_in(name, account))
            self.checkout = None
            self._show_lease(None)
            self.show_status()

        if not self._act(step):
            return None
        if done:
            self.show_ok(f"Checked in {', '.join(done)}; its password has been changed.")
        else:
            self.show_note(f"Nothing to check in: no account of {name} was out to you.")
        return done

    # -- display ---------------------------------------------------------------------
    def _show_lease(self, lent: Record | None) -> None:
        self.reveal_button.disabled = lent is None
        if lent is None:
            self.lease.value = ""
            return
        self.lease.value = (
            f"<div>Account <code>{html.escape(str(lent['service_account_name']))}</code>, "
            f"lease <code>{html.escape(str(lent.get('lease_id')))}</code> "
            f"({lent.get('lease_duration')} s, "
            f"{'renewable' if lent.get('renewable') else 'not renewable'})</div>"
        )

    def _act(self, step: Callable[[], Any]) -> bool:
        try:
            step()
        except ToolkitError as exc:
            self.show_error(exc)
            return False
        return True

    def __repr__(self) -> str:
        return f"<LibraryCheckoutForm set={self.set_name.value!r} mount={self.directory.mount!r}>"
