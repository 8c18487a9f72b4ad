"""KeyDistributionForm: distribute, remove and delete keys, with the server's refusals shown."""

from __future__ import annotations

import subprocess
import sys

import pytest

from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.engines.keymgmt.state import KeyManagementEngine
from toolkit.secrets import SecretsClient
from widgets import KeyDistributionForm
from widgets._common import output_text


@pytest.fixture
def form(secrets_client: SecretsClient) -> KeyDistributionForm:
    return KeyDistributionForm(secrets_client)


def engine(sb: Sandbox) -> KeyManagementEngine:
    mount = sb.secrets.mounts.engine("keymgmt")
    assert mount is not None
    backend: KeyManagementEngine = mount.backend
    return backend


def holders(sb: Sandbox) -> dict[str, str]:
    """Key name -> the KMS provider holding it, from the server's state."""
    return {k: p.name for p in engine(sb).providers.values() for k in p.keys}


def test_the_form_offers_the_keys_and_providers_and_shows_the_matrix(
    form: KeyDistributionForm, sandbox: Sandbox
) -> None:
    assert list(form.key.options) == sorted(engine(sandbox).keys)
    assert list(form.provider.options) == sorted(engine(sandbox).providers)
    table = output_text(form.table)
    assert "payments-dek" in table and "v1-v4: encrypt, decrypt (hsm)" in table
    form.key.value = "payments-dek"
    assert "payments-dek is at aws-payments" in form.where.value
    form.key.value = "legacy-reporting"
    assert "in the engine only" in form.where.value


def test_a_key_is_distributed_with_the_chosen_purposes_and_protection(
    form: KeyDistributionForm, sandbox: Sandbox
) -> None:
    form.key.value = "legacy-reporting"
    form.provider.value = "azure-signing"
    form.purposes.value = ("sign", "verify")
    form.protection.value = "software"
    form.distribute_button.click()
    held = engine(sandbox).providers["azure-signing"].keys["legacy-reporting"]
    assert held.purpose == ["sign", "verify"] and held.protection == "software"
    assert form.result is not None and form.result.name == held.name
    assert f"legacy-reporting is at azure-signing as {held.name} (v1, v2)" in form.status_text
    assert "v1-v2: sign, verify (software)" in output_text(form.table)
    assert "legacy-reporting is at azure-signing" in form.where.value


def test_a_key_already_at_another_provider_is_refused_with_the_servers_reason(
    form: KeyDistributionForm, sandbox: Sandbox
) -> None:
    before = holders(sandbox)
    form.key.value = "payments-dek"
    form.provider.value = "gcp-analytics"
    form.distribute_button.click()
    assert form.result is None
    assert "400" in form.status_text
    assert "already distributed to KMS provider 'aws-payments'" in form.status_text
    assert holders(sandbox) == before


def test_a_provider_that_does_not_take_the_purpose_is_refused_in_the_form(
    form: KeyDistributionForm, sandbox: Sandbox
) -> None:
    form.key.value = "legacy-reporting"
    form.provider.value = "aws-payments"
    form.purposes.value = ("sign",)
    form.distribute_button.click()
    assert "purpose: sign not supported" in form.status_text and "awskms" in form.status_text
    assert "legacy-reporting" not in holders(sandbox)


def test_no_purpose_is_refused_before_anything_is_sent(
    form: KeyDistributionForm, sandbox: Sandbox
) -> None:
    form.key.value = "legacy-reporting"
    form.purposes.value = ()
    form.distribute_button.click()
    assert "choose at least one purpose" in form.status_text
    assert "legacy-reporting" not in holders(sandbox)


def test_remove_takes_the_key_out_of_the_provider_and_keeps_it(
    form: KeyDistributionForm, sandbox: Sandbox
) -> None:
    form.key.value = "card-tokenization"
    form.provider.value = "aws-payments"
    form.remove_button.click()
    assert "removed from aws-payments; it stays in the engine" in form.status_text
    assert "card-tokenization" not in holders(sandbox)
    assert "card-tokenization" in engine(sandbox).keys
    assert "in the engine only" in form.where.value
    form.remove_button.click()  # not there any more: the server's 404 is shown
    assert "404" in form.status_text


def test_delete_needs_the_name_typed_and_shows_why_the_server_refuses(
    form: KeyDistributionForm, sandbox: Sandbox
) -> None:
    form.key.value = "payments-dek"
    form.delete_button.click()
    assert "Type payments-dek in Confirm" in form.status_text
    form.confirm.value = "payments-dek"
    form.delete_button.click()
    assert form.confirm.value == ""
    assert "still distributed to KMS provider 'aws-payments'" in form.status_text
    assert "payments-dek" in engine(sandbox).keys

    form.key.value = "legacy-reporting"
    form.confirm.value = "legacy-reporting"
    form.delete_button.click()
    assert "deletion of key 'legacy-reporting' is not allowed" in form.status_text
    assert "deletion_allowed" in form.status_text
    assert "legacy-reporting" in engine(sandbox).keys


def test_a_deletion_allowed_key_in_no_provider_is_deleted_and_leaves_the_form(
    form: KeyDistributionForm, sandbox: Sandbox
) -> None:
    form.key.value = "backup-archive"
    form.confirm.value = "backup-archive"
    form.delete_button.click()
    assert "backup-archive was deleted" in form.status_text
    assert "backup-archive" not in engine(sandbox).keys
    assert "backup-archive" not in form.key.options
    assert "backup-archive" not in output_text(form.table)


def test_the_form_works_on_an_engine_mounted_elsewhere(secrets_client: SecretsClient) -> None:
    secrets_client.enable_engine("kms/eu", "keymgmt")
    eu = secrets_client.keymgmt.at("kms/eu")
    eu.create_key("eu-data", "aes256-gcm96")
    eu.write_provider("gcp", "gcpckms", "projects/eu/locations/europe-west1/keyRings/k")
    form = KeyDistributionForm(secrets_client, "kms/eu")
    assert list(form.key.options) == ["eu-data"] and list(form.provider.options) == ["gcp"]
    form.distribute_button.click()
    assert eu.list_key_providers("eu-data") == ["gcp"]
    assert "payments-dek" not in output_text(form.table)


@pytest.mark.slow
def test_importing_the_form_module_does_not_load_ipywidgets() -> None:
    check = "import sys, widgets.key_distribution; print('ipywidgets' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
