"""HTTP for the certificate engine (spec 4.10), relative to its mount; thin over :mod:`.engine`.

Paths and answers follow the real server: role writes answer the role,
issue/sign answer ``data`` with no lease unless the role has
``generate_lease``; an unknown role or issuer is 400; a missing role or
certificate read is 404 with no errors; an empty list is 404. The
certificate and CRL reads (``ca``, ``ca/pem``, ``ca_chain``, ``cert/:serial``,
``issuer/:ref/{json,pem,der,crl}``, ``crl``, ``crl/pem``, ``LIST issuers``) need
no token, as on the real server. Bodies are read into typed requests by
:mod:`.bodies`; the state never sees one. Answers are shaped by :mod:`.documents`. ``root/sign-self-issued`` needs ``sudo``; its per-issuer form does not.
"""

from __future__ import annotations

import base64
import bisect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from starlette.responses import Response

from ....._x509 import serial_storage_key
from ... import fields
from ...errors import InvalidRequest, PathNotFound
from ...http import _base as web
from ...http._base import EngineRoute, Handler, Rule, SecretsRequest
from ...http._credentials import lease_fields
from . import bodies
from .documents import (
    cert_document,
    config_issuers_document,
    crl_config_document,
    imported_document,
    intermediate_document,
    issued_document,
    issuer_document,
    key_document,
    revoked_document,
    role_document,
    root_document,
    tidy_status_document,
    urls_document,
)
from .engine import PKIEngine
from .requests import Output
from .state import Issued
from .x509 import cert_pem, format_serial, load_cert

if TYPE_CHECKING:
    from ...leases import Lease

__all__ = ["routes"]

PEM_CHAIN = "application/pem-certificate-chain"
DER_CERT = "application/pkix-cert"
CRL_DER = "application/pkix-crl"
CRL_PEM = "application/x-pem-file"


_engine = web.engine_accessor(PKIEngine)


def _listing_with_info(keys: list[str], key_info: Mapping[str, object]) -> Response:
    """A list with ``key_info`` beside ``keys`` (issuers, keys); 404 when empty."""
    if not keys:
        raise PathNotFound()
    return web.envelope({"keys": keys, "key_info": dict(key_info)})


def _role_exists(call: SecretsRequest) -> bool:
    return call.params["name"] in _engine(call).roles


def _public(path: str, handler: Handler, methods: list[str]) -> EngineRoute:
    """A route the real server answers without a token."""
    return EngineRoute(path, handler, Rule.of(methods, authenticated=False))


# -- roles --------------------------------------------------------------------------------
async def list_roles(call: SecretsRequest) -> Response:
    return web.listing(list(_engine(call).roles))


async def read_role(call: SecretsRequest) -> Response:
    role = _engine(call).role(call.params["name"])
    if role is None:
        raise PathNotFound()
    return web.envelope(role_document(role))


async def write_role(call: SecretsRequest) -> Response:
    role, warnings = _engine(call).write_role(call.params["name"], bodies.role_values(call.body))
    return web.envelope(role_document(role), warnings=warnings)


async def delete_role(call: SecretsRequest) -> Response:
    _engine(call).delete_role(call.params["name"])
    return web.no_content()


# -- issue and sign -------------------------------------------------------------------------
def _issued(
    engine: PKIEngine, output: Output, made: tuple[Issued, list[str], Lease | None]
) -> Response:
    """The answer of issue, sign and sign-verbatim: the certificate, and the lease when the
    role asks for one. Each handler reads ``output`` before the engine acts: a bad format
    changes nothing."""
    issued, warnings, lease = made
    return web.envelope(
        issued_document(engine, issued, output), warnings=warnings, **lease_fields(lease)
    )


async def issue(call: SecretsRequest) -> Response:
    body, engine = call.body, _engine(call)
    output = bodies.output(body)
    made = engine.issue(
        call.params["role"],
        bodies.names(body),
        validity=bodies.validity(body),
        key=bodies.key_request("internal", body),
        issuer_ref=call.params.get("ref"),
    )
    return _issued(engine, output, made)


async def sign(call: SecretsRequest) -> Response:
    body, engine = call.body, _engine(call)
    output = bodies.output(body, with_key=False)
    made = engine.sign(
        call.params["role"],
        bodies.csr(body),
        bodies.names(body),
        validity=bodies.validity(body),
        issuer_ref=call.params.get("ref"),
    )
    return _issued(engine, output, made)


async def sign_verbatim(call: SecretsRequest) -> Response:
    body, engine = call.body, _engine(call)
    output = bodies.output(body, with_key=False)
    made = engine.sign_verbatim(
        bodies.csr(body),
        bodies.verbatim_options(body),
        validity=bodies.validity(body),
        role_name=call.params.get("role"),
        issuer_ref=call.params.get("ref"),
    )
    return _issued(engine, output, made)


async def sign_intermediate(call: SecretsRequest) -> Response:
    body = call.body
    output = bodies.output(body, with_key=False)
    engine = _engine(call)
    issued, warnings = engine.sign_intermediate(
        bodies.csr(body),
        bodies.names(body),
        options=bodies.ca_options(body),
        validity=bodies.validity(body),
        issuer_ref=call.params.get("ref", "default"),
    )
    return web.envelope(issued_document(engine, issued, output), warnings=warnings)


async def sign_self_issued(call: SecretsRequest) -> Response:
    body = call.body
    submitted = bodies.certificate(body)
    signed = _engine(call).sign_self_issued(
        submitted,
        require_matching_certificate_algorithms=fields.boolean(
            body, "require_matching_certificate_algorithms"
        ),
        issuer_ref=call.params.get("ref", "default"),
    )
    return web.envelope(
        {"certificate": cert_pem(signed.cert), "issuing_ca": signed.signer.certificate}
    )


# -- issuers and keys ---------------------------------------------------------------------
async def generate_root(call: SecretsRequest) -> Response:
    body = call.body
    output = bodies.output(body)
    made, warnings = _engine(call).generate_root(
        bodies.key_request(call.params["kind"], body),
        bodies.names(body),
        options=bodies.ca_options(body),
        validity=bodies.validity(body),
        issuer_name=fields.string(body, "issuer_name"),
    )
    return web.envelope(root_document(made, output), warnings=warnings)


async def generate_intermediate(call: SecretsRequest) -> Response:
    body = call.body
    output = bodies.output(body)
    made = _engine(call).generate_intermediate(
        bodies.key_request(call.params["kind"], body), bodies.names(body)
    )
    return web.envelope(intermediate_document(made, output))


async def set_signed(call: SecretsRequest) -> Response:
    text = fields.string(call.body, "certificate")
    return web.envelope(
        imported_document(_engine(call).import_bundle(text, "certificate", need_key=True))
    )


async def import_bundle(call: SecretsRequest) -> Response:
    text = fields.string(call.body, "pem_bundle")
    return web.envelope(
        imported_document(_engine(call).import_bundle(text, "pem_bundle", need_key=False))
    )


async def list_issuers(call: SecretsRequest) -> Response:
    engine = _engine(call)
    info = {
        i.id: {
            "issuer_name": i.name,
            "is_default": i.id == engine.default_issuer,
            "serial_number": format_serial(i.cert.serial_number),
            "key_id": i.key_id,
        }
        for i in engine.list_issuers()
    }
    return _listing_with_info(list(info), info)


async def read_issuer(call: SecretsRequest) -> Response:
    engine = _engine(call)
    return web.envelope(issuer_document(engine, engine.resolve(call.params["ref"])))


async def update_issuer(call: SecretsRequest) -> Response:
    engine = _engine(call)
    issuer = engine.update_issuer(call.params["ref"], **bodies.issuer_update(call.body))
    return web.envelope(issuer_document(engine, issuer))


async def delete_issuer(call: SecretsRequest) -> Response:
    """``DELETE issuer/:ref``: 200 with no data (warnings when it was the default)."""
    warnings = _engine(call).delete_issuer(call.params["ref"])
    return web.envelope(None, warnings=warnings or None)


async def issuer_json(call: SecretsRequest) -> Response:
    engine = _engine(call)
    issuer = engine.resolve(call.params["ref"])
    return web.envelope(
        {
            "certificate": issuer.certificate,
            "ca_chain": engine.chain(issuer),
            "issuer_id": issuer.id,
            "issuer_name": issuer.name,
        }
    )


async def issuer_pem(call: SecretsRequest) -> Response:
    return _raw(_engine(call).resolve(call.params["ref"]).certificate, "pem")


async def issuer_der(call: SecretsRequest) -> Response:
    return _raw(_engine(call).resolve(call.params["ref"]).certificate, "der")


async def read_config_issuers(call: SecretsRequest) -> Response:
    return web.envelope(config_issuers_document(_engine(call)))


async def write_config_issuers(call: SecretsRequest) -> Response:
    body = call.body
    follows = (
        fields.boolean(body, "default_follows_latest_issuer")
        if "default_follows_latest_issuer" in body
        else None
    )
    engine = _engine(call)
    engine.set_config_issuers(fields.string(body, "default"), follows)
    return web.envelope(config_issuers_document(engine))


async def list_keys(call: SecretsRequest) -> Response:
    engine = _engine(call)
    default_key = engine.default_key_id()
    info = {
        k.id: {"key_name": k.name, "is_default": k.id == default_key} for k in engine.keys.values()
    }
    return _listing_with_info(list(info), info)


async def read_key(call: SecretsRequest) -> Response:
    engine = _engine(call)
    return web.envelope(key_document(engine.resolve_key(call.params["ref"])))


async def delete_key(call: SecretsRequest) -> Response:
    _engine(call).delete_key(call.params["ref"])
    return web.no_content()


async def generate_key(call: SecretsRequest) -> Response:
    """``POST keys/generate/internal|exported``; ``kms`` needs a KMS the sandbox does not have."""
    kind = call.params["kind"]
    if kind == "kms":
        raise InvalidRequest('"external_key_ref" is required for kms typed key generation')
    if kind not in ("internal", "exported"):
        raise PathNotFound("unsupported path")
    stored, exported = _engine(call).generate_key(bodies.key_request(kind, call.body))
    data: dict[str, Any] = {"key_id": stored.id, "key_name": stored.name, "key_type": stored.type}
    if kind == "exported":
        data["private_key"] = exported
    return web.envelope(data)


# -- certificates ------------------------------------------------------------------------
async def list_certs(call: SecretsRequest) -> Response:
    """``LIST certs``, paged as OpenBao pages it: ``after`` (keys sorted after it) and
    ``limit`` (at most that many; none, 0 or less: all). As OpenBao, ``after`` is
    compared with the storage keys, the serials' bytes joined by hyphens, though
    the list shows them joined by colons."""
    serials = _engine(call).sorted_cert_serials()
    after = call.query.get("after")
    start = bisect.bisect_right(serials, after, key=serial_storage_key) if after else 0
    raw = call.query.get("limit")
    if raw not in (None, ""):
        try:
            limit = int(raw)
        except ValueError:
            raise InvalidRequest(f"limit: {raw!r} is not a whole number") from None
        if limit > 0:
            return web.listing(serials[start : start + limit])
    return web.listing(serials[start:])


async def list_revoked(call: SecretsRequest) -> Response:
    return web.paged_listing(call, _engine(call).revoked_serials())


async def read_cert(call: SecretsRequest) -> Response:
    serial = call.params["serial"]
    if serial in ("crl", "delta-crl"):
        return _crl_json(call, None, delta=serial == "delta-crl", key="certificate")
    engine = _engine(call)
    if serial in ("ca", "ca_chain"):
        # The default issuer's certificate, or its whole chain.
        chain = engine.default_chain()
        if not chain:
            raise PathNotFound()
        data: dict[str, Any] = {
            "certificate": "\n".join(chain) if serial == "ca_chain" else chain[0],
            "revocation_time": 0,
            "revocation_time_rfc3339": "",
        }
        if serial == "ca_chain":
            data["ca_chain"] = data["certificate"]
        return web.envelope(data)
    kept = engine.read_cert(serial)
    if kept is None:
        raise PathNotFound()
    return web.envelope(cert_document(kept))


def _raw(pem: str, form: str) -> Response:
    """A certificate (or chain) as a raw body, without a trailing newline; 204 when none."""
    if not pem:
        return Response(status_code=204)
    if form == "der":
        return Response(load_cert(pem).public_bytes(Encoding.DER), media_type=DER_CERT)
    return Response(pem.strip(), media_type=PEM_CHAIN)


async def ca_der(call: SecretsRequest) -> Response:
    chain = _engine(call).default_chain()
    return _raw(chain[0] if chain else "", "der")


async def ca_pem(call: SecretsRequest) -> Response:
    chain = _engine(call).default_chain()
    return _raw(chain[0] if chain else "", "pem")


async def ca_chain(call: SecretsRequest) -> Response:
    return _raw("\n".join(_engine(call).default_chain()), "pem")


# -- revocation ----------------------------------------------------------------------------
async def revoke(call: SecretsRequest) -> Response:
    body = call.body
    serial = fields.string(body, "serial_number")
    certificate = bodies.certificate(body) if body.get("certificate") else None
    kept = _engine(call).revoke(serial or None, certificate)
    return web.envelope(revoked_document(kept))


async def read_crl_config(call: SecretsRequest) -> Response:
    return web.envelope(crl_config_document(_engine(call).crl_config))


async def write_crl_config(call: SecretsRequest) -> Response:
    engine = _engine(call)
    config = engine.set_crl_config(bodies.crl_config(call.body, engine.crl_config))
    return web.envelope(crl_config_document(config))


async def read_urls(call: SecretsRequest) -> Response:
    return web.envelope(urls_document(_engine(call).urls))


async def write_urls(call: SecretsRequest) -> Response:
    engine = _engine(call)
    return web.envelope(urls_document(engine.set_urls(bodies.url_config(call.body, engine.urls))))


def _crl_raw(call: SecretsRequest, *, delta: bool, form: str) -> Response:
    """The default issuer's CRL as DER or PEM; 204 when the mount has no default issuer."""
    pem = _engine(call).crl_pem(None, delta=delta)
    if not pem:
        return Response(status_code=204, media_type=CRL_DER if form == "der" else CRL_PEM)
    if form == "der":
        der = x509.load_pem_x509_crl(pem.encode()).public_bytes(Encoding.DER)
        return Response(der, media_type=CRL_DER)
    return Response(pem + "\n", media_type=CRL_PEM)


async def crl_der(call: SecretsRequest) -> Response:
    return _crl_raw(call, delta=False, form="der")


async def crl_pem(call: SecretsRequest) -> Response:
    return _crl_raw(call, delta=False, form="pem")


async def delta_crl_der(call: SecretsRequest) -> Response:
    return _crl_raw(call, delta=True, form="der")


async def delta_crl_pem(call: SecretsRequest) -> Response:
    return _crl_raw(call, delta=True, form="pem")


def _crl_json(call: SecretsRequest, ref: str | None, *, delta: bool, key: str) -> Response:
    engine = _engine(call)
    if ref is not None:
        engine.resolve(ref)
    pem = engine.crl_pem(ref, delta=delta)
    if not pem:
        # The real server answers 500 here; a missing default issuer is the caller's to fix.
        raise InvalidRequest("no default issuer currently configured")
    if key == "certificate":
        return web.envelope({key: pem, "revocation_time": 0, "revocation_time_rfc3339": ""})
    return web.envelope({key: pem + "\n"})


async def issuer_crl(call: SecretsRequest) -> Response:
    return _crl_json(call, call.params["ref"], delta=False, key="crl")


async def issuer_delta_crl(call: SecretsRequest) -> Response:
    return _crl_json(call, call.params["ref"], delta=True, key="crl")


async def rotate_crl(call: SecretsRequest) -> Response:
    return web.envelope({"success": True}, warnings=_engine(call).rotate() or None)


async def rotate_delta_crl(call: SecretsRequest) -> Response:
    return web.envelope({"success": True}, warnings=_engine(call).rotate_delta() or None)


async def sign_revocation_list(call: SecretsRequest) -> Response:
    body = call.body
    crl_number = fields.integer(body, "crl_number", 0)
    delta_base = fields.integer(body, "delta_crl_base_number", -1)
    next_update = fields.duration(body, "next_update", 72 * 3600)
    revoked = bodies.revoked_entries(body)
    form = fields.string(body, "format", "pem") or "pem"
    if form not in ("pem", "der"):
        raise InvalidRequest(f'format: must be "pem" or "der", got {form!r}')
    pem = _engine(call).sign_revocation_list(
        call.params["ref"],
        crl_number=crl_number,
        delta_crl_base_number=delta_base,
        next_update=next_update,
        revoked=revoked,
    )
    if form == "der":
        der = x509.load_pem_x509_crl(pem.encode()).public_bytes(Encoding.DER)
        return web.envelope({"crl": base64.b64encode(der).decode()})
    return web.envelope({"crl": pem + "\n"})


# -- tidy ------------------------------------------------------------------------------------
async def tidy(call: SecretsRequest) -> Response:
    """``POST tidy``: 202 with the real server's warning; the tidy has run by then."""
    warnings = _engine(call).tidy(bodies.tidy_request(call.body))
    return web.envelope(None, status=202, warnings=warnings)


async def tidy_status(call: SecretsRequest) -> Response:
    engine = _engine(call)
    return web.envelope(tidy_status_document(engine.tidy_status(), engine.mount.uuid))


async def tidy_cancel(call: SecretsRequest) -> Response:
    return web.envelope(None, warnings=_engine(call).tidy_cancel())


def routes() -> list[EngineRoute]:
    return [
        web.engine_route("roles", list_roles, ["LIST"]),
        web.resource(
            "roles/{name}",
            {"GET": read_role, "POST": write_role, "DELETE": delete_role},
            _role_exists,
        ),
        web.engine_route("issue/{role}", issue, ["POST", "PUT"]),
        web.engine_route("sign/{role}", sign, ["POST", "PUT"]),
        web.engine_route("issuer/{ref}/issue/{role}", issue, ["POST", "PUT"]),
        web.engine_route("issuer/{ref}/sign/{role}", sign, ["POST", "PUT"]),
        web.engine_route("root/sign-intermediate", sign_intermediate, ["POST", "PUT"]),
        web.engine_route("issuer/{ref}/sign-intermediate", sign_intermediate, ["POST", "PUT"]),
        web.engine_route("root/sign-self-issued", sign_self_issued, ["POST", "PUT"], sudo=True),
        web.engine_route("issuer/{ref}/sign-self-issued", sign_self_issued, ["POST", "PUT"]),
        web.engine_route("root/generate/{kind}", generate_root, ["POST", "PUT"]),
        web.engine_route("issuers/generate/root/{kind}", generate_root, ["POST", "PUT"]),
        web.engine_route("intermediate/generate/{kind}", generate_intermediate, ["POST", "PUT"]),
        web.engine_route(
            "issuers/generate/intermediate/{kind}", generate_intermediate, ["POST", "PUT"]
        ),
        web.engine_route("intermediate/set-signed", set_signed, ["POST", "PUT"]),
        web.engine_route("issuers/import/bundle", import_bundle, ["POST", "PUT"]),
        web.engine_route("issuers/import/cert", import_bundle, ["POST", "PUT"]),
        _public("issuers", list_issuers, ["LIST"]),
        _public("issuer/{ref}/json", issuer_json, ["GET"]),
        _public("issuer/{ref}/pem", issuer_pem, ["GET"]),
        _public("issuer/{ref}/der", issuer_der, ["GET"]),
        web.resource(
            "issuer/{ref}", {"GET": read_issuer, "POST": update_issuer, "DELETE": delete_issuer}
        ),
        web.resource("config/issuers", {"GET": read_config_issuers, "POST": write_config_issuers}),
        web.engine_route("keys", list_keys, ["LIST"]),
        web.resource("key/{ref}", {"GET": read_key, "DELETE": delete_key}),
        web.engine_route("keys/generate/{kind}", generate_key, ["POST", "PUT"]),
        web.engine_route("certs", list_certs, ["LIST"]),
        web.engine_route("certs/revoked", list_revoked, ["LIST"]),
        web.engine_route("sign-verbatim", sign_verbatim, ["POST", "PUT"]),
        web.engine_route("sign-verbatim/{role}", sign_verbatim, ["POST", "PUT"]),
        web.engine_route("issuer/{ref}/sign-verbatim", sign_verbatim, ["POST", "PUT"]),
        web.engine_route("issuer/{ref}/sign-verbatim/{role}", sign_verbatim, ["POST", "PUT"]),
        web.engine_route("revoke", revoke, ["POST", "PUT"]),
        web.resource("config/crl", {"GET": read_crl_config, "POST": write_crl_config}),
        web.resource("config/urls", {"GET": read_urls, "POST": write_urls}),
        _public("crl", crl_der, ["GET"]),
        _public("crl/pem", crl_pem, ["GET"]),
        _public("crl/delta", delta_crl_der, ["GET"]),
        _public("crl/delta/pem", delta_crl_pem, ["GET"]),
        _public("issuer/{ref}/crl", issuer_crl, ["GET"]),
        _public("issuer/{ref}/crl/delta", issuer_delta_crl, ["GET"]),
        web.engine_route("crl/rotate", rotate_crl, ["GET"]),
        web.engine_route("crl/rotate-delta", rotate_delta_crl, ["GET"]),
        web.engine_route(
            "issuer/{ref}/sign-revocation-list", sign_revocation_list, ["POST", "PUT"]
        ),
        web.engine_route("tidy", tidy, ["POST", "PUT"]),
        web.engine_route("tidy-status", tidy_status, ["GET"]),
        web.engine_route("tidy-cancel", tidy_cancel, ["POST", "PUT"]),
        _public("cert/{serial}", read_cert, ["GET"]),
        _public("ca", ca_der, ["GET"]),
        _public("ca/pem", ca_pem, ["GET"]),
        _public("ca_chain", ca_chain, ["GET"]),
    ]
