"""A form to revoke leases: a selection of ids, or everything under a prefix.

    form = LeaseRevokeForm(client)
    form.select(frame.index)    # optional: the ids of a leases frame
    form                        # Preview, (type the prefix), Revoke

Preview shows what would go, counted per mount, from the client's views. A
prefix revocation (and a forced one) needs the operator to type the prefix
again; the Revoke button acts only on what was previewed.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from toolkit import InputError, ToolkitError
from toolkit.secrets import SecretsClient
from toolkit.secrets.leases import lease_summary

from ._common import Form, show_frame

__all__ = ["MODES", "LeaseRevokeForm"]

MODES = (
    ("Selected leases", "selection"),
    ("Prefix", "prefix"),
    ("Prefix, forced", "force"),
)


class LeaseRevokeForm(Form):
    """Preview, confirm and revoke leases; the result is shown as a table."""

    title = "Revoke leases"

    def __init__(
        self, client: SecretsClient, ids: Iterable[str] | None = None, prefix: str = ""
    ) -> None:
        super().__init__()
        import ipywidgets as w

        self.client = client
        self.preview_frame: pd.DataFrame | None = None
        self.result: pd.DataFrame | None = None
        self._previewed: tuple[str, str] | None = None

        self.mode = w.ToggleButtons(options=MODES, value="prefix" if prefix else "selection")
        self.prefix = w.Text(
            value=prefix, description="Prefix", placeholder="database/creds/readonly"
        )
        self.ids = w.Textarea(
            description="Lease ids", placeholder="one lease id a line", layout={"width": "60%"}
        )
        self.preview_button = self._button(self.preview, description="Preview", icon="search")
        self.preview_table = w.Output()
        self.confirm = w.Text(description="Confirm", placeholder="type the prefix to confirm")
        self.revoke_button = self._button(
            self.revoke, description="Revoke", button_style="danger", icon="trash", disabled=True
        )
        self.result_table = w.Output()

        self._on_change(self._changed, self.mode, self.prefix, self.ids)

        self._layout(
            self.mode,
            self.prefix,
            self.ids,
            self.preview_button,
            self.preview_table,
            self.confirm,
            self.revoke_button,
            self.result_table,
        )
        if ids is not None:
            self.select(ids)
        self._changed()

    # -- what to revoke ----------------------------------------------------------
    def select(self, ids: Iterable[str]) -> None:
        """Put lease ids (a list, or a frame's index) in the selection."""
        self.ids.value = "\n".join(str(i) for i in ids)
        self.mode.value = "selection"

    @property
    def selected_ids(self) -> list[str]:
        """The lease ids of the selection, one a line, without repeats."""
        return list(dict.fromkeys(line.strip() for line in self.ids.value.splitlines() if line))

    def _target(self) -> tuple[str, str]:
        mode = str(self.mode.value)
        if mode == "selection":
            return mode, "\n".join(self.selected_ids)
        return mode, self.prefix.value.strip()

    def _changed(self) -> None:
        selection = self.mode.value == "selection"
        self.ids.layout.display = None if selection else "none"
        self.prefix.layout.display = "none" if selection else None
        self.confirm.layout.display = "none" if selection else None
        self.revoke_button.disabled = self._previewed != self._target()
        self.revoke_button.description = {
            "selection": "Revoke the selected leases",
            "prefix": "Revoke everything under the prefix",
            "force": "Force-revoke everything under the prefix",
        }[str(self.mode.value)]

    # -- steps -------------------------------------------------------------------
    def preview(self) -> pd.DataFrame | None:
        """Look up what would be revoked and show it counted per mount.

        Selection: ``Leases.lookup_leases``; prefix: ``Leases.leases_by_mount``.
        """
        mode, target = self._target()
        self._previewed = None
        try:
            if mode == "selection":
                if not target:
                    raise InputError("the selection is empty: give one lease id a line")
                frame = self.client.leases.lookup_leases(self.selected_ids)
            else:
                if not target:
                    raise InputError("a prefix is required (revoking everything is not offered)")
                frame = self.client.leases.leases_by_mount(prefix=target)
        except ToolkitError as exc:
            self.preview_table.outputs = ()
            self.show_error(exc)
            self._changed()
            return None
        self.preview_frame = frame
        self._previewed = (mode, target)
        show_frame(self.preview_table, lease_summary(frame))
        if mode == "selection":
            missing = len(self.selected_ids) - len(frame)
            extra = f"; {missing} unknown or already gone" if missing else ""
            self.show_note(f"{len(frame)} of the selected leases would be revoked{extra}.")
        else:
            how = "force-revoked, whatever the engine says" if mode == "force" else "revoked"
            self.show_note(
                f"{len(frame)} lease(s) under {target} would be {how}. "
                "Type the prefix in Confirm to go ahead."
            )
        self._changed()
        return frame

    def revoke(self) -> pd.DataFrame | None:
        """Revoke what was previewed; for a prefix, only once it is typed in Confirm.

        Selection: ``Leases.revoke_leases``; prefix: ``Leases.revoke_prefix``;
        forced: ``Leases.revoke_force``.
        """
        mode, target = self._target()
        typed = self.confirm.value.strip()
        self.confirm.value = ""
        if self._previewed != (mode, target) or self.preview_frame is None:
            self.show_note("Preview first: the form revokes only what it has shown.")
            return None
        if mode != "selection" and typed != target:
            self.show_note(f"Type the prefix {target} exactly in Confirm to revoke.")
            return None
        before = self.preview_frame
        try:
            if mode == "selection":
                result = self.client.leases.revoke_leases(
                    self.selected_ids, dry_run=False, show_progress=False
                )
            else:
                if mode == "force":
                    self.client.leases.revoke_force(target)
                else:
                    self.client.leases.revoke_prefix(target)
                after = self.client.leases.leases_by_mount(prefix=target)
                result = _before_after(before, after)
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        finally:
            self._previewed = None
            self._changed()
        self.result = result
        show_frame(self.result_table, result)
        if mode == "selection":
            failed = int((result["action"] == "failed").sum())
            self.show_ok(f"Revoked {len(result) - failed} lease(s); {failed} failed.")
        else:
            left = int(result["left"].sum())
            self.show_ok(
                f"Revoked under {target}: {int(result['previewed'].sum())} before, {left} left."
            )
        return result

    def __repr__(self) -> str:
        return f"<LeaseRevokeForm mode={self.mode.value!r}>"


def _before_after(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Per mount: leases previewed and leases left after the revocation."""
    counts = pd.DataFrame(
        {
            "previewed": before.groupby("mount", observed=True).size(),
            "left": after.groupby("mount", observed=True).size(),
        }
    )
    counts.index.name = "mount"
    return counts.fillna(0).astype("int64")
