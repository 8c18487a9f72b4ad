"""Configuration from the environment (toolkit/_config.py)."""

from __future__ import annotations

import pytest

from toolkit import ConfigurationError
from toolkit._config import platform_settings, secrets_settings


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
