"""HTTP for the certificate engine (spec 4.10), relative to its mount; thin over :mod:`..pki`.

Paths and answers follow the real server: role writes answer the role,
issue/sign answer ``data`` with no lease unless the role has
``generate_lease``; an unknown role or issuer is 400; a missing role or
certificate read is 404 with no errors; an empty list is 404. The
certificate reads (``ca``, ``ca/pem``, ``ca_chain``, ``cert/:serial``,
``issuer/:ref/{json,pem,der}``, ``LIST issuers``) need no token, as on the
real server. ``root/sign-self-issued`` needs ``sudo``; its per-issuer form does not.
"""

from __future__ import annotations

from collections.abc import Mapping

from cryptography.hazmat.primitives.serialization import Encoding
from starlette.responses import Response

from ..errors import SecretsError
from ..pki import PKI
from ..pki.x509 import load_cert
from ._base import (
    Call,
    EngineRoute,
    Handler,
    Rule,
    engine_route,
    envelope,
    listing,
    no_content,
    resource,
)

__all__ = ["routes"]

PEM_CHAIN = "application/pem-certificate-chain"
DER_CERT = "application/pkix-cert"


def _engine(call: Call) -> PKI:
    backend: PKI = call.backend
    return backend


def _listing_with_info(keys: list[str], key_info: Mapping[str, object]) -> Response:
    """A list with ``key_info`` beside ``keys`` (issuers, keys); 404 when empty."""
    if not keys:
        raise SecretsError(404)
    return envelope({"keys": keys, "key_info": dict(key_info)})


def _role_exists(call: Call) -> bool:
    return call.params["name"] in _engine(call).roles


def _public(path: str, handler: Handler, methods: list[str]) -> EngineRoute:
    """A route the real server answers without a token."""
    return EngineRoute(path, handler, Rule.of(methods, authenticated=False))


# -- roles --------------------------------------------------------------------------------
async def list_roles(call: Call) -> Response:
    return listing(list(_engine(call).roles))


async def read_role(call: Call) -> Response:
    role = _engine(call).role(call.params["name"])
    if role is None:
        raise SecretsError(404)
    return envelope(role)


async def write_role(call: Call) -> Response:
    data, warnings = _engine(call).write_role(call.params["name"], call.body)
    return envelope(data, warnings=warnings)


async def delete_role(call: Call) -> Response:
    _engine(call).delete_role(call.params["name"])
    return no_content()


# -- issue and sign -------------------------------------------------------------------------
async def issue(call: Call) -> Response:
    data, warnings, lease = _engine(call).issue(
        call.params["role"], call.body, call.params.get("ref")
    )
    return envelope(data, warnings=warnings, **lease)


async def sign(call: Call) -> Response:
    data, warnings, lease = _engine(call).sign(
        call.params["role"], call.body, call.params.get("ref")
    )
    return envelope(data, warnings=warnings, **lease)


async def sign_intermediate(call: Call) -> Response:
    data, warnings = _engine(call).sign_intermediate(call.body, call.params.get("ref", "default"))
    return envelope(data, warnings=warnings)


async def sign_self_issued(call: Call) -> Response:
    return envelope(_engine(call).sign_self_issued(call.body, call.params.get("ref", "default")))


# -- issuers and keys ---------------------------------------------------------------------
async def generate_root(call: Call) -> Response:
    data, warnings = _engine(call).generate_root(call.params["kind"], call.body)
    return envelope(data, warnings=warnings)


async def generate_intermediate(call: Call) -> Response:
    return envelope(_engine(call).generate_intermediate(call.params["kind"], call.body))


async def set_signed(call: Call) -> Response:
    text = str(call.body.get("certificate") or "")
    return envelope(_engine(call).import_bundle(text, "certificate", need_key=True))


async def import_bundle(call: Call) -> Response:
    text = str(call.body.get("pem_bundle") or "")
    return envelope(_engine(call).import_bundle(text, "pem_bundle", need_key=False))


async def list_issuers(call: Call) -> Response:
    keys, info = _engine(call).list_issuers()
    return _listing_with_info(keys, info)


async def read_issuer(call: Call) -> Response:
    engine = _engine(call)
    return envelope(engine.issuer_data(engine.resolve(call.params["ref"])))


async def update_issuer(call: Call) -> Response:
    return envelope(_engine(call).update_issuer(call.params["ref"], call.body))


async def issuer_json(call: Call) -> Response:
    engine = _engine(call)
    issuer = engine.resolve(call.params["ref"])
    return envelope(
        {
            "certificate": issuer.certificate,
            "ca_chain": engine.chain(issuer),
            "issuer_id": issuer.id,
            "issuer_name": issuer.name,
        }
    )


async def issuer_pem(call: Call) -> Response:
    return _raw(_engine(call).resolve(call.params["ref"]).certificate, "pem")


async def issuer_der(call: Call) -> Response:
    return _raw(_engine(call).resolve(call.params["ref"]).certificate, "der")


async def read_config_issuers(call: Call) -> Response:
    return envelope(_engine(call).config_issuers())


async def write_config_issuers(call: Call) -> Response:
    return envelope(_engine(call).set_config_issuers(call.body))


async def list_keys(call: Call) -> Response:
    engine = _engine(call)
    info = {k.id: {"key_name": k.name} for k in engine.keys.values()}
    return _listing_with_info(list(info), info)


async def read_key(call: Call) -> Response:
    engine = _engine(call)
    return envelope(engine.key_data(engine.resolve_key(call.params["ref"])))


# -- certificates ------------------------------------------------------------------------
async def list_certs(call: Call) -> Response:
    return listing(_engine(call).cert_serials())


async def read_cert(call: Call) -> Response:
    data = _engine(call).read_cert(call.params["serial"])
    if data is None:
        raise SecretsError(404)
    return envelope(data)


def _raw(pem: str, form: str) -> Response:
    """A certificate (or chain) as a raw body, without a trailing newline; 204 when none."""
    if not pem:
        return Response(status_code=204)
    if form == "der":
        return Response(load_cert(pem).public_bytes(Encoding.DER), media_type=DER_CERT)
    return Response(pem.strip(), media_type=PEM_CHAIN)


async def ca_der(call: Call) -> Response:
    chain = _engine(call).default_chain()
    return _raw(chain[0] if chain else "", "der")


async def ca_pem(call: Call) -> Response:
    chain = _engine(call).default_chain()
    return _raw(chain[0] if chain else "", "pem")


async def ca_chain(call: Call) -> Response:
    return _raw("\n".join(_engine(call).default_chain()), "pem")


def routes() -> list[EngineRoute]:
    return [
        engine_route("roles", list_roles, ["LIST"]),
        resource(
            "roles/{name}",
            {"GET": read_role, "POST": write_role, "DELETE": delete_role},
            _role_exists,
        ),
        engine_route("issue/{role}", issue, ["POST", "PUT"]),
        engine_route("sign/{role}", sign, ["POST", "PUT"]),
        engine_route("issuer/{ref}/issue/{role}", issue, ["POST", "PUT"]),
        engine_route("issuer/{ref}/sign/{role}", sign, ["POST", "PUT"]),
        engine_route("root/sign-intermediate", sign_intermediate, ["POST", "PUT"]),
        engine_route("issuer/{ref}/sign-intermediate", sign_intermediate, ["POST", "PUT"]),
        engine_route("root/sign-self-issued", sign_self_issued, ["POST", "PUT"], sudo=True),
        engine_route("issuer/{ref}/sign-self-issued", sign_self_issued, ["POST", "PUT"]),
        engine_route("root/generate/{kind}", generate_root, ["POST", "PUT"]),
        engine_route("issuers/generate/root/{kind}", generate_root, ["POST", "PUT"]),
        engine_route("intermediate/generate/{kind}", generate_intermediate, ["POST", "PUT"]),
        engine_route(
            "issuers/generate/intermediate/{kind}", generate_intermediate, ["POST", "PUT"]
        ),
        engine_route("intermediate/set-signed", set_signed, ["POST", "PUT"]),
        engine_route("issuers/import/bundle", import_bundle, ["POST", "PUT"]),
        engine_route("issuers/import/cert", import_bundle, ["POST", "PUT"]),
        _public("issuers", list_issuers, ["LIST"]),
        _public("issuer/{ref}/json", issuer_json, ["GET"]),
        _public("issuer/{ref}/pem", issuer_pem, ["GET"]),
        _public("issuer/{ref}/der", issuer_der, ["GET"]),
        resource("issuer/{ref}", {"GET": read_issuer, "POST": update_issuer}),
        resource("config/issuers", {"GET": read_config_issuers, "POST": write_config_issuers}),
        engine_route("keys", list_keys, ["LIST"]),
        engine_route("key/{ref}", read_key, ["GET"]),
        engine_route("certs", list_certs, ["LIST"]),
        _public("cert/{serial}", read_cert, ["GET"]),
        _public("ca", ca_der, ["GET"]),
        _public("ca/pem", ca_pem, ["GET"]),
        _public("ca_chain", ca_chain, ["GET"]),
    ]
