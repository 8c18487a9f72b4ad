"""The ``access`` area of the secrets client: who can do what, answered from one reading.

See :mod:`toolkit.secrets.access` for the questions and how principals are named.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .._base import SecretsArea
from .model import AccessModel
from .principals import PrincipalRef
from .reading import read_model

__all__ = ["Access"]


class Access(SecretsArea):
    """Who can do what on the secrets server: :meth:`who_can`, :meth:`can`, :meth:`explain`.

    The first question loads the server's configuration (:meth:`load`); later
    ones answer from it until :meth:`load` is called again.
    """

    _model: AccessModel | None = None

    def load(self) -> AccessModel:
        """Read every ACL policy and principal; the model the questions are answered from.

        ``LIST``/``GET sys/policies/acl``; ``GET sys/auth`` then, per mount of a
        method in :data:`~toolkit.secrets.access.reading.AUTH_METHODS`, the roles, users, groups or certs and a
        ``GET`` each (``token_policies``, else ``policies``; ``default`` added
        unless ``token_no_default_policy``), and each AppRole role's ``role-id`` (its
        logins' entity alias); ``LIST``/``GET auth/token/roles`` (resolved as the
        server resolves them: :class:`~toolkit.secrets.access.principals.TokenRole`); ``GET sys/mounts`` (is ``v1/`` a
        mount?); ``LIST``/``GET identity/entity/id`` and ``identity/group/id`` (group
        policies are inherited by member entities and member groups);
        ``LIST auth/token/accessors`` and ``lookup-accessor`` each (``policies`` and
        ``identity_policies``). Every refusal is a coverage gap, and so is an auth
        method the toolkit does not analyse, and a policy it cannot parse.
        """
        self._model = read_model(self._http)
        return self._model

    def _current(self) -> AccessModel:
        return self._model if self._model is not None else self.load()

    def who_can(
        self, capability: str | Sequence[str], path: str, caller: PrincipalRef | None = None
    ) -> pd.DataFrame:
        """Every principal that holds ``capability`` on ``path``, and through what.

        Index ``principal`` (where it is configured); columns ``kind``
        (``token_role``, ``token_role_alias``, ``approle_role``, ``userpass_user``,
        ``ldap_user``, ``ldap_group``, ``jwt_role``, ``oidc_role``, ``kubernetes_role``,
        ``cert_role``, ``entity``, ``group``, ``token``), ``name``, ``status``
        (``granted``; ``depends on identity`` where a templated pattern could decide for
        some logins and not others; ``depends on the caller`` for a token role whose
        tokens hold their caller's policies), ``pattern`` (the pattern that decides),
        ``policies`` (those granting it on that pattern), ``capabilities`` (everything
        the deciding pattern grants), ``depends_on`` (what a "depends" status depends
        on). A holder of ``root`` shows ``root``. On a path that needs ``sudo``
        (:mod:`toolkit._spec.sudo`, OpenBao's own list) only holders of ``sudo`` there
        are named. A principal the server gives nothing (a token role that refuses its
        caller, a templated value the server refuses) is not named.

        ``capability`` may be a list: the principals holding all of them. ``path`` may
        carry the API prefix ``/v1/`` (``attrs["note"]`` says it was left out).
        ``caller`` (a principal, or a list of policies) resolves the token roles whose
        tokens depend on who creates them. ``attrs["coverage"]`` lists what could not
        be read.
        """
        return self._current().who_can(capability, path, caller)

    def can(self, principal: PrincipalRef, caller: PrincipalRef | None = None) -> pd.DataFrame:
        """What ``principal`` may do: each pattern of its policies once, most specific
        first, with the capabilities left after merging its policies and ``deny``.

        ``principal`` is a configuration path (``auth/approle/role/ci``) or a list of
        policy names. Templated patterns are filled where the identity is known
        (``written_as`` shows the template) and listed as ``depends on identity``
        where it is not. A token role whose tokens hold their caller's policies needs
        ``caller``; one row ``holds nothing: ...`` when the server would give nothing.
        """
        return self._current().can(principal, caller)

    def explain(
        self,
        principal: PrincipalRef,
        path: str,
        capability: str = "read",
        caller: PrincipalRef | None = None,
    ) -> pd.DataFrame:
        """Which pattern of which policy decides ``path`` for ``principal``, and which
        others matched and lost: ``rank`` (1 decides), ``policy``, ``pattern``,
        ``capabilities`` (that policy's on that pattern), ``outcome`` (``decides``, or
        ``decides: denied, ...`` when the deciding pattern lacks the capability, or the
        ``sudo`` the path needs)."""
        return self._current().explain(principal, path, capability, caller)
