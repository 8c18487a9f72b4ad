"""What every secrets-server area shares: the HTTP layer, listing, envelopes.

The server answers in two shapes (spec part 1, convention 4): the envelope
``request_id, lease_id, renewable, lease_duration, data, wrap_info, warnings,
auth``, or the fields bare. :func:`unwrap` gives the fields either way, and
:func:`warnings_of` the envelope's warnings. Lists use the ``LIST`` method;
a server (or proxy) that refuses it gets ``GET ?list=true`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self

from .._area import Area
from .._coverage import Coverage
from .._errors import APIError, DecodeError, MissingField, NotFound
from .._http import HTTPLayer, Request, api_path, decode_json, segments
from .._http.policy import api_error
from .._http.response import Response
from .._masking import Sensitive
from .._records import Record
from .._reprs import area_repr

__all__ = [
    "SecretsArea",
    "ENVELOPE_KEYS",
    "EngineArea",
    "Names",
    "fields_of",
    "is_envelope",
    "list_keys",
    "list_keys_of",
    "records_of",
    "listed_keys",
    "unwrap",
    "warnings_of",
]

# What a ``list_*`` call returns (docs/decisions.md, "Names"): the areas annotate with it.
Names = list[str]

ENVELOPE_KEYS = frozenset(
    {"request_id", "lease_id", "renewable", "lease_duration", "data", "wrap_info", "warnings"}
)


def is_envelope(payload: Any) -> bool:
    """True when ``payload`` is the standard response envelope."""
    # A decoded answer is a dict: that test is a tenth of the Mapping one.
    return (
        (type(payload) is dict or isinstance(payload, Mapping))
        and "data" in payload
        and "request_id" in payload
    )


# What a lookup answers for a record gone since it was listed (expired, revoked):
# OpenBao says 400 for an accessor ("invalid accessor"); 404 is taken as well.
# Views leave such a record out.
GONE = frozenset({400, 404})


def lookup_requests(
    path: str, field: str, values: Sequence[str], ok_statuses: frozenset[int] = GONE
) -> list[Request]:
    """One read-only ``POST path`` a value, ``{field: value}`` as its body: lookups
    the server takes only as POST, repeatable, a gone record answered (:data:`GONE`;
    :data:`GONE_OR_REFUSED` to take refusals back too)."""
    return [
        Request("POST", path, json={field: v}, idempotent=True, ok_statuses=ok_statuses)
        for v in values
    ]


class Fields(dict[str, Any]):
    """An answer's fields: a missing one read with ``fields["name"]`` is a
    :class:`~toolkit.MissingField` naming it (the answer is not what the API
    promises), never a bare KeyError."""

    def __missing__(self, key: str) -> Any:
        raise MissingField(f"the server's answer has no {str(key)[:60]!r} field")


# What a fan-out of lookups takes back as answers: a gone record, or one refused
# (a 403 noted as a gap by :func:`skipped`).
GONE_OR_REFUSED = GONE | {403}


def error_of(http: HTTPLayer, response: Response) -> APIError:
    """The error an answer taken back (``ok_statuses``) stands for, the client's
    credentials masked in the server's words as in the layer's own errors."""
    return api_error(response, response.method, response.url, http.credentials())


def skipped(cov: Coverage, path: str, response: Response, http: HTTPLayer) -> bool:
    """Whether a lookup's answer gives no row: a record gone since it was listed
    (:data:`GONE`), or one refused (403), which ``cov`` notes as a gap."""
    status = response.status_code
    if status < 300:
        return False
    if status == 403:
        cov.note_error(path, error_of(http, response))
    return True


def unwrap(payload: Any) -> dict[str, Any]:
    """The answer's fields: ``data`` of an envelope, else the payload itself ({} for none).

    An answer, or a ``data``, that is not an object is a :class:`DecodeError`.
    """
    if payload is None:
        return Fields()
    if is_envelope(payload):
        data = payload.get("data")
        if data is None:
            return Fields()
        if not isinstance(data, Mapping):
            raise DecodeError("the server's answer has a 'data' that is not an object")
        return Fields(data)
    if not isinstance(payload, Mapping):
        raise DecodeError("the server's answer is not a JSON object")
    return Fields(payload)


def warnings_of(payload: Any) -> list[str]:
    """The envelope's ``warnings`` (an empty list when there are none)."""
    warnings = payload.get("warnings") if isinstance(payload, Mapping) else None
    if not warnings:
        return []
    if not isinstance(warnings, list):
        raise DecodeError("the server's answer has 'warnings' that are not a list")
    return [str(w) for w in warnings]


def lease_of(payload: Any) -> dict[str, Any]:
    """The envelope's lease fields: ``lease_id``, ``renewable``, ``lease_duration``."""
    if not is_envelope(payload):
        return {}
    return {k: payload.get(k) for k in ("lease_id", "renewable", "lease_duration")}


def list_keys(http: HTTPLayer, path: str) -> list[str]:
    """The names under ``path``: ``LIST path``, or ``GET path?list=true`` where LIST is refused.

    Keys come from ``data.keys`` or, for the policy endpoints, top-level ``keys``.
    An empty folder answers 404 with no message on the real server (``{"errors":[]}``):
    that is an empty list here. Any other 404 is raised by the client's layer
    (:func:`refuse_missing`): ``namespace not found``
    (:class:`~toolkit.NamespaceNotFound`), ``no handler for route`` (nothing mounted
    there, :class:`~toolkit.MountNotFound`).
    """
    return list_keys_of(http, [path])[0]


def list_keys_of(http: HTTPLayer, paths: Sequence[str]) -> list[list[str]]:
    """:func:`list_keys` of each path, the paths listed concurrently."""
    calls = [Request("LIST", p, ok_statuses=_LIST_REFUSED) for p in paths]
    found: list[list[str]] = []
    for path, response in zip(paths, http.many(calls), strict=True):
        if response.status_code == 405:
            try:
                payload = http.json("GET", path, params={"list": "true"})
            except NotFound as exc:
                if type(exc) is not NotFound or exc.messages:
                    raise
                payload = None
        elif response.status_code == 404:
            # An empty folder answers {"errors":[]} (the layer raised for a missing
            # namespace or mount). A 404 with words ("unsupported path": a mount of
            # another engine) is not one.
            error = error_of(http, response)
            if error.messages:
                explained = getattr(http, "explained", None)
                raise explained(error) if explained is not None else error
            payload = None
        else:
            payload = decode_json(response, "LIST")
        found.append(_keys(payload))
    return found


def require_mounts(http: HTTPLayer, mounts: Sequence[str]) -> bool:
    """Raise :class:`~toolkit.MountNotFound` naming each of ``mounts`` that nothing is
    mounted at (``sys/mounts`` and ``sys/auth``), for a view that walks a tree where a
    missing mount looks like an empty folder (the lease lookup tree answers
    ``{"errors":[]}`` for any prefix). When the token may not read the mount tables
    the names cannot be checked: nothing is raised, and False is returned (the
    caller notes it as a gap)."""
    from .._errors import MountNotFound, PermissionDenied, TokenRefused

    known: list[str] = []
    for path, prefix in (("/sys/mounts", ""), ("/sys/auth", "auth/")):
        try:
            data = unwrap(http.json("GET", path))
        except TokenRefused:
            raise
        except PermissionDenied:
            return False
        known.extend(prefix + k for k in data if k.endswith("/"))
    for mount in mounts:
        wanted = mount.strip("/") + "/"
        if not any(wanted == k or wanted.startswith(k) for k in known):
            missing = MountNotFound(
                404,
                [f"nothing is mounted at {wanted!r}"],
                method="GET",
                url=http.address + http.api_prefix + "/sys/mounts",
            )
            missing.mount = wanted
            missing.hint = "check the mount's name: `client.mounts()` lists the mounted engines"
            raise missing
    return True


# What a 404 says when the thing asked for is not a record or folder that is
# missing or empty, but the place itself: OpenBao's words for each.
_MISSING_PLACE = (b"namespace not found", b"no handler for route")


def refuse_missing(http: HTTPLayer, response: Response) -> None:
    """Raise for a 404 that names a missing namespace or mount, even where the caller
    takes 404 back as an answer (an empty folder, ``{"errors":[]}``; a record gone).

    The one place where the secrets client tells them apart: its layer calls this
    on every 404 taken back (``ExplainingLayer.check_404``), so the LIST helper,
    the lease walker and every lookup fan-out raise
    :class:`~toolkit.NamespaceNotFound` or :class:`~toolkit.MountNotFound`
    instead of reading nothing."""
    content = response.content
    if not content or not any(words in content for words in _MISSING_PLACE):
        return
    error = error_of(http, response)
    explained = getattr(http, "explained", None)
    raise explained(error) if explained is not None else error


# Answers to LIST that are not errors: 404 (an empty folder), 405 (LIST refused).
_LIST_REFUSED = frozenset({404, 405})


def _keys(payload: Any) -> list[str]:
    if payload is None:
        return []
    data = unwrap(payload)
    keys = data.get("keys")
    if keys is None and isinstance(payload, Mapping):
        keys = payload.get("keys")
    return listed_keys(keys)


def listed_keys(keys: Any, field: str = "keys") -> list[str]:
    """A list of names in an answer (a LIST's ``keys``, a token's ``policies``; or an
    object keyed by them), checked: anything but text is a :class:`DecodeError`,
    never a name made up from it."""
    if keys is None:
        return []
    if isinstance(keys, Mapping):
        keys = list(keys)
    if not isinstance(keys, list) or not all(type(k) is str for k in keys):
        raise DecodeError(f"the server's answer has {field!r} that are not a list of names")
    return keys


def records_of(value: Any, field: str) -> list[Fields]:
    """A list of objects in an answer (``[]`` for none), or a :class:`DecodeError`."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise DecodeError(f"the server's answer has {field!r} that are not a list of objects")
    return [Fields(v) for v in value]


def fields_of(value: Any, field: str) -> Fields:
    """An object nested in an answer (``{}`` for none), or a :class:`DecodeError`."""
    if value is None:
        return Fields()
    if not isinstance(value, Mapping):
        raise DecodeError(f"the server's answer has a {field!r} that is not an object")
    return Fields(value)


def hide(record: dict[str, Any], *fields: str, label: str = "secret") -> dict[str, Any]:
    """Wrap ``fields`` of ``record`` (strings, or lists of strings) in :class:`Sensitive`."""
    for name in fields:
        value = record.get(name)
        if isinstance(value, str) and value:
            record[name] = Sensitive(value, label)
        elif isinstance(value, list):
            record[name] = [Sensitive(v, label) if isinstance(v, str) else v for v in value]
    return record


class SecretsArea(Area):
    """One API area of the secrets server: its calls share the client's HTTP layer."""

    SERVICE = "secrets server"

    def _read(self, path: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return unwrap(self._http.json("GET", path, params=params))

    def _send(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        idempotent: bool | None = None,
        check: str = "",
    ) -> Any:
        return self._http.json(method, path, json=body, idempotent=idempotent, check=check)

    def _list(self, path: str) -> list[str]:
        return list_keys(self._http, path)

    @staticmethod
    def _record(data: Mapping[str, Any], kind: str) -> Record:
        return Record(dict(data), kind=kind)


class EngineArea(SecretsArea):
    """A secrets engine's calls, against one mount path.

    Each engine has a default mount (the spec's path), the name of its line in
    the client's registry (:class:`~.engines.EngineAreas`) and of the client's
    attribute; :meth:`at` gives the same calls against an engine mounted
    elsewhere: ``client.database.at("databases/eu")``.
    """

    def __init__(self, http: HTTPLayer, mount: str) -> None:
        super().__init__(http)
        self.mount = mount.strip("/")
        # Checked once, by the rule every name in an address follows.
        self._mount_path = segments(self.mount, "mount")

    def __repr__(self) -> str:
        return area_repr(self, "secrets engine", self._http.address, self.mount)

    def at(self, mount: str) -> Self:
        """The same engine's calls against the mount at ``mount``."""
        return type(self)(self._http, mount)

    def _coverage(self, view: str) -> Coverage:
        """The coverage record of one of this engine's views."""
        return Coverage(f"{type(self).__name__.lower()}.{view}", asked=[self.mount + "/"])

    def _read_each(
        self,
        cov: Coverage,
        names: Sequence[str],
        read: Callable[[str], Any],
        folder: str,
    ) -> list[Any]:
        """``read(name)`` of each name concurrently; one refused (403) is a gap in
        ``cov``, one gone since the listing is left out."""

        def one(name: str) -> Any:
            where = self._path(folder + "/{name}", name=name).lstrip("/")
            return cov.read_or_gap(where, lambda: read(name))

        found = [r for r in self._http.map(one, names) if r is not None]
        cov.note_read(len(found))
        return found

    def _read_each_named(
        self,
        cov: Coverage,
        names: Sequence[str],
        read: Callable[[str], Any],
        folder: str,
    ) -> list[tuple[str, Any]]:
        """As :meth:`_read_each`, each record with the name it was read by."""
        pairs = self._read_each(cov, names, lambda name: (name, read(name)), folder)
        return [(name, record) for name, record in pairs]

    def _path(self, template: str, **names: object) -> str:
        """``/<mount>/<template>``, each ``{name}`` of the template filled with a
        name by the one rule (:func:`~toolkit._http.api_path`)."""
        return f"/{self._mount_path}/{api_path(template, **names)}"
