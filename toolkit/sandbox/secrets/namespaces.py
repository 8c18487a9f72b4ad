"""Namespaces: the tree of child namespaces and what each one holds (no HTTP here).

OpenBao 2.3 and later serve ``sys/namespaces`` (create, read, list, delete);
a request picks its namespace with the ``X-Vault-Namespace`` header. Names are
one path segment each (``team-a``; a nested one is made from inside its parent),
and a namespace's full path ends in ``/`` (``team-a/sub/``). A namespace with
children cannot be deleted.

What a child namespace holds in the sandbox (docs/differences.md): its own ACL
policy store (``default`` only at first), its own password policies, and a mount
table of the system mounts alone (``sys/``, ``cubbyhole/``, ``identity/``):
engines are mounted only in the root namespace, so nothing in a child can issue
a lease, and its lease endpoints see an empty lease store. Tokens, logins, the
seal and the plugin catalog are the root namespace's.

The spec (part 1, convention 5) allows restricted endpoints only in the root
namespace or the administrative one: :attr:`NamespaceStore.admin` names it.
"""

from __future__ import annotations

import secrets
import string
import uuid

from .errors import InvalidRequest, PathNotFound
from .mounts import MountTable
from .password_policies import PasswordPolicyStore
from .policies import PolicyStore

__all__ = ["Namespace", "NamespaceStore", "normalize"]

_ID_ALPHABET = string.ascii_letters + string.digits


def normalize(path: str) -> str:
    """A namespace path as stored: no leading ``/``, one trailing ``/``; ``""`` is the root."""
    cleaned = path.strip().strip("/")
    if cleaned in ("", "root"):
        return ""
    return cleaned + "/"


class Namespace:
    """One child namespace: its identity, its custom metadata, and its own stores."""

    def __init__(self, path: str, custom_metadata: dict[str, str]) -> None:
        self.path = path
        # Six letters and digits, as OpenBao's namespace ids look.
        self.id = "".join(secrets.choice(_ID_ALPHABET) for _ in range(6))
        self.uuid = str(uuid.uuid4())
        self.custom_metadata = dict(custom_metadata)
        self.policies = PolicyStore()
        self.password_policies = PasswordPolicyStore()
        # A new namespace has only the system mounts.
        self.mounts = MountTable()


class NamespaceStore:
    """Every child namespace by full path (``team-a/``, ``team-a/sub/``), and the admin one."""

    def __init__(self) -> None:
        self.namespaces: dict[str, Namespace] = {}
        # The administrative namespace's path (``""``: none, only the root).
        self.admin = ""

    def exists(self, path: str) -> bool:
        """Whether ``path`` names the root or an existing child namespace."""
        key = normalize(path)
        return key == "" or key in self.namespaces

    def get(self, path: str) -> Namespace | None:
        """The child namespace at ``path`` (None for the root or an unknown one)."""
        return self.namespaces.get(normalize(path))

    def may_call_restricted(self, path: str) -> bool:
        """Whether restricted endpoints answer in ``path``: the root or the admin namespace."""
        key = normalize(path)
        return key == "" or (self.admin != "" and key == self.admin)

    def set_admin(self, path: str | None) -> None:
        """Name the administrative namespace, creating it (and its parents) when missing."""
        key = normalize(path or "")
        parent = ""
        for name in key.strip("/").split("/") if key else []:
            if parent + name + "/" not in self.namespaces:
                self.create(parent, name)
            parent += name + "/"
        self.admin = key

    def children(self, parent: str) -> list[Namespace]:
        """The namespaces directly under ``parent``, by name."""
        base = normalize(parent)
        return sorted(
            (ns for key, ns in self.namespaces.items() if _parent_of(key) == base),
            key=lambda ns: ns.path,
        )

    def create(
        self, parent: str, name: str, custom_metadata: dict[str, str] | None = None
    ) -> Namespace:
        """Create ``name`` under ``parent``, or replace an existing one's custom metadata
        (``POST``/``PUT sys/namespaces/:name`` in ``parent``), as OpenBao does."""
        key = self._child_key(parent, name)
        metadata = dict(custom_metadata or {})
        found = self.namespaces.get(key)
        if found is not None:
            found.custom_metadata = metadata
            return found
        namespace = Namespace(key, metadata)
        self.namespaces[key] = namespace
        return namespace

    def read(self, parent: str, name: str) -> Namespace | None:
        """The namespace ``name`` under ``parent`` (``GET sys/namespaces/:name``)."""
        return self.namespaces.get(self._child_key(parent, name))

    def delete(self, parent: str, name: str) -> bool:
        """Delete ``name`` under ``parent``; False when it does not exist.

        400 when it has children, as on the real server (delete them first).
        """
        key = self._child_key(parent, name)
        if key not in self.namespaces:
            return False
        if self.children(key):
            raise InvalidRequest("unable to delete namespace containing child namespaces")
        del self.namespaces[key]
        return True

    def _child_key(self, parent: str, name: str) -> str:
        base = normalize(parent)
        if base and base not in self.namespaces:
            raise PathNotFound("namespace not found")
        return base + _check_name(name) + "/"


def _check_name(name: str) -> str:
    cleaned = name.strip("/") if name.count("/") <= 1 and name.endswith("/") else name
    if "/" in cleaned:
        raise InvalidRequest("namespace name cannot contain /")
    if not cleaned:
        raise InvalidRequest("namespace name cannot be empty")
    if any(c.isspace() for c in cleaned):
        raise InvalidRequest(
            f"{cleaned!r} contains space characters that cannot be used in a namespace name"
        )
    if cleaned in ("root", ".", ".."):
        # "root" names the root namespace in the header: a child so named would be unreachable.
        raise InvalidRequest(f"{cleaned!r} cannot name a namespace")
    return cleaned


def _parent_of(key: str) -> str:
    trimmed = key.rstrip("/")
    return trimmed.rsplit("/", 1)[0] + "/" if "/" in trimmed else ""
