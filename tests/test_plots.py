"""The charts of the audit frames, drawn from frames the clients read from a demo sandbox."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pandas as pd
import pytest
from matplotlib import dates as mdates
from matplotlib.colors import to_hex
from matplotlib.text import Text

from toolkit import PlatformClient, plots
from toolkit._spec.team_access import AGENT_STATUSES
from toolkit.platform.team_access import LEVEL_COLOURS
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def frames() -> Iterator[dict[str, pd.DataFrame]]:
    """The frames the charts take, read once from a demo sandbox."""
    with Sandbox() as sb:
        with PlatformClient(sb.address, sb.token) as platform:
            found = {
                "counts": platform.agent_pools.agents_by_status("acme"),
                "matrix": platform.team_access.permissions_matrix("acme"),
            }
        with SecretsClient(sb.address, sb.token) as secrets:
            found["leases"] = secrets.leases.leases_by_mount()
            found["distributions"] = secrets.keymgmt.distributions_frame()
    yield found


def texts(chart: plots.Chart) -> list[Text]:
    return [t for t in chart.figure.findobj(Text) if t.get_text()]


def assert_readable_on_its_own_background(chart: plots.Chart) -> None:
    """Opaque light canvas, and every label outside the plotted cells dark enough on it."""
    figure = chart.figure
    assert figure.get_facecolor()[3] == 1.0, "an opaque canvas, whatever the notebook theme"
    assert to_hex(figure.get_facecolor()) == plots.BACKGROUND
    for axes in figure.axes:
        assert to_hex(axes.get_facecolor()) == plots.BACKGROUND
    for text in texts(chart):
        if text.axes is not None and text in text.axes.texts:
            continue  # cell labels: checked against their cell's colour
        assert plots.contrast_ratio(text.get_color(), plots.BACKGROUND) >= 4.5, text.get_text()


def test_agents_by_status_draws_a_bar_segment_per_status_summing_to_each_pools_total(
    frames: dict[str, pd.DataFrame],
) -> None:
    counts = frames["counts"]
    chart = plots.agents_by_status(counts)
    axes = chart.figure.axes[0]
    assert len(axes.containers) == len(AGENT_STATUSES)
    labels = [t.get_text() for t in axes.get_yticklabels()]
    assert labels == list(counts["pool_name"])
    for row, pool in enumerate(counts.index):
        drawn = sum(container[row].get_width() for container in axes.containers)
        assert drawn == counts.loc[pool, "total"]
    for status, container in zip(AGENT_STATUSES, axes.containers, strict=True):
        assert to_hex(container[0].get_facecolor()) == plots.STATUS_COLOURS[status].lower()
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert legend == list(AGENT_STATUSES)
    assert_readable_on_its_own_background(chart)


def test_lease_expiry_counts_every_lease_once_stacked_by_mount(
    frames: dict[str, pd.DataFrame],
) -> None:
    leases = frames["leases"]
    assert len(leases) > 0
    chart = plots.lease_expiry(leases, bins=12)
    axes = chart.figure.axes[0]
    mounts = sorted(leases["mount"].astype(str).unique())
    assert [t.get_text() for t in axes.get_legend().get_texts()] == mounts
    per_mount = [sum(bar.get_height() for bar in container) for container in axes.containers]
    assert per_mount == [int((leases["mount"] == m).sum()) for m in mounts]
    assert all(len(container) == 12 for container in axes.containers)
    assert "UTC" in axes.get_xlabel()
    assert_readable_on_its_own_background(chart)


def test_the_permissions_matrix_colours_and_labels_every_grant_by_its_level(
    frames: dict[str, pd.DataFrame],
) -> None:
    matrix = frames["matrix"]
    chart = plots.permissions_matrix(matrix)
    axes = chart.figure.axes[0]
    image = axes.images[0].get_array()
    cells = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in axes.texts}
    grants = 0
    for r, (_, row) in enumerate(matrix.iterrows()):
        for c, value in enumerate(row):
            if pd.isna(value):
                assert (r, c) not in cells
                assert to_hex(image[r][c]) == plots.BACKGROUND
                continue
            grants += 1
            assert cells[(r, c)].get_text() == value
            assert to_hex(image[r][c]) == LEVEL_COLOURS[value]
            assert plots.contrast_ratio(cells[(r, c)].get_color(), LEVEL_COLOURS[value]) >= 3
    assert grants == int(matrix.notna().to_numpy().sum()) > 0
    assert [t.get_text() for t in axes.get_yticklabels()] == list(matrix.index)
    assert_readable_on_its_own_background(chart)


def test_a_level_without_a_colour_is_refused_by_name() -> None:
    matrix = pd.DataFrame({"ops": ["read", "owner"]}, index=["a", "b"], dtype="string")
    with pytest.raises(ValueError, match="owner"):
        plots.permissions_matrix(matrix)


@pytest.mark.parametrize(
    ("draw", "empty", "message"),
    [
        (plots.agents_by_status, "counts", "no agent pools"),
        (plots.lease_expiry, "leases", "no leases with an expiry"),
        (plots.permissions_matrix, "matrix", "no team access"),
    ],
)
def test_an_empty_frame_draws_a_chart_that_says_so(
    frames: dict[str, pd.DataFrame], draw: Any, empty: str, message: str
) -> None:
    chart = draw(frames[empty].iloc[0:0])
    assert message in [t.get_text() for t in texts(chart)]
    assert chart.png().startswith(PNG)


def test_a_frame_without_the_columns_is_refused_naming_them() -> None:
    with pytest.raises(ValueError, match="expire_time"):
        plots.lease_expiry(pd.DataFrame({"mount": ["a/"]}))
    with pytest.raises(ValueError, match="pool_name"):
        plots.agents_by_status(pd.DataFrame({"idle": [1]}))


def test_a_chart_shows_in_jupyter_as_a_png_with_a_stable_text(
    frames: dict[str, pd.DataFrame], tmp_path: Any
) -> None:
    chart = plots.agents_by_status(frames["counts"])
    assert chart._repr_png_().startswith(PNG)
    assert repr(chart) == "<Chart: Agents by status per pool>"
    chart.save(str(tmp_path / "agents.svg"))
    assert (tmp_path / "agents.svg").read_text().lstrip().startswith("<?xml")


@pytest.mark.slow
def test_matplotlib_is_loaded_only_when_a_chart_is_drawn() -> None:
    code = (
        "import sys, toolkit, toolkit.plots\n"
        "assert 'matplotlib' not in sys.modules, 'imported too early'\n"
        "import pandas as pd\n"
        "toolkit.plots.lease_expiry(pd.DataFrame({'mount': [], 'expire_time': []}))\n"
        "assert 'matplotlib.figure' in sys.modules and 'matplotlib.pyplot' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_lease_expiry_horizon_draws_the_leases_within_it_and_counts_the_rest(
    frames: dict[str, pd.DataFrame],
) -> None:
    leases = frames["leases"]
    read_at = (leases["expire_time"] - pd.to_timedelta(leases["ttl"], unit="s")).max().floor("min")
    past = leases["expire_time"] < read_at
    later = leases["expire_time"] > read_at + pd.Timedelta(hours=6)
    within = ~past & ~later
    assert 0 < within.sum() < len(leases), "the demo leases straddle six hours"
    chart = plots.lease_expiry(leases, horizon=timedelta(hours=6))
    axes = chart.figure.axes[0]
    drawn = sum(bar.get_height() for container in axes.containers for bar in container)
    assert drawn == within.sum()
    left_out = [f"{later.sum()} later"] + ([f"{past.sum()} past due"] if past.any() else [])
    assert axes.get_title() == f"Lease expiry by mount, next 6 hours ({', '.join(left_out)})"
    assert min(bar.get_x() for bar in axes.containers[0]) >= mdates.date2num(
        read_at.tz_localize(None)
    )


def test_key_versions_stack_each_providers_versions_by_key_labelled_with_the_newest(
    distributions: pd.DataFrame,
) -> None:
    chart = plots.key_versions(distributions)
    axes = chart.figure.axes[0]
    providers = sorted(distributions["kms"].unique())
    labels = [t.get_text() for t in axes.get_yticklabels()]
    assert [label.split(" (")[0] for label in labels] == providers
    held = {
        kms: sum(bar.get_width() for container in axes.containers for bar in container[r : r + 1])
        for r, kms in enumerate(providers)
    }
    assert held == {k: int(v) for k, v in distributions.groupby("kms")["versions"].sum().items()}
    newest = sorted(t.get_text() for t in axes.texts)
    assert newest == sorted(f"v{v}" for v in distributions["latest_version"])
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert legend == sorted(distributions.index.unique())
    assert_readable_on_its_own_background(chart)
    assert plots.key_versions(distributions.iloc[0:0]).figure.axes[0].texts[0].get_text() == (
        "no keys distributed"
    )


@pytest.fixture
def distributions(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return frames["distributions"]
