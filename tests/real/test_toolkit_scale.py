"""The views at scale on a real OpenBao: the paged certificate estate (OpenBao honours
after/limit on pki/certs), the lease scan resuming from its checkpoint, token sprawl."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.real import _seed
from tests.servers.openbao import OpenBao
from toolkit.secrets import SecretsClient
from toolkit.secrets.checkpoint import WalkInterrupted
from toolkit.secrets.tokens.sprawl import token_sprawl


def _root_and_role(client: SecretsClient, mount: str) -> Any:
    """A PKI mount with a self-signed root ``root`` and a role ``web`` issuing from it."""
    client.enable_engine(mount, "pki", max_lease_ttl="87600h")
    pki = client.pki.at(mount)
    pki.generate_root(f"{mount} root", key_type="ec", issuer_name="root", ttl="8760h")
    pki.write_role("web", allowed_domains=["example.test"], allow_subdomains=True, key_type="ec")
    return pki


def test_the_estate_pages_a_real_mounts_certificates(bao: OpenBao) -> None:
    with SecretsClient(bao.address, bao.token) as client:
        pki = _root_and_role(client, "pki-estate")
        serials = [pki.issue("web", f"h{i}.example.test", ttl="1h").serial_number for i in range(9)]
        pki.revoke(serials[0])
        lists: list[str] = []
        client.http.response_hooks.append(
            lambda r: lists.append(r.url) if r.method == "LIST" else None
        )
        estate = pki.certificate_estate(["pki-estate"], page=4)
        frame = estate.frame()
    assert set(serials) <= set(frame.index) and frame.index.is_unique
    assert len([u for u in lists if "limit=4" in u]) >= 3  # paged, not one whole answer
    assert bool(frame.loc[serials[0], "revoked"])
    assert "web" in estate.roles_from_root().index  # the role issues straight from the root
    assert estate.crl_sizes.loc[:, "entries"].max() >= 1
    assert frame.attrs["coverage"]["complete"]


def test_the_estate_misses_no_certificate_at_a_page_boundary_on_openbao(bao: OpenBao) -> None:
    """OpenBao pages certs/ by its storage keys (bytes joined by hyphens) while it
    lists colons: pages of one, across serials that share their first byte."""
    with SecretsClient(bao.address, bao.token) as client:
        pki = _root_and_role(client, "pki-pages")
        for i in range(40):
            pki.issue("web", f"p{i}.example.test", ttl="1h")
        listed = client.http.request("LIST", "/pki-pages/certs").json()["data"]["keys"]
        assert any(a[:2] == b[:2] for a, b in zip(listed, listed[1:], strict=False))
        frame = pki.certificate_estate(["pki-pages"], page=1).frame()
    assert sorted(frame.index) == sorted(listed) and frame.attrs["coverage"]["complete"]


def test_a_lease_scan_on_openbao_resumes_from_its_checkpoint(bao: OpenBao, tmp_path: Path) -> None:
    _seed.tokens(bao, "scan", 120)
    point = tmp_path / "scan.json"
    with SecretsClient(bao.address, bao.token) as client:
        whole = client.leases.leases_by_mount(prefix="auth/token/create/scan")
        try:
            client.leases.scan(["auth/token/create/scan"], checkpoint=point, chunk=50, deadline=0)
        except WalkInterrupted as exc:
            assert "50 leases looked up" in str(exc)
        scan = client.leases.scan(["auth/token/create/scan"], checkpoint=point, chunk=50)
        assert scan.resumed and sorted(scan.frame().index) == sorted(whole.index)
        sprawl = token_sprawl(client.tokens.scan(chunk=64))
    assert sprawl.loc["root", "tokens"] >= 1
