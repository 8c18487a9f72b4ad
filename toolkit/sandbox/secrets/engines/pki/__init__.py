"""The certificate engine (spec 4.10): state and rules, no HTTP.

- :mod:`.engine`: :class:`PKIEngine`, one mount's engine, made of the concerns below;
- :mod:`.state`: what a mount holds, and the rules every concern shares;
- :mod:`.issuers`, :mod:`.authority`, :mod:`.issuance`, :mod:`.revocation`,
  :mod:`.tidy`: one concern each;
- :mod:`.roles`: role fields, defaults and rules;
- :mod:`.requests`: the typed requests the state methods take;
- :mod:`.x509`: keys, encodings, certificate and CRL building with ``cryptography``.


The folder's HTTP side is :mod:`.http` (with :mod:`.bodies`, which reads requests,
and :mod:`.documents`, which shapes answers), its demo data
:mod:`.demo`; :data:`ENGINE` describes the engine to the server.
"""

from __future__ import annotations

from ...backends import Engine
from . import demo, http
from .engine import PKIEngine

__all__ = ["ENGINE", "PKIEngine"]

ENGINE = Engine.in_folder(
    type="pki", description="certificates", state=PKIEngine, http=http, demo=demo
)
