"""The platform sandbox's HTTP side, one module an area, as the secrets half's ``http/``.

``_base`` holds the conventions (the endpoint wrapper, documents read and
paged), ``_errors`` the JSON:API error documents, and each area module
(``account``, ``organizations``, ``pools``, ``agents``, ``parameters``,
``team_access``) its handlers, its resource documents and its ``ROUTES``;
``routes`` gathers them. The state is the package above, reached through
:class:`~..models.PlatformService` only.
"""
