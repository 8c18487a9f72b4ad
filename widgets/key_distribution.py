"""A form to distribute managed keys to KMS providers, take them back, and delete them.

    form = KeyDistributionForm(client)            # the engine at keymgmt/
    form = KeyDistributionForm(client, "kms/eu")  # or mounted elsewhere
    form            # pick key, provider, purposes, protection; Distribute / Remove / Delete

The form shows the keys-by-provider matrix and, for the chosen key, where it
is now. What the server refuses (a key already at another provider, purposes
fixed once distributed, a delete while the key is in a provider or not
deletion-allowed, a provider that does not take the key) is shown in the form
with the server's own message. Deleting needs the key's name typed again.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import pandas as pd

from toolkit import InputError, Record, ToolkitError
from toolkit.secrets import SecretsClient
from toolkit.secrets.keymgmt import PROTECTIONS, PURPOSES, KeyManagement

from ._common import Form, show_frame

__all__ = ["KeyDistributionForm"]


class KeyDistributionForm(Form):
    """Distribute a key to a KMS provider, remove it from one, or delete it."""

    title = "Key distribution"

    def __init__(self, client: SecretsClient, mount: str | None = None) -> None:
        super().__init__()
        import ipywidgets as w

        self.keymgmt: KeyManagement = client.keymgmt if mount is None else client.keymgmt.at(mount)
        self.matrix: pd.DataFrame | None = None
        self.result: Record | None = None

        self.key = w.Dropdown(description="Key", options=[])
        self.provider = w.Dropdown(description="Provider", options=[])
        self.where = w.HTML(value="")
        self.purposes = w.SelectMultiple(
            description="Purposes", options=list(PURPOSES), value=("encrypt", "decrypt"), rows=6
        )
        self.protection = w.Dropdown(
            description="Protection", options=list(PROTECTIONS), value="hsm"
        )
        self.distribute_button = self._button(
            self.distribute, description="Distribute", button_style="primary", icon="share"
        )
        self.remove_button = self._button(
            self.remove, description="Remove from provider", icon="undo"
        )
        self.confirm = w.Text(description="Confirm", placeholder="type the key name to delete it")
        self.delete_button = self._button(
            self.delete, description="Delete key", button_style="danger", icon="trash"
        )
        self.refresh_button = self._button(self.refresh, description="Refresh", icon="refresh")
        self.table = w.Output()

        self._on_change(self._show_where, self.key)

        self._layout(
            w.HBox([self.key, self.provider]),
            self.where,
            w.HBox([self.purposes, self.protection]),
            w.HBox([self.distribute_button, self.remove_button, self.refresh_button]),
            w.HBox([self.confirm, self.delete_button]),
            self.table,
        )
        self.refresh()

    # -- reading -------------------------------------------------------------------
    def refresh(self) -> pd.DataFrame | None:
        """Re-read keys and providers (``KeyManagement.keys_by_provider``) and show the matrix."""
        try:
            matrix = self.keymgmt.keys_by_provider()
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        self.matrix = matrix
        _keep_choice(self.key, [str(k) for k in matrix.index])
        _keep_choice(self.provider, [str(c) for c in matrix.columns])
        show_frame(self.table, matrix)
        self._show_where()
        return matrix

    def _show_where(self) -> None:
        key = self.key.value
        if not key or self.matrix is None or key not in self.matrix.index:
            self.where.value = ""
            return
        held = self.matrix.loc[key].dropna()
        if held.empty:
            self.where.value = f"<i>{html.escape(key)} is in the engine only.</i>"
        else:
            where = f"{held.index[0]}: {held.iloc[0]}"
            self.where.value = f"<i>{html.escape(key)} is at {html.escape(where)}.</i>"

    def _chosen(self, *, provider: bool = True) -> tuple[str, str]:
        key = str(self.key.value or "")
        if not key:
            raise InputError("choose a key")
        kms = str(self.provider.value or "")
        if provider and not kms:
            raise InputError("choose a KMS provider")
        return key, kms

    # -- actions -------------------------------------------------------------------
    def distribute(self) -> Record | None:
        """Send the key to the provider (``KeyManagement.distribute``) with purposes and protection."""

        def send() -> str:
            key, kms = self._chosen()
            purposes = list(self.purposes.value)
            if not purposes:
                raise InputError("choose at least one purpose")
            self.result = self.keymgmt.distribute(
                kms, key, purposes, protection=str(self.protection.value)
            )
            versions = ", ".join(f"v{v}" for v in self.result.versions)
            return f"{key} is at {kms} as {self.result.name} ({versions})."

        self.result = None
        return self.result if self._act(send) else None

    def remove(self) -> bool:
        """Take the key out of the provider (``KeyManagement.remove_from_provider``)."""

        def send() -> str:
            key, kms = self._chosen()
            self.keymgmt.remove_from_provider(kms, key)
            return f"{key} was removed from {kms}; it stays in the engine."

        return self._act(send)

    def delete(self) -> bool:
        """Delete the key (``KeyManagement.delete_key``) once its name is typed in Confirm."""
        typed = self.confirm.value.strip()
        self.confirm.value = ""
        key = str(self.key.value or "")
        if key and typed != key:
            self.show_note(f"Type {key} in Confirm to delete it.")
            return False

        def send() -> str:
            chosen, _ = self._chosen(provider=False)
            self.keymgmt.delete_key(chosen)
            return f"{chosen} was deleted."

        return self._act(send)

    def _act(self, send: Callable[[], str]) -> bool:
        """Run one action; show its outcome, or the server's reason for a refusal
        (which says what to do first), over a freshly read matrix."""
        try:
            done = send()
        except ToolkitError as exc:
            self.refresh()
            self.show_error(exc)
            return False
        self.refresh()
        self.show_ok(done)
        return True

    def __repr__(self) -> str:
        return f"<KeyDistributionForm mount={self.keymgmt.mount!r} key={self.key.value!r}>"


def _keep_choice(dropdown: Any, options: list[str]) -> None:
    """Set a dropdown's options, keeping its value when it is still offered."""
    value = dropdown.value
    dropdown.options = options
    dropdown.value = value if value in options else (options[0] if options else None)
