"""The toolkit's own answer object, and header maps that never show a secret.

:class:`Response` keeps the attribute names callers know from httpx
(``status_code``, ``headers``, ``content``, ``text``, ``json()``) so that
client code does not depend on which library carried the bytes.
"""

from __future__ import annotations

import json as jsonlib
import math
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from .._errors import DecodeError
from .._masking import HIDDEN, Sensitive

__all__ = ["CREDENTIAL_HEADERS", "Headers", "Response", "decode_json", "is_credential_header"]

# Headers that carry a credential: never shown by a repr.
# Headers whose values are credentials whatever the API: HTTP's own. A header named for a
# token (``*-token``: the secrets API's two) is one too; the layer adds the names a client
# passes in (``token_headers``).
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})


def is_credential_header(name: str) -> bool:
    """Whether a header called ``name`` carries a credential (hidden in every repr)."""
    lowered = name.lower()
    return lowered in CREDENTIAL_HEADERS or lowered.endswith("-token")


class Headers(Mapping[str, str]):
    """Case-insensitive, read-only headers whose repr masks credentials.

    Wraps what the library handed over (any mapping with case-insensitive
    ``get``, such as aiohttp's ``CIMultiDictProxy``) without copying it.
    """

    __slots__ = ("_raw",)

    def __init__(self, raw: Mapping[str, str]) -> None:
        self._raw = raw

    def __getitem__(self, name: str) -> str:
        return self._raw[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self._raw.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def items(self) -> Any:
        return self._raw.items()

    def __repr__(self) -> str:
        return f"Headers({masked(self._raw)!r})"

    __str__ = __repr__


def masked(headers: Mapping[str, Any]) -> dict[str, str]:
    """``headers`` as a plain dict with every credential replaced by a placeholder."""
    return {
        k: HIDDEN if is_credential_header(k) or isinstance(v, Sensitive) else str(v)
        for k, v in headers.items()
    }


class Response:
    """One answer: ``status_code``, ``headers``, ``content`` (the whole body, read),
    ``text``, ``json()``, and the ``method`` and ``url`` of the request."""

    __slots__ = ("_headers", "_url", "content", "method", "note", "status_code")

    def __init__(
        self,
        status_code: int,
        headers: Mapping[str, str],
        content: bytes,
        method: str,
        url: Any,
    ) -> None:
        self.status_code = status_code
        self._headers = headers
        self.content = content
        self.method = method
        self._url = url  # text, or the library's URL object (made text when read)
        self.note = ""  # the layer's word on an answer it would not act on (a redirect)

    @property
    def url(self) -> str:
        return str(self._url)

    @property
    def raw_headers(self) -> Mapping[str, str]:
        """The headers as the library handed them over (case-insensitive ``get``):
        for the layer's own reads, without a wrapper."""
        return self._headers

    @property
    def headers(self) -> Headers:
        raw = self._headers
        return raw if isinstance(raw, Headers) else Headers(raw)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body decoded as JSON (the standard decoder: it takes ``NaN`` too).
        A number too large for a float (``1e999``), or nesting deeper than the decoder
        recurses, is a ValueError, not infinity or a RecursionError."""
        try:
            return jsonlib.loads(self.content, parse_float=_float)
        except RecursionError:
            raise ValueError("the JSON answer is nested too deeply to decode") from None

    def __repr__(self) -> str:
        return f"<Response {self.status_code} {self.method} {self.url}>"


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


def decode_json(response: Response, method: str = "GET") -> Any:
    """Decode a response body, raising :class:`DecodeError` naming the address."""
    content = response.content
    if response.status_code == 204 or not content:
        return None
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        pass  # what orjson refuses and the standard decoder takes (NaN, Infinity)
    try:
        return response.json()
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise DecodeError(
            f"{method} {response.url}: the answer ({response.status_code}, "
            f"{len(content)} bytes, {response.headers.get('Content-Type', 'no type')})"
            " is not valid JSON",
            method=method,
            url=response.url,
        ) from None
