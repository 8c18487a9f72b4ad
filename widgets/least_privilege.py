"""A least-privilege form: pick principals and a window, see the policy generated from
their use (proved), what it loses, and the impact of applying it.

    form = LeastPrivilegeForm(client, "/var/log/openbao/audit.log")
    form                     # Read the log; pick principals; Generate; Impact

Read calls ``toolkit.least_privilege.review``; Generate calls ``Review.generate`` for the
picked principals together; Impact calls ``Review.impact`` with the generated text as
the new text of the policy picked. Nothing is written to the server.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit import InputError, ToolkitError, least_privilege
from toolkit.secrets import SecretsClient

from ._common import Form, show_frame

__all__ = ["LeastPrivilegeForm"]


class LeastPrivilegeForm(Form):
    """Generate a least-privilege policy from the audit log and see its impact."""

    title = "Least privilege from the audit log"

    def __init__(self, client: SecretsClient, audit_log: str | Path = "", days: int = 90) -> None:
        super().__init__()
        import ipywidgets as w

        self.client = client
        self.review: least_privilege.Review | None = None
        self.generated: least_privilege.Generated | None = None
        self.impact_frame: pd.DataFrame | None = None
        self.log = w.Text(value=str(audit_log), description="Audit log",
                          placeholder="/var/log/openbao/audit.log", layout={"width": "60%"})  # fmt: skip
        self.days = w.BoundedIntText(value=days, min=1, max=3650, description="Window (days)")
        self.read_button = self._button(
            self.read, description="Read the log", icon="book", button_style="primary"
        )
        self.principals = w.SelectMultiple(options=[], description="Principals", rows=8,
                                           layout={"width": "70%"})  # fmt: skip
        self.generalise = w.BoundedIntText(value=0, min=0, max=100000,
                                           description="Generalise ≥")  # fmt: skip
        self.generate_button = self._button(
            self.generate, description="Generate", icon="magic", disabled=True
        )
        self.policy_text = w.HTML()
        self.lost_table = w.Output()
        self.policy = w.Dropdown(options=[], description="Apply as")
        self.impact_button = self._button(
            self.impact, description="Impact", icon="bolt", disabled=True
        )
        self.impact_table = w.Output()
        self._layout(
            w.HBox([self.log, self.days]),
            self.read_button,
            self.principals,
            w.HBox([self.generalise, self.generate_button]),
            self.policy_text,
            self.lost_table,
            w.HBox([self.policy, self.impact_button]),
            self.impact_table,
        )

    def read(self) -> least_privilege.Review | None:
        """Read the log and the server; the principals listed by standing privilege."""
        try:
            if not self.log.value.strip():
                raise InputError("an audit log is required: the file device's file_path")
            review = least_privilege.review(
                self.client, self.log.value.strip(), days=int(self.days.value)
            )
            ranking = review.ranking()
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        self.review = review
        self.principals.options = list(ranking["principal"])
        self.generate_button.disabled = not len(ranking)
        decided = review.decisions()
        self.show_ok(
            f"{len(decided)} request(s) decided, {int((~decided['agrees']).sum())} otherwise "
            f"than logged; {len(ranking)} principal(s), most unused danger first."
        )
        return review

    def generate(self) -> least_privilege.Generated | None:
        """The policy generated from the picked principals' use, with what it loses."""
        try:
            if self.review is None or not self.principals.value:
                raise InputError("read the log first, then pick one or more principals")
            picked = list(self.principals.value)
            generated = self.review.generate(
                picked, generalise_above=int(self.generalise.value) or None
            )
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        self.generated = generated
        self.policy_text.value = f"<pre>{html.escape(generated.hcl)}</pre>"
        show_frame(self.lost_table, generated.lost)
        held: list[Any] = []
        for name in picked:
            held.extend(p for p in self.review.principals[name].policies if p != "default")
        self.policy.options = list(dict.fromkeys(held))
        self.policy.value = self.policy.options[0] if self.policy.options else None
        self.impact_button.disabled = not self.policy.options
        self.show_ok(
            f"{len(generated.rules)} rule(s) from {generated.proof['requests']} request(s): "
            f"covers every one, widens nothing; {len(generated.lost)} grant(s) lost."
        )
        return generated

    def impact(self) -> pd.DataFrame | None:
        """Every logged request whose outcome changes if the picked policy's text became
        the generated one."""
        try:
            if self.review is None or self.generated is None or not self.policy.value:
                raise InputError("generate a policy first, then pick the policy it would replace")
            frame = self.review.impact({str(self.policy.value): self.generated.hcl})
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        self.impact_frame = frame
        show_frame(self.impact_table, frame)
        message = f"{len(frame)} logged request(s) change outcome; {frame.attrs['flag']}."
        if frame.attrs["flag"].startswith("DENIES"):
            self.show_note(message)
        else:
            self.show_ok(message)
        return frame
