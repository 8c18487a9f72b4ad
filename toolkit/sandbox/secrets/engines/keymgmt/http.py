"""HTTP for the key management engine (spec 4.6, part 2 'Managed key', 'KMS provider', part 3 'Key distribution'), relative to its mount; thin over :mod:`.state`.

Writes answer 204, reads ``data``, lists ``data.keys`` (404 with no errors
when there is nothing to list, as the real server answers an empty list).
A key or KMS provider that does not exist is 404; a refusal is 400 naming
the reason. ``POST`` and ``PUT`` are the same write, as on the real server;
a key or provider write needs ``create`` when it does not exist yet, else ``update``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from ....._time import format_rfc3339
from ... import fields
from ...errors import PathNotFound
from ...http import _base as web
from ...http._base import EngineRoute, SecretsRequest
from .state import (
    DEFAULT_PROTECTION,
    KEY_TYPES,
    Distribution,
    KeyManagementEngine,
    KmsProvider,
    ManagedKey,
)

# One route per path for all its methods, and lists that are 404 when empty:
# the helpers the credential engines use too.

__all__ = ["distribution_document", "key_document", "provider_document", "routes"]


def key_document(key: ManagedKey) -> dict[str, Any]:
    """The key as ``GET key/:name`` answers it; the material itself is never in it."""
    asymmetric = KEY_TYPES[key.type] is not None
    versions: dict[str, Any] = {}
    for number, version in sorted(key.versions.items()):
        entry: dict[str, Any] = {"creation_time": format_rfc3339(version.creation_time)}
        if asymmetric:
            entry["public_key"] = version.public_key
        versions[str(number)] = entry
    return {
        "deletion_allowed": key.deletion_allowed,
        "keys": versions,
        "latest_version": key.latest_version,
        "min_enabled_version": key.min_enabled_version,
        "name": key.name,
        "type": key.type,
    }


def provider_document(provider: KmsProvider) -> dict[str, Any]:
    """A KMS provider as ``GET kms/:name`` answers it (never its credentials)."""
    return {"key_collection": provider.key_collection, "provider": provider.provider}


def distribution_document(dist: Distribution) -> dict[str, Any]:
    """A key in a provider as ``GET kms/:name/key/:key_name`` answers it."""
    return {
        "name": dist.name,
        "protection": dist.protection,
        "purpose": list(dist.purpose),
        "versions": {str(v): ident for v, ident in sorted(dist.versions.items())},
    }


def _read(
    find: Callable[..., Any], render: Callable[[Any], dict[str, Any]], *names: str
) -> Response:
    """A read's ``data``; a missing one is 404 with no message, as the real server answers."""
    try:
        return web.envelope(render(find(*names)))
    except PathNotFound:
        raise PathNotFound() from None


_engine = web.engine_accessor(KeyManagementEngine)


# -- keys ---------------------------------------------------------------------------------
async def write_key(call: SecretsRequest) -> Response:
    """``POST|PUT key/:name``: create with ``type``, or update ``min_enabled_version``, ``deletion_allowed``."""
    body = call.body
    type_ = fields.string(body, "type", default=None)
    deletion = fields.boolean(body, "deletion_allowed") if "deletion_allowed" in body else None
    minimum = (
        fields.integer(body, "min_enabled_version")
        if body.get("min_enabled_version") not in (None, "")
        else None
    )
    _engine(call).write_key(
        call.params["name"],
        type=type_ or None,
        deletion_allowed=deletion,
        min_enabled_version=minimum,
    )
    return web.no_content()


async def read_key(call: SecretsRequest) -> Response:
    """``GET key/:name``: type, versions with creation time (and public key), settings."""
    return _read(_engine(call).read_key, key_document, call.params["name"])


async def list_keys(call: SecretsRequest) -> Response:
    """``LIST key``: the key names."""
    return web.listing(_engine(call).key_names())


async def delete_key(call: SecretsRequest) -> Response:
    """``DELETE key/:name``: refused while distributed or not deletion-allowed."""
    _engine(call).delete_key(call.params["name"])
    return web.no_content()


async def rotate_key(call: SecretsRequest) -> Response:
    """``POST|PUT key/:name/rotate``: a new version."""
    _engine(call).rotate(call.params["name"])
    return web.no_content()


async def list_key_providers(call: SecretsRequest) -> Response:
    """``LIST key/:name/kms``: the KMS providers holding the key."""
    return web.listing(_engine(call).key_providers(call.params["name"]))


# -- KMS providers ----------------------------------------------------------------------------
async def write_provider(call: SecretsRequest) -> Response:
    """``POST|PUT kms/:name``: ``provider``, ``key_collection`` (fixed after creation), ``credentials``."""
    body = call.body
    credentials = fields.string_map(body, "credentials")
    _engine(call).write_provider(
        call.params["name"],
        provider=fields.string(body, "provider"),
        key_collection=fields.string(body, "key_collection"),
        credentials=credentials,
    )
    return web.no_content()


async def read_provider(call: SecretsRequest) -> Response:
    """``GET kms/:name``: ``provider`` and ``key_collection`` (never the credentials)."""
    return _read(_engine(call).provider, provider_document, call.params["name"])


async def list_providers(call: SecretsRequest) -> Response:
    """``LIST kms``: the KMS provider names."""
    return web.listing(_engine(call).provider_names())


async def delete_provider(call: SecretsRequest) -> Response:
    """``DELETE kms/:name``: refused while the provider still holds keys."""
    _engine(call).delete_provider(call.params["name"])
    return web.no_content()


# -- distribution ---------------------------------------------------------------------------
async def distribute(call: SecretsRequest) -> Response:
    """``POST|PUT kms/:name/key/:key_name``: ``purpose`` (at least one), ``protection`` (``hsm``)."""
    body = call.body
    purpose = fields.string_list(body, "purpose", need=True)
    protection = fields.string(body, "protection", default=DEFAULT_PROTECTION) or (
        DEFAULT_PROTECTION
    )
    _engine(call).distribute(
        call.params["name"], call.params["key_name"], purpose=purpose, protection=protection
    )
    return web.no_content()


async def read_distribution(call: SecretsRequest) -> Response:
    """``GET kms/:name/key/:key_name``: ``name``, ``protection``, ``purpose``, ``versions``."""
    return _read(
        _engine(call).distribution,
        distribution_document,
        call.params["name"],
        call.params["key_name"],
    )


async def list_distributed(call: SecretsRequest) -> Response:
    """``LIST kms/:name/key``: the keys in the provider."""
    return web.listing(_engine(call).provider_keys(call.params["name"]))


async def remove_distribution(call: SecretsRequest) -> Response:
    """``DELETE kms/:name/key/:key_name``: out of the provider, still in the engine."""
    _engine(call).remove(call.params["name"], call.params["key_name"])
    return web.no_content()


def _key_exists(call: SecretsRequest) -> bool:
    return call.params["name"] in _engine(call).keys


def _provider_exists(call: SecretsRequest) -> bool:
    return call.params["name"] in _engine(call).providers


def routes() -> list[EngineRoute]:
    return [
        web.engine_route("key", list_keys, ["LIST"]),
        web.resource("key/{name}/rotate", {"POST": rotate_key}),
        web.engine_route("key/{name}/kms", list_key_providers, ["LIST"]),
        web.resource(
            "key/{name}",
            {"GET": read_key, "POST": write_key, "DELETE": delete_key},
            _key_exists,
        ),
        web.engine_route("kms", list_providers, ["LIST"]),
        web.engine_route("kms/{name}/key", list_distributed, ["LIST"]),
        web.resource(
            "kms/{name}/key/{key_name}",
            {"GET": read_distribution, "POST": distribute, "DELETE": remove_distribution},
        ),
        web.resource(
            "kms/{name}",
            {"GET": read_provider, "POST": write_provider, "DELETE": delete_provider},
            _provider_exists,
        ),
    ]
