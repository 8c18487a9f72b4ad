"""The key management client: one call per endpoint, and its frames against a real sandbox."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from toolkit import BadRequest, InputError, NotFound, Sensitive
from toolkit._frames import Schema
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.engines.keymgmt.demo import DEMO_KEYS, DEMO_PROVIDERS
from toolkit.secrets import SecretsClient
from toolkit.secrets.keymgmt import DISTRIBUTIONS, KEY_VERSIONS, KEYS, KMS_PROVIDERS

DTYPES = {"str": "string", "int": "Int64", "bool": "boolean", "datetime": "datetime64[ns, UTC]"}


def expected_dtypes(schema: Schema) -> dict[str, str]:
    """The dtype of each column of a frame built from ``schema`` (its index aside)."""
    return {c.name: DTYPES.get(c.dtype, c.dtype) for c in schema.columns if c.name != schema.index}


def dtypes_of(frame: pd.DataFrame) -> dict[str, str]:
    return {name: str(dtype) for name, dtype in frame.dtypes.items()}


# -- views on the demo data ----------------------------------------------------------------------


def test_keys_has_one_row_per_key_with_its_versions_settings_and_provider(
    demo_client: SecretsClient, demo_sandbox: Sandbox
) -> None:
    frame = demo_client.keymgmt.keys_frame()
    assert frame.index.name == "name" and list(frame.columns) == KEYS.names[1:]
    assert dtypes_of(frame) == expected_dtypes(KEYS)
    start = demo_sandbox.clock.start
    assert sorted(frame.index) == sorted(k.name for k in DEMO_KEYS)
    for key in DEMO_KEYS:
        row = frame.loc[key.name]
        assert row["type"] == key.type
        assert row["latest_version"] == 1 + len(key.rotated)
        assert row["min_enabled_version"] == key.min_enabled_version
        assert row["deletion_allowed"] == key.deletion_allowed
        assert row["created"] == start - timedelta(days=key.created)
        last = min(key.rotated, default=key.created)
        assert row["last_rotated"] == start - timedelta(days=last)
        if key.distributed:
            assert row["provider"] == key.distributed[0]
        else:
            assert pd.isna(row["provider"])
    payments = frame.loc["payments-dek"]
    assert payments["enabled_versions"] == 2  # versions 3 and 4 of 4


def test_key_versions_are_indexed_by_key_and_version_with_public_keys_for_rsa_only(
    demo_client: SecretsClient,
) -> None:
    frame = demo_client.keymgmt.key_versions_frame(["payments-dek", "release-signing"])
    assert frame.index.names == ["key", "version"]
    assert dtypes_of(frame) == {
        k: v for k, v in expected_dtypes(KEY_VERSIONS).items() if k not in ("key", "version")
    }
    assert list(frame.loc["payments-dek"].index) == [1, 2, 3, 4]
    assert list(frame.loc["payments-dek", "enabled"]) == [False, False, True, True]
    assert frame.loc["payments-dek", "public_key"].isna().all()
    pems = frame.loc["release-signing", "public_key"]
    assert all(p.startswith("-----BEGIN PUBLIC KEY-----") for p in pems)
    assert list(frame.loc["release-signing", "enabled"]) == [False, True]


def test_providers_show_their_type_collection_and_the_keys_they_hold(
    demo_client: SecretsClient,
) -> None:
    frame = demo_client.keymgmt.providers_frame()
    assert list(frame.columns) == KMS_PROVIDERS.names[1:]
    assert dtypes_of(frame) == expected_dtypes(KMS_PROVIDERS)
    for name, (provider, collection) in DEMO_PROVIDERS.items():
        held = sorted(k.name for k in DEMO_KEYS if k.distributed and k.distributed[0] == name)
        assert frame.loc[name, "provider"] == provider
        assert frame.loc[name, "key_collection"] == collection
        assert frame.loc[name, "keys"] == held and frame.loc[name, "key_count"] == len(held)


def test_distributions_name_each_key_in_its_provider_and_when_it_went(
    demo_client: SecretsClient, demo_sandbox: Sandbox
) -> None:
    frame = demo_client.keymgmt.distributions_frame()
    assert dtypes_of(frame) == expected_dtypes(DISTRIBUTIONS)
    distributed = {k.name: k for k in DEMO_KEYS if k.distributed}
    assert sorted(frame.index) == sorted(distributed)
    for name, key in distributed.items():
        assert key.distributed is not None
        provider, days, purposes, protection = key.distributed
        row = frame.loc[name]
        when = demo_sandbox.clock.start - timedelta(days=days)
        assert row["kms"] == provider and row["provider"] == DEMO_PROVIDERS[provider][0]
        assert row["name_in_provider"] == f"{name}-{int(when.timestamp())}"
        assert row["distributed_at"] == when
        assert row["purpose"] == ", ".join(purposes) and row["protection"] == protection
        assert row["versions"] == row["latest_version"] == 1 + len(key.rotated)


def test_keys_by_provider_is_a_matrix_of_every_key_and_every_provider(
    demo_client: SecretsClient,
) -> None:
    matrix = demo_client.keymgmt.keys_by_provider()
    assert matrix.index.name == "key" and matrix.columns.name == "kms"
    assert list(matrix.columns) == sorted(DEMO_PROVIDERS)
    assert list(matrix.index) == sorted(k.name for k in DEMO_KEYS)
    assert set(map(str, matrix.dtypes)) == {"string"}
    assert matrix.loc["payments-dek", "aws-payments"] == "v1-v4: encrypt, decrypt (hsm)"
    assert matrix.loc["analytics-pii", "gcp-analytics"] == (
        "v1: encrypt, decrypt, wrap, unwrap (hsm)"
    )
    assert matrix.loc["backup-archive"].isna().all()
    # One provider per key: at most one filled cell in a row.
    assert (matrix.notna().sum(axis=1) <= 1).all()


def test_every_view_is_right_when_the_engine_is_empty(client: SecretsClient) -> None:
    client.enable_engine("kms/empty", "keymgmt")
    empty = client.keymgmt.at("kms/empty")
    keys = empty.keys_frame()
    assert keys.empty and list(keys.columns) == KEYS.names[1:]
    assert dtypes_of(keys) == expected_dtypes(KEYS)
    versions = empty.key_versions_frame()
    assert versions.empty and versions.index.names == ["key", "version"]
    providers = empty.providers_frame()
    assert providers.empty and dtypes_of(providers) == expected_dtypes(KMS_PROVIDERS)
    distributions = empty.distributions_frame()
    assert distributions.empty and dtypes_of(distributions) == expected_dtypes(DISTRIBUTIONS)
    matrix = empty.keys_by_provider()
    assert matrix.shape == (0, 0) and matrix.index.name == "key"
    assert empty.list_keys() == [] and empty.list_providers() == []


# -- one call per endpoint ---------------------------------------------------------------------------


def test_a_key_goes_through_its_life_with_the_client(client: SecretsClient) -> None:
    km = client.keymgmt
    key = km.create_key("orders", "aes256-gcm96")
    assert key.type == "aes256-gcm96" and key.latest_version == 1
    assert key.versions[1]["public_key"] is None
    assert km.rotate_key("orders").latest_version == 2
    assert km.rotate_key("orders").latest_version == 3
    updated = km.update_key("orders", min_enabled_version=2, deletion_allowed=True)
    assert updated.min_enabled_version == 2 and updated.deletion_allowed is True
    assert "orders" in km.list_keys()
    km.delete_key("orders")
    assert "orders" not in km.list_keys()
    with pytest.raises(NotFound):
        km.read_key("orders")


def test_a_provider_is_written_with_sensitive_credentials_that_never_come_back(
    client: SecretsClient,
) -> None:
    km = client.keymgmt
    secret = Sensitive("very-secret-client-secret", "client secret")
    record = km.write_provider(
        "azure-eu",
        "azurekeyvault",
        "kv-eu",
        credentials={"tenant_id": "t", "client_id": "c", "client_secret": secret},
    )
    assert dict(record) == {
        "name": "azure-eu",
        "provider": "azurekeyvault",
        "key_collection": "kv-eu",
    }
    assert "very-secret" not in repr(record) + record._repr_html_() + repr(km)
    assert "azure-eu" in km.list_providers()
    with pytest.raises(BadRequest, match="key_collection: fixed after creation") as refused:
        km.write_provider("azure-eu", "azurekeyvault", "kv-us", credentials={"k": secret})
    assert "very-secret" not in str(refused.value) + repr(refused.value)
    km.delete_provider("azure-eu")
    assert "azure-eu" not in km.list_providers()


def test_distribution_with_the_client_and_the_refusals_it_reports(client: SecretsClient) -> None:
    km = client.keymgmt
    km.create_key("invoices", "rsa-2048")
    held = km.distribute("azure-signing", "invoices", "sign, verify", protection="software")
    assert held.kms == "azure-signing" and held.key == "invoices"
    assert held.purpose == ["sign", "verify"] and held.protection == "software"
    assert list(held.versions) == [1] and held.name.startswith("invoices-")
    assert held.distributed_at is not None
    assert km.list_key_providers("invoices") == ["azure-signing"]
    assert "invoices" in km.list_provider_keys("azure-signing")
    assert km.keys_by_provider().loc["invoices", "azure-signing"] == ("v1: sign, verify (software)")
    assert km.rotate_key("invoices").latest_version == 2
    assert list(km.read_distribution("azure-signing", "invoices").versions) == [1, 2]

    with pytest.raises(BadRequest, match="already distributed to KMS provider 'azure-signing'"):
        km.distribute("gcp-analytics", "invoices", ["sign"])
    km.update_key("invoices", deletion_allowed=True)
    with pytest.raises(BadRequest, match="still distributed"):
        km.delete_key("invoices")
    with pytest.raises(BadRequest, match="still holds keys"):
        km.delete_provider("azure-signing")

    km.remove_from_provider("azure-signing", "invoices")
    assert km.list_key_providers("invoices") == []
    km.delete_key("invoices")
    assert "invoices" not in km.keys_frame().index


def test_the_client_refuses_empty_input_before_sending_anything(client: SecretsClient) -> None:
    km = client.keymgmt
    km.create_key("plain", "aes256-gcm96")
    with pytest.raises(InputError, match="purpose"):
        km.distribute("aws-payments", "plain", " , ")
    with pytest.raises(InputError, match="min_enabled_version"):
        km.update_key("plain", min_enabled_version=-1)
    with pytest.raises(InputError, match="nothing to update"):
        km.update_key("plain")
    with pytest.raises(InputError, match="key name"):
        km.read_key("")
    assert km.list_key_providers("plain") == []
    assert km.read_key("plain").min_enabled_version == 0


def test_the_client_works_on_an_engine_mounted_elsewhere(client: SecretsClient) -> None:
    client.enable_engine("kms/us", "keymgmt")
    us = client.keymgmt.at("kms/us")
    us.create_key("us-data", "aes256-gcm96")
    us.write_provider("aws", "awskms", "us-east-1")
    us.distribute("aws", "us-data", ["encrypt", "decrypt"])
    assert list(us.keys_frame().index) == ["us-data"]
    assert us.keys_by_provider().loc["us-data", "aws"] == "v1: encrypt, decrypt (hsm)"
    assert "us-data" not in client.keymgmt.list_keys()
