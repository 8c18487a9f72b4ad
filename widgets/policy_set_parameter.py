"""A form to create or update a policy set's parameters, sensitive ones included.

    form = PolicySetParameterForm(client, "polset-...")
    form            # pick "new parameter" or an existing key, fill in, Save

A sensitive value is typed into a password field and the field is emptied the
moment Save reads it, before the request is sent: after a save no widget, no
output and no ``repr`` holds it. On update an empty value leaves the stored
value as it is (a sensitive value cannot be read back to pre-fill the field).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit import PlatformClient, Record, Sensitive, ToolkitError

from ._common import Form, show_frame

__all__ = ["PolicySetParameterForm"]

NEW = ""


class PolicySetParameterForm(Form):
    """Create or update one parameter of a policy set; the list below stays current."""

    title = "Policy set parameters"

    def __init__(self, client: PlatformClient, policy_set_id: str) -> None:
        super().__init__()
        import ipywidgets as w

        self.client = client
        self.policy_set_id = policy_set_id
        self.parameters: pd.DataFrame | None = None
        self.record: Record | None = None
        self._filling = False

        self.parameter = w.Dropdown(description="Parameter", options=[("new parameter", NEW)])
        self.key = w.Text(description="Key", placeholder="parameter name")
        self.sensitive = w.Checkbox(description="Sensitive (write-only)", indent=False)
        self.value_text = w.Text(description="Value")
        # continuous_update=False: the value reaches the kernel once, not a keystroke at a time.
        self.value_secret = w.Password(description="Value", continuous_update=False)
        self.value_row = w.HBox([self.value_text])
        self.save_button = self._button(
            self.save, description="Save", button_style="primary", icon="check"
        )
        self.table = w.Output()

        self._on_change(self._fill, self.parameter)
        self._on_change(self._swap_value_field, self.sensitive)

        self._layout(
            self.parameter,
            w.HBox([self.key, self.sensitive]),
            self.value_row,
            self.save_button,
            self.table,
        )
        self.refresh()

    @property
    def value_field(self) -> Any:
        """The field the value is typed into: a password field when sensitive."""
        return self.value_secret if self.sensitive.value else self.value_text

    def _swap_value_field(self) -> None:
        # Never carry a typed value from one field into the other.
        self.value_text.value = ""
        self.value_secret.value = ""
        self.value_row.children = [self.value_field]

    def _fill(self) -> None:
        """Show the selected parameter's key, sensitivity and (if not sensitive) value."""
        if self._filling:
            return
        chosen = self.parameter.value
        if chosen == NEW or self.parameters is None or chosen not in self.parameters.index:
            self.key.value, self.sensitive.value = "", False
            self._swap_value_field()
            self.value_text.placeholder = ""
            self.value_secret.placeholder = ""
            return
        row = self.parameters.loc[chosen]
        self.key.value = str(row["key"])
        self.sensitive.value = bool(row["sensitive"])
        self._swap_value_field()
        if not row["sensitive"]:
            self.value_text.value = "" if pd.isna(row["value"]) else str(row["value"])
        self.value_text.placeholder = "empty keeps the current value"
        self.value_secret.placeholder = "empty keeps the current value"

    def refresh(self, select: str | None = None) -> None:
        """Reload the list of parameters and the choices of the selector."""
        try:
            frame = self.client.policy_set_parameters.parameters_frame(self.policy_set_id)
        except ToolkitError as exc:
            self.show_error(exc)
            return
        self.parameters = frame
        show_frame(self.table, frame)
        self._filling = True
        try:
            self.parameter.options = [("new parameter", NEW)] + [
                (str(k), i) for i, k in frame["key"].items()
            ]
            self.parameter.value = select if select in frame.index else NEW
        finally:
            self._filling = False
        self._fill()

    def save(self) -> Record | None:
        """Create or update the parameter; the value field is emptied before sending."""
        field = self.value_field
        typed = field.value
        field.value = ""
        sensitive = bool(self.sensitive.value)
        value: str | Sensitive = Sensitive(typed, "parameter value") if sensitive else typed
        chosen = self.parameter.value
        try:
            if chosen == NEW:
                record = self.client.policy_set_parameters.create(
                    self.policy_set_id, self.key.value, value, sensitive=sensitive
                )
                done = "Created"
            else:
                record = self.client.policy_set_parameters.update(
                    self.policy_set_id,
                    chosen,
                    key=self.key.value,
                    value=value if typed else None,
                    sensitive=sensitive,
                )
                done = "Updated"
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        self.record = record
        self.refresh(select=record["id"])
        self.show_ok(f"{done} {record['key']}.", record._repr_html_())
        return record

    def __repr__(self) -> str:
        return f"<PolicySetParameterForm policy_set_id={self.policy_set_id!r}>"
