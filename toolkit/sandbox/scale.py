"""Generated data at scale: ``python -m toolkit sandbox --demo-scale leases=1M,tokens=100k``.

For the benchmarks and for anyone trying the toolkit at size. :func:`parse_scale`
reads the option (``KIND=COUNT`` pairs, comma-separated; a count takes ``k``
or ``M``); :func:`load_scale` adds that many records to a sandbox, quickly and
deterministically (names and times from counters, no randomness but the
keys):

- ``leases``: four in ten under one exploding role (``database/creds/role-00``),
  the rest over 19 more database roles and 5 broker roles, ttl from 40 min to
  40 days, at least 40 min of it left at start (some under an hour; none expire
  during a benchmark's walks);
- ``tokens``: service tokens with the default policy and a few of 20 policies,
  one in 50 never expiring and one in 100 root;
- ``certificates``: leaf certificates of the ``pki/`` mount's default issuer,
  one in 20 revoked (the CRL rebuilt once at the end), one in 25 already
  expired, one in 40 outliving its issuer; signed for real (EC P-256) from
  one DER template, so 200,000 take seconds, not minutes;
- ``policies``: ACL policies of a few paths each;
- ``agents``: agents over pools of 1,000 in organization ``scale``, in a mix
  of statuses (``unknown`` and ``errored`` among them).
"""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .platform.models import PlatformService
    from .secrets.models import SecretsService

__all__ = ["KINDS", "ScaleError", "load_scale", "parse_scale"]


class ScaleError(ValueError):
    """``--demo-scale`` asked for something the sandbox cannot generate (the message says what)."""


KINDS = ("leases", "tokens", "certificates", "policies", "agents")
_COUNT = re.compile(r"^(\d+(?:\.\d+)?)([kKmM]?)$")
ORGANIZATION = "scale"
POOL_SIZE = 1_000
AGENT_STATUSES = ("busy", "idle", "busy", "unknown", "idle", "errored", "busy", "exited")


def parse_scale(text: str) -> dict[str, int]:
    """``leases=1M,tokens=100k`` as counts by kind; :class:`ScaleError` naming what is wrong."""
    counts: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        kind, sep, raw = part.partition("=")
        kind = kind.strip()
        if not sep or kind not in KINDS:
            raise ScaleError(
                f"--demo-scale: {part!r} is not KIND=COUNT with KIND one of {', '.join(KINDS)}"
            )
        match = _COUNT.match(raw.strip())
        if match is None:
            raise ScaleError(f"--demo-scale: {kind}={raw!r}: give a count such as 5000, 100k or 1M")
        value = float(match.group(1)) * {"": 1, "k": 1e3, "m": 1e6}[match.group(2).lower()]
        counts[kind] = int(value)
    if not counts:
        raise ScaleError("--demo-scale: name at least one KIND=COUNT, e.g. leases=1M")
    return counts


def load_scale(secrets: SecretsService, platform: PlatformService, counts: dict[str, int]) -> None:
    """Add ``counts`` records of each kind to a sandbox's two services (see the module's
    text)."""
    with secrets.lock:
        if counts.get("policies"):
            _policies(secrets, counts["policies"])
        if counts.get("tokens"):
            _tokens(secrets, counts["tokens"])
        if counts.get("leases"):
            _leases(secrets, counts["leases"])
        if counts.get("certificates"):
            _certificates(secrets, counts["certificates"])
    if counts.get("agents"):
        _agents(platform, counts["agents"])


# -- the kinds ----------------------------------------------------------------------------
# The least time a generated lease has left when the sandbox starts (40 minutes).
LEASE_FLOOR = 2400
LEASE_FOLDERS = [f"database/creds/role-{i:02d}" for i in range(1, 20)] + [
    f"broker/creds/queue-{i:02d}" for i in range(5)
]


def _leases(secrets: Any, count: int) -> None:
    leases = secrets.leases
    now = leases.now()
    for i in range(count):
        folder = "database/creds/role-00" if i % 10 < 4 else LEASE_FOLDERS[i % len(LEASE_FOLDERS)]
        ttl = LEASE_FLOOR + (i * 7919) % (40 * 86400)
        leases.create(
            folder,
            ttl=ttl,
            renewable=True,
            suffix=f"scale{i:09d}",
            # Issued up to a day ago, with at least LEASE_FLOOR left: some under an hour,
            # none gone while a benchmark walks them (the full-size scale run takes 15-25 min).
            issue_time=now - timedelta(seconds=(i % 86400) % (ttl - LEASE_FLOOR + 1)),
        )


def _tokens(secrets: Any, count: int) -> None:
    store = secrets.tokens
    for i in range(count):
        policies = ["default", f"scale-policy-{i % 20:04d}"]
        if i % 100 == 0:
            policies = ["root"]
        store.add(
            f"s.scale{i:09d}",
            policies,
            ttl=0 if i % 50 == 0 else 3600 + i % 86400,
            display_name=f"token-scale-{i % 37}",
            parent=None if i % 3 == 0 else store.root,
            path="auth/approle/login" if i % 4 == 0 else "auth/token/create",
        )


def _policies(secrets: Any, count: int) -> None:
    for i in range(count):
        rules = (
            f'path "secret/data/team-{i % 50}/*" {{ capabilities = ["read", "list"] }}\n'
            f'path "database/creds/role-{i % 20:02d}" {{ capabilities = ["read"] }}\n'
        )
        if i % 97 == 0:
            rules += 'path "sys/*" { capabilities = ["sudo", "read", "update"] }\n'
        secrets.policies.put("acl", f"scale-policy-{i:04d}", rules)


def _agents(platform: Any, count: int) -> None:
    if not platform.has_organization(ORGANIZATION):
        platform.add_organization(ORGANIZATION)
    now = platform.clock.now()
    pools: list[str] = []
    for i in range(count):
        if i % POOL_SIZE == 0:
            platform.pool_limit = max(platform.pool_limit, len(pools) + 1)
            pools.append(platform.add_pool(ORGANIZATION, f"scale-pool-{len(pools):03d}"))
        status = AGENT_STATUSES[i % len(AGENT_STATUSES)]
        platform.add_agent(
            pools[-1],
            name=f"scale-agent-{i:06d}",
            status=status,
            ip_address=f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}",
            last_ping_at=now - timedelta(seconds=(i * 37) % (4 * 3600)),
        )


# -- certificates from one template ----------------------------------------------------------
_CN = b"QQQQQQQQ"
_SERIAL = bytes([0x1F]) + bytes([0xA5]) * 15
_NOT_BEFORE = b"260101000000Z"
_NOT_AFTER = b"310707070707Z"


def _certificates(secrets: Any, count: int) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    from .._x509 import format_serial
    from .secrets.engines.pki.demo import load_demo as load_demo_pki
    from .secrets.engines.pki.engine import PKIEngine
    from .secrets.engines.pki.state import IssuedCert

    mount = secrets.mounts.engine("pki")
    engine = mount.backend if mount is not None else None
    if not isinstance(engine, PKIEngine):
        raise ScaleError("--demo-scale certificates needs the demo's pki/ mount: leave out --empty")
    if not engine.issuers:
        load_demo_pki(secrets)
    issuer, signer = engine._signer("default")
    if not isinstance(signer, ec.EllipticCurvePrivateKey):
        raise ScaleError("--demo-scale certificates needs an EC default issuer (the demo's)")
    key = signer
    issuer_cert = issuer.cert
    leaf_key = ec.generate_private_key(ec.SECP256R1()).public_key()
    name = f"h{_CN.decode()}.scale.example.com"
    template = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(issuer_cert.subject)
        .public_key(leaf_key)
        .serial_number(int.from_bytes(_SERIAL, "big"))
        .not_valid_before(datetime(2026, 1, 1, tzinfo=UTC))
        .not_valid_after(datetime(2031, 7, 7, 7, 7, 7, tzinfo=UTC))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    whole = template.public_bytes(serialization.Encoding.DER)
    tbs = template.tbs_certificate_bytes
    start = whole.index(tbs) + len(tbs)
    algorithm = whole[start : start + 2 + whole[start + 1]]
    places = {
        "cn": _all(tbs, _CN),
        "serial": _all(tbs, _SERIAL),
        "nb": _all(tbs, _NOT_BEFORE),
        "na": _all(tbs, _NOT_AFTER),
    }
    now = engine.now()
    issuer_end = issuer_cert.not_valid_after_utc
    signature = ec.ECDSA(hashes.SHA256())
    serial_base = int.from_bytes(_SERIAL, "big") - (1 << 64)
    revoked = 0
    for i in range(count):
        body = bytearray(tbs)
        serial = (serial_base + i + 1).to_bytes(16, "big")
        if i % 40 == 0:
            not_after = issuer_end + timedelta(days=30)  # outlives its issuer
        elif i % 25 == 0:
            not_after = now - timedelta(days=1 + i % 60)  # expired already
        else:
            not_after = now + timedelta(hours=1 + (i * 31) % (400 * 24))
        not_after = min(not_after, datetime(2049, 12, 31, tzinfo=UTC))
        not_before = min(now - timedelta(days=90), not_after - timedelta(hours=1))
        for where, value in (
            ("cn", f"{i:08d}".encode()),
            ("serial", serial),
            ("nb", not_before.strftime("%y%m%d%H%M%SZ").encode()),
            ("na", not_after.strftime("%y%m%d%H%M%SZ").encode()),
        ):
            for at in places[where]:
                body[at : at + len(value)] = value
        signed = key.sign(bytes(body), signature)
        der = _sequence(bytes(body) + algorithm + _bit_string(signed))
        colon = format_serial(int.from_bytes(serial, "big"))
        kept = IssuedCert(colon, _pem(der), issuer.id)
        if i % 20 == 7:
            kept.revocation_time = int((now - timedelta(hours=i % 500)).timestamp())
            kept.revocation_time_rfc3339 = (now - timedelta(hours=i % 500)).isoformat()
            revoked += 1
        engine.certs[colon] = kept
    if revoked:
        engine.rotate()


def _all(data: bytes, needle: bytes) -> list[int]:
    found, at = [], data.find(needle)
    while at >= 0:
        found.append(at)
        at = data.find(needle, at + 1)
    if not found:
        raise RuntimeError("the certificate template lost a field it patches")
    return found


def _length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def _sequence(content: bytes) -> bytes:
    return b"\x30" + _length(len(content)) + content


def _bit_string(content: bytes) -> bytes:
    return b"\x03" + _length(len(content) + 1) + b"\x00" + content


def _pem(der: bytes) -> str:
    text = base64.b64encode(der).decode()
    lines = [text[k : k + 64] for k in range(0, len(text), 64)]
    return "-----BEGIN CERTIFICATE-----\n" + "\n".join(lines) + "\n-----END CERTIFICATE-----\n"
