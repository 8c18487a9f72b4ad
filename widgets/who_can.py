"""A "Who can…" form: who holds a capability on a path, and why.

    form = WhoCanForm(client)            # client: a SecretsClient
    form                                 # capability, path, Ask; then Explain for one row

Ask calls ``client.access.who_can``; Explain calls ``client.access.explain`` for the
principal picked from the answer. What the token could not read is shown beside the
answer, so an empty table is never taken for "nobody".
"""

from __future__ import annotations

import pandas as pd

import toolkit
from toolkit import InputError, ToolkitError
from toolkit.secrets import SecretsClient

from ._common import Form, show_frame

__all__ = ["CAPABILITY_CHOICES", "WhoCanForm"]

CAPABILITY_CHOICES = ("read", "create", "update", "patch", "delete", "list", "sudo")


class WhoCanForm(Form):
    """Ask who can do what on a path of the secrets server; explain one answer."""

    title = "Who can…"

    def __init__(self, client: SecretsClient, capability: str = "read", path: str = "") -> None:
        super().__init__()
        import ipywidgets as w

        self.client = client
        self.answer: pd.DataFrame | None = None
        self.explanation: pd.DataFrame | None = None
        self.capability = w.Dropdown(
            options=CAPABILITY_CHOICES, value=capability, description="Capability"
        )
        self.path = w.Text(
            value=path,
            description="Path",
            placeholder="sys/policies/acl/*",
            layout={"width": "50%"},
        )
        self.ask_button = self._button(
            self.ask, description="Ask", icon="search", button_style="primary"
        )
        self.answer_table = w.Output()
        self.principal = w.Dropdown(options=[], description="Principal", layout={"width": "60%"})
        self.explain_button = self._button(
            self.explain, description="Explain", icon="question", disabled=True
        )
        self.explain_table = w.Output()
        self.reload_button = self._button(
            self.reload, description="Read the server again", icon="refresh"
        )

        self._layout(
            self.capability,
            self.path,
            w.HBox([self.ask_button, self.reload_button]),
            self.answer_table,
            self.principal,
            self.explain_button,
            self.explain_table,
        )

    def ask(self) -> pd.DataFrame | None:
        """``client.access.who_can(capability, path)``, shown with what could not be read."""
        path = self.path.value.strip()
        try:
            if not path:
                raise InputError("a path is required, e.g. sys/policies/acl/anything")
            frame = self.client.access.who_can(str(self.capability.value), path)
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        self.answer = frame
        show_frame(self.answer_table, frame)
        self.principal.options = list(frame.index)
        self.explain_button.disabled = not len(frame)
        gaps = toolkit.coverage(frame)
        unread = f"; not read: {', '.join(gaps['path'])}" if len(gaps) else ""
        # The path as the server reads it (an API prefix /v1/ left out, said so).
        path = str(frame.attrs.get("path") or path)
        note = f" ({frame.attrs['note']})" if frame.attrs.get("note") else ""
        depends = int((frame["status"] != "granted").sum()) if len(frame) else 0
        held = f", {depends} of them depending on identity or the caller" if depends else ""
        if len(frame):
            self.show_ok(
                f"{len(frame)} principal(s) can {self.capability.value} {path}{held}{note}{unread}."
            )
        elif len(gaps):
            self.show_note(f"none found among what was read{unread}: the answer is incomplete.")
        else:
            self.show_ok(f"nobody can {self.capability.value} {path}{note}.")
        return frame

    def explain(self) -> pd.DataFrame | None:
        """``client.access.explain(principal, path, capability)`` for the chosen principal."""
        try:
            if not self.principal.value:
                raise InputError("ask first, then pick a principal from the answer")
            frame = self.client.access.explain(
                str(self.principal.value), self.path.value.strip(), str(self.capability.value)
            )
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        self.explanation = frame
        show_frame(self.explain_table, frame)
        # The same words as explain's first row: "denied" when the deciding pattern lacks
        # the capability (or the sudo the path needs), never a bare "decides".
        first = str(frame["outcome"].iloc[0]) if len(frame) else ""
        if "denied" in first:
            self.show_note(f"{self.principal.value}: {first}.")
        else:
            self.show_note(f"{self.principal.value}: allowed, the rank-1 pattern decides.")
        return frame

    def reload(self) -> None:
        """Read the policies and principals again (``client.access.load``)."""
        try:
            model = self.client.access.load()
        except ToolkitError as exc:
            self.show_error(exc)
            return
        self.show_note(
            f"read {len(model.policies)} policies and {len(model.principals)} principals."
        )
