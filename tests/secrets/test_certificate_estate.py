"""The certificate estate: paged listing, every certificate parsed, resumable, and what
needs doing (calendar, CRL size, tidy, roles from a root, certificates outliving their issuer)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.checkpoint import WalkInterrupted
from toolkit.secrets.pki import scan_certificates
from toolkit.secrets.pki.estate import crl_sizes

COUNT = 120


@pytest.fixture(scope="module")
def estate_sandbox() -> Iterator[Sandbox]:
    with Sandbox(demo_scale={"certificates": COUNT}) as sb:
        yield sb


@pytest.fixture
def bao(estate_sandbox: Sandbox) -> Iterator[SecretsClient]:
    with SecretsClient(estate_sandbox.address, estate_sandbox.token) as client:
        yield client


def test_every_certificate_is_listed_a_page_at_a_time_and_parsed(
    estate_sandbox: Sandbox, bao: SecretsClient
) -> None:
    lists: list[str] = []
    bao.http.response_hooks.append(lambda r: lists.append(r.url) if r.method == "LIST" else None)
    estate = bao.pki.certificate_estate(page=50)
    frame = estate.frame()
    kept = estate_sandbox.secrets.mounts.engine("pki").backend.certs
    assert sorted(frame.index) == sorted(kept)
    assert len([u for u in lists if "limit=50" in u]) == len(kept) // 50 + 1
    assert frame.attrs["coverage"]["complete"]
    assert int(frame["revoked"].sum()) == sum(bool(c.revocation_time) for c in kept.values())
    row = frame.loc[frame["common_name"] == "h00000003.scale.example.com"].iloc[0]
    assert row["sans"] == "h00000003.scale.example.com" and row["issuer"].startswith("CN=")

    now = estate.now
    tidy = estate.tidy(safety_buffer=timedelta(0))
    assert len(tidy) == int((frame["not_after"] < now).sum()) > 0
    outliving = estate.outliving_issuer()
    assert (
        len(outliving) == COUNT // 40
        and (outliving["not_after"] > outliving["issuer_not_after"]).all()
    )
    # The demo's roles: root-ops names the root; internal-service names the intermediate,
    # and web-server and client-auth use the default issuer, the intermediate too.
    from_root = estate.roles_from_root()
    assert set(estate.roles["pki"].index) == {
        "root-ops",
        "internal-service",
        "web-server",
        "client-auth",
    }
    assert list(from_root.index) == ["root-ops"]
    assert from_root.loc["root-ops", "issuer_ref"] == "root-2026"
    sizes = estate.crl_sizes
    assert (sizes["status"] == "ok").all() and int(sizes["entries"].max()) >= COUNT // 20
    calendar = estate.calendar("W")
    live = frame[(frame["not_after"] > now) & ~frame["revoked"].astype(bool)]
    assert int(calendar.to_numpy().sum()) == len(live)


def test_a_crl_over_half_or_over_the_limit_is_flagged(bao: SecretsClient) -> None:
    """Each issuer's CRL against limits set around its own size: the boundaries are
    strict (a CRL of exactly the limit is over half, not over it)."""
    issuers = bao.pki.issuers_frame()
    assert len(issuers) == 2
    for issuer_id in issuers.index:
        one = issuers.loc[[issuer_id]]
        size = int(crl_sizes(bao.http, "pki", one).loc[issuer_id, "crl_bytes"])
        for limit, status in (
            (size - 1, "over the limit"),
            (size, "over half"),
            (2 * size - 1, "over half"),
            (2 * size, "ok"),
        ):
            row = crl_sizes(bao.http, "pki", one, limit=limit).loc[issuer_id]
            assert (row["status"], row["share_of_limit"]) == (status, size / limit)


def test_an_interrupted_certificate_scan_resumes_after_the_last_page(
    bao: SecretsClient, tmp_path: Path
) -> None:
    point = tmp_path / "certs.json"
    with pytest.raises(WalkInterrupted, match="50 certificates read"):
        scan_certificates(bao.http, "pki", page=50, checkpoint=point, deadline=0)
    reads: list[str] = []
    bao.http.response_hooks.append(lambda r: reads.append(r.url) if r.method == "GET" else None)
    spool = scan_certificates(bao.http, "pki", page=50, checkpoint=point)
    whole = spool.frame(pd.DataFrame())
    assert whole.index.is_unique and len(whole) == len(bao.pki.list_certs())
    assert len([u for u in reads if "/pki/cert/" in u]) == len(whole) - 50


def test_a_mistyped_pki_mount_is_named_not_reported_as_an_interrupted_scan(demo_sandbox) -> None:
    from toolkit import MountNotFound
    from toolkit.secrets import SecretsClient

    with (
        SecretsClient(demo_sandbox.address, demo_sandbox.token) as bao,
        pytest.raises(MountNotFound, match="pkix"),
    ):
        bao.pki.certificate_estate(mounts=["pkix"])
