"""The secrets-management server of the sandbox (spec 001), served under ``/v1``.

State and rules are plain Python classes, one module per spec area (``tokens``,
``policies``, ``password_policies``, ``seal``, ``rekey``, ``leases``,
``plugins``); :class:`~.models.SecretsService` holds them together. The HTTP
layer is the ``http`` package, one module per area, and ``routes`` lists it.
"""
