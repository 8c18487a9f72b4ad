"""The certificate engine's demo data: a root and an intermediate issuer, and a few roles.

The root (``root-2026``) signs the intermediate (``intermediate-2026``) in the
same mount, the way an operator builds it: generate the root, generate the
intermediate's key and CSR, sign it with the root, import the signed
certificate, name it and make it the default issuer. Names, validity and roles
are anchored to the clock's start; keys and serials are new on every start.
EC P-256 keys keep loading fast.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ...backends import demo_at
from .engine import PKIEngine
from .requests import CAOptions, KeyRequest, RequestedNames, Validity
from .x509 import cert_pem, read_csr

if TYPE_CHECKING:
    from ...host import EngineHost

__all__ = ["DEMO_PKI_ROLES", "load_demo"]

_HOUR = 3600
ROOT_NAME = "root-2026"
INTERMEDIATE_NAME = "intermediate-2026"
# Role fields as typed values (durations in seconds), as the HTTP side would read them.
DEMO_PKI_ROLES: dict[str, dict[str, Any]] = {
    "web-server": {
        "allowed_domains": ["example.com"],
        "allow_subdomains": True,
        "allow_bare_domains": True,
        "key_type": "ec",
        "ttl": 24 * _HOUR,
        "max_ttl": 72 * _HOUR,
        "organization": ["Example Corp"],
        "client_flag": False,
    },
    "internal-service": {
        "issuer_ref": INTERMEDIATE_NAME,
        "allowed_domains": ["svc.cluster.local"],
        "allow_subdomains": True,
        "allowed_uri_sans": ["spiffe://cluster.local/*"],
        "allowed_other_sans": ["1.3.6.1.4.1.311.20.2.3;UTF8:*@example.com"],
        "key_type": "ec",
        "ttl": _HOUR,
        "max_ttl": 24 * _HOUR,
    },
    "client-auth": {
        "allowed_domains": ["example.com"],
        "allow_bare_domains": True,
        "allow_subdomains": True,
        "allow_ip_sans": False,
        "allowed_user_ids": ["ops-*"],
        "server_flag": False,
        "key_type": "rsa",
        "key_bits": 2048,
        "ttl": 8 * _HOUR,
        "max_ttl": 24 * _HOUR,
    },
    "root-ops": {
        "issuer_ref": ROOT_NAME,
        "allowed_domains": ["ops.example.com"],
        "allow_bare_domains": True,
        "key_type": "ec",
        "ttl": _HOUR,
        "max_ttl": 4 * _HOUR,
    },
}


def _at(service: EngineHost, days: int) -> datetime:
    return (service.clock.start + timedelta(days=days)).replace(microsecond=0)


@demo_at("pki", PKIEngine)
def load_demo(service: EngineHost, pki: PKIEngine) -> None:
    """Two issuers (the intermediate the default) and the demo roles, on the ``pki/`` mount."""
    organization = {"organization": ["Example Corp"]}
    root, _ = pki.generate_root(
        KeyRequest("internal", "ec", 384, key_name=ROOT_NAME),
        RequestedNames(common_name="Example Corp Root CA 2026", subject=organization),
        options=CAOptions(),
        validity=Validity(not_after=_at(service, 3650)),
        issuer_name=ROOT_NAME,
    )
    request = pki.generate_intermediate(
        KeyRequest("internal", "ec", key_name=INTERMEDIATE_NAME),
        RequestedNames(common_name="Example Corp Issuing CA 2026", subject=organization),
    )
    signed, _ = pki.sign_intermediate(
        read_csr(request.csr_pem),
        RequestedNames(common_name="Example Corp Issuing CA 2026", subject=organization),
        options=CAOptions(max_path_length=0),
        validity=Validity(not_after=_at(service, 1825)),
        issuer_ref=root.issuer.id,
    )
    imported = pki.import_bundle(cert_pem(signed.cert), "certificate", need_key=True)
    intermediate = imported.issuers[0]
    pki.update_issuer(intermediate, name=INTERMEDIATE_NAME)
    pki.set_config_issuers(INTERMEDIATE_NAME)
    for name, role in DEMO_PKI_ROLES.items():
        pki.write_role(name, role)
