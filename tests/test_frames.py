"""Frames with fixed schemas (toolkit/_frames.py): columns, dtypes and UTC times, also when empty."""

from __future__ import annotations

import pandas as pd

from toolkit import Sensitive
from toolkit._frames import Schema, build_frame

SCHEMA = Schema.of("id name count:int seen_at:datetime active:bool tags:object", index="id")


def test_an_empty_frame_still_has_the_schemas_columns_and_dtypes():
    frame = build_frame([], SCHEMA)
    assert list(frame.columns) == ["name", "count", "seen_at", "active", "tags"]
    assert frame.index.name == "id"
    assert str(frame["count"].dtype) == "Int64"
    assert str(frame["seen_at"].dtype) == "datetime64[ns, UTC]"
    assert str(frame["active"].dtype) == "boolean"
    assert str(frame["name"].dtype) == "string"


def test_frames_parse_timestamps_as_utc_and_keep_missing_values():
    frame = build_frame(
        [
            {
                "id": "a",
                "name": "x",
                "count": 1,
                "seen_at": "2026-06-01T12:00:00.123Z",
                "active": True,
            },
            {"id": "b", "name": None, "count": None, "seen_at": None, "active": None},
        ],
        SCHEMA,
    )
    assert frame.loc["a", "seen_at"] == pd.Timestamp("2026-06-01T12:00:00.123Z")
    assert pd.isna(frame.loc["b", "seen_at"])
    assert pd.isna(frame.loc["b", "count"])


def test_sensitive_values_become_hidden_in_string_columns():
    frame = build_frame([{"id": "a", "name": Sensitive("hunter2")}], SCHEMA)
    assert frame.loc["a", "name"] == "<hidden>"
    assert "hunter2" not in frame.to_string() + frame.to_html()
