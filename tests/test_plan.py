"""Writes shown as a plan before they are sent, and rehearsals that refuse a live target."""

from __future__ import annotations

import json

import pytest

from toolkit import InputError, Sensitive
from toolkit.plan import PLAN_COLUMNS, Write, plan, refuse_live


def test_a_plan_names_each_request_and_says_it_is_held_while_apply_is_false() -> None:
    frame = plan(
        [
            Write("rotate the static role", "post", "/database/rotate-role/orders"),
            Write("force the account back", "POST", "ad/library/manage/dba/check-in", {"a": 1}),
        ],
        apply=False,
    )
    assert list(frame.columns) == PLAN_COLUMNS
    assert frame["method"].tolist() == ["POST", "POST"]
    assert frame["path"].tolist() == [
        "database/rotate-role/orders",
        "ad/library/manage/dba/check-in",
    ]
    assert frame["body"].tolist() == ["", '{"a": 1}']
    assert set(frame["status"]) == {"not sent: apply is False"}


def test_a_plan_to_apply_says_it_will_send_and_can_name_what_holds_it() -> None:
    writes = [Write("rotate the root password", "POST", "database/rotate-root/main")]
    assert plan(writes, apply=True)["status"].tolist() == ["will send"]
    held = plan(writes, apply=False, held_by="rotate_root_of is empty")
    assert held["status"].tolist() == ["not sent: rotate_root_of is empty"]


def test_a_plan_leaves_secret_values_out_of_the_body() -> None:
    body = {"name": "owner", "value": Sensitive("hunter2-value", "value"), "password": "pw-1234"}
    frame = plan(
        [Write("set a parameter", "PATCH", "policy-sets/p/parameters/x", body)], apply=True
    )
    text = frame.to_string() + frame.to_html()
    assert "hunter2-value" not in text and "pw-1234" not in text
    assert json.loads(frame.loc[0, "body"]) == {
        "name": "owner",
        "password": "<left out>",
        "value": "<left out>",
    }


def test_an_empty_plan_is_a_frame_with_the_plan_columns() -> None:
    frame = plan([], apply=False)
    assert frame.empty and list(frame.columns) == PLAN_COLUMNS


def test_a_rehearsal_refuses_every_target_but_the_sandbox() -> None:
    refuse_live("sandbox", "the rehearsal")  # no error
    for target in ("live", "production", ""):
        with pytest.raises(InputError, match="runs against the sandbox only"):
            refuse_live(target, "the rehearsal")
