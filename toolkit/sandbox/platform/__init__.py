"""The workspace platform of the sandbox (spec 000), served under ``/api/v2``.

State and rules, plain Python with no HTTP: ``organizations``, ``pools``,
``agents``, ``parameters`` and ``team_access`` (one store an area), ``ids``,
``errors`` (typed refusals), held together by ``models``
(:class:`PlatformService`). The thin HTTP layer: ``handlers`` (documents in,
typed calls out), ``documents`` (JSON:API shapes), ``error_documents`` and
``routes``. ``demo`` is the demo data set. docs/platform-sandbox.md records the
choices made where the spec says "not shown".
"""
