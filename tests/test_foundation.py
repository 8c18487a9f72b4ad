"""Frames, time parsing, masking and configuration: the pieces every view stands on."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime

import pandas as pd
import pytest

from toolkit import ConfigurationError, Record, Sensitive
from toolkit._config import platform_settings, secrets_settings
from toolkit._frames import Col, Schema, build_frame
from toolkit._time import format_iso_ms, parse_duration, parse_time

SCHEMA = Schema.of(
    "id",
    Col("name"),
    Col("count", "int"),
    Col("seen_at", "datetime"),
    Col("active", "bool"),
    Col("tags", "object"),
    index="id",
)


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


def test_a_sensitive_value_never_prints_and_cannot_be_pickled():
    secret = Sensitive("s.abcdef", "token")
    assert "abcdef" not in repr(secret) + str(secret) + secret._repr_html_() + f"{secret}"
    assert secret.reveal() == "s.abcdef"
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    record = Record(token=secret, name="x")
    assert "abcdef" not in repr(record) + record._repr_html_()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), (90, 90), ("90s", 90), ("1h", 3600), ("1h30m", 5400), ("24h", 86400), ("", 0)],
)
def test_durations_accept_seconds_and_suffixed_strings(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["1x", "h1", "-5", "1h 30m", True])
def test_bad_durations_are_refused_naming_the_field(bad):
    with pytest.raises(ValueError, match="ttl"):
        parse_duration(bad, field="ttl")


def test_timestamps_round_trip_with_milliseconds_and_z():
    when = parse_time("2026-06-01T12:00:00.123456789Z")
    assert when == datetime(2026, 6, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert format_iso_ms(when) == "2026-06-01T12:00:00.123Z"


def test_platform_settings_come_from_tfe_variables(monkeypatch):
    monkeypatch.setenv("TFE_ADDRESS", "https://platform.example")
    monkeypatch.setenv("TFE_TOKEN", "tok-123")
    settings = platform_settings()
    assert settings.address == "https://platform.example"
    assert settings.token == "tok-123"
    assert "tok-123" not in repr(settings)
    assert platform_settings("http://other", "t2").address == "http://other"


def test_secrets_settings_read_vault_and_bao_spellings(monkeypatch):
    for name in ("VAULT_ADDR", "VAULT_TOKEN", "VAULT_NAMESPACE", "VAULT_SKIP_VERIFY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BAO_ADDR", "https://bao.example:8200")
    monkeypatch.setenv("BAO_TOKEN", "s.x")
    monkeypatch.setenv("BAO_NAMESPACE", "team-a")
    monkeypatch.setenv("BAO_SKIP_VERIFY", "true")
    settings = secrets_settings()
    assert (settings.address, settings.namespace, settings.verify) == (
        "https://bao.example:8200",
        "team-a",
        False,
    )
    monkeypatch.setenv("VAULT_ADDR", "https://vault.example")
    assert secrets_settings().address == "https://vault.example"


def test_a_missing_address_is_a_configuration_error_that_says_what_to_set(monkeypatch):
    monkeypatch.delenv("TFE_ADDRESS", raising=False)
    with pytest.raises(ConfigurationError, match="TFE_ADDRESS"):
        platform_settings(token="x")
