"""``--demo-scale``: generated records at scale, and the paged LIST of ``pki/certs``."""

from __future__ import annotations

import pytest
from cryptography import x509

from toolkit.__main__ import sandbox_main
from toolkit.sandbox import Sandbox
from toolkit.sandbox.scale import ScaleError, parse_scale
from toolkit.secrets import SecretsClient


def test_the_scale_option_reads_counts_with_suffixes() -> None:
    assert parse_scale("leases=1M, tokens=100k,certificates=2.5k,agents=7") == {
        "leases": 1_000_000,
        "tokens": 100_000,
        "certificates": 2_500,
        "agents": 7,
    }


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("lease=5", "KIND=COUNT with KIND one of"),
        ("tokens=lots", "a count such as"),
        ("", "at least one"),
    ],
)
def test_a_bad_scale_option_is_one_line_naming_it(
    text: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ScaleError, match=says):
        parse_scale(text)
    if text:
        assert sandbox_main(["--demo-scale", text, "--port", "0"]) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and len(err.splitlines()) == 1


def test_generated_records_are_served_and_certificates_are_real() -> None:
    counts = {"leases": 500, "tokens": 120, "certificates": 200, "policies": 30, "agents": 1500}
    with Sandbox(demo=False, demo_scale=counts) as sb, SecretsClient(sb.address, sb.token) as bao:
        leases = bao.leases.lease_counts()
        assert int(leases[leases["kind"] == "secret"]["count"].sum()) == 500
        assert leases.iloc[0]["role"] == "role-00"  # the exploding role leads
        assert len(bao.tokens.list_accessors()) >= 120
        assert sum(p.startswith("scale-policy-") for p in bao.policies.list_policies()) == 30
        engine = sb.secrets.mounts.engine("pki").backend
        kept = list(engine.certs.values())
        assert len(kept) >= 200
        issuers = {i.id: i.cert for i in engine.issuers.values()}
        for stored in kept[-5:]:
            cert = x509.load_pem_x509_certificate(stored.certificate.encode())
            cert.verify_directly_issued_by(issuers[stored.issuer_id])
        assert sum(bool(c.revocation_time) for c in kept) == 10
        pools = sorted(len(p.agents) for p in sb.platform.pool_store.pools.values())
        assert pools == [500, 1000]


def test_pki_certs_pages_with_after_and_limit() -> None:
    sb = Sandbox(demo=False, demo_scale={"certificates": 25})
    with sb, SecretsClient(sb.address, sb.token) as bao:
        every = bao.http.json("LIST", "/pki/certs")["data"]["keys"]
        first = bao.http.json("LIST", "/pki/certs", params={"limit": "10"})["data"]["keys"]
        # after= in the stored form (bytes joined by hyphens), as OpenBao pages them.
        after = {"after": first[-1].replace(":", "-"), "limit": "100"}
        rest = bao.http.json("LIST", "/pki/certs", params=after)["data"]["keys"]
        assert every == sorted(every) and first + rest == every and len(first) == 10
        with pytest.raises(Exception, match="limit"):
            bao.http.json("LIST", "/pki/certs", params={"limit": "ten"})


def test_generated_leases_outlast_a_benchmark_and_some_have_under_an_hour() -> None:
    from toolkit.sandbox.scale import LEASE_FLOOR

    with Sandbox(demo=False, demo_scale={"leases": 3000}) as sb:
        manager = sb.secrets.leases
        now = manager.now()
        left = [
            (manager.get(f"{folder}/{key}").expire_time - now).total_seconds()  # type: ignore[union-attr]
            for folder in ("database/creds/role-00", "database/creds/role-01")
            for key in manager.lookup_prefix(folder + "/")
        ]
    assert min(left) >= LEASE_FLOOR - 60  # none expires while a full-size benchmark walks them
    assert any(s < 3600 for s in left) and max(left) > 30 * 86400
