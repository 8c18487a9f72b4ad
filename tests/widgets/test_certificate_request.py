"""CertificateRequestForm: names checked against the role before sending, issue, key link."""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from toolkit.secrets import SecretsClient
from widgets import CertificateRequestForm


@pytest.fixture
def form(secrets_client: SecretsClient) -> CertificateRequestForm:
    return CertificateRequestForm(secrets_client)


def widget_state(widget: Any) -> str:
    """The saved state of ``widget`` and every widget inside it, as one string."""
    states, todo = [], [widget]
    while todo:
        current = todo.pop()
        states.append(current.get_state())
        todo.extend(getattr(current, "children", ()))
    return json.dumps(states, default=str)


def fill(form: CertificateRequestForm, role: str, common_name: str, **values: str) -> None:
    form.role.value = role
    form.common_name.value = common_name
    for name, value in values.items():
        getattr(form, name).value = value


def test_the_roles_of_the_mount_are_offered_with_their_policy(form: CertificateRequestForm) -> None:
    assert set(form.role.options) == {"web-server", "internal-service", "client-auth", "root-ops"}
    form.role.value = "web-server"
    assert (
        "example.com" in form.role_summary.value and "allow_subdomains" in form.role_summary.value
    )


def test_a_name_outside_the_role_is_named_and_nothing_is_sent(
    form: CertificateRequestForm, secrets_client: SecretsClient
) -> None:
    before = secrets_client.pki.list_certs()
    fill(form, "web-server", "www.example.com", alt_names="api.example.com, evil.org")
    assert form.request() is None
    assert "subject alternate name evil.org not allowed by this role" in form.status_text
    assert secrets_client.pki.list_certs() == before
    assert secrets_client.pki.session_certificates().empty
    fill(form, "client-auth", "example.com", ip_sans="10.0.0.1", alt_names="")
    form.check_button.click()
    assert "IP Subject Alternative Names are not allowed" in form.status_text


def test_a_request_issues_and_shows_the_certificate_without_its_key(
    form: CertificateRequestForm, secrets_client: SecretsClient
) -> None:
    fill(form, "web-server", "www.example.com", alt_names="api.example.com", ttl="2h")
    form.check_button.click()
    assert "allows these names" in form.status_text
    form.request_button.click()
    issued = form.issued
    assert issued is not None and issued.verify_chain()
    assert issued.sans == ["www.example.com", "api.example.com"]
    assert "Issued www.example.com" in form.status_text
    assert "www.example.com" in form.result.value and "api.example.com" in form.result.value
    assert list(secrets_client.pki.session_certificates().index) == [issued.serial_number]
    key_text = issued.private_key_pem()
    body = key_text.splitlines()[1]
    assert body not in widget_state(form.widget) and "PRIVATE KEY" not in form.result.value
    assert not form.download_button.disabled


def test_not_after_and_formats_are_passed_on(form: CertificateRequestForm) -> None:
    fill(form, "web-server", "a.example.com", not_after="2026-06-02T00:00:00Z")
    form.validity.value = "not_after"
    form.ttl.value = "5h"  # hidden in not-after mode: not sent
    form.format.value = "der"
    form.private_key_format.value = "pkcs8"
    issued = form.request()
    assert issued is not None, form.status_text
    assert issued.not_after.isoformat() == "2026-06-02T00:00:00+00:00"
    assert issued.format == "der" and issued.private_key is not None
    assert "PRIVATE KEY" in issued.private_key_pem()
    form.not_after.value = "next week"
    assert form.request() is None and "not_after" in form.status_text


def test_the_key_is_offered_as_a_link_made_on_click_and_cleared_after(
    secrets_client: SecretsClient,
) -> None:
    form = CertificateRequestForm(secrets_client, link_seconds=0.2)
    fill(form, "web-server", "www.example.com")
    issued = form.request()
    assert issued is not None and form.key_link.value == ""
    form.download_button.click()
    link = form.key_link.value
    encoded = re.search(r"base64,([A-Za-z0-9+/=]+)", link)
    assert encoded is not None
    pem = base64.b64decode(encoded.group(1))
    key = serialization.load_pem_private_key(pem, None)
    assert key.public_key() == issued.cert.public_key()
    assert "www.example.com.key" in link
    assert encoded.group(1) in widget_state(form.widget)  # while offered, and only then
    deadline = time.monotonic() + 5
    while form.key_link.value and time.monotonic() < deadline:
        time.sleep(0.05)
    assert form.key_link.value == ""
    assert encoded.group(1) not in widget_state(form.widget)
    form.download_button.click()
    assert form.key_link.value and not form.forget_button.disabled
    form.forget_button.click()
    assert form.key_link.value == "" and form.forget_button.disabled


def test_the_form_works_on_another_mount(secrets_client: SecretsClient) -> None:
    secrets_client.enable_engine("pki-lab", "pki")
    lab = secrets_client.pki.at("pki-lab")
    lab.generate_root("Lab Root", key_type="ec")
    lab.write_role("lab", allow_any_name=True, key_type="ec")
    form = CertificateRequestForm(secrets_client, mount="pki-lab")
    assert list(form.role.options) == ["lab"]
    fill(form, "lab", "anything.lab")
    issued = form.request()
    assert issued is not None and issued.mount == "pki-lab"
    assert (
        issued.issuer
        == x509.load_pem_x509_certificate(lab.ca_pem().encode()).subject.rfc4514_string()
    )


@pytest.mark.slow
def test_importing_the_form_module_does_not_load_ipywidgets() -> None:
    import subprocess
    import sys

    check = "import sys, widgets.certificate_request; print('ipywidgets' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
