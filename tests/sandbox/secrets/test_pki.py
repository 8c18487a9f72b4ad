"""The certificate engine over HTTP (spec 4.10, part 2 role, multi-issuer model, parts 5.3, 7, 8).

Certificates are checked with ``cryptography``: what the sandbox answers must
verify against its issuer's chain and carry what the request asked for.
Tests that only add certificates share one sandbox of this module; tests
that change roles, issuers or mounts get a fresh one.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import NameOID

from tests.sandbox.secrets._access_api import assert_error, issue, put_acl, v1
from toolkit.sandbox import Sandbox
from toolkit.sandbox._plain import round_trip
from toolkit.sandbox.secrets.engines.pki import http as pki_http
from toolkit.sandbox.secrets.engines.pki.roles import Role

OTHER_NAME_UPN = "1.3.6.1.4.1.311.20.2.3"


@pytest.fixture(scope="module")
def shared() -> Iterator[httpx.Client]:
    """A demo sandbox for this module's tests that only add certificates."""
    with Sandbox() as sandbox, v1(sandbox) as client:
        yield client


# -- helpers -----------------------------------------------------------------------------
def ok(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json() if response.content else {}


def cert_of(text: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(text.encode())


def sans(cert: x509.Certificate) -> x509.SubjectAlternativeName:
    return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value


def make_csr(
    common_name: str,
    *,
    key: Any = None,
    dns: tuple[str, ...] = (),
    organization: str = "",
    key_usage: bool = False,
) -> tuple[str, Any]:
    key = key or ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs))
    if dns:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False
        )
    if key_usage:
        usage = x509.KeyUsage(True, False, False, False, False, True, True, False, False)
        builder = builder.add_extension(usage, critical=True)
    csr = builder.sign(key, hashes.SHA256())
    return csr.public_bytes(serialization.Encoding.PEM).decode(), key


def serials(client: httpx.Client, mount: str = "pki") -> list[str]:
    response = client.request("LIST", f"{mount}/certs")
    return response.json()["data"]["keys"] if response.status_code == 200 else []


def issuer_cert(client: httpx.Client, ref: str, mount: str = "pki") -> x509.Certificate:
    return cert_of(ok(client.get(f"{mount}/issuer/{ref}"))["data"]["certificate"])


def new_root(client: httpx.Client, name: str, mount: str = "pki", **body: Any) -> dict[str, Any]:
    body = {"common_name": f"{name} CA", "issuer_name": name, "key_type": "ec", **body}
    return ok(client.post(f"{mount}/issuers/generate/root/internal", json=body))["data"]


# -- issuers ----------------------------------------------------------------------------
def test_demo_mount_holds_a_root_and_an_intermediate_with_the_intermediate_as_default(
    demo_api: httpx.Client,
) -> None:
    listed = ok(demo_api.request("LIST", "pki/issuers"))["data"]
    names = {info["issuer_name"]: (iid, info) for iid, info in listed["key_info"].items()}
    assert set(names) == {"root-2026", "intermediate-2026"}
    default = ok(demo_api.get("pki/config/issuers"))["data"]
    assert default["default"] == names["intermediate-2026"][0]
    assert names["intermediate-2026"][1]["is_default"] is True
    assert names["root-2026"][1]["is_default"] is False
    root = issuer_cert(demo_api, "root-2026")
    intermediate = issuer_cert(demo_api, "intermediate-2026")
    intermediate.verify_directly_issued_by(root)
    assert intermediate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_an_issuer_is_found_by_id_by_name_and_as_default(demo_api: httpx.Client) -> None:
    by_name = ok(demo_api.get("pki/issuer/intermediate-2026"))["data"]
    by_id = ok(demo_api.get(f"pki/issuer/{by_name['issuer_id']}"))["data"]
    by_default = ok(demo_api.get("pki/issuer/default"))["data"]
    assert by_name["certificate"] == by_id["certificate"] == by_default["certificate"]
    assert by_name["issuer_name"] == "intermediate-2026"
    assert by_name["leaf_not_after_behavior"] == "err"
    assert by_name["usage"] == "crl-signing,issuing-certificates,ocsp-signing,read-only"
    assert by_name["revocation_signature_algorithm"] == ""  # imported: the signer's choice
    root = ok(demo_api.get("pki/issuer/root-2026"))["data"]
    assert root["revocation_signature_algorithm"] == "ECDSAWithSHA384"
    assert by_name["manual_chain"] is None and by_name["revoked"] is False
    assert len(by_name["ca_chain"]) == 2 and by_name["ca_chain"][0] == by_name["certificate"]
    assert_error(demo_api.get("pki/issuer/no-such-issuer"), 400, "no-such-issuer")


def test_certificate_reads_need_no_token(demo_sandbox: Sandbox) -> None:
    with httpx.Client(base_url=f"{demo_sandbox.address}/v1") as anonymous:
        pem = anonymous.get("pki/ca/pem")
        assert pem.status_code == 200 and pem.headers["content-type"].startswith(
            "application/pem-certificate-chain"
        )
        default = cert_of(pem.text)
        der = anonymous.get("pki/ca")
        assert x509.load_der_x509_certificate(der.content) == default
        assert not pem.text.endswith("\n")
        chain = x509.load_pem_x509_certificates(anonymous.get("pki/ca_chain").content)
        assert chain[0] == default and len(chain) == 2
        kept = anonymous.get("pki/cert/ca_chain").json()["data"]
        assert x509.load_pem_x509_certificates(kept["ca_chain"].encode()) == chain
        assert anonymous.request("LIST", "pki/issuers").status_code == 200
        assert cert_of(anonymous.get("pki/issuer/root-2026/pem").text) == chain[1]
        assert anonymous.get("pki/roles/web-server").status_code == 403


def test_root_generation_keeps_the_first_default_and_names_are_unique(api: httpx.Client) -> None:
    before = ok(api.get("pki/config/issuers"))["data"]["default"]
    made = new_root(api, "second-root", key_bits=256, max_path_length=1, ttl="48h")
    assert made["issuer_name"] == "second-root" and made["key_id"] and "private_key" not in made
    cert = cert_of(made["certificate"])
    assert cert.issuer == cert.subject
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.path_length == 1
    assert ok(api.get("pki/config/issuers"))["data"]["default"] == before
    assert_error(
        api.post(
            "pki/root/generate/internal", json={"common_name": "x", "issuer_name": "second-root"}
        ),
        400,
        "issuer name already in use",
    )
    assert_error(
        api.post("pki/root/generate/internal", json={"common_name": "x", "issuer_name": "default"}),
        400,
        "reserved keyword 'default'",
    )
    exported = ok(
        api.post("pki/root/generate/exported", json={"common_name": "Exported", "key_type": "ec"})
    )["data"]
    key = serialization.load_pem_private_key(exported["private_key"].encode(), None)
    assert key.public_key() == cert_of(exported["certificate"]).public_key()


def test_default_issuer_is_set_by_name_and_refuses_default_or_empty(api: httpx.Client) -> None:
    data = ok(api.post("pki/config/issuers", json={"default": "root-2026"}))["data"]
    root_id = ok(api.get("pki/issuer/root-2026"))["data"]["issuer_id"]
    assert data == {"default": root_id, "default_follows_latest_issuer": False}
    issued = ok(api.post("pki/issue/web-server", json={"common_name": "www.example.com"}))
    assert cert_of(issued["data"]["issuing_ca"]) == issuer_cert(api, "root-2026")
    for bad in ("", "default"):
        assert_error(
            api.post("pki/config/issuers", json={"default": bad}), 400, "can't be 'default'"
        )
    assert_error(api.post("pki/config/issuers", json={"default": "nope"}), 400, "nope")
    assert ok(api.get("pki/config/issuers"))["data"]["default"] == root_id


def test_issuer_update_renames_and_refuses_a_name_in_use_changing_nothing(
    api: httpx.Client,
) -> None:
    renamed = ok(api.post("pki/issuer/root-2026", json={"issuer_name": "root-renamed"}))["data"]
    assert renamed["issuer_name"] == "root-renamed"
    assert_error(
        api.post(
            "pki/issuer/root-renamed",
            json={"issuer_name": "intermediate-2026", "leaf_not_after_behavior": "permit"},
        ),
        400,
        "issuer name already in use",
    )
    after = ok(api.get("pki/issuer/root-renamed"))["data"]
    assert after["leaf_not_after_behavior"] == "err"
    narrowed = ok(api.post("pki/issuer/root-renamed", json={"usage": "crl-signing"}))["data"]
    assert narrowed["usage"] == "crl-signing,read-only"
    assert_error(
        api.post("pki/issuer/root-renamed/issue/web-server", json={"common_name": "example.com"}),
        400,
        "could not fetch the CA certificate",
    )
    assert_error(
        api.post("pki/issuer/root-renamed", json={"leaf_not_after_behavior": "sometimes"}),
        400,
        "leaf_not_after_behavior",
    )


def test_intermediate_is_built_by_csr_signing_and_set_signed(api: httpx.Client) -> None:
    request = ok(
        api.post(
            "pki/intermediate/generate/internal",
            json={"common_name": "Team CA", "key_type": "ec", "key_name": "team"},
        )
    )["data"]
    assert "private_key" not in request and request["key_name"] == "team"
    signed = ok(
        api.post(
            "pki/issuer/root-2026/sign-intermediate",
            json={"csr": request["csr"], "common_name": "Team CA", "ttl": "720h"},
        )
    )["data"]
    imported = ok(
        api.post("pki/intermediate/set-signed", json={"certificate": signed["certificate"]})
    )
    new_id = imported["data"]["imported_issuers"][0]
    assert imported["data"]["mapping"] == {new_id: request["key_id"]}
    again = ok(api.post("pki/intermediate/set-signed", json={"certificate": signed["certificate"]}))
    assert again["data"]["imported_issuers"] is None and again["data"]["existing_issuers"] == [
        new_id
    ]
    chain = ok(api.get(f"pki/issuer/{new_id}"))["data"]["ca_chain"]
    assert cert_of(chain[-1]) == issuer_cert(api, "root-2026")
    foreign, _ = make_csr("elsewhere")
    other = ok(
        api.post(
            "pki/issuer/root-2026/sign-intermediate", json={"csr": foreign, "common_name": "x"}
        )
    )
    assert_error(
        api.post("pki/intermediate/set-signed", json={"certificate": other["data"]["certificate"]}),
        400,
        "no certificate matches a key",
    )


# -- roles -----------------------------------------------------------------------------
def test_role_create_read_list_delete_with_the_servers_defaults(api: httpx.Client) -> None:
    written = ok(api.post("pki/roles/plain", json={"allowed_domains": "corp.example"}))
    assert written["data"]["allowed_domains"] == ["corp.example"]
    role = ok(api.get("pki/roles/plain"))["data"]
    assert role["key_type"] == "rsa" and role["key_bits"] == 2048
    assert role["signature_bits"] == 256
    assert role["issuer_ref"] == "default"
    assert role["allow_ip_sans"] is True and role["allow_localhost"] is True
    assert role["server_flag"] is True and role["client_flag"] is True
    assert role["code_signing_flag"] is False and role["allow_any_name"] is False
    assert role["ttl"] == 0 and role["max_ttl"] == 0 and role["not_before_duration"] == 30
    assert role["allowed_uri_sans"] == [] and role["allowed_other_sans"] == []
    assert role["allowed_user_ids"] == []
    assert "plain" in ok(api.request("LIST", "pki/roles"))["data"]["keys"]
    ok(api.post("pki/roles/plain", json={"key_type": "ec", "ttl": "1h", "max_ttl": "2h"}))
    replaced = ok(api.get("pki/roles/plain"))["data"]
    assert replaced["allowed_domains"] == [] and replaced["key_bits"] == 256
    assert replaced["ttl"] == 3600 and replaced["max_ttl"] == 7200
    ok(api.delete("pki/roles/plain"), 204)
    assert api.get("pki/roles/plain").status_code == 404
    assert "plain" not in ok(api.request("LIST", "pki/roles"))["data"]["keys"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"ttl": "2h", "max_ttl": "1h"}, '"ttl" value must be less than "max_ttl" value'),
        ({"key_type": "dsa"}, "unknown key type dsa"),
        ({"key_type": "rsa", "key_bits": 1024}, "key_bits"),
        ({"key_type": "ec", "key_bits": 300}, "unsupported bit length for EC key"),
        ({"signature_bits": 128}, "signature_bits"),
        ({"allowed_other_sans": "1.2.3;INT:5"}, "allowed_other_sans"),
        ({"key_usage": ["Juggling"]}, "key_usage"),
        ({"ttl": "soon"}, "ttl"),
        ({"allow_subdomains": "maybe"}, "allow_subdomains"),
    ],
)
def test_a_bad_role_write_is_refused_naming_the_field_and_changes_nothing(
    api: httpx.Client, body: dict[str, Any], fragment: str
) -> None:
    before = ok(api.get("pki/roles/web-server"))["data"]
    assert_error(api.post("pki/roles/web-server", json=body), 400, fragment)
    assert ok(api.get("pki/roles/web-server"))["data"] == before


def test_a_role_naming_no_issuer_is_kept_with_a_warning(api: httpx.Client) -> None:
    answer = ok(api.post("pki/roles/orphan", json={"issuer_ref": "missing-ca"}))
    assert "no issuing certificate currently has that name" in answer["warnings"][0]
    assert_error(api.post("pki/issue/orphan", json={"common_name": "localhost"}), 400, "missing-ca")


def test_role_writes_need_create_for_a_new_role_and_update_for_an_existing_one(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    put_acl(api, "pki-updater", 'path "pki/roles/*" { capabilities = ["update", "read"] }')
    token = issue(api, policies=["pki-updater"])
    with v1(sandbox, token) as updater:
        assert updater.post("pki/roles/brand-new", json={}).status_code == 403
        ok(updater.post("pki/roles/web-server", json={"allowed_domains": "example.com"}))


def test_unknown_role_and_missing_role_read(shared: httpx.Client) -> None:
    assert_error(
        shared.post("pki/issue/nope", json={"common_name": "a"}), 400, "unknown role: nope"
    )
    missing = shared.get("pki/roles/nope")
    assert missing.status_code == 404 and missing.json() == {"errors": []}


# -- issue -------------------------------------------------------------------------------
def test_an_issued_certificate_verifies_against_its_issuers_chain(shared: httpx.Client) -> None:
    answer = ok(
        shared.post(
            "pki/issue/web-server",
            json={"common_name": "www.example.com", "alt_names": "api.example.com"},
        )
    )
    assert answer["lease_id"] == "" and answer["lease_duration"] == 0
    assert answer["renewable"] is False
    data = answer["data"]
    leaf, issuing = cert_of(data["certificate"]), cert_of(data["issuing_ca"])
    chain = [cert_of(c) for c in data["ca_chain"]]
    leaf.verify_directly_issued_by(issuing)
    assert chain[0] == issuing
    issuing.verify_directly_issued_by(chain[1])
    chain[1].verify_directly_issued_by(chain[1])
    assert issuing == issuer_cert(shared, "intermediate-2026")
    assert leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "www.example.com"
    assert leaf.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "Example Corp"
    assert sans(leaf).get_values_for_type(x509.DNSName) == ["www.example.com", "api.example.com"]
    assert data["serial_number"] == ":".join(
        f"{b:02x}" for b in leaf.serial_number.to_bytes((leaf.serial_number.bit_length() + 7) // 8)
    )
    key = serialization.load_pem_private_key(data["private_key"].encode(), None)
    assert key.public_key() == leaf.public_key()
    assert data["private_key_type"] == "ec"
    assert data["expiration"] == int(leaf.not_valid_after_utc.timestamp())
    usage = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]  # client_flag false


def test_the_issuer_path_overrides_the_roles_issuer(shared: httpx.Client) -> None:
    by_role = ok(shared.post("pki/issue/root-ops", json={"common_name": "ops.example.com"}))
    by_path = ok(
        shared.post(
            "pki/issuer/intermediate-2026/issue/root-ops", json={"common_name": "ops.example.com"}
        )
    )
    root, intermediate = issuer_cert(shared, "root-2026"), issuer_cert(shared, "intermediate-2026")
    cert_of(by_role["data"]["certificate"]).verify_directly_issued_by(root)
    cert_of(by_path["data"]["certificate"]).verify_directly_issued_by(intermediate)
    by_default = ok(
        shared.post("pki/issuer/default/issue/root-ops", json={"common_name": "ops.example.com"})
    )
    cert_of(by_default["data"]["certificate"]).verify_directly_issued_by(intermediate)


def test_every_kind_of_san_the_role_allows_is_in_the_certificate(shared: httpx.Client) -> None:
    data = ok(
        shared.post(
            "pki/issue/internal-service",
            json={
                "common_name": "billing.svc.cluster.local",
                "alt_names": "ledger.svc.cluster.local,ops@billing.svc.cluster.local",
                "ip_sans": "10.1.2.3,fd00::1",
                "uri_sans": "spiffe://cluster.local/ns/billing",
                "other_sans": f"{OTHER_NAME_UPN};UTF8:svc@example.com",
            },
        )
    )["data"]
    names = sans(cert_of(data["certificate"]))
    assert names.get_values_for_type(x509.DNSName) == [
        "billing.svc.cluster.local",
        "ledger.svc.cluster.local",
    ]
    assert names.get_values_for_type(x509.RFC822Name) == ["ops@billing.svc.cluster.local"]
    assert names.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("10.1.2.3"),
        ipaddress.ip_address("fd00::1"),
    ]
    assert names.get_values_for_type(x509.UniformResourceIdentifier) == [
        "spiffe://cluster.local/ns/billing"
    ]
    (other,) = names.get_values_for_type(x509.OtherName)
    assert other.type_id.dotted_string == OTHER_NAME_UPN
    assert other.value == b"\x0c\x0fsvc@example.com"


def test_user_ids_go_into_the_subject_when_the_role_allows_them(shared: httpx.Client) -> None:
    data = ok(
        shared.post(
            "pki/issue/client-auth",
            json={"common_name": "example.com", "user_ids": "ops-alice,ops-bob"},
        )
    )["data"]
    leaf = cert_of(data["certificate"])
    uid = x509.ObjectIdentifier("0.9.2342.19200300.100.1.1")
    assert [a.value for a in leaf.subject.get_attributes_for_oid(uid)] == ["ops-alice", "ops-bob"]
    assert data["private_key_type"] == "rsa"
    assert "BEGIN RSA PRIVATE KEY" in data["private_key"]


@pytest.mark.parametrize(
    ("role", "body", "fragment"),
    [
        (
            "web-server",
            {"alt_names": "api.example.com,evil.org"},
            "subject alternate name evil.org",
        ),
        ("web-server", {"alt_names": "me@evil.org"}, "email address me@evil.org"),
        ("web-server", {"common_name": "www.evil.org"}, "common name www.evil.org"),
        ("client-auth", {"ip_sans": "10.0.0.1"}, "IP Subject Alternative Names are not allowed"),
        ("web-server", {"ip_sans": "10.0.0.1,not-an-ip"}, "not-an-ip"),
        (
            "internal-service",
            {"uri_sans": "spiffe://cluster.local/a,spiffe://other.org/b"},
            "URI Subject Alternative Name spiffe://other.org/b not allowed",
        ),
        (
            "internal-service",
            {"other_sans": "1.2.3.4;UTF8:x@example.com"},
            "other SAN OID 1.2.3.4 not allowed",
        ),
        (
            "internal-service",
            {"other_sans": f"{OTHER_NAME_UPN};UTF8:x@evil.org"},
            "other SAN x@evil.org not allowed",
        ),
        ("internal-service", {"other_sans": f"{OTHER_NAME_UPN};INT:5"}, "only utf8"),
        ("client-auth", {"user_ids": "ops-alice,root"}, "user_id root not allowed"),
        ("web-server", {"alt_names": "*.*.example.com"}, "*.*.example.com"),
    ],
)
def test_one_name_outside_the_role_denies_the_whole_request(
    shared: httpx.Client, role: str, body: dict[str, str], fragment: str
) -> None:
    request = {"common_name": "www.example.com", **body}
    if role == "internal-service":
        request["common_name"] = "a.svc.cluster.local"
    if role == "client-auth" and "common_name" not in body:
        request["common_name"] = "example.com"
    before = serials(shared)
    assert_error(shared.post(f"pki/issue/{role}", json=request), 400, fragment)
    assert serials(shared) == before


def test_wildcards_subdomains_bare_domains_and_localhost_follow_the_role(
    shared: httpx.Client,
) -> None:
    for name in ("*.example.com", "example.com", "deep.www.example.com", "localhost"):
        ok(shared.post("pki/issue/web-server", json={"common_name": name}))
    assert_error(
        shared.post("pki/issue/root-ops", json={"common_name": "sub.ops.example.com"}),
        400,
        "common name sub.ops.example.com not allowed",
    )


def test_exclude_cn_from_sans_leaves_the_common_name_out(shared: httpx.Client) -> None:
    data = ok(
        shared.post(
            "pki/issue/web-server",
            json={
                "common_name": "www.example.com",
                "alt_names": "api.example.com",
                "exclude_cn_from_sans": True,
            },
        )
    )["data"]
    assert sans(cert_of(data["certificate"])).get_values_for_type(x509.DNSName) == [
        "api.example.com"
    ]


# -- validity ----------------------------------------------------------------------------
def lifetime(data: dict[str, Any]) -> timedelta:
    cert = cert_of(data["certificate"])
    return cert.not_valid_after_utc - cert.not_valid_before_utc


def test_ttl_defaults_to_the_roles_and_is_cut_to_max_ttl_with_a_warning(
    shared: httpx.Client,
) -> None:
    default = ok(shared.post("pki/issue/web-server", json={"common_name": "a.example.com"}))
    assert lifetime(default["data"]) == timedelta(hours=24, seconds=30)
    asked = ok(
        shared.post("pki/issue/web-server", json={"common_name": "a.example.com", "ttl": "2h"})
    )
    assert lifetime(asked["data"]) == timedelta(hours=2, seconds=30)
    capped = ok(
        shared.post("pki/issue/web-server", json={"common_name": "a.example.com", "ttl": "100h"})
    )
    assert lifetime(capped["data"]) == timedelta(hours=72, seconds=30)
    assert capped["warnings"] == [
        'TTL "100h0m0s" is longer than permitted maxTTL "72h0m0s", so maxTTL is being used'
    ]


def test_not_after_sets_the_exact_end_and_excludes_ttl(shared: httpx.Client) -> None:
    intermediate = issuer_cert(shared, "intermediate-2026")
    end = (intermediate.not_valid_before_utc + timedelta(days=100)).replace(microsecond=0)
    stamp = end.strftime("%Y-%m-%dT%H:%M:%SZ")
    data = ok(
        shared.post(
            "pki/issue/web-server", json={"common_name": "a.example.com", "not_after": stamp}
        )
    )["data"]
    assert cert_of(data["certificate"]).not_valid_after_utc == end
    assert_error(
        shared.post(
            "pki/issue/web-server",
            json={"common_name": "a.example.com", "not_after": stamp, "ttl": "1h"},
        ),
        400,
        "Either ttl or not_after should be provided",
    )
    assert_error(
        shared.post(
            "pki/issue/web-server", json={"common_name": "a.example.com", "not_after": "tomorrow"}
        ),
        400,
        "not_after",
    )


def test_not_after_9999_follows_the_issuers_leaf_not_after_behavior(api: httpx.Client) -> None:
    body = {"common_name": "a.example.com", "not_after": "9999-12-31T23:59:59Z"}
    assert_error(
        api.post("pki/issue/web-server", json=body), 400, "beyond the expiration of the CA"
    )
    ok(api.post("pki/issuer/intermediate-2026", json={"leaf_not_after_behavior": "truncate"}))
    truncated = cert_of(ok(api.post("pki/issue/web-server", json=body))["data"]["certificate"])
    assert (
        truncated.not_valid_after_utc == issuer_cert(api, "intermediate-2026").not_valid_after_utc
    )
    ok(api.post("pki/issuer/intermediate-2026", json={"leaf_not_after_behavior": "permit"}))
    forever = cert_of(ok(api.post("pki/issue/web-server", json=body))["data"]["certificate"])
    assert forever.not_valid_after_utc == datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


def test_a_root_valid_until_9999_issues_leaves_until_9999(api: httpx.Client) -> None:
    new_root(api, "forever", not_after="9999-12-31T23:59:59Z")
    ok(
        api.post(
            "pki/roles/forever",
            json={"issuer_ref": "forever", "allow_any_name": True, "key_type": "ec"},
        )
    )
    data = ok(
        api.post(
            "pki/issue/forever", json={"common_name": "x.test", "not_after": "9999-12-31T23:59:59Z"}
        )
    )["data"]
    assert cert_of(data["certificate"]).not_valid_after_utc.year == 9999


# -- formats -----------------------------------------------------------------------------
def test_der_format_answers_base64_der_for_certificate_chain_and_key(shared: httpx.Client) -> None:
    data = ok(
        shared.post("pki/issue/web-server", json={"common_name": "a.example.com", "format": "der"})
    )["data"]
    leaf = x509.load_der_x509_certificate(base64.b64decode(data["certificate"]))
    issuing = x509.load_der_x509_certificate(base64.b64decode(data["issuing_ca"]))
    leaf.verify_directly_issued_by(issuing)
    assert len(data["ca_chain"]) == 2
    key = serialization.load_der_private_key(base64.b64decode(data["private_key"]), None)
    assert key.public_key() == leaf.public_key()


def test_pkcs8_private_key_format_in_pem_and_der(shared: httpx.Client) -> None:
    pem = ok(
        shared.post(
            "pki/issue/web-server",
            json={"common_name": "a.example.com", "private_key_format": "pkcs8"},
        )
    )["data"]
    assert pem["private_key"].startswith("-----BEGIN PRIVATE KEY-----")
    plain = ok(shared.post("pki/issue/web-server", json={"common_name": "a.example.com"}))["data"]
    assert plain["private_key"].startswith("-----BEGIN EC PRIVATE KEY-----")
    der = ok(
        shared.post(
            "pki/issue/web-server",
            json={"common_name": "a.example.com", "private_key_format": "pkcs8", "format": "der"},
        )
    )["data"]
    raw = base64.b64decode(der["private_key"])
    assert raw[:2] == b"\x30\x81" and serialization.load_der_private_key(raw, None)
    assert_error(
        shared.post(
            "pki/issue/web-server",
            json={"common_name": "a.example.com", "private_key_format": "pkcs12"},
        ),
        400,
        "private_key_format",
    )
    assert_error(
        shared.post("pki/issue/web-server", json={"common_name": "a.example.com", "format": "jks"}),
        400,
        "format",
    )


def test_pem_bundle_holds_key_certificate_and_a_non_root_issuer(shared: httpx.Client) -> None:
    data = ok(
        shared.post(
            "pki/issue/web-server",
            json={
                "common_name": "a.example.com",
                "format": "pem_bundle",
                "private_key_format": "pkcs8",
            },
        )
    )["data"]
    bundle = data["certificate"]
    assert bundle.startswith("-----BEGIN EC PRIVATE KEY-----")  # pkcs8 not applied inside
    certificates = x509.load_pem_x509_certificates(bundle.encode())
    assert certificates[1] == issuer_cert(shared, "intermediate-2026") and len(certificates) == 2
    assert data["private_key"].startswith("-----BEGIN PRIVATE KEY-----")
    from_root = ok(
        shared.post(
            "pki/issue/root-ops", json={"common_name": "ops.example.com", "format": "pem_bundle"}
        )
    )["data"]
    assert len(x509.load_pem_x509_certificates(from_root["certificate"].encode())) == 1


def test_remove_roots_from_chain_drops_the_self_signed_root(shared: httpx.Client) -> None:
    data = ok(
        shared.post(
            "pki/issue/web-server",
            json={"common_name": "a.example.com", "remove_roots_from_chain": True},
        )
    )["data"]
    assert [cert_of(c) for c in data["ca_chain"]] == [issuer_cert(shared, "intermediate-2026")]


# -- sign ----------------------------------------------------------------------------------
def test_sign_certifies_the_csrs_key_with_the_csrs_names(shared: httpx.Client) -> None:
    csr, key = make_csr("app.example.com", dns=("app.example.com", "app2.example.com"))
    answer = ok(shared.post("pki/sign/web-server", json={"csr": csr}))
    data = answer["data"]
    assert "private_key" not in data
    leaf = cert_of(data["certificate"])
    assert leaf.public_key() == key.public_key()
    leaf.verify_directly_issued_by(cert_of(data["issuing_ca"]))
    assert sans(leaf).get_values_for_type(x509.DNSName) == ["app.example.com", "app2.example.com"]
    by_path = ok(shared.post("pki/issuer/root-2026/sign/web-server", json={"csr": csr}))["data"]
    cert_of(by_path["certificate"]).verify_directly_issued_by(issuer_cert(shared, "root-2026"))


def test_sign_refuses_a_csr_outside_the_role(shared: httpx.Client) -> None:
    evil, _ = make_csr("app.example.com", dns=("evil.org",))
    assert_error(shared.post("pki/sign/web-server", json={"csr": evil}), 400, "evil.org")
    rsa_csr, _ = make_csr("app.example.com", key=rsa.generate_private_key(65537, 2048))
    assert_error(
        shared.post("pki/sign/web-server", json={"csr": rsa_csr}),
        400,
        "role requires keys of type ec",
    )
    assert_error(shared.post("pki/sign/web-server", json={"csr": "garbage"}), 400, "csr")
    assert_error(shared.post("pki/sign/web-server", json={}), 400, "missing csr")


# -- sign-intermediate -------------------------------------------------------------------
def test_sign_intermediate_applies_every_ca_parameter(shared: httpx.Client) -> None:
    csr, key = make_csr("ignored")
    answer = ok(
        shared.post(
            "pki/issuer/root-2026/sign-intermediate",
            json={
                "csr": csr,
                "common_name": "Payments CA",
                "alt_names": "ca.payments.example",
                "max_path_length": 2,
                "permitted_dns_domains": "payments.example,.internal.example",
                "ou": "Payments,Platform",
                "organization": '["Example Corp"]',
                "country": "DE",
                "locality": "Berlin",
                "province": "BE",
                "street_address": "Hauptstrasse 1",
                "postal_code": "10115",
                "serial_number": "PAY-1",
                "not_before_duration": "5m",
                "skid": "01:02:03:04",
                "ttl": "240h",
            },
        )
    )
    cert = cert_of(answer["data"]["certificate"])
    cert.verify_directly_issued_by(issuer_cert(shared, "root-2026"))
    assert cert.public_key() == key.public_key()
    constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert constraints.ca and constraints.path_length == 2
    names = cert.extensions.get_extension_for_class(x509.NameConstraints).value
    assert [n.value for n in names.permitted_subtrees or []] == [
        "payments.example",
        ".internal.example",
    ]
    subject: dict[x509.ObjectIdentifier, list[Any]] = {a.oid: [] for a in cert.subject}
    for attribute in cert.subject:
        subject[attribute.oid].append(attribute.value)
    assert subject[NameOID.COMMON_NAME] == ["Payments CA"]
    assert subject[NameOID.ORGANIZATIONAL_UNIT_NAME] == ["Payments", "Platform"]
    assert subject[NameOID.ORGANIZATION_NAME] == ["Example Corp"]
    assert subject[NameOID.COUNTRY_NAME] == ["DE"]
    assert subject[NameOID.LOCALITY_NAME] == ["Berlin"]
    assert subject[NameOID.STATE_OR_PROVINCE_NAME] == ["BE"]
    assert subject[NameOID.STREET_ADDRESS] == ["Hauptstrasse 1"]
    assert subject[NameOID.POSTAL_CODE] == ["10115"]
    assert subject[NameOID.SERIAL_NUMBER] == ["PAY-1"]
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == timedelta(hours=240, minutes=5)
    ski = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    assert ski.digest == bytes.fromhex("01020304")
    # A common name that is no host name stays out of the DNS SANs.
    assert sans(cert).get_values_for_type(x509.DNSName) == ["ca.payments.example"]
    assert "private_key" not in answer["data"]


def test_sign_intermediate_path_length_follows_the_signer(shared: httpx.Client) -> None:
    csr, _ = make_csr("sub")
    unlimited = ok(
        shared.post(
            "pki/issuer/root-2026/sign-intermediate", json={"csr": csr, "common_name": "Sub"}
        )
    )
    constraints = cert_of(unlimited["data"]["certificate"]).extensions.get_extension_for_class(
        x509.BasicConstraints
    )
    assert constraints.value.path_length is None
    zero = ok(
        shared.post(
            "pki/issuer/root-2026/sign-intermediate",
            json={"csr": csr, "common_name": "Sub", "max_path_length": 0},
        )
    )
    zero_cert = cert_of(zero["data"]["certificate"])
    assert (
        zero_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.path_length == 0
    )
    # The default issuer (the demo intermediate) has path length zero: it signs no CA.
    assert_error(
        shared.post("pki/root/sign-intermediate", json={"csr": csr, "common_name": "Sub"}),
        400,
        "max path length of zero",
    )


def test_sign_intermediate_may_outlast_its_signer_with_a_warning(api: httpx.Client) -> None:
    csr, _ = make_csr("late")
    answer = ok(
        api.post(
            "pki/issuer/root-2026/sign-intermediate",
            json={"csr": csr, "common_name": "Late", "not_after": "9999-12-31T23:59:59Z"},
        )
    )
    assert cert_of(answer["data"]["certificate"]).not_valid_after_utc.year == 9999
    assert any("after the CA's expiration time" in w for w in answer["warnings"])


def test_use_csr_values_takes_subject_names_and_extensions_from_the_csr(
    shared: httpx.Client,
) -> None:
    csr, _ = make_csr("From CSR", dns=("csr.example",), organization="CSR Org", key_usage=True)
    data = ok(
        shared.post(
            "pki/issuer/root-2026/sign-intermediate",
            json={"csr": csr, "common_name": "Ignored", "use_csr_values": True, "ou": "Ignored"},
        )
    )["data"]
    cert = cert_of(data["certificate"])
    assert cert.subject.rfc4514_string() == "CN=From CSR,O=CSR Org"
    assert sans(cert).get_values_for_type(x509.DNSName) == ["csr.example"]
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and usage.key_cert_sign and usage.crl_sign


def test_signature_bits_and_pss_are_honoured_by_an_rsa_issuer(api: httpx.Client) -> None:
    new_root(api, "rsa-root", key_type="rsa", key_bits=2048)
    csr, _ = make_csr("rsa-sub")
    plain = cert_of(
        ok(
            api.post(
                "pki/issuer/rsa-root/sign-intermediate",
                json={"csr": csr, "common_name": "Sub", "signature_bits": 384},
            )
        )["data"]["certificate"]
    )
    assert isinstance(plain.signature_hash_algorithm, hashes.SHA384)
    assert plain.signature_algorithm_oid == x509.oid.SignatureAlgorithmOID.RSA_WITH_SHA384
    pss = cert_of(
        ok(
            api.post(
                "pki/issuer/rsa-root/sign-intermediate",
                json={"csr": csr, "common_name": "Sub", "use_pss": True, "signature_bits": 512},
            )
        )["data"]["certificate"]
    )
    assert pss.signature_algorithm_oid == x509.oid.SignatureAlgorithmOID.RSASSA_PSS
    assert isinstance(pss.signature_algorithm_parameters, padding.PSS)
    pss.verify_directly_issued_by(issuer_cert(api, "rsa-root"))
    assert_error(
        api.post(
            "pki/issuer/rsa-root/sign-intermediate",
            json={"csr": csr, "common_name": "Sub", "signature_bits": 1024},
        ),
        400,
        "signature_bits",
    )
    # An EC issuer signs with its curve's hash whatever is asked.
    ec_signed = cert_of(
        ok(
            api.post(
                "pki/issuer/root-2026/sign-intermediate",
                json={"csr": csr, "common_name": "Sub", "signature_bits": 256},
            )
        )["data"]["certificate"]
    )
    assert isinstance(ec_signed.signature_hash_algorithm, hashes.SHA384)


def test_sign_intermediate_refuses_bad_input_naming_the_field(shared: httpx.Client) -> None:
    csr, _ = make_csr("x")
    cases = [
        ({"common_name": "x"}, "missing csr"),
        ({"csr": csr}, "common_name"),
        ({"csr": csr, "common_name": "x", "skid": "zz"}, "skid"),
        ({"csr": csr, "common_name": "x", "max_path_length": -2}, "max_path_length"),
        ({"csr": csr, "common_name": "x", "not_before_duration": "later"}, "not_before_duration"),
        (
            {"csr": csr, "common_name": "x", "permitted_dns_domains": "bad domain"},
            "permitted_dns_domains",
        ),
    ]
    before = serials(shared)
    for body, fragment in cases:
        assert_error(
            shared.post("pki/issuer/root-2026/sign-intermediate", json=body), 400, fragment
        )
    assert serials(shared) == before


# -- sign-self-issued --------------------------------------------------------------------
def self_issued_ca(key: Any = None, *, ca: bool = True, issuer: str = "Old Root") -> str:
    key = key or ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Old Root")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key())
        .serial_number(4242)
        .not_valid_before(now)
        .not_valid_after(now + timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def test_sign_self_issued_resigns_a_self_issued_ca(shared: httpx.Client) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    data = ok(
        shared.post(
            "pki/issuer/root-2026/sign-self-issued", json={"certificate": self_issued_ca(key)}
        )
    )["data"]
    root = issuer_cert(shared, "root-2026")
    cert = cert_of(data["certificate"])
    cert.verify_directly_issued_by(root)
    assert cert.issuer == root.subject and cert.serial_number == 4242
    assert cert.public_key() == key.public_key()
    assert cert_of(data["issuing_ca"]) == root
    aki = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    ski = root.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    assert aki.key_identifier == ski.digest


def test_sign_self_issued_refuses_what_is_not_a_self_issued_ca(shared: httpx.Client) -> None:
    path = "pki/issuer/root-2026/sign-self-issued"
    assert_error(
        shared.post(path, json={"certificate": self_issued_ca(ca=False)}),
        400,
        "not a CA certificate",
    )
    assert_error(
        shared.post(path, json={"certificate": self_issued_ca(issuer="Someone")}),
        400,
        "not self-issued",
    )
    assert_error(shared.post(path, json={"certificate": "nope"}), 400, "certificate")
    rsa_ca = self_issued_ca(rsa.generate_private_key(65537, 2048))
    assert_error(
        shared.post(
            path, json={"certificate": rsa_ca, "require_matching_certificate_algorithms": True}
        ),
        400,
        "require_matching_certificate_algorithms",
    )
    ok(shared.post(path, json={"certificate": rsa_ca}))


def test_only_the_default_issuer_sign_self_issued_path_needs_sudo(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    put_acl(
        api,
        "signer",
        'path "pki/root/sign-self-issued" { capabilities = ["update"] }\n'
        'path "pki/issuer/+/sign-self-issued" { capabilities = ["update"] }\n',
    )
    put_acl(
        api, "sudo-signer", 'path "pki/root/sign-self-issued" { capabilities = ["update", "sudo"] }'
    )
    body = {"certificate": self_issued_ca()}
    with v1(sandbox, issue(api, policies=["signer"])) as signer:
        assert_error(signer.post("pki/root/sign-self-issued", json=body), 403, "permission denied")
        ok(signer.post("pki/issuer/default/sign-self-issued", json=body))
    with v1(sandbox, issue(api, policies=["sudo-signer"])) as sudoer:
        ok(sudoer.post("pki/root/sign-self-issued", json=body))


# -- serials, stored certificates, leases, other mounts -----------------------------------
def test_serial_numbers_are_unique_across_issuers_and_every_certificate_is_kept(
    shared: httpx.Client,
) -> None:
    made: dict[str, str] = {}
    for ref in ("root-2026", "intermediate-2026") * 10:
        data = ok(
            shared.post(f"pki/issuer/{ref}/issue/root-ops", json={"common_name": "ops.example.com"})
        )["data"]
        assert data["serial_number"] not in made
        made[data["serial_number"]] = ref
    listed = set(serials(shared))
    issuers = {ref: issuer_cert(shared, ref) for ref in ("root-2026", "intermediate-2026")}
    for serial, ref in made.items():
        assert serial in listed  # the colon form issue answers, as OpenBao lists them
        for form in (serial, serial.replace(":", "-")):
            kept = ok(shared.get(f"pki/cert/{form}"))["data"]
            assert kept["revocation_time"] == 0 and "issuer_id" not in kept
            stored = cert_of(kept["certificate"])
            assert stored.serial_number == int(serial.replace(":", ""), 16)
            stored.verify_directly_issued_by(issuers[ref])
    assert shared.get("pki/cert/00-11").status_code == 404


def test_a_role_with_generate_lease_gives_a_lease_that_revokes_the_certificate(
    api: httpx.Client,
) -> None:
    ok(
        api.post(
            "pki/roles/leased",
            json={"allow_any_name": True, "key_type": "ec", "generate_lease": True, "ttl": "1h"},
        )
    )
    answer = ok(api.post("pki/issue/leased", json={"common_name": "x.test"}))
    assert answer["lease_id"].startswith("pki/issue/leased/")
    assert 3590 <= answer["lease_duration"] <= 3600
    revoked = api.put("sys/leases/revoke", json={"lease_id": answer["lease_id"], "sync": True})
    assert revoked.status_code in (202, 204), revoked.text
    kept = ok(api.get(f"pki/cert/{answer['data']['serial_number']}"))["data"]
    assert kept["revocation_time"] > 0 and kept["revocation_time_rfc3339"].endswith("Z")
    assert kept["issuer_id"] == ok(api.get("pki/issuer/default"))["data"]["issuer_id"]


def test_the_engine_works_mounted_elsewhere_on_its_own(api: httpx.Client) -> None:
    ok(api.post("sys/mounts/certs/eu", json={"type": "pki"}), 204)
    assert_error(api.get("certs/eu/issuer/default"), 400, "no default issuer")
    assert api.get("certs/eu/ca/pem").status_code == 204  # no CA yet: an empty answer
    # The root outlives the leaf: with both at the mount's default TTL, a leaf issued in the
    # next second would end after its CA, which the engine refuses (as OpenBao's "err").
    made = new_root(api, "eu-root", mount="certs/eu", ttl="8760h")
    assert ok(api.get("certs/eu/config/issuers"))["data"]["default"] == made["issuer_id"]
    ok(
        api.post(
            "certs/eu/roles/eu",
            json={"allowed_domains": "eu.example", "allow_subdomains": True, "key_type": "ec"},
        )
    )
    data = ok(api.post("certs/eu/issue/eu", json={"common_name": "www.eu.example"}))["data"]
    cert_of(data["certificate"]).verify_directly_issued_by(cert_of(made["certificate"]))
    assert len(serials(api, "certs/eu")) == 2  # the root and the leaf
    assert "eu" not in ok(api.request("LIST", "pki/roles"))["data"]["keys"]
    assert api.request("LIST", "pki/roles").status_code == 200
    assert_error(
        api.post("pki/issue/eu", json={"common_name": "www.eu.example"}), 400, "unknown role"
    )


def test_a_refused_root_generation_leaves_no_key_and_no_issuer(api: httpx.Client) -> None:
    issuers = ok(api.request("LIST", "pki/issuers"))["data"]["keys"]
    keys = ok(api.request("LIST", "pki/keys"))["data"]["keys"]
    for body, fragment in [
        ({"common_name": "x", "key_type": "rsa", "key_bits": 1000}, "key_bits"),
        ({"common_name": "x", "issuer_name": "root-2026"}, "issuer name already in use"),
        ({"common_name": "x", "ttl": "1h", "not_after": "2030-01-01T00:00:00Z"}, "Either ttl"),
        ({"common_name": "x", "ip_sans": "1.2.3"}, "ip_sans"),
        ({"key_type": "ec"}, "common_name"),
    ]:
        assert_error(api.post("pki/root/generate/internal", json=body), 400, fragment)
    assert_error(api.post("pki/root/generate/kms", json={"common_name": "x"}), 400, "type")
    assert ok(api.request("LIST", "pki/issuers"))["data"]["keys"] == issuers
    assert ok(api.request("LIST", "pki/keys"))["data"]["keys"] == keys


def test_a_bundle_of_key_and_ca_certificate_imports_as_an_issuer_that_signs(
    api: httpx.Client,
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Imported CA")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(77)
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    bundle = key_pem + cert.public_bytes(serialization.Encoding.PEM).decode()
    leaf = self_issued_ca(ca=False)
    assert_error(api.post("pki/issuers/import/bundle", json={"pem_bundle": leaf}), 400, "non-CA")
    imported = ok(api.post("pki/issuers/import/bundle", json={"pem_bundle": bundle}))["data"]
    (issuer_id,) = imported["imported_issuers"]
    assert imported["mapping"][issuer_id] == imported["imported_keys"][0]
    ok(api.post(f"pki/issuer/{issuer_id}", json={"issuer_name": "imported"}))
    data = ok(
        api.post("pki/issuer/imported/issue/web-server", json={"common_name": "www.example.com"})
    )["data"]
    cert_of(data["certificate"]).verify_directly_issued_by(cert)


def test_issue_answers_not_before_and_leaves_out_an_empty_chain(shared: httpx.Client) -> None:
    data = ok(shared.post("pki/issue/root-ops", json={"common_name": "ops.example.com"}))["data"]
    leaf = cert_of(data["certificate"])
    assert data["not_before"] == int(leaf.not_valid_before_utc.timestamp())
    assert [cert_of(c) for c in data["ca_chain"]] == [issuer_cert(shared, "root-2026")]
    rootless = ok(
        shared.post(
            "pki/issue/root-ops",
            json={"common_name": "ops.example.com", "remove_roots_from_chain": True},
        )
    )["data"]
    assert "ca_chain" not in rootless


def test_sign_intermediate_answers_the_new_certificate_first_in_its_chain(
    shared: httpx.Client,
) -> None:
    csr, _ = make_csr("chain")
    answer = ok(
        shared.post(
            "pki/issuer/root-2026/sign-intermediate",
            json={"csr": csr, "common_name": "Chain CA", "max_path_length": 0},
        )
    )
    data = answer["data"]
    assert data["ca_chain"][0] == data["certificate"]
    assert cert_of(data["ca_chain"][1]) == issuer_cert(shared, "root-2026")
    assert any("authority information access" in w for w in answer["warnings"])
    assert any("Max path length of the signed certificate is zero" in w for w in answer["warnings"])


def test_root_generation_warns_about_missing_urls_and_names_itself_as_authority(
    api: httpx.Client,
) -> None:
    answer = ok(
        api.post(
            "pki/root/generate/internal",
            json={"common_name": "Leaf-only Root", "key_type": "ec", "max_path_length": 0},
        )
    )
    assert any("authority information access" in w for w in answer["warnings"])
    assert any("Max path length of the generated" in w for w in answer["warnings"])
    root = cert_of(answer["data"]["certificate"])
    aki = root.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    ski = root.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    assert aki.key_identifier == ski.digest


def test_name_constraints_are_critical(shared: httpx.Client) -> None:
    csr, _ = make_csr("nc")
    data = ok(
        shared.post(
            "pki/issuer/root-2026/sign-intermediate",
            json={"csr": csr, "common_name": "NC", "permitted_dns_domains": "nc.example"},
        )
    )["data"]
    extension = cert_of(data["certificate"]).extensions.get_extension_for_class(
        x509.NameConstraints
    )
    assert extension.critical


def test_a_role_of_any_key_type_issues_the_key_type_asked_for(api: httpx.Client) -> None:
    ok(api.post("pki/roles/any", json={"allow_any_name": True, "key_type": "any"}))
    assert_error(
        api.post("pki/issue/any", json={"common_name": "x.test"}),
        400,
        'role key type "any" not allowed for issuing certificates without providing key_type',
    )
    data = ok(
        api.post("pki/issue/any", json={"common_name": "x.test", "key_type": "ec", "key_bits": 384})
    )["data"]
    assert data["private_key_type"] == "ec"
    key = cert_of(data["certificate"]).public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.key_size == 384
    ignored = ok(
        api.post("pki/issue/web-server", json={"common_name": "a.example.com", "key_type": "rsa"})
    )
    assert ignored["data"]["private_key_type"] == "ec"
    assert ignored["warnings"] == [
        "parameters key_type and key_bits ignored as role had specific values"
    ]


def test_sign_takes_the_csr_common_name_and_warns_about_ignored_fields(
    shared: httpx.Client,
) -> None:
    csr, _ = make_csr("csr.example.com", dns=("csr.example.com",))
    answer = ok(
        shared.post(
            "pki/sign/web-server",
            json={"csr": csr, "common_name": "other.example.com", "alt_names": "x.example.com"},
        )
    )
    leaf = cert_of(answer["data"]["certificate"])
    assert leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "csr.example.com"
    assert sans(leaf).get_values_for_type(x509.DNSName) == ["csr.example.com"]
    assert answer["warnings"] == [
        'the common_name field was provided but the role is set with "use_csr_common_name" '
        "set to true",
        'the alt_names field was provided but the role is set with "use_csr_sans" set to true',
    ]


def test_role_writes_follow_the_servers_normalisation_and_warnings(api: httpx.Client) -> None:
    leased = ok(api.post("pki/roles/leased", json={"generate_lease": True}))
    assert "encouraged to disable generate_lease" in leased["warnings"][0]
    both = ok(api.post("pki/roles/both", json={"generate_lease": True, "no_store": True}))
    assert (
        both["data"]["generate_lease"] is False
        and "no_store=true takes priority" in (both["warnings"][0])
    )
    mixed = ok(
        api.post(
            "pki/roles/mixed",
            json={"cn_validations": "Email", "key_usage": "digitalsignature", "key_type": "ec"},
        )
    )["data"]
    assert mixed["cn_validations"] == ["email"] and mixed["key_usage"] == ["digitalsignature"]
    assert_error(
        api.post("pki/roles/mixed", json={"cn_validations": "disabled,email"}),
        400,
        "cannot specify `disabled` along with",
    )
    assert_error(
        api.post("pki/roles/mixed", json={"ext_key_usage_oids": "1.2.x"}),
        400,
        "could not be parsed as a valid oid",
    )
    assert ok(api.get("pki/roles/mixed"))["data"]["not_before"] == ""


def test_a_root_can_reuse_an_existing_key_by_name(api: httpx.Client) -> None:
    made = new_root(api, "first", key_name="shared-key")
    assert_error(
        api.post("pki/root/generate/existing", json={"common_name": "x"}),
        400,
        "missing argument key_ref for existing type",
    )
    again = ok(
        api.post(
            "pki/issuers/generate/root/existing",
            json={"common_name": "Second", "key_ref": "shared-key", "issuer_name": "second"},
        )
    )["data"]
    assert again["key_id"] == made["key_id"]
    assert cert_of(again["certificate"]).public_key() == cert_of(made["certificate"]).public_key()
    key = ok(api.get("pki/key/shared-key"))["data"]
    assert key == {
        "key_id": made["key_id"],
        "key_name": "shared-key",
        "key_type": "ec",
        "key_bits": 256,
    }
    assert_error(
        api.post(
            "pki/issuers/generate/root/internal", json={"common_name": "x", "issuer_name": "a b"}
        ),
        400,
        "issuer name contained invalid characters",
    )


# -- revocation and CRLs ------------------------------------------------------------------
def crl_of(client: httpx.Client, path: str = "pki/crl") -> x509.CertificateRevocationList:
    response = client.get(path)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/pkix-crl")
    return x509.load_der_x509_crl(response.content)


def crl_number(crl: x509.CertificateRevocationList) -> int:
    return crl.extensions.get_extension_for_class(x509.CRLNumber).value.crl_number


def serial_int(serial: str) -> int:
    return int(serial.replace(":", ""), 16)


def test_a_revoked_serial_is_in_the_signed_crl_at_once_without_auto_rebuild(
    api: httpx.Client,
) -> None:
    issued = ok(api.post("pki/issue/web-server", json={"common_name": "a.example.com"}))["data"]
    other = ok(api.post("pki/issue/web-server", json={"common_name": "b.example.com"}))["data"]
    before = crl_of(api)
    answer = ok(api.post("pki/revoke", json={"serial_number": issued["serial_number"]}))["data"]
    assert answer["state"] == "revoked" and answer["revocation_time"] > 0
    assert answer["revocation_time_rfc3339"].endswith("Z")
    after = crl_of(api)
    intermediate = issuer_cert(api, "intermediate-2026")
    assert after.is_signature_valid(intermediate.public_key())  # type: ignore[arg-type]
    assert after.issuer == intermediate.subject
    assert crl_number(after) > crl_number(before)
    revoked = after.get_revoked_certificate_by_serial_number(serial_int(issued["serial_number"]))
    assert revoked is not None
    assert int(revoked.revocation_date_utc.timestamp()) == answer["revocation_time"]
    assert (
        after.get_revoked_certificate_by_serial_number(serial_int(other["serial_number"])) is None
    )
    # Revoking again (hyphenated) answers the first time; the kept certificate says so too.
    again = ok(
        api.post("pki/revoke", json={"serial_number": issued["serial_number"].replace(":", "-")})
    )
    assert again["data"]["revocation_time"] == answer["revocation_time"]
    kept = ok(api.get(f"pki/cert/{issued['serial_number']}"))["data"]
    assert kept["revocation_time"] == answer["revocation_time"] and kept["issuer_id"]
    assert ok(api.request("LIST", "pki/certs/revoked"))["data"]["keys"] == [issued["serial_number"]]
    pem = api.get("pki/crl/pem")
    assert pem.headers["content-type"].startswith("application/x-pem-file")
    assert x509.load_pem_x509_crl(pem.content).fingerprint(hashes.SHA256()) == after.fingerprint(
        hashes.SHA256()
    )
    as_json = ok(api.get("pki/cert/crl"))["data"]["certificate"]
    assert x509.load_pem_x509_crl(as_json.encode()) == after
    by_issuer = ok(api.get("pki/issuer/intermediate-2026/crl"))["data"]["crl"]
    assert x509.load_pem_x509_crl(by_issuer.encode()) == after


def test_revoke_refuses_bad_input_naming_what_is_wrong_and_changes_nothing(
    api: httpx.Client,
) -> None:
    assert_error(api.post("pki/revoke", json={}), 400, "must be provided")
    assert_error(api.post("pki/revoke", json={"serial_number": "aa:bb"}), 400, "aa:bb not found")
    assert_error(api.post("pki/revoke", json={"serial_number": ["x"]}), 400, "serial_number")
    issued = ok(api.post("pki/issue/web-server", json={"common_name": "c.example.com"}))["data"]
    both = {"serial_number": issued["serial_number"], "certificate": issued["certificate"]}
    assert_error(api.post("pki/revoke", json=both), 400, "not both")
    assert_error(api.post("pki/revoke", json={"certificate": "nope"}), 400, "certificate")
    root_serial = ok(api.get("pki/issuer/root-2026/json"))["data"]["certificate"]
    root = cert_of(root_serial)
    serial = ":".join(f"{b:02x}" for b in root.serial_number.to_bytes(20, "big"))
    assert_error(api.post("pki/revoke", json={"serial_number": serial}), 400, "its own CRL")
    assert api.request("LIST", "pki/certs/revoked").status_code == 404
    # The certificate itself revokes it too.
    ok(api.post("pki/revoke", json={"certificate": issued["certificate"]}))
    assert ok(api.request("LIST", "pki/certs/revoked"))["data"]["keys"] == [issued["serial_number"]]


def test_with_auto_rebuild_a_revocation_waits_for_rotate_and_the_delta_crl_carries_it(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    bad = {"enable_delta": True, "auto_rebuild": False}
    assert_error(api.post("pki/config/crl", json=bad), 400, "Delta CRLs")
    assert_error(api.post("pki/config/crl", json={"expiry": "soon"}), 400, "expiry")
    long_grace = {"auto_rebuild": True, "auto_rebuild_grace_period": "100h"}
    assert_error(api.post("pki/config/crl", json=long_grace), 400, "grace period")
    assert ok(api.get("pki/config/crl"))["data"]["auto_rebuild"] is False  # nothing changed
    config = ok(api.post("pki/config/crl", json={"auto_rebuild": True, "enable_delta": True}))
    assert config["data"] | {} == {
        "expiry": "72h",
        "disable": False,
        "ocsp_disable": False,
        "ocsp_expiry": "12h",
        "auto_rebuild": True,
        "auto_rebuild_grace_period": "12h",
        "enable_delta": True,
        "delta_rebuild_interval": "15m",
        "allow_expired_cert_revocation": False,
    }
    issued = ok(api.post("pki/issue/web-server", json={"common_name": "d.example.com"}))["data"]
    serial = serial_int(issued["serial_number"])
    first = crl_of(api)
    ok(api.post("pki/revoke", json={"serial_number": issued["serial_number"]}))
    assert crl_of(api).get_revoked_certificate_by_serial_number(serial) is None
    assert crl_of(api, "pki/crl/delta").get_revoked_certificate_by_serial_number(serial) is None
    rotated = ok(api.get("pki/crl/rotate-delta"))
    assert rotated["data"] == {"success": True} and not rotated["warnings"]
    delta = crl_of(api, "pki/crl/delta")
    assert delta.get_revoked_certificate_by_serial_number(serial) is not None
    indicator = delta.extensions.get_extension_for_class(x509.DeltaCRLIndicator).value
    assert indicator.crl_number == crl_number(first)
    ok(api.get("pki/crl/rotate"))
    complete = crl_of(api)
    assert complete.get_revoked_certificate_by_serial_number(serial) is not None
    assert crl_of(api, "pki/crl/delta").get_revoked_certificate_by_serial_number(serial) is None
    # Near its next update (within the grace period) the CRL is rebuilt on its own.
    other = ok(api.post("pki/issue/web-server", json={"common_name": "e.example.com"}))["data"]
    ok(api.post("pki/revoke", json={"serial_number": other["serial_number"]}))
    assert (
        crl_of(api).get_revoked_certificate_by_serial_number(serial_int(other["serial_number"]))
        is None
    )
    sandbox.clock.advance(61 * 3600)
    rebuilt = crl_of(api)
    assert (
        rebuilt.get_revoked_certificate_by_serial_number(serial_int(other["serial_number"]))
        is not None
    )
    assert rebuilt.next_update_utc > complete.next_update_utc


def test_rotate_delta_without_delta_crls_is_a_warned_no_op_and_disable_lists_nothing(
    api: httpx.Client,
) -> None:
    answer = ok(api.get("pki/crl/rotate-delta"))
    assert answer["data"] == {"success": True}
    assert "not enabled" in answer["warnings"][0]
    issued = ok(api.post("pki/issue/web-server", json={"common_name": "f.example.com"}))["data"]
    ok(api.post("pki/revoke", json={"serial_number": issued["serial_number"]}))
    assert len(list(crl_of(api))) == 1
    ok(api.post("pki/config/crl", json={"disable": True}))
    ok(api.get("pki/crl/rotate"))
    assert len(list(crl_of(api))) == 0
    assert crl_of(api).next_update_utc is not None


def test_crl_reads_need_no_token_and_a_mount_without_issuers_has_none(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    with httpx.Client(base_url=f"{sandbox.address}/v1") as anonymous:
        assert anonymous.get("pki/crl").status_code == 200
        assert anonymous.get("pki/crl/pem").status_code == 200
        assert anonymous.get("pki/issuer/root-2026/crl").status_code == 200
        assert anonymous.get("pki/crl/rotate").status_code in (401, 403)
    ok(api.post("sys/mounts/empty-pki", json={"type": "pki"}), 204)
    assert api.get("empty-pki/crl").status_code == 204
    assert_error(api.get("empty-pki/cert/crl"), 400, "no default issuer")
    assert ok(api.get("empty-pki/crl/rotate"))["data"] == {"success": True}


def test_sign_revocation_list_signs_the_callers_entries_and_stores_nothing(
    api: httpx.Client,
) -> None:
    body = {
        "crl_number": 7,
        "next_update": "1h",
        "revoked_certs": [
            {"serial_number": "11:22", "revocation_time": "2024-01-01T00:00:00Z"},
            {"serial_number": "33-44", "revocation_time": 1700000000},
        ],
    }
    pem = ok(api.post("pki/issuer/root-2026/sign-revocation-list", json=body))["data"]["crl"]
    crl = x509.load_pem_x509_crl(pem.encode())
    root = issuer_cert(api, "root-2026")
    assert crl.is_signature_valid(root.public_key())  # type: ignore[arg-type]
    assert crl_number(crl) == 7
    assert crl.next_update_utc - crl.last_update_utc == timedelta(hours=1)
    entry = crl.get_revoked_certificate_by_serial_number(0x1122)
    assert entry is not None and entry.revocation_date_utc == datetime(2024, 1, 1, tzinfo=UTC)
    assert crl.get_revoked_certificate_by_serial_number(0x3344) is not None
    der = ok(api.post("pki/issuer/root-2026/sign-revocation-list", json={"format": "der"}))
    assert x509.load_der_x509_crl(base64.b64decode(der["data"]["crl"])).issuer == root.subject
    assert len(list(crl_of(api))) == 0  # the mount's own CRL is untouched
    for wrong, named in (
        ({"crl_number": "x"}, "crl_number"),
        ({"next_update": "bogus"}, "next_update"),
        ({"revoked_certs": [{"serial_number": "zz", "revocation_time": 1}]}, "serial_number"),
        ({"revoked_certs": [{"serial_number": "11"}]}, "revocation_time"),
        ({"revoked_certs": "x"}, "revoked_certs"),
        ({"format": "pem_bundle"}, "format"),
    ):
        assert_error(api.post("pki/issuer/root-2026/sign-revocation-list", json=wrong), 400, named)
    assert_error(api.post("pki/issuer/nope/sign-revocation-list", json={}), 400, "nope")


# -- tidy --------------------------------------------------------------------------------
def test_tidy_removes_certificates_expired_past_the_safety_buffer_and_reports_it(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    status = ok(api.get("pki/tidy-status"))["data"]
    assert status["state"] == "Inactive" and status["cert_store_deleted_count"] is None
    nothing = ok(api.post("pki/tidy", json={}), 202)
    assert "no tidy operations were set" in nothing["warnings"][0]
    short = ok(api.post("pki/issue/web-server", json={"common_name": "g.example.com", "ttl": "1h"}))
    revoked = ok(
        api.post("pki/issue/web-server", json={"common_name": "h.example.com", "ttl": "1h"})
    )
    ok(api.post("pki/revoke", json={"serial_number": revoked["data"]["serial_number"]}))
    lasting = ok(api.post("pki/issue/web-server", json={"common_name": "i.example.com"}))
    sandbox.clock.advance(3 * 3600)
    started = ok(api.post("pki/tidy", json={"tidy_cert_store": True, "safety_buffer": "1h"}), 202)
    assert "successfully started" in started["warnings"][0]
    status = ok(api.get("pki/tidy-status"))["data"]
    assert status["state"] == "Finished" and status["cert_store_deleted_count"] == 1
    assert status["revoked_cert_deleted_count"] == 0 and status["safety_buffer"] == 3600
    listed = serials(api)
    assert short["data"]["serial_number"] not in listed
    assert revoked["data"]["serial_number"] in listed
    assert lasting["data"]["serial_number"] in listed
    ok(api.post("pki/tidy", json={"tidy_revoked_certs": True, "safety_buffer": "1h"}), 202)
    assert ok(api.get("pki/tidy-status"))["data"]["revoked_cert_deleted_count"] == 1
    assert revoked["data"]["serial_number"] not in serials(api)
    assert len(list(crl_of(api))) == 0  # off the CRL with it
    cancel = ok(api.post("pki/tidy-cancel"))
    assert cancel["data"] is None and "none is currently running" in cancel["warnings"][0]
    assert_error(api.post("pki/tidy", json={"tidy_cert_store": "x"}), 400, "tidy_cert_store")
    bad = {"tidy_cert_store": True, "safety_buffer": "bogus"}
    assert_error(api.post("pki/tidy", json=bad), 400, "safety_buffer")


def test_a_role_and_the_last_tidy_are_stored_as_records_and_answer_the_same_after(
    sandbox: Sandbox, api: httpx.Client
) -> None:
    """``--state`` keeps a role and the last tidy as typed records (lists as tuples); the
    HTTP side renders them, from the stored copy as from the original."""
    role = {"allowed_domains": ["kept.example.com"], "allow_subdomains": True, "ttl": "2h"}
    written = ok(api.post("pki/roles/kept", json=role))["data"]
    ok(api.post("pki/tidy", json={"tidy_cert_store": True}), 202)
    status = ok(api.get("pki/tidy-status"))["data"]
    with sandbox.secrets.lock:
        copy = round_trip({"secrets": sandbox.secrets})["secrets"]
    stored = copy.mounts.engine("pki").backend
    assert isinstance(stored.roles["kept"], Role)
    assert stored.roles["kept"].allowed_domains == ("kept.example.com",)
    assert written["allowed_domains"] == ["kept.example.com"] and written["ttl"] == 7200
    assert pki_http.role_document(stored.roles["kept"]) == written
    assert ok(api.get("pki/roles/kept"))["data"] == written
    again = pki_http.tidy_status_document(stored.tidy_status(), stored.mount.uuid)
    assert again == status and status["state"] == "Finished"


# -- config/urls ---------------------------------------------------------------------------
def test_config_urls_are_written_into_issued_certificates(api: httpx.Client) -> None:
    empty = ok(api.get("pki/config/urls"))["data"]
    assert empty == {
        "issuing_certificates": [],
        "crl_distribution_points": [],
        "delta_crl_distribution_points": [],
        "ocsp_servers": [],
        "enable_templating": False,
    }
    assert_error(
        api.post("pki/config/urls", json={"issuing_certificates": ["not a url"]}),
        400,
        "issuing_certificates",
    )
    assert_error(
        api.post("pki/config/urls", json={"enable_templating": "x"}), 400, "enable_templating"
    )
    written = ok(
        api.post(
            "pki/config/urls",
            json={
                "issuing_certificates": ["http://ca.example.test/v1/pki/ca"],
                "crl_distribution_points": "http://ca.example.test/v1/pki/crl",
                "ocsp_servers": ["http://ocsp.example.test"],
            },
        )
    )["data"]
    assert written["crl_distribution_points"] == ["http://ca.example.test/v1/pki/crl"]
    assert ok(api.get("pki/config/urls"))["data"] == written
    cert = cert_of(
        ok(api.post("pki/issue/web-server", json={"common_name": "j.example.com"}))["data"][
            "certificate"
        ]
    )
    access = cert.extensions.get_extension_for_class(x509.AuthorityInformationAccess).value
    assert [(a.access_method._name, a.access_location.value) for a in access] == [
        ("caIssuers", "http://ca.example.test/v1/pki/ca"),
        ("OCSP", "http://ocsp.example.test"),
    ]
    points = cert.extensions.get_extension_for_class(x509.CRLDistributionPoints).value
    assert [p.full_name[0].value for p in points] == ["http://ca.example.test/v1/pki/crl"]
    root = ok(
        api.post("pki/root/generate/internal", json={"common_name": "URL Root", "key_type": "ec"})
    )
    assert not any("authority information access" in w for w in root["warnings"] or [])


# -- sign-verbatim -------------------------------------------------------------------------
def test_sign_verbatim_keeps_the_csrs_names_whatever_the_roles(api: httpx.Client) -> None:
    csr, key = make_csr("anything.example.org", dns=("other.example.org",), organization="Org")
    data = ok(
        api.post(
            "pki/sign-verbatim",
            json={
                "csr": csr,
                "ttl": "1h",
                "key_usage": "DigitalSignature",
                "ext_key_usage": "ClientAuth",
            },
        )
    )["data"]
    cert = cert_of(data["certificate"])
    assert cert.subject.rfc4514_string() == "CN=anything.example.org,O=Org"
    assert sans(cert).get_values_for_type(x509.DNSName) == ["other.example.org"]
    assert cert.public_key() == key.public_key()
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and not usage.key_encipherment
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
    cert.verify_directly_issued_by(issuer_cert(api, "intermediate-2026"))
    assert lifetime(data) == timedelta(hours=1, seconds=30)  # NotBefore 30 s back
    assert data["serial_number"] in serials(api)
    # With a role: its max_ttl caps the lifetime, names are still not checked.
    capped = ok(api.post("pki/sign-verbatim/root-ops", json={"csr": csr, "ttl": "100h"}))
    assert lifetime(capped["data"]) == timedelta(hours=4, seconds=30) and capped["warnings"]
    by_issuer = ok(api.post("pki/issuer/root-2026/sign-verbatim", json={"csr": csr}))["data"]
    cert_of(by_issuer["certificate"]).verify_directly_issued_by(issuer_cert(api, "root-2026"))
    assert_error(api.post("pki/sign-verbatim/nope", json={"csr": csr}), 400, "unknown role: nope")
    assert_error(api.post("pki/sign-verbatim", json={}), 400, "csr")
    assert_error(api.post("pki/sign-verbatim", json={"csr": "junk"}), 400, "csr")
    assert_error(
        api.post("pki/sign-verbatim", json={"csr": csr, "key_usage": "Nope"}), 400, "key_usage"
    )
    assert_error(api.post("pki/sign-verbatim", json={"csr": csr, "format": "xx"}), 400, "format")
    ca_csr, _ = make_csr("Sub CA")
    request = x509.load_pem_x509_csr(ca_csr.encode())
    ca_request = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(request.subject)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(_, hashes.SHA256())
    )
    pem = ca_request.public_bytes(serialization.Encoding.PEM).decode()
    assert_error(api.post("pki/sign-verbatim", json={"csr": pem}), 400, "sign-intermediate")


# -- keys and issuers ---------------------------------------------------------------------
def test_keys_are_generated_alone_exported_once_and_deleted_unless_in_use(
    api: httpx.Client,
) -> None:
    internal = ok(api.post("pki/keys/generate/internal", json={"key_type": "ec", "key_name": "k1"}))
    assert internal["data"].keys() == {"key_id", "key_name", "key_type"}
    exported = ok(api.post("pki/keys/generate/exported", json={"key_type": "ec", "key_bits": 384}))[
        "data"
    ]
    key = serialization.load_pem_private_key(exported["private_key"].encode(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.key_size == 384
    listed = ok(api.request("LIST", "pki/keys"))["data"]
    assert {internal["data"]["key_id"], exported["key_id"]} <= set(listed["keys"])
    assert listed["key_info"][internal["data"]["key_id"]]["key_name"] == "k1"
    read = ok(api.get("pki/key/k1"))["data"]
    assert read["key_type"] == "ec" and "private_key" not in read
    assert_error(api.post("pki/keys/generate/internal", json={"key_name": "k1"}), 400, "in use")
    assert_error(api.post("pki/keys/generate/internal", json={"key_type": "x"}), 400, "key_type")
    assert_error(
        api.post("pki/keys/generate/internal", json={"key_type": "ec", "key_bits": 333}),
        400,
        "key_bits",
    )
    assert_error(api.post("pki/keys/generate/kms", json={}), 400, "external_key_ref")
    assert api.post("pki/keys/generate/existing", json={}).status_code == 404
    in_use = ok(api.get("pki/issuer/root-2026"))["data"]["key_id"]
    assert_error(api.delete(f"pki/key/{in_use}"), 400, "Key in Use by Issuer")
    assert api.delete("pki/key/k1").status_code == 204
    assert api.delete("pki/key/k1").status_code == 204  # gone already: no error
    assert_error(api.get("pki/key/k1"), 400, "k1")


def test_deleting_the_default_issuer_warns_and_leaves_its_certificates(api: httpx.Client) -> None:
    issued = ok(api.post("pki/issue/web-server", json={"common_name": "k.example.com"}))["data"]
    gone = ok(api.delete("pki/issuer/intermediate-2026"))
    assert gone["data"] is None
    assert "configured as the default issuer" in gone["warnings"][0]
    assert ok(api.get("pki/config/issuers"))["data"]["default"] == ""
    assert_error(api.get("pki/issuer/intermediate-2026"), 400, "intermediate-2026")
    assert ok(api.get(f"pki/cert/{issued['serial_number']}"))["data"]["certificate"]
    unknown = ok(api.delete("pki/issuer/never-there"))
    assert unknown["data"] is None and not unknown["warnings"]
    key_id = ok(api.request("LIST", "pki/keys"))["data"]["keys"]
    assert len(key_id) == 2  # the key stays, and can go now
    ok(api.post("pki/issue/root-ops", json={"common_name": "ops.example.com"}))
    assert api.get("pki/crl").status_code == 204  # no default issuer, no default CRL


def test_paged_certificate_listing_follows_a_certificate_issued_between_pages(
    shared: httpx.Client,
) -> None:
    def page(after: str = "", limit: int = 3) -> list[str]:
        params = {"limit": str(limit), **({"after": after} if after else {})}
        response = shared.request("LIST", "pki/certs", params=params)
        return list(ok(response)["data"]["keys"]) if response.status_code == 200 else []

    everything = page(limit=0)
    assert everything == sorted(everything) and page() == everything[:3]
    serial = ok(shared.post("pki/issue/web-server", json={"common_name": "paged.example.com"}))
    added = serial["data"]["serial_number"]
    assert added in page(limit=0)  # the kept order is sorted again after an issue
    # The next page after the first serial: the new one included if it sorts after it (its
    # serial is random, so it may sort before the first and not be on this page).
    after_first = [k for k in sorted([*everything, added]) if k > everything[0]]
    assert page(after=everything[0].replace(":", "-"), limit=2) == after_first[:2]


def test_paged_certificate_listing_compares_after_with_the_stored_form_as_openbao_does(
    shared: httpx.Client,
) -> None:
    """OpenBao lists serials joined by colons and pages them by their storage keys,
    joined by hyphens: after= in the listed form passes over every serial that
    shares its first byte (":" sorts after "-"), in the hyphen form over none."""
    for n in range(40):
        ok(shared.post("pki/issue/web-server", json={"common_name": f"p{n}.example.com"}))
    keys = list(ok(shared.request("LIST", "pki/certs"))["data"]["keys"])

    def first_after(after: str) -> str | None:
        answer = shared.request("LIST", "pki/certs", params={"after": after, "limit": "1"})
        if answer.status_code == 404:  # nothing after it: an empty list
            return None
        return (ok(answer)["data"]["keys"] or [None])[0]

    pairs = list(zip(keys, keys[1:], strict=False))
    assert all(first_after(a.replace(":", "-")) == b for a, b in pairs)
    shared_first_byte = [(a, b) for a, b in pairs if a[:2] == b[:2]]
    assert shared_first_byte  # 40 serials over 256 first bytes share some
    assert all(first_after(a) != b for a, b in shared_first_byte)
