"""Charts of the audit frames: one call each, shown inline in Jupyter.

    from toolkit import plots
    plots.agents_by_status(platform.agent_pools.agents_by_status("acme"))
    plots.lease_expiry(secrets.leases.leases_by_mount())
    plots.permissions_matrix(platform.team_access.permissions_matrix("acme"))
    plots.key_versions(secrets.keymgmt.distributions_frame())

Each function takes the frame a client view returns and gives a :class:`Chart`,
which Jupyter shows as a PNG. A chart draws its own opaque light background and
dark text, so it reads the same in JupyterLab's light and dark themes; the
colours are the colour-blind-safe Okabe-Ito set. matplotlib (the ``notebook``
extra) is imported when a chart is first drawn, never by ``toolkit``, and
pyplot is never used, so a chart is displayed once and no global state changes.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from .extras import require

require("notebook", "Charts (toolkit.plots)", "matplotlib")

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "BACKGROUND",
    "Chart",
    "STATUS_COLOURS",
    "agents_by_status",
    "contrast_ratio",
    "key_versions",
    "lease_expiry",
    "permissions_matrix",
]

# One light canvas for every chart: readable whatever the notebook's theme.
BACKGROUND = "#ffffff"
INK = "#1a1a1a"
GRID = "#d0d0d0"
# Okabe-Ito, distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
STATUS_COLOURS: dict[str, str] = {
    "idle": "#009E73",
    "busy": "#0072B2",
    "exited": "#E69F00",
    "errored": "#D55E00",
    "unknown": "#999999",
}


class Chart:
    """A drawn chart: Jupyter shows it as a PNG; ``figure`` is the matplotlib Figure."""

    def __init__(self, figure: Figure, title: str) -> None:
        self.figure = figure
        self.title = title

    def png(self, dpi: int = 100) -> bytes:
        """The chart as PNG bytes."""
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=dpi, facecolor=BACKGROUND)
        return buffer.getvalue()

    def save(self, path: str, dpi: int = 100) -> None:
        """Write the chart to ``path`` (the format follows the suffix)."""
        self.figure.savefig(path, dpi=dpi, facecolor=BACKGROUND)

    def _repr_png_(self) -> bytes:
        return self.png()

    def __repr__(self) -> str:
        return f"<Chart: {self.title}>"


def _canvas(width: float, height: float) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), facecolor=BACKGROUND, layout="constrained")
    axes = figure.add_subplot()
    axes.set_facecolor(BACKGROUND)
    for spine in axes.spines.values():
        spine.set_color(INK)
    axes.tick_params(colors=INK, labelcolor=INK)
    axes.xaxis.label.set_color(INK)
    axes.yaxis.label.set_color(INK)
    axes.title.set_color(INK)
    return figure, axes


def _legend(axes: Axes, title: str, **options: Any) -> None:
    """The legend, titled, to the right of the plot where it hides nothing."""
    legend = axes.legend(
        title=title,
        loc="upper left",
        bbox_to_anchor=(1.01, 1),
        frameon=True,
        facecolor=BACKGROUND,
        edgecolor=GRID,
        **options,
    )
    for text in legend.get_texts():
        text.set_color(INK)
    legend.get_title().set_color(INK)


def _count_axis(axes: Axes, axis: Literal["x", "y"], label: str) -> None:
    """Make ``axis`` ("x" or "y") the one that counts: its label, whole-number ticks,
    and grid lines drawn behind the bars."""
    counted = axes.xaxis if axis == "x" else axes.yaxis
    counted.set_label_text(label)
    counted.set_major_locator(_whole_numbers())
    axes.grid(axis=axis, color=GRID)
    axes.set_axisbelow(True)


def _nothing(axes: Axes, message: str) -> None:
    axes.text(0.5, 0.5, message, ha="center", va="center", color=INK, transform=axes.transAxes)
    axes.set_xticks([])
    axes.set_yticks([])


def _whole_numbers() -> Any:
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} needs the columns {list(columns)}; missing {missing}")


# -- agents ----------------------------------------------------------------------------
def agents_by_status(counts: pd.DataFrame) -> Chart:
    """Agents per status in each pool, as stacked horizontal bars.

    ``counts`` is ``AgentPools.agents_by_status``: a row per pool, ``pool_name``
    and one count column per status.
    """
    from ._spec.team_access import AGENT_STATUSES

    _require(counts, ["pool_name", *AGENT_STATUSES], "agents_by_status")
    title = "Agents by status per pool"
    figure, axes = _canvas(8, 1.2 + 0.5 * max(len(counts), 1))
    axes.set_title(title)
    if not len(counts):
        _nothing(axes, "no agent pools")
        return Chart(figure, title)
    labels = [
        str(name) if pd.notna(name) else str(pid) for pid, name in counts["pool_name"].items()
    ]
    left = [0] * len(counts)
    for status in AGENT_STATUSES:
        values = [int(v) for v in counts[status].fillna(0)]
        axes.barh(labels, values, left=left, color=STATUS_COLOURS[status], label=status)
        left = [a + b for a, b in zip(left, values, strict=True)]
    axes.invert_yaxis()  # the first pool on top, as in the frame
    _count_axis(axes, "x", "agents")
    _legend(axes, "status")
    return Chart(figure, title)


# -- leases ----------------------------------------------------------------------------
def lease_expiry(
    leases: pd.DataFrame, *, bins: int = 24, horizon: timedelta | None = None
) -> Chart:
    """When leases expire, per mount: a histogram of ``expire_time`` stacked by mount.

    ``leases`` is ``Leases.leases_by_mount`` (columns ``mount``, ``expire_time``).
    Times are UTC. Leases without an expiry are left out. With ``horizon``
    only the leases expiring within it are drawn (measured from the minute the
    frame was read, ``expire_time - ttl``, when it has ``ttl``); the title counts
    the ones that expire later and the ones already past their expiry.
    """
    _require(leases, ["mount", "expire_time"], "lease_expiry")
    if bins < 1:
        raise ValueError(f"bins must be at least 1, not {bins}")
    import numpy as np
    from matplotlib import dates

    title = "Lease expiry by mount"
    timed = leases.dropna(subset=["expire_time"])
    # A mount keeps its colour whatever the horizon leaves out.
    every_mount = sorted(str(m) for m in timed["mount"].astype(str).unique())
    colour_of = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(every_mount)}
    if horizon is not None and len(timed):
        if "ttl" in timed.columns and timed["ttl"].notna().any():
            # To the minute: a second's drift in the read does not move the boundary.
            read_at = (timed["expire_time"] - pd.to_timedelta(timed["ttl"], unit="s")).max()
            read_at = read_at.floor("min")
        else:
            read_at = timed["expire_time"].min()
        past = timed["expire_time"] < read_at
        later = timed["expire_time"] > read_at + pd.Timedelta(horizon)
        timed = timed[~past & ~later]
        left_out = [f"{int(later.sum())} later"] if later.any() else []
        left_out += [f"{int(past.sum())} past due"] if past.any() else []
        title = f"{title}, next {_span(horizon)}"
        title += f" ({', '.join(left_out)})" if left_out else ""
    figure, axes = _canvas(9, 4)
    axes.set_title(title)
    if not len(timed):
        _nothing(axes, "no leases with an expiry")
        return Chart(figure, title)
    when = dates.date2num(timed["expire_time"].dt.tz_convert("UTC").dt.tz_localize(None))
    edges = np.histogram_bin_edges(when, bins=bins)
    mounts = sorted(str(m) for m in timed["mount"].astype(str).unique())
    stacks = [when[(timed["mount"].astype(str) == m).to_numpy()] for m in mounts]
    colours = [colour_of[m] for m in mounts]
    axes.hist(
        stacks, bins=list(edges), stacked=True, color=colours, label=mounts, edgecolor=BACKGROUND
    )
    axes.xaxis.set_major_formatter(dates.DateFormatter("%m-%d %H:%M"))
    axes.xaxis.set_major_locator(dates.AutoDateLocator(maxticks=8))
    axes.set_xlabel("expires at (UTC)")
    _count_axis(axes, "y", "leases")
    _legend(axes, "mount")
    return Chart(figure, title)


# -- team access -----------------------------------------------------------------------
def permissions_matrix(matrix: pd.DataFrame, colours: Mapping[str, str] | None = None) -> Chart:
    """Workspaces by teams, each cell coloured and labelled by its access level.

    ``matrix`` is ``TeamAccess.permissions_matrix``; an empty cell (no record)
    is left blank. ``colours`` maps levels to colours (default: the levels'
    colours of the styled table, so both views agree).
    """
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Patch

    from .platform.team_access import LEVEL_COLOURS

    palette = dict(colours or LEVEL_COLOURS)
    title = "Team access by workspace"
    rows, cols = matrix.shape
    figure, axes = _canvas(max(4.0, 1.8 + 1.1 * cols), max(2.0, 1.2 + 0.45 * rows))
    axes.set_title(title)
    if not rows or not cols:
        _nothing(axes, "no team access")
        return Chart(figure, title)
    present = {str(v) for v in matrix.stack().dropna()}
    unknown = sorted(present - set(palette))
    if unknown:
        raise ValueError(f"no colour for the access level(s) {unknown}; pass colours=")
    image = [
        [to_rgb(palette[str(v)]) if pd.notna(v) else to_rgb(BACKGROUND) for v in row]
        for row in matrix.itertuples(index=False)
    ]
    axes.imshow(image, aspect="auto")
    for r, row in enumerate(matrix.itertuples(index=False)):
        for c, value in enumerate(row):
            if pd.notna(value):
                axes.text(
                    c, r, str(value), ha="center", va="center", fontweight="bold",
                    color=_ink_on(palette[str(value)]),
                )  # fmt: skip
    axes.set_xticks(range(cols), [str(c) for c in matrix.columns], rotation=30, ha="right")
    axes.set_yticks(range(rows), [str(i) for i in matrix.index])
    axes.set_xticks([x - 0.5 for x in range(1, cols)], minor=True)
    axes.set_yticks([y - 0.5 for y in range(1, rows)], minor=True)
    axes.grid(which="minor", color=GRID)
    axes.tick_params(which="minor", length=0)
    axes.set_xlabel(str(matrix.columns.name or "team"))
    axes.set_ylabel(str(matrix.index.name or "workspace"))
    used = [level for level in palette if level in present]
    _legend(axes, "access", handles=[Patch(color=palette[level], label=level) for level in used])
    return Chart(figure, title)


def _span(span: timedelta) -> str:
    hours = span.total_seconds() / 3600
    if hours >= 48 and hours % 24 == 0:
        return f"{int(hours // 24)} days"
    return f"{hours:g} hours"


# -- key management ----------------------------------------------------------------------
def key_versions(distributions: pd.DataFrame) -> Chart:
    """How many key versions each KMS provider holds, stacked by key.

    ``distributions`` is ``KeyManagement.distributions_frame()`` (index ``key``, columns
    ``kms``, ``provider``, ``versions``, ``latest_version``). Each segment is
    one key, labelled with the newest version the provider holds.
    """
    _require(distributions, ["kms", "provider", "versions", "latest_version"], "key_versions")
    title = "Key versions by provider"
    providers = sorted(str(k) for k in distributions["kms"].astype(str).unique())
    figure, axes = _canvas(9, 1.4 + 0.6 * max(len(providers), 1))
    axes.set_title(title)
    if not len(distributions):
        _nothing(axes, "no keys distributed")
        return Chart(figure, title)
    frame = distributions.reset_index()
    keys = sorted(str(k) for k in frame["key"].astype(str).unique())
    colour_of = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(keys)}
    kinds = frame.groupby(frame["kms"].astype(str))["provider"].first()
    labels = [f"{kms} ({kinds[kms]})" for kms in providers]
    left = dict.fromkeys(providers, 0)
    for key in keys:
        rows = frame[frame["key"].astype(str) == key]
        row_of = {str(r["kms"]): r for _, r in rows.iterrows()}
        widths = [int(row_of[k]["versions"]) if k in row_of else 0 for k in providers]
        bars = axes.barh(
            labels,
            widths,
            left=[left[k] for k in providers],
            color=colour_of[key],
            label=key,
            edgecolor=BACKGROUND,
        )
        for bar, kms, width in zip(bars, providers, widths, strict=True):
            if width:
                axes.text(
                    bar.get_x() + width / 2,
                    bar.get_y() + bar.get_height() / 2,
                    f"v{int(row_of[kms]['latest_version'])}",
                    ha="center",
                    va="center",
                    color=_ink_on(colour_of[key]),
                )
        for kms, width in zip(providers, widths, strict=True):
            left[kms] += width
    axes.invert_yaxis()
    _count_axis(axes, "x", "key versions held")
    _legend(axes, "key")
    return Chart(figure, title)


# -- colour --------------------------------------------------------------------------------
def _luminance(colour: Any) -> float:
    from matplotlib.colors import to_rgb

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in to_rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: Any, b: Any) -> float:
    """The WCAG contrast ratio of two colours (1 to 21; 4.5 is readable text)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _ink_on(background: str) -> str:
    """Black or white, whichever reads better on ``background``."""
    return (
        INK
        if contrast_ratio(INK, background) >= contrast_ratio("#ffffff", background)
        else "#ffffff"
    )
