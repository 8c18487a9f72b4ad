"""The workspace platform of the sandbox (spec 000), served under ``/api/v2``.

State and rules, plain Python with no HTTP: ``organizations``, ``pools``,
``agents``, ``parameters`` and ``team_access`` (one store an area), ``ids``,
``errors`` (typed refusals), held together by ``models``
(:class:`PlatformService`: the clock, the lock, the stores and the seeding
API). The thin HTTP layer is ``http``, one module an area (documents in,
typed calls on the stores out, documents back), as the secrets half's. ``demo`` is the demo data set. docs/platform-sandbox.md records the
choices made where the spec says "not shown".
"""
