"""The certificate estate: every certificate of every PKI mount, parsed, and what needs doing.

:func:`scan_certificates` lists a mount's certificates a page at a time with
OpenBao's paged LIST (``LIST pki/certs?after=<last>&limit=<page>``), reads each
page's certificates concurrently, parses them with ``cryptography`` and keeps
the rows in a :class:`~toolkit.secrets.checkpoint.Spool` (Parquet beyond
``max_rows``); with a checkpoint, an interrupted scan resumes after the last
page done. Paging trusts nothing it is told: it stops when a page comes back
short or empty, refuses a page that does not move past ``after`` (a server
that ignores it), and stops at ``max_pages``.

:func:`certificate_estate` does it for every PKI mount and adds:

- :func:`certificate_calendar`: certificates (valid, not revoked) expiring per period;
- :func:`crl_sizes`: each issuer's CRL size against the storage entry limit
  (1 MiB on integrated storage: a CRL past it can no longer be stored);
- :func:`tidy_candidates`: what a tidy with ``tidy_cert_store`` and
  ``tidy_revoked_certs`` would remove (expired past the safety buffer);
- :func:`roles_from_root`: roles issuing straight from a self-signed root;
- :func:`outliving_issuer`: certificates whose issuer expires before they do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from cryptography import x509

from ..._coverage import Coverage, Gap, carries_coverage, carry, coverage_of
from ..._errors import APIError, InputError
from ..._frames import Schema, build_frame
from ..._gc import collector_paused
from ..._http import HTTPLayer, Request, decode_json
from ..._x509 import serial_storage_key
from ..checkpoint import DEFAULT_MAX_ROWS, Spool, scan_loop, scan_pieces
from ..walk import Walk, stream_keys
from ._common import _load_certificate, certificate_names
from .issuers import IssuerCalls
from .roles import RoleCalls

__all__ = [
    "CERTIFICATE_ESTATE",
    "CRL_SIZES",
    "STORAGE_ENTRY_LIMIT",
    "CertificateEstate",
    "certificate_calendar",
    "certificate_estate",
    "crl_sizes",
    "outliving_issuer",
    "roles_from_root",
    "scan_certificates",
    "tidy_candidates",
]

# Integrated storage's largest entry: a CRL beyond it cannot be stored.
STORAGE_ENTRY_LIMIT = 1024 * 1024
PAGE = 1_000
MAX_PAGES = 100_000

CERTIFICATE_ESTATE = Schema.of(
    """serial_number mount subject common_name sans issuer authority_key_id not_before:datetime
    not_after:datetime revoked:bool revocation_time:datetime is_ca:bool""",
    index="serial_number",
)
CRL_SIZES = Schema.of(
    "issuer_id mount issuer_name crl_bytes:int entries:int share_of_limit:float status",
    index="issuer_id",
)


class _Mount(RoleCalls, IssuerCalls):
    """The parts of a certificate mount the estate reads through (its roles, its issuers),
    on the HTTP layer it is handed: the estate never needs the whole engine."""


# -- the scan ---------------------------------------------------------------------------------
def scan_certificates(
    http: HTTPLayer,
    mount: str = "pki",
    *,
    page: int = PAGE,
    checkpoint: str | Path | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    max_pages: int = MAX_PAGES,
    deadline: float | None = None,
    walk: Walk | None = None,
) -> Spool:
    """Every certificate the mount ``mount`` keeps, parsed (:data:`CERTIFICATE_ESTATE` rows),
    a page of ``page`` serials at a time; see the module's text. What could not be read
    (a LIST refused, a page out of order) is recorded in ``walk``."""
    if page < 1:
        raise InputError(f"page must be at least 1, not {page}")
    seen = walk if walk is not None else Walk()
    pki = _Mount(http, mount)
    with scan_loop(
        http,
        f"certificate scan of {pki.mount}/",
        "certificates",
        {"mount": pki.mount},
        checkpoint=checkpoint,
        max_rows=max_rows,
        deadline=deadline,
    ) as loop:
        after = str(loop.state.get("after") or "")
        loop.progress = lambda: (
            f"{loop.spool.rows:,} certificates read, up to serial {after or '(none)'}"
        )
        for _ in range(max_pages):
            params = {"limit": str(page), **({"after": after} if after else {})}
            response = http.request(
                "LIST", pki._path("certs"), params=params, ok_statuses=(403, 404)
            )
            if response.status_code == 403:
                seen.unread.append(Gap(f"{pki.mount}/certs", 403, "not permitted"))
                break
            serials = [] if response.status_code == 404 else list(stream_keys(response.content))
            if not serials:
                break
            seen.folders += 1
            if after and serial_storage_key(serials[0]) <= after:
                seen.unread.append(
                    Gap(f"{pki.mount}/certs", None, "the server ignores after= (paging refused)")
                )
                break
            frame = _read_page(pki, serials)
            seen.leaves += len(serials)
            # OpenBao compares after= with its storage keys, where a serial's bytes are
            # joined by hyphens, though it lists them joined by colons: a colon form
            # passes over every serial that shares its first byte (":" sorts after "-").
            after = serial_storage_key(serials[-1])
            loop.add(frame, {"after": after}, may_stop=len(serials) >= page)
            if len(serials) < page:
                break
        else:
            seen.unread.append(Gap(f"{pki.mount}/certs", None, f"stopped at {max_pages} pages"))
        loop.finish()
    return loop.spool


def _read_page(pki: _Mount, serials: list[str]) -> pd.DataFrame:
    calls = [
        Request(
            "GET", pki._path("cert/{listed_serial}", listed_serial=s), ok_statuses=frozenset({404})
        )
        for s in serials
    ]
    rows: list[dict[str, Any]] = []
    with collector_paused():
        for serial, response in zip(serials, pki._http.many(calls), strict=True):
            if response.status_code == 404:  # gone (tidied) since the listing
                continue
            data = decode_json(response, "GET")
            data = data.get("data", data) if isinstance(data, dict) else {}
            rows.append(_row(pki.mount, serial, data))
    return build_frame(rows, CERTIFICATE_ESTATE)


def _row(mount: str, serial: str, data: dict[str, Any]) -> dict[str, Any]:
    cert = _load_certificate(str(data.get("certificate") or ""))
    extensions = cert.extensions
    is_ca = False
    aki = ""
    for ext in extensions:
        value = ext.value
        if isinstance(value, x509.BasicConstraints):
            is_ca = value.ca
        elif isinstance(value, x509.AuthorityKeyIdentifier) and value.key_identifier:
            aki = value.key_identifier.hex()
    cn = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    revoked_at = int(data.get("revocation_time") or 0)
    return {
        "serial_number": serial,
        "mount": mount,
        "subject": cert.subject.rfc4514_string(),
        "common_name": str(cn[0].value) if cn else "",
        "sans": ", ".join(certificate_names(cert)),
        "issuer": cert.issuer.rfc4514_string(),
        "authority_key_id": aki,
        "not_before": cert.not_valid_before_utc,
        "not_after": cert.not_valid_after_utc,
        "revoked": bool(revoked_at),
        "revocation_time": datetime.fromtimestamp(revoked_at, UTC) if revoked_at else None,
        "is_ca": is_ca,
    }


# -- the views over a scan ------------------------------------------------------------------
Pieces = Spool | pd.DataFrame


@carries_coverage("estate.certificate_calendar")
def certificate_calendar(
    certs: Pieces, *, now: datetime, freq: str = "W", mounts: Iterable[str] = ()
) -> pd.DataFrame:
    """Certificates still valid and not revoked, by the period they expire in (``freq``:
    ``D``, ``W``, ``MS``) and mount: a row a period (index ``expires``, UTC), a column a
    mount (``int64`` counts). Every mount of ``mounts`` has its column, with no
    certificate to count as well: the columns do not depend on what was found."""
    total: pd.DataFrame | None = None
    for piece in scan_pieces(certs, ["mount", "not_after", "revoked"]):
        live = piece[(piece["not_after"] > now) & ~piece["revoked"].fillna(False).astype(bool)]
        if not len(live):
            continue
        period = live["not_after"].dt.tz_convert(UTC).dt.tz_localize(None).dt.to_period(freq)
        part = pd.crosstab(period.dt.start_time.dt.tz_localize(UTC), live["mount"].astype(object))
        total = part if total is None else total.add(part, fill_value=0)
    if total is None:
        total = pd.DataFrame(index=pd.DatetimeIndex([], tz=UTC, name="expires"))
    columns = list(dict.fromkeys([*mounts, *(str(c) for c in total.columns)]))
    total = total.reindex(columns=columns).fillna(0).astype("int64").sort_index()
    total.index = pd.DatetimeIndex(total.index, name="expires").as_unit("ns")
    total.columns.name = None
    return total


@carries_coverage("estate.tidy_candidates")
def tidy_candidates(
    certs: Pieces, *, now: datetime, safety_buffer: timedelta = timedelta(hours=72)
) -> pd.DataFrame:
    """The certificates a tidy (``tidy_cert_store``, ``tidy_revoked_certs``) would remove:
    expired more than ``safety_buffer`` ago, revoked or not. Columns ``mount``,
    ``subject``, ``not_after``, ``revoked``."""
    cutoff = now - safety_buffer
    parts = [
        piece[piece["not_after"] < cutoff]
        for piece in scan_pieces(certs, ["mount", "subject", "not_after", "revoked"])
    ]
    parts = [p for p in parts if len(p)]
    if not parts:
        return build_frame([], CERTIFICATE_ESTATE)[["mount", "subject", "not_after", "revoked"]]
    return pd.concat(parts).sort_values("not_after", kind="stable")


@carries_coverage("estate.roles_from_root")
def roles_from_root(issuers: pd.DataFrame, roles: pd.DataFrame) -> pd.DataFrame:
    """The roles whose ``issuer_ref`` (``default`` included) is a self-signed root:
    columns ``issuer_ref``, ``issuer_id``, ``issuer_subject``; index ``name``."""
    by_ref: dict[str, tuple[str, Any]] = {}
    for issuer_id, row in issuers.iterrows():
        by_ref[str(issuer_id)] = (str(issuer_id), row)
        if isinstance(row.get("issuer_name"), str) and row["issuer_name"]:
            by_ref[row["issuer_name"]] = (str(issuer_id), row)
        if bool(row.get("is_default")):
            by_ref["default"] = (str(issuer_id), row)
    rows = []
    for name, role in roles.iterrows():
        ref = str(role.get("issuer_ref") or "default")
        found = by_ref.get(ref)
        if found is not None and bool(found[1].get("self_signed")):
            rows.append(
                {
                    "name": name,
                    "issuer_ref": ref,
                    "issuer_id": found[0],
                    "issuer_subject": found[1]["subject"],
                }
            )
    schema = Schema.of("name issuer_ref issuer_id issuer_subject", index="name")
    return build_frame(rows, schema)


@carries_coverage("estate.outliving_issuer")
def outliving_issuer(certs: Pieces, issuers: pd.DataFrame) -> pd.DataFrame:
    """Certificates, not revoked, whose issuer (matched by subject; the soonest to
    expire of issuers sharing one) expires before they do: columns of the scan plus
    ``issuer_not_after``."""
    ends: dict[str, Any] = {}
    for _, row in issuers.iterrows():
        subject = row["subject"]
        if pd.notna(row["not_after"]) and (subject not in ends or row["not_after"] < ends[subject]):
            ends[subject] = row["not_after"]
    parts = []
    for piece in scan_pieces(certs, ["mount", "subject", "issuer", "not_after", "revoked"]):
        end = piece["issuer"].map(ends)
        mask = (
            end.notna() & (piece["not_after"] > end) & ~piece["revoked"].fillna(False).astype(bool)
        )
        if mask.any():
            part = piece[mask].copy()
            part["issuer_not_after"] = pd.to_datetime(end[mask], utc=True)
            parts.append(part)
    if not parts:
        empty = build_frame([], CERTIFICATE_ESTATE)[
            ["mount", "subject", "issuer", "not_after", "revoked"]
        ]
        empty["issuer_not_after"] = pd.Series([], dtype="datetime64[ns, UTC]")
        return empty
    return pd.concat(parts)


@carries_coverage("estate.crl_sizes")
def crl_sizes(
    http: HTTPLayer, mount: str, issuers: pd.DataFrame, *, limit: int = STORAGE_ENTRY_LIMIT
) -> pd.DataFrame:
    """Each issuer's complete CRL (``GET /pki/issuer/:ref/crl``): its size in bytes
    (DER, as stored) and entries against ``limit`` (1 MiB). ``status``: ``over the
    limit``, ``over half``, ``ok``, or what stopped the read."""
    from cryptography.hazmat.primitives.serialization import Encoding

    pki = _Mount(http, mount)
    cov = Coverage("pki.crl_sizes", asked=[f"{pki.mount}/issuer/{i}/crl" for i in issuers.index])
    rows = []
    for issuer_id, row in issuers.iterrows():
        size = entries = None
        try:
            pem = str(
                pki._read(pki._path("issuer/{issuer_id}/crl", issuer_id=str(issuer_id))).get("crl")
                or ""
            )
            crl = x509.load_pem_x509_crl(pem.encode())
            size = len(crl.public_bytes(Encoding.DER))
            entries = len(crl)
            status = (
                "over the limit" if size > limit else ("over half" if size > limit / 2 else "ok")
            )
        except APIError as exc:
            status = f"not read: {exc.status}"
            cov.note_error(f"{pki.mount}/issuer/{issuer_id}/crl", exc)
        except ValueError:
            status = "not read: the answer is not a PEM CRL"
            cov.note_gap(f"{pki.mount}/issuer/{issuer_id}/crl", None, "not a PEM CRL")
        rows.append(
            {
                "issuer_id": str(issuer_id),
                "mount": pki.mount,
                "issuer_name": row.get("issuer_name"),
                "crl_bytes": size,
                "entries": entries,
                "share_of_limit": size / limit if size is not None else None,
                "status": status,
            }
        )
    cov.note_read(sum(r["crl_bytes"] is not None for r in rows))
    return cov.attach(build_frame(rows, CRL_SIZES))


# -- every mount ------------------------------------------------------------------------------
@dataclass
class CertificateEstate:
    """Every PKI mount's certificates and what needs doing; :meth:`frame` loads them all."""

    spools: dict[str, Spool]
    issuers: pd.DataFrame
    roles: dict[str, pd.DataFrame]
    crl_sizes: pd.DataFrame
    now: datetime
    walk: Walk = field(default_factory=Walk)

    def __repr__(self) -> str:
        count = sum(s.rows for s in self.spools.values())
        return f"<CertificateEstate {count:,} certificates on {len(self.spools)} mounts>"

    def coverage(self) -> Coverage:
        """What the estate could read: the certificate walk of every mount, each
        mount's issuers and roles, and each issuer's CRL (:class:`toolkit.Coverage`)."""
        walked = Coverage.from_dict(
            self.walk.coverage("pki.certificate_estate", [f"{m}/" for m in self.spools])
        )
        parts = coverage_of([self.issuers, *self.roles.values(), self.crl_sizes])
        return Coverage.merged("pki.certificate_estate", [walked, *parts])

    def _carry(self, frame: pd.DataFrame, view: str) -> pd.DataFrame:
        """``frame`` with the estate's record under ``view``: a view of the estate
        is no more whole than what the estate read."""
        return carry(frame, self.coverage(), view=f"pki.certificate_estate.{view}")

    def frame(self) -> pd.DataFrame:
        empty = build_frame([], CERTIFICATE_ESTATE)
        parts = [s.frame(empty) for s in self.spools.values()]
        frame = pd.concat(parts) if len(parts) > 1 else (parts[0] if parts else empty)
        frame.attrs["coverage"] = self.coverage().as_dict()
        return frame

    def _all(self) -> list[pd.DataFrame]:
        return [p for s in self.spools.values() for p in s.pieces()]

    def calendar(self, freq: str = "W") -> pd.DataFrame:
        pieces = self._all()
        frame = certificate_calendar(
            pd.concat(pieces) if pieces else build_frame([], CERTIFICATE_ESTATE),
            now=self.now,
            freq=freq,
            mounts=list(self.spools),
        )
        return self._carry(frame, "calendar")

    def tidy(self, safety_buffer: timedelta = timedelta(hours=72)) -> pd.DataFrame:
        frame = _over_spools(
            self, lambda s: tidy_candidates(s, now=self.now, safety_buffer=safety_buffer)
        )
        return self._carry(frame, "tidy")

    def outliving_issuer(self) -> pd.DataFrame:
        frame = _over_spools(self, lambda s: outliving_issuer(s, self.issuers))
        return self._carry(frame, "outliving_issuer")

    def roles_from_root(self) -> pd.DataFrame:
        parts = [
            roles_from_root(self.issuers[self.issuers["mount"] == m], r).assign(mount=m)
            for m, r in self.roles.items()
        ]
        frame = pd.concat(parts) if parts else roles_from_root(self.issuers, pd.DataFrame())
        return self._carry(frame, "roles_from_root")


def _over_spools(estate: CertificateEstate, fn: Callable[[Pieces], pd.DataFrame]) -> pd.DataFrame:
    parts = [fn(s) for s in estate.spools.values()]
    if not parts:  # no PKI mount: the view's empty frame, with its columns
        return fn(build_frame([], CERTIFICATE_ESTATE))
    return pd.concat(parts) if len(parts) > 1 else parts[0]


def _joined(parts: list[pd.DataFrame], empty: pd.DataFrame, view: str) -> pd.DataFrame:
    """The mounts' frames as one, with one record merging theirs (``pd.concat`` keeps
    attributes only when all parts' are equal, so each part's gaps would be lost)."""
    frame = pd.concat(parts) if parts else empty
    return carry(frame, *parts, view=view) if parts else Coverage(view).attach(frame)


def certificate_estate(
    http: HTTPLayer,
    mounts: Iterable[str] | None = None,
    *,
    page: int = PAGE,
    checkpoint_dir: str | Path | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> CertificateEstate:
    """:func:`scan_certificates` of every PKI mount (``sys/mounts`` entries of type
    ``pki``, or ``mounts``), with each mount's issuers, roles and CRL sizes.
    ``checkpoint_dir`` keeps one checkpoint a mount, so a rerun resumes."""
    names = list(mounts) if mounts is not None else _pki_mounts(http)
    walk = Walk()
    spools: dict[str, Spool] = {}
    issuers, roles, sizes = [], {}, []
    for name in names:
        area = _Mount(http, name)
        point = None
        if checkpoint_dir is not None:
            point = Path(checkpoint_dir) / f"certificates-{name.strip('/').replace('/', '_')}.json"
        spools[area.mount] = scan_certificates(
            http, name, page=page, checkpoint=point, max_rows=max_rows, walk=walk
        )
        frame = area.issuers_frame().assign(mount=area.mount)
        issuers.append(frame)
        roles[area.mount] = area.roles_frame()
        sizes.append(crl_sizes(http, name, frame))
    all_issuers = _joined(issuers, pd.DataFrame(), "pki.issuers_frame")
    all_sizes = _joined(sizes, build_frame([], CRL_SIZES), "pki.crl_sizes")
    return CertificateEstate(spools, all_issuers, roles, all_sizes, http.server_now(), walk)


def _pki_mounts(http: HTTPLayer) -> list[str]:
    try:
        data = http.json("GET", "/sys/mounts")
    except APIError as exc:
        raise InputError(f"cannot list the mounts ({exc.status}): name the PKI mounts") from None
    table = data.get("data", data) if isinstance(data, dict) else {}
    return [
        path.rstrip("/")
        for path, entry in table.items()
        if isinstance(entry, dict) and entry.get("type") == "pki"
    ]
