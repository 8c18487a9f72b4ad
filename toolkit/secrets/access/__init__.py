"""Who can do what: every principal the server configures, evaluated with the one ACL
evaluator (:mod:`toolkit._spec.acl`, which the sandbox enforces with).

``bao.access.who_can("update", "sys/policies/acl/x")`` reads the server once
(:meth:`~toolkit.secrets.access.Access.load`: every ACL policy, the auth methods whose configuration
names policies, identity entities and groups, tokens by accessor) and answers
from memory afterwards; ``can(principal)`` is the inverse and
``explain(principal, path)`` shows which pattern of which policy decides.

A principal is named by where it is configured: ``auth/token/roles/NAME``,
``auth/<mount>/role/NAME`` (AppRole, JWT/OIDC, Kubernetes),
``auth/<mount>/users/NAME`` and ``auth/<mount>/groups/NAME`` (userpass, LDAP),
``auth/<mount>/certs/NAME``, ``identity/entity/name/NAME``,
``identity/group/name/NAME``, ``auth/token/accessors/ACCESSOR``. What could not
be read (a 403, a method the toolkit does not analyse) is listed in each
frame's ``attrs["coverage"]`` (a :class:`toolkit.Coverage` record): an empty answer
with gaps there is "not known", never "nobody".

The package, by seam: :mod:`~toolkit.secrets.access.area` (the client's area),
:mod:`~toolkit.secrets.access.reading` (what one load reads),
:mod:`~toolkit.secrets.access.model` (the model and its look-ups),
:mod:`~toolkit.secrets.access.who_can` and :mod:`~toolkit.secrets.access.explain` (the
rows of the answers), :mod:`~toolkit.secrets.access.principals` (principals and token
roles); each imports only those after it.
"""

from .area import Access
from .explain import CAN, EXPLAIN
from .model import AccessModel
from .principals import Principal, TokenRole
from .reading import AUTH_METHODS
from .who_can import WHO_CAN

__all__ = [
    "AUTH_METHODS",
    "CAN",
    "EXPLAIN",
    "WHO_CAN",
    "Access",
    "AccessModel",
    "Principal",
    "TokenRole",
]
