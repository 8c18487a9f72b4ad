"""The certificate engine (spec 4.10): state and rules, no HTTP.

- :mod:`.engine`: :class:`PKI`, one mount's issuers, keys, roles and certificates;
- :mod:`.roles`: role fields, defaults and the name policy;
- :mod:`.requests`: the request parameters of 4.10, read and checked;
- :mod:`.x509`: keys, encodings and certificate building with ``cryptography``.
"""

from __future__ import annotations

from .engine import PKI

__all__ = ["PKI"]
