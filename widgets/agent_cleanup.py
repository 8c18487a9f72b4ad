"""A form to remove the agents that are gone (exited, errored, unknown), preview first.

    form = AgentCleanupForm(client, "acme")
    form            # Preview, tick the confirmation, then Remove agents

The preview is the client's dry run; removing is enabled only after a preview
and an explicit confirmation, and any change of the selection asks for a new
preview. The removal is :meth:`AgentPools.remove_planned` of that preview: it
removes exactly the previewed agents, skips (and reports) any whose status
changed since, and shows every agent's outcome in the result table. Only
agents silent for at least the chosen number of minutes are removed.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pandas as pd

from toolkit import PlatformClient, ToolkitError
from toolkit.platform.agent_pools import AGENT_STATUSES, DEFAULT_SILENCE, REMOVABLE_AGENT_STATUSES

from ._common import Form, show_frame

__all__ = ["AgentCleanupForm"]

ALL_POOLS = ""


class AgentCleanupForm(Form):
    """Preview, confirm, then remove an organization's dead agents."""

    title = "Remove agents that are gone"

    def __init__(self, client: PlatformClient, organization: str) -> None:
        super().__init__()
        import ipywidgets as w

        self.client = client
        self.organization = organization
        self.plan: pd.DataFrame | None = None
        self.result: pd.DataFrame | None = None

        pools = client.agent_pools.pools_frame(organization)
        self.pool = w.Dropdown(
            description="Pool",
            options=[("every pool", ALL_POOLS)]
            + [(f"{n} ({i})", i) for i, n in pools["name"].items()],
        )
        self.statuses = w.SelectMultiple(
            description="Statuses", options=AGENT_STATUSES, value=REMOVABLE_AGENT_STATUSES, rows=5
        )
        self.silent_minutes = w.BoundedIntText(
            description="Silent for at least (minutes)",
            value=int(DEFAULT_SILENCE.total_seconds() // 60),
            min=0,
            max=60 * 24 * 365,
            style={"description_width": "initial"},
        )
        self.preview_button = self._button(self.preview, description="Preview", icon="search")
        self.confirm = w.Checkbox(
            description="I have read the preview; remove these agents", disabled=True, indent=False
        )
        self.remove_button = self._button(
            self.remove,
            description="Remove agents",
            button_style="danger",
            icon="trash",
            disabled=True,
        )
        self.preview_output = w.Output()
        self.progress_output = w.Output()
        self.result_output = w.Output()

        self._on_change(self._forget_preview, self.pool, self.statuses, self.silent_minutes)
        self._on_change(self._arm, self.confirm)

        self._layout(
            w.HBox([self.pool, self.statuses]),
            self.silent_minutes,
            self.preview_button,
            self.preview_output,
            w.HBox([self.confirm, self.remove_button]),
            self.progress_output,
            self.result_output,
        )

    def _selection(self) -> dict[str, Any]:
        return {
            "statuses": tuple(self.statuses.value),
            "pool_ids": [self.pool.value] if self.pool.value else None,
            "older_than": timedelta(minutes=int(self.silent_minutes.value)),
        }

    def _forget_preview(self) -> None:
        self.plan = None
        self.confirm.value = False
        self.confirm.disabled = True
        self._arm()

    def _arm(self) -> None:
        self.remove_button.disabled = not (self.plan is not None and self.confirm.value)

    def preview(self) -> pd.DataFrame | None:
        """The dry run: what removing would do, shown in the preview output."""
        self._forget_preview()
        try:
            plan = self.client.agent_pools.remove_agents(
                self.organization, dry_run=True, show_progress=False, **self._selection()
            )
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        self.plan = plan
        show_frame(self.preview_output, plan)
        count = int((plan["action"] == "would remove").sum())
        self.confirm.disabled = False
        self.show_note(f"Preview: {count} agent(s) would be removed, {len(plan) - count} kept.")
        return plan

    def remove(self) -> pd.DataFrame | None:
        """Remove exactly the previewed agents (after the confirmation); show each outcome.

        An agent whose status changed since the preview is skipped and reported.
        """
        if self.plan is None or not self.confirm.value:
            self.show_note("Preview the clean-up and tick the confirmation first.")
            return None
        self.progress_output.outputs = ()
        try:
            # The client's progress bar (a notebook bar in Jupyter) lands in this output.
            with self.progress_output:
                result = self.client.agent_pools.remove_planned(self.plan, show_progress=True)
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        finally:
            self._forget_preview()
        self.result = result
        show_frame(self.result_output, result)
        counts = result["action"].value_counts()
        changed = int(result["detail"].str.contains("since the preview", regex=False).sum())
        self.show_ok(
            f"Removed {counts.get('removed', 0)}, failed {counts.get('failed', 0)}, "
            f"kept {counts.get('skipped', 0)}"
            + (f" ({changed} changed since the preview, skipped)." if changed else ".")
        )
        return result

    def __repr__(self) -> str:
        return f"<AgentCleanupForm organization={self.organization!r}>"
