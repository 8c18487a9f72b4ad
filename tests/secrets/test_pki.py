"""The certificate engine's client calls and views, against real sandboxes."""

from __future__ import annotations

import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from toolkit import APIError, InputError
from toolkit._masking import Sensitive
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.pki import (
    ISSUED_CERTIFICATES,
    MOUNT_CERTIFICATES,
    PKI_ISSUERS,
    PKI_ROLES,
    IssuedCertificate,
)


def make_csr(common_name: str) -> tuple[str, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .sign(key, hashes.SHA256())
    )
    return csr.public_bytes(serialization.Encoding.PEM).decode(), key


def test_roles_frame_has_stable_columns_and_real_dtypes(demo_client: SecretsClient) -> None:
    frame = demo_client.pki.roles_frame()
    assert list(frame.columns) == PKI_ROLES.names[1:]
    assert frame.index.name == "name"
    assert set(frame.index) == {"web-server", "internal-service", "client-auth", "root-ops"}
    assert frame.loc["web-server", "allowed_domains"] == "example.com"
    assert frame.loc["web-server", "max_ttl"] == 72 * 3600
    assert frame.loc["internal-service", "issuer_ref"] == "intermediate-2026"
    assert frame.loc["client-auth", "allow_ip_sans"] == False  # noqa: E712 (a pandas boolean)
    assert str(frame["key_bits"].dtype) == "Int64"
    assert str(frame["allow_subdomains"].dtype) == "boolean"


def test_views_are_right_on_an_empty_mount(client: SecretsClient) -> None:
    client.enable_engine("empty-pki", "pki")
    area = client.pki.at("empty-pki")
    roles, issuers = area.roles_frame(), area.issuers_frame()
    assert roles.empty and list(roles.columns) == PKI_ROLES.names[1:]
    assert issuers.empty and list(issuers.columns) == PKI_ISSUERS.names[1:]
    assert str(issuers["not_after"].dtype) == "datetime64[ns, UTC]"
    certs = area.session_certificates()
    assert certs.empty and list(certs.columns) == ISSUED_CERTIFICATES.names[1:]


def test_issuers_frame_shows_the_default_and_the_chain_shape(demo_client: SecretsClient) -> None:
    frame = demo_client.pki.issuers_frame().set_index("issuer_name")
    root, intermediate = frame.loc["root-2026"], frame.loc["intermediate-2026"]
    assert bool(intermediate["is_default"]) and not bool(root["is_default"])
    assert bool(root["self_signed"]) and not bool(intermediate["self_signed"])
    assert intermediate["issuer"] == root["subject"]
    assert intermediate["max_path_length"] == 0 and pd.isna(root["max_path_length"])
    assert intermediate["not_after"] < root["not_after"]
    assert str(frame["not_before"].dtype) == "datetime64[ns, UTC]"


def test_issue_returns_a_parsed_certificate_whose_key_stays_hidden(
    client: SecretsClient, tmp_path: Path
) -> None:
    issued = client.pki.issue(
        "web-server",
        "www.example.com",
        alt_names=["api.example.com"],
        ip_sans=["10.0.0.7"],
        ttl="2h",
    )
    assert isinstance(issued, IssuedCertificate)
    assert issued.subject == "CN=www.example.com,O=Example Corp"
    assert issued.common_name == "www.example.com"
    assert issued.sans == ["www.example.com", "api.example.com", "10.0.0.7"]
    assert issued.issuer == "CN=Example Corp Issuing CA 2026,O=Example Corp"
    assert issued.serial_number == ":".join(
        f"{b:02x}" for b in issued.cert.serial_number.to_bytes(20, "big").lstrip(b"\0")
    )
    assert issued.not_after - issued.not_before == timedelta(hours=2, seconds=30)
    assert issued.verify_chain() is True
    assert isinstance(issued.private_key, Sensitive)
    shown = repr(issued) + issued._repr_html_()
    assert "PRIVATE KEY" not in shown and issued.private_key.reveal() not in shown
    key = serialization.load_pem_private_key(issued.private_key_pem().encode(), None)
    assert key.public_key() == issued.cert.public_key()
    path = issued.save_key(tmp_path / "www.key")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == issued.private_key_pem()
    with pytest.raises(InputError, match="exists"):
        issued.save_key(path)
    issued.save_key(path, overwrite=True)
    chain = issued.save_certificate(tmp_path / "www.pem")
    assert len(x509.load_pem_x509_certificates(chain.read_bytes())) == 3


def test_der_and_pem_bundle_answers_parse_the_same_way(client: SecretsClient) -> None:
    der = client.pki.issue("web-server", "a.example.com", format="der", private_key_format="pkcs8")
    assert der.certificate.startswith("-----BEGIN CERTIFICATE-----") and der.verify_chain()
    key = serialization.load_pem_private_key(der.private_key_pem().encode(), None)
    assert key.public_key() == der.cert.public_key()
    bundle = client.pki.issue("web-server", "b.example.com", format="pem_bundle")
    assert isinstance(bundle.bundle, Sensitive) and "PRIVATE KEY" in bundle.bundle.reveal()
    assert "PRIVATE KEY" not in bundle.certificate and bundle.common_name == "b.example.com"


def test_a_bad_chain_fails_verification_naming_the_link(client: SecretsClient) -> None:
    issued = client.pki.issue("web-server", "a.example.com")
    issued.ca_chain = [client.pki.issuer_pem("root-2026")]
    with pytest.raises(InputError, match="is not signed by"):
        issued.verify_chain()


def test_check_request_gives_the_servers_refusal_before_sending(client: SecretsClient) -> None:
    pki = client.pki
    assert pki.check_request("web-server", "www.example.com", alt_names=["api.example.com"]) == ""
    refusal = pki.check_request(
        "web-server", "www.example.com", alt_names=["api.example.com", "evil.org"]
    )
    assert refusal == "subject alternate name evil.org not allowed by this role"
    with pytest.raises(APIError) as caught:
        pki.issue("web-server", "www.example.com", alt_names=["api.example.com", "evil.org"])
    assert caught.value.messages == [refusal]
    role = pki.read_role("client-auth")
    assert "IP Subject Alternative Names" in pki.check_request(
        role, "example.com", ip_sans=["10.0.0.1"]
    )
    assert "not a valid IP" in pki.check_request(role, "example.com", ip_sans=["ten"])
    assert "user_id root" in pki.check_request(role, "example.com", user_ids=["root"])
    assert "URI" in pki.check_request(
        "internal-service", "a.svc.cluster.local", uri_sans=["https://x"]
    )
    assert "other_sans" in pki.check_request(
        "internal-service", "a.svc.cluster.local", other_sans=["junk"]
    )
    assert pki.check_request("web-server", "").startswith("the common_name field is required")


def test_bad_arguments_are_refused_before_sending(client: SecretsClient) -> None:
    with pytest.raises(InputError, match="format"):
        client.pki.issue("web-server", "a.example.com", format="p12")
    with pytest.raises(InputError, match="private_key_format"):
        client.pki.issue("web-server", "a.example.com", private_key_format="pkcs12")
    with pytest.raises(InputError, match="ttl or not_after"):
        client.pki.issue("web-server", "a.example.com", ttl="1h", not_after="2030-01-01T00:00:00Z")
    with pytest.raises(InputError, match="issue takes no argument alt_name; it takes alt_names"):
        client.pki.issue("web-server", "a.example.com", alt_name="b.example.com")  # type: ignore[call-arg]
    with pytest.raises(InputError, match="sign takes no argument private_key_format"):
        client.pki.sign("web-server", "csr", private_key_format="der")  # type: ignore[call-arg]
    assert client.pki.session_certificates().empty


def test_not_after_takes_a_datetime(client: SecretsClient) -> None:
    end = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=5)
    client.pki.update_issuer("intermediate-2026", leaf_not_after_behavior="permit")
    issued = client.pki.issue("web-server", "a.example.com", not_after=end)
    assert issued.not_after == end


def test_sign_sign_intermediate_and_sign_self_issued(client: SecretsClient) -> None:
    csr, key = make_csr("app.example.com")
    signed = client.pki.sign("web-server", csr, issuer_ref="root-2026")
    assert signed.private_key is None and signed.cert.public_key() == key.public_key()
    assert signed.issuer == "CN=Example Corp Root CA 2026,O=Example Corp" and signed.verify_chain()
    with pytest.raises(InputError, match="no private key"):
        signed.private_key_pem()
    ca_csr, _ = make_csr("team")
    sub = client.pki.sign_intermediate(
        ca_csr,
        "Team CA",
        issuer_ref="root-2026",
        max_path_length=0,
        permitted_dns_domains=["team.example"],
    )
    constraints = sub.cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert constraints.ca and constraints.path_length == 0 and sub.verify_chain()
    with pytest.raises(APIError, match="max path length of zero"):
        client.pki.sign_intermediate(ca_csr, "Team CA")  # the default issuer has path length 0
    old = client.pki.generate_root("Old Root", type="exported", key_type="ec", issuer_name="old")
    assert isinstance(old["private_key"], Sensitive)
    resigned = client.pki.sign_self_issued(old["certificate"], issuer_ref="root-2026")
    cert = x509.load_pem_x509_certificate(resigned["certificate"].encode())
    cert.verify_directly_issued_by(
        x509.load_pem_x509_certificate(client.pki.issuer_pem("root-2026").encode())
    )
    assert client.pki.sign_self_issued(old["certificate"])["issuing_ca"] == client.pki.ca_pem()


def test_roles_issuers_keys_and_stored_certificates(client: SecretsClient) -> None:
    pki = client.pki
    written = pki.write_role("tmp", allowed_domains=["tmp.example"], issuer_ref="nowhere")
    assert written["allowed_domains"] == ["tmp.example"] and written.warnings
    assert "tmp" in pki.list_roles() and pki.read_role("tmp")["issuer_ref"] == "nowhere"
    pki.delete_role("tmp")
    assert "tmp" not in pki.list_roles()
    assert len(pki.list_issuers()) == 2
    renamed = pki.update_issuer("root-2026", issuer_name="root-main")
    assert renamed["issuer_name"] == "root-main"
    assert pki.set_default_issuer("root-main")["default"] == renamed["issuer_id"]
    assert pki.default_issuer()["default"] == renamed["issuer_id"]
    assert x509.load_pem_x509_certificate(pki.ca_pem().encode()).subject.rfc4514_string() == (
        "CN=Example Corp Root CA 2026,O=Example Corp"
    )
    assert pki.ca_chain_pem().count("BEGIN CERTIFICATE") == 1
    keys = pki.list_keys()
    assert len(keys) == 2 and pki.read_key(renamed["key_id"])["key_type"] == "ec"
    issued = pki.issue("web-server", "a.example.com")
    assert issued.serial_number in pki.list_certs()
    assert pki.read_cert(issued.serial_number)["certificate"] == issued.certificate
    request = pki.generate_intermediate("Team CA", key_type="ec", legacy_path=True)
    signed = pki.sign_intermediate(request["csr"], "Team CA", issuer_ref="root-main")
    imported = pki.set_signed(signed.certificate)
    assert imported["mapping"] == {imported["imported_issuers"][0]: request["key_id"]}
    again = pki.import_bundle(signed.certificate)
    assert again["existing_issuers"] == imported["imported_issuers"]


def test_session_certificates_list_what_this_client_made_on_every_mount(
    client: SecretsClient,
) -> None:
    client.enable_engine("pki-eu", "pki")
    eu = client.pki.at("pki-eu")
    eu.generate_root("EU Root", key_type="ec", issuer_name="eu")
    eu.write_role("any", allow_any_name=True, key_type="ec")
    first = client.pki.issue("web-server", "www.example.com", alt_names="api.example.com")
    second = eu.issue("any", "svc.eu.test")
    csr, _ = make_csr("app.example.com")
    third = client.pki.sign("web-server", csr)
    frame = client.pki.session_certificates()
    assert list(frame.index) == [first.serial_number, second.serial_number, third.serial_number]
    assert frame.index.name == "serial_number"
    assert list(frame.columns) == ISSUED_CERTIFICATES.names[1:]
    assert frame.loc[first.serial_number, "sans"] == "www.example.com, api.example.com"
    assert frame.loc[second.serial_number, "mount"] == "pki-eu"
    assert frame.loc[third.serial_number, "operation"] == "sign"
    assert frame.loc[first.serial_number, "not_after"] == first.not_after
    assert str(frame["not_after"].dtype) == "datetime64[ns, UTC]"
    assert "PRIVATE KEY" not in frame.to_string() + frame.to_html()
    assert eu.session_certificates().equals(frame)


# -- revocation, CRLs, tidy, URLs, keys -------------------------------------------------------
def test_a_revoked_certificate_shows_in_the_inventory_and_the_parsed_crl(
    client: SecretsClient,
) -> None:
    pki = client.pki
    issued = pki.issue("web-server", "rev.example.com", ttl="2h")
    kept = pki.issue("web-server", "kept.example.com")
    revoked = pki.revoke(issued.serial_number)
    assert revoked["state"] == "revoked"
    assert isinstance(revoked["revocation_time"], datetime)
    assert revoked["revocation_time"].tzinfo is not None
    assert pki.list_revoked() == [issued.serial_number]
    crl = pki.crl()
    assert issued.serial_number in crl["revoked"] and kept.serial_number not in crl["revoked"]
    assert crl["issuer"] == issued.issuer and crl["delta_of"] is None
    assert crl["next_update"] - crl["this_update"] == timedelta(hours=72)
    entries = pki.crl_entries()
    assert list(entries.columns) == ["revocation_time"] and entries.index.name == "serial_number"
    assert str(entries["revocation_time"].dtype) == "datetime64[ns, UTC]"
    assert entries.loc[issued.serial_number, "revocation_time"] == revoked["revocation_time"]
    frame = pki.certificates_frame()
    assert list(frame.columns) == MOUNT_CERTIFICATES.names[1:]
    assert str(frame["not_after"].dtype) == "datetime64[ns, UTC]"
    assert str(frame["revoked"].dtype) == "boolean"
    assert bool(frame.loc[issued.serial_number, "revoked"])
    assert not bool(frame.loc[kept.serial_number, "revoked"])
    assert pd.isna(frame.loc[kept.serial_number, "revocation_time"])
    assert frame.loc[issued.serial_number, "not_after"] == issued.not_after
    assert bool(frame["is_ca"].any())  # the intermediate the root signed is kept too
    with pytest.raises(InputError, match="serial"):
        pki.revoke(" ")
    with pytest.raises(APIError, match="not found"):
        pki.revoke("aa:bb")


def test_the_inventory_is_right_on_an_empty_mount(client: SecretsClient) -> None:
    client.enable_engine("bare-pki", "pki")
    frame = client.pki.at("bare-pki").certificates_frame()
    assert frame.empty and list(frame.columns) == MOUNT_CERTIFICATES.names[1:]
    assert str(frame["revocation_time"].dtype) == "datetime64[ns, UTC]"


def test_crl_config_rotation_and_the_delta_crl(client: SecretsClient) -> None:
    pki = client.pki
    assert pki.crl_config()["auto_rebuild"] is False
    with pytest.raises(APIError, match="Delta CRLs"):
        pki.update_crl_config(enable_delta=True)
    config = pki.update_crl_config(auto_rebuild=True, enable_delta=True, expiry="48h")
    assert config["expiry"] == "48h" and config["enable_delta"] is True
    issued = pki.issue("web-server", "delta.example.com")
    pki.revoke(issued.serial_number)
    assert issued.serial_number not in pki.crl()["revoked"]
    assert pki.rotate_delta_crl().warnings == []  # type: ignore[attr-defined]
    delta = pki.crl(delta=True)
    assert issued.serial_number in delta["revoked"] and delta["delta_of"] is not None
    assert pki.rotate_crl()["success"] is True
    assert issued.serial_number in pki.crl()["revoked"]
    assert pki.crl("root-2026")["revoked"] == []


def test_sign_revocation_list_returns_the_parsed_signed_crl(client: SecretsClient) -> None:
    when = datetime(2024, 5, 1, tzinfo=UTC)
    crl = client.pki.sign_revocation_list(
        "root-2026", {"0a:0b": when}, crl_number=42, next_update="2h"
    )
    assert crl["crl_number"] == 42 and crl["revoked"] == ["0a:0b"]
    assert crl["next_update"] - crl["this_update"] == timedelta(hours=2)
    with pytest.raises(InputError, match="timezone"):
        client.pki.sign_revocation_list("root-2026", {"0a": datetime(2024, 5, 1)})


def test_tidy_status_and_cancel(client: SecretsClient) -> None:
    pki = client.pki
    assert pki.tidy_status()["state"] == "Inactive"
    started = pki.tidy(tidy_cert_store=True, safety_buffer="1h")
    assert "started" in started.warnings[0]  # type: ignore[attr-defined]
    status = pki.tidy_status()
    assert status["state"] == "Finished" and status["tidy_cert_store"] is True
    assert "none is currently running" in pki.tidy_cancel().warnings[0]  # type: ignore[attr-defined]


def test_urls_go_into_certificates_issued_after_them(client: SecretsClient) -> None:
    pki = client.pki
    assert pki.urls()["issuing_certificates"] == []
    written = pki.update_urls(crl_distribution_points=["http://ca.example.test/crl"])
    assert written["crl_distribution_points"] == ["http://ca.example.test/crl"]
    cert = pki.issue("web-server", "urls.example.com").cert
    points = cert.extensions.get_extension_for_class(x509.CRLDistributionPoints).value
    assert points[0].full_name[0].value == "http://ca.example.test/crl"  # type: ignore[index]


def test_sign_verbatim_and_sign_with_user_ids(client: SecretsClient) -> None:
    pki = client.pki
    csr, key = make_csr("whatever.example.org")
    verbatim = pki.sign_verbatim(csr, ttl="1h", ext_key_usage=["ServerAuth"])
    assert verbatim.common_name == "whatever.example.org"
    assert verbatim.cert.public_key() == key.public_key()
    assert verbatim.operation == "sign-verbatim" and verbatim.private_key is None
    assert verbatim.verify_chain()
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice.example.com")]))
        .sign(rsa_key, hashes.SHA256())
        .public_bytes(serialization.Encoding.PEM)
        .decode()
    )
    signed = pki.sign("client-auth", other, user_ids=["ops-alice"])
    uid = x509.ObjectIdentifier("0.9.2342.19200300.100.1.1")
    assert [a.value for a in signed.cert.subject.get_attributes_for_oid(uid)] == ["ops-alice"]
    with pytest.raises(APIError, match="user"):
        pki.sign("client-auth", other, user_ids=["mallory"])


def test_keys_generate_export_once_and_issuers_and_keys_delete(client: SecretsClient) -> None:
    pki = client.pki
    internal = pki.generate_key(key_type="ec", key_name="spare")
    assert "private_key" not in internal and internal["key_type"] == "ec"
    exported = pki.generate_key(exported=True, key_type="ec")
    assert isinstance(exported["private_key"], Sensitive)
    assert "PRIVATE KEY" not in repr(exported)
    key = serialization.load_pem_private_key(exported["private_key"].reveal().encode(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    pki.delete_key("spare")
    assert "spare" not in {pki.read_key(k)["key_name"] for k in pki.list_keys()}
    warnings = pki.delete_issuer("intermediate-2026")
    assert any("default issuer" in w for w in warnings)
    assert pki.default_issuer()["default"] == ""


# -- findings -----------------------------------------------------------------------------


def _certificate_findings(client: SecretsClient, **options: object) -> list[tuple[str, str]]:
    found = client.pki.findings(**options)  # type: ignore[arg-type]
    return list(zip(found["severity"].astype(str), found["object"], strict=True))


def test_a_role_that_issues_straight_from_the_root_is_flagged_and_one_under_an_intermediate_not(
    client: SecretsClient,
) -> None:
    found = _certificate_findings(client)
    assert ("high", "pki/roles/root-ops") in found  # issuer_ref root-2026, self-signed
    assert not any(o in ("pki/roles/internal-service", "pki/roles/web-server") for _, o in found)
    client.pki.write_role("root-ops", issuer_ref="intermediate-2026", allowed_domains="example.com")
    assert ("high", "pki/roles/root-ops") not in _certificate_findings(client)
    client.pki.write_role("dangling", issuer_ref="no-such-issuer", allowed_domains="example.com")
    assert ("medium", "pki/roles/dangling") in _certificate_findings(client)


def test_certificates_and_issuers_near_their_end_are_flagged_and_expired_ones_counted(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    short = client.pki.issue("web-server", "soon.example.com", ttl="2h")
    object_of_short = f"pki/cert/{short.serial_number}"
    assert ("medium", object_of_short) in _certificate_findings(client)
    assert ("medium", object_of_short) not in _certificate_findings(
        client, expiring_within=timedelta(hours=1)
    )
    # The intermediate ends five years after the demo's start, the root ten.
    issuers = {
        o
        for s, o in _certificate_findings(client, expiring_within=timedelta(days=6 * 365))
        if s == "high"
    }
    assert "pki/issuer/intermediate-2026" in issuers and "pki/issuer/root-2026" not in issuers
    sandbox.clock.advance(3 * 3600)
    after = _certificate_findings(client)
    assert ("medium", object_of_short) not in after
    assert ("low", "pki/certs") in after
