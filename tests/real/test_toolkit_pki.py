"""The toolkit's certificate engine calls and frames on a real OpenBao: a root and an
intermediate CA, certificates issued and signed through the toolkit that verify."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.servers.openbao import OpenBao
from toolkit import APIError, Sensitive
from toolkit.secrets import SecretsClient
from toolkit.secrets.pki import PKI


@dataclass
class CAs:
    root: PKI
    intermediate: PKI
    root_pem: str


def make_csr(common_name: str) -> tuple[str, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .sign(key, hashes.SHA256())
    )
    return csr.public_bytes(serialization.Encoding.PEM).decode(), key


@pytest.fixture(scope="module")
def cas(bao: OpenBao) -> Iterator[CAs]:
    """A root CA mount and an intermediate CA mount it signed, set up through the toolkit."""
    with SecretsClient(bao.address, bao.token) as client:
        client.enable_engine("pki-root", "pki", max_lease_ttl="87600h")
        client.enable_engine("pki-int", "pki", max_lease_ttl="43800h")
        root, intermediate = client.pki.at("pki-root"), client.pki.at("pki-int")
        made = root.generate_root(
            "Toolkit Test Root", key_type="ec", issuer_name="root", ttl="87600h"
        )
        request = intermediate.generate_intermediate("Toolkit Test Issuing CA", key_type="ec")
        signed = root.sign_intermediate(
            request["csr"], "Toolkit Test Issuing CA", ttl="43800h", max_path_length=0
        )
        imported = intermediate.set_signed(signed.certificate)
        assert imported["imported_issuers"]
        intermediate.update_issuer(imported["imported_issuers"][0], issuer_name="issuing")
        intermediate.write_role(
            "web",
            allowed_domains=["example.test"],
            allow_subdomains=True,
            max_ttl="72h",
            key_type="ec",
        )
        yield CAs(root, intermediate, str(made["certificate"]))


def test_issued_certificates_verify_up_to_the_real_root(cas: CAs) -> None:
    issued = cas.intermediate.issue(
        "web", "www.example.test", alt_names=["api.example.test"], ip_sans=["10.0.0.7"], ttl="2h"
    )
    assert issued.common_name == "www.example.test"
    assert issued.sans == ["www.example.test", "api.example.test", "10.0.0.7"]
    assert issued.issuer == "CN=Toolkit Test Issuing CA"
    assert issued.verify_chain() is True
    assert 7100 <= (issued.not_after - issued.not_before).total_seconds() <= 7300
    # The chain verifies with cryptography alone, up to the root the toolkit generated.
    root = x509.load_pem_x509_certificate(cas.root_pem.encode())
    middle = x509.load_pem_x509_certificate(cas.intermediate.ca_pem().encode())
    middle.verify_directly_issued_by(root)
    issued.cert.verify_directly_issued_by(middle)
    assert isinstance(issued.private_key, Sensitive) and "PRIVATE KEY" not in repr(issued)
    key = serialization.load_pem_private_key(issued.private_key_pem().encode(), None)
    assert key.public_key() == issued.cert.public_key()
    # OpenBao lists serials with colons, as issue answers them (so does the sandbox).
    assert issued.serial_number in cas.intermediate.list_certs()
    assert cas.intermediate.read_cert(issued.serial_number)["certificate"] == issued.certificate


def test_a_signed_csr_keeps_its_key_and_verifies(cas: CAs) -> None:
    csr, key = make_csr("app.example.test")
    signed = cas.intermediate.sign("web", csr, ttl="1h")
    assert signed.private_key is None and signed.cert.public_key() == key.public_key()
    assert signed.verify_chain() is True


def test_the_toolkits_request_check_gives_the_real_servers_refusal(cas: CAs) -> None:
    pki = cas.intermediate
    assert pki.check_request("web", "www.example.test") == ""
    refusal = pki.check_request("web", "www.example.test", alt_names=["evil.org"])
    assert refusal
    with pytest.raises(APIError) as caught:
        pki.issue("web", "www.example.test", alt_names=["evil.org"])
    assert caught.value.status == 400 and caught.value.messages == [refusal]


def test_frames_of_roles_issuers_and_the_sessions_certificates(cas: CAs) -> None:
    roles = cas.intermediate.roles_frame()
    assert roles.index.name == "name" and "web" in roles.index
    assert bool(roles.loc["web", "allow_subdomains"]) is True
    assert roles.loc["web", "max_ttl"] == 72 * 3600
    issuers = cas.intermediate.issuers_frame().set_index("issuer_name")
    assert bool(issuers.loc["issuing", "is_default"]) and not bool(
        issuers.loc["issuing", "self_signed"]
    )
    root_issuers = cas.root.issuers_frame().set_index("issuer_name")
    assert bool(root_issuers.loc["root", "self_signed"])
    assert issuers.loc["issuing", "issuer"] == root_issuers.loc["root", "subject"]
    assert str(issuers["not_after"].dtype) == "datetime64[ns, UTC]"
    assert len(cas.root.list_keys()) == 1
    issued = cas.intermediate.issue("web", "frame.example.test", ttl="1h")
    frame = cas.intermediate.session_certificates()
    assert issued.serial_number in frame.index
    assert frame.loc[issued.serial_number, "mount"] == "pki-int"
    assert "PRIVATE KEY" not in frame.to_string()


def test_sign_self_issued_resigns_a_root_under_the_real_root(cas: CAs) -> None:
    old = cas.intermediate.generate_root(
        "Old Root", type="exported", key_type="ec", issuer_name="old-root"
    )
    assert isinstance(old["private_key"], Sensitive)
    resigned = cas.root.sign_self_issued(old["certificate"])
    cert = x509.load_pem_x509_certificate(resigned["certificate"].encode())
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(cas.root_pem.encode()))


def test_the_certificate_form_checks_names_and_issues_on_the_real_server(
    bao: OpenBao, cas: CAs
) -> None:
    from widgets import CertificateRequestForm

    with SecretsClient(bao.address, bao.token) as client:
        form = CertificateRequestForm(client, mount="pki-int")
        assert "web" in form.role.options
        form.role.value = "web"
        form.common_name.value = "www.example.test"
        form.alt_names.value = "api.example.test, evil.org"
        assert form.request() is None
        assert "evil.org" in form.status_text  # named by the client, nothing sent
        form.alt_names.value = "api.example.test"
        form.ttl.value = "2h"
        form.request_button.click()
        issued = form.issued
        assert issued is not None, form.status_text
        assert issued.verify_chain() and issued.sans == ["www.example.test", "api.example.test"]
        assert "PRIVATE KEY" not in form.result.value
