"""The certificate engine's demo data: a root and an intermediate issuer, and a few roles.

The root (``root-2026``) signs the intermediate (``intermediate-2026``) in the
same mount, the way an operator builds it: generate the root, generate the
intermediate's key and CSR, sign it with the root, import the signed
certificate, name it and make it the default issuer. Names, validity and roles
are anchored to the clock's start; keys and serials are new on every start.
EC P-256 keys keep loading fast.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from .pki import PKI

if TYPE_CHECKING:
    from .models import SecretsService

__all__ = ["DEMO_PKI_ROLES", "load_demo_pki"]

ROOT_NAME = "root-2026"
INTERMEDIATE_NAME = "intermediate-2026"
DEMO_PKI_ROLES: dict[str, dict[str, object]] = {
    "web-server": {
        "allowed_domains": ["example.com"],
        "allow_subdomains": True,
        "allow_bare_domains": True,
        "key_type": "ec",
        "ttl": "24h",
        "max_ttl": "72h",
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
        "ttl": "1h",
        "max_ttl": "24h",
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
        "ttl": "8h",
        "max_ttl": "24h",
    },
    "root-ops": {
        "issuer_ref": ROOT_NAME,
        "allowed_domains": ["ops.example.com"],
        "allow_bare_domains": True,
        "key_type": "ec",
        "ttl": "1h",
        "max_ttl": "4h",
    },
}


def _stamp(service: SecretsService, days: int) -> str:
    return (service.clock.start + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_demo_pki(service: SecretsService) -> None:
    """Two issuers (the intermediate the default) and the demo roles, on the ``pki/`` mount."""
    mount = service.mounts.engine("pki")
    if mount is None or not isinstance(mount.backend, PKI):
        return
    pki: PKI = mount.backend
    root, _ = pki.generate_root(
        "internal",
        {
            "common_name": "Example Corp Root CA 2026",
            "issuer_name": ROOT_NAME,
            "key_name": ROOT_NAME,
            "key_type": "ec",
            "key_bits": 384,
            "organization": "Example Corp",
            "not_after": _stamp(service, 3650),
        },
    )
    request = pki.generate_intermediate(
        "internal",
        {
            "common_name": "Example Corp Issuing CA 2026",
            "key_name": INTERMEDIATE_NAME,
            "key_type": "ec",
            "organization": "Example Corp",
        },
    )
    signed, _ = pki.sign_intermediate(
        {
            "csr": request["csr"],
            "common_name": "Example Corp Issuing CA 2026",
            "organization": "Example Corp",
            "not_after": _stamp(service, 1825),
            "max_path_length": 0,
        },
        root["issuer_id"],
    )
    imported = pki.import_bundle(signed["certificate"], "certificate", need_key=True)
    intermediate = imported["imported_issuers"][0]
    pki.update_issuer(intermediate, {"issuer_name": INTERMEDIATE_NAME})
    pki.set_config_issuers({"default": INTERMEDIATE_NAME})
    for name, role in DEMO_PKI_ROLES.items():
        pki.write_role(name, role)
