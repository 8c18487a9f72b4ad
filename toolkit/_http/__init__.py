"""The one HTTP layer both service clients stand on, split by job.

- :mod:`.layer`: :class:`HTTPLayer`, the facade: base address, auth headers,
  deadlines, the server's clock, one call (:meth:`~HTTPLayer.request`,
  :meth:`~HTTPLayer.json`) and fan-outs (:meth:`~HTTPLayer.many`,
  :meth:`~HTTPLayer.map`).
- :mod:`.headers`: where each request header is kept (a credential apart) and
  which cannot be sent; :mod:`.clock`: the server's clock from its ``Date`` headers.
- :mod:`.policy`: which calls may go again, the pauses, which error an answer
  or a failure becomes (:class:`RetryPolicy`, :func:`~.policy.judge`), and the
  tries after the first.
- :mod:`.redirects`: the rule a client passes in for the redirects it follows.
- :mod:`.fanout`: the fan-outs' machinery (:class:`Request` describes one request).
- :mod:`.transport`: how bytes move (aiohttp on a private event loop).
- :mod:`.response`: the toolkit's :class:`Response` and masked :class:`Headers`.
- :mod:`.paths`: the one rule for names in addresses (:func:`segment`,
  :func:`api_path`), and the last check of a path before it is sent.

Nothing here knows either API's paths; the service packages build on it.
"""

from __future__ import annotations

from .fanout import Request
from .layer import HTTPLayer
from .paths import api_path, check_path, segment, segments
from .policy import RetryPolicy
from .redirects import NO_REDIRECTS, RedirectRule
from .response import Headers, Response, decode_json

__all__ = [
    "NO_REDIRECTS",
    "HTTPLayer",
    "Headers",
    "RedirectRule",
    "Request",
    "Response",
    "RetryPolicy",
    "api_path",
    "check_path",
    "decode_json",
    "segment",
    "segments",
]
