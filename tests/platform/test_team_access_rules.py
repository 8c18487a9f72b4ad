"""The permissions matrix built from a grants frame (``team_access_rules.grants_matrix``),
without a server: the rules over frames alone."""

from __future__ import annotations

import pandas as pd

from toolkit._frames import build_frame
from toolkit.platform.team_access_rules import GRANTS, grants_matrix


def _grant(team: str | None, ws: str | None, access: str) -> dict[str, object]:
    return {
        "organization": "o",
        "workspace_id": f"ws-{ws}",
        "workspace_name": ws,
        "team_id": f"team-{team}",
        "team_name": team,
        "source": "workspace",
        "access": access,
        "level": access,
    }


def test_a_grant_whose_team_or_workspace_has_no_name_sorts_last_rather_than_breaking():
    # A server's record may lack a name (a team the token cannot see, a spoiled answer):
    # sorting None among names raised TypeError, once found by the answer fuzz.
    grants = build_frame(
        [
            _grant("ops", "web", "admin"),
            _grant(None, "web", "read"),
            _grant("devs", None, "write"),
            _grant("devs", "api", "plan"),
        ],
        GRANTS,
    )
    matrix = grants_matrix(grants, None, None, None, ["web", "api", None])
    # the nameless team and workspace come last, as missing labels
    assert list(matrix.columns[:2]) == ["devs", "ops"] and pd.isna(matrix.columns[2])
    assert list(matrix.index[:2]) == ["api", "web"] and pd.isna(matrix.index[2])
    assert matrix.iloc[0, 2] is pd.NA and matrix.iloc[1, 2] == "read"
    assert matrix.iloc[2, 0] == "write"
    assert matrix.index.name == "workspace" and matrix.columns.name == "team"
    assert matrix.loc["web", "ops"] == "admin" and matrix.loc["api", "devs"] == "plan"
    assert pd.isna(matrix.loc["api", "ops"])
    assert set(matrix.dtypes) == {pd.StringDtype()}
