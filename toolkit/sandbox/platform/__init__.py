"""The workspace platform of the sandbox (spec 000), served under ``/api/v2``.

``models`` holds the state and rules in plain Python (:class:`PlatformService`),
``documents`` the JSON:API shapes, ``handlers`` and ``routes`` the thin HTTP
layer, ``demo`` the demo data set. docs/platform-sandbox.md records the choices
made where the spec says "not shown".
"""
