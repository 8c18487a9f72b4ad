"""Organizations and what an operator needs to find ids and names: workspaces, teams,
policy sets (read endpoints the real service offers beside spec 000 part 4)."""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from .._coverage import Coverage, coverage_of
from .._errors import DecodeError, InputError, NotFound, PermissionDenied
from .._frames import Schema, scope_part, stack_scopes
from .._http import api_path
from .._records import Record
from ._base import PlatformArea
from ._jsonapi import resource_of

__all__ = ["Organizations"]

ORGANIZATIONS = Schema.of("id name email created_at:datetime", index="id")
WORKSPACES = Schema.of(
    "id name organization_id agent_pool_id execution_mode created_at:datetime",
    index="id",
)
TEAMS = Schema.of("id name visibility users_count:int organization_id", index="id")
POLICY_SETS = Schema.of("id name kind description organization_id", index="id")


class Organizations(PlatformArea):
    """Organizations, workspaces, teams and policy sets (read only)."""

    def organizations_frame(self) -> pd.DataFrame:
        """All organizations the token may see. ``GET /organizations`` (every page: whole,
        or raised)."""
        return self._listing("organizations.organizations_frame", "/organizations", ORGANIZATIONS)

    def list_organizations(self) -> builtins.list[str]:
        """The names of every organization the token can see. ``GET /organizations``."""
        return [str(n) for n in self.organizations_frame()["name"].dropna()]

    def across(
        self,
        call: Callable[[str], pd.DataFrame],
        organizations: str | Iterable[str] | None = None,
    ) -> pd.DataFrame:
        """``call(organization)`` for each organization, as one frame (as
        ``namespaces.across`` is for namespaces).

        ``call`` gets an organization's name and returns a frame, for instance
        ``client.agent_pools.agents_by_status``. ``organizations``: a name, several,
        or None for every organization the token can see (``GET /organizations``).
        The calls run together; the frames are stacked with ``organization`` as the
        first column, each frame's named index kept as a column, and ``problem`` as
        the last: an organization that refuses the call (403), or one listed by
        ``GET /organizations`` that is gone when called (404), gives one row with only
        ``organization`` and ``problem`` set, and the others go on. An organization
        named in ``organizations`` that does not exist (or this token cannot see) is
        an error naming it, checked before any call. Its coverage record
        (``toolkit.coverage``) holds those refusals and what each call could not read.
        """
        if organizations is None:
            names = self.list_organizations()
        else:
            listed = [organizations] if isinstance(organizations, str) else list(organizations)
            if not all(isinstance(n, str) and n for n in listed):
                raise InputError(f"organizations must be names, not {organizations!r}")
            names = builtins.list(dict.fromkeys(listed))
            # A name the caller gave that does not exist is a mistake to name, not a gap:
            # NotFound naming it ("organization 'x' not found, or not visible ...").
            builtins.list(self._http.map(self._exists, names))

        cov = Coverage("organizations.across", asked=[f"organizations/{n}" for n in names])

        def one(name: str) -> pd.DataFrame:
            try:
                frame = call(name)
            except PermissionDenied as exc:
                cov.note_error(f"organizations/{name}", exc)
                return scope_part("organization", name, None, f"not permitted in {name}: {exc}")
            except NotFound as exc:
                cov.note_error(f"organizations/{name}", exc)
                return scope_part("organization", name, None, f"organization {name}: {exc}")
            for inner in coverage_of(frame):  # what the call could not read there
                cov.gaps.extend(inner.gaps)
            cov.note_read(len(frame))
            return scope_part("organization", name, frame)

        return cov.attach(stack_scopes("organization", builtins.list(self._http.map(one, names))))

    def _exists(self, name: str) -> None:
        """Raises :class:`NotFound` naming ``name`` when no such organization answers; a
        refusal (403) is left for the call, where it is a gap."""
        with contextlib.suppress(PermissionDenied):
            self.read(name)

    def read(self, name: str) -> Record:
        """One organization. ``GET /organizations/:name``."""
        return self._record(self._get(api_path("/organizations/{name}", name=name)), "organization")

    def caller_permissions(self, organization: str) -> dict[str, Any]:
        """What the organization document says this token may do (``permissions``:
        ``can-update``, ``can-update-agent-pools``, ...); empty when the service
        shows none. ``GET /organizations/:name``; a missing one raises naming it."""
        payload = self._http.json(
            "GET", api_path("/organizations/{organization}", organization=organization)
        )
        resource = resource_of(payload, f"organization {organization!r}")
        if not resource:  # an answer without the organization says nothing of the token
            raise DecodeError(f"the server's answer for organization {organization!r} is empty")
        permissions = resource.get("permissions")
        return dict(permissions) if isinstance(permissions, Mapping) else {}

    def workspaces_frame(self, organization: str, *, search: str | None = None) -> pd.DataFrame:
        """The organization's workspaces. ``GET /organizations/:name/workspaces``.

        A token that may not manage the organization lists only the workspaces it may
        read: ``attrs["coverage"]`` then has a gap (an owner's token sees them all)."""
        params = {"search[name]": search} if search else None
        return self._listing(
            "organizations.workspaces_frame",
            api_path("/organizations/{organization}/workspaces", organization=organization),
            WORKSPACES,
            params,
            hidden_from_members=(
                organization,
                "workspaces this token may not read are not listed to it (an owner's token "
                "sees them all)",
            ),
        )

    def workspace(self, workspace_id: str) -> Record:
        """One workspace. ``GET /workspaces/:id``."""
        return self._record(
            self._get(api_path("/workspaces/{workspace_id}", workspace_id=workspace_id)),
            "workspace",
        )

    def teams_frame(self, organization: str) -> pd.DataFrame:
        """The organization's teams the token may see. ``GET /organizations/:name/teams``.

        A member's token is not shown the secret teams it is not on: ``attrs["coverage"]``
        then has a gap (an owner's token sees them all)."""
        return self._listing(
            "organizations.teams_frame",
            api_path("/organizations/{organization}/teams", organization=organization),
            TEAMS,
            hidden_from_members=(
                organization,
                "secret teams this token is not on are not listed to it (an owner's token "
                "sees them all)",
            ),
        )

    def team(self, team_id: str) -> Record:
        """One team. ``GET /teams/:id``."""
        return self._record(self._get(api_path("/teams/{team_id}", team_id=team_id)), "team")

    def policy_sets_frame(self, organization: str) -> pd.DataFrame:
        """The organization's policy sets. ``GET /organizations/:name/policy-sets``
        (every page: whole, or raised; any member may read them)."""
        return self._listing(
            "organizations.policy_sets_frame",
            api_path("/organizations/{organization}/policy-sets", organization=organization),
            POLICY_SETS,
        )

    def sees_all(self, organization: str) -> bool:
        """Whether this token is shown everything of ``organization`` that a list may hide
        from members: an owner's (the organization's ``permissions.can-update``) is; a
        service that shows no permissions is taken at its word. A missing organization
        raises naming it."""
        return bool(self.caller_permissions(organization).get("can-update", True))

    def _listing(
        self,
        view: str,
        path: str,
        schema: Schema,
        params: Mapping[str, Any] | None = None,
        *,
        hidden_from_members: tuple[str, str] | None = None,
    ) -> pd.DataFrame:
        """Every page of the list at ``path`` as a frame with its coverage record: a
        list is read whole or raises; ``hidden_from_members`` (organization, why) is a gap
        when this token is not shown all of that organization's."""
        frame = self._frame(path, schema, params)
        where = path.lstrip("/")
        cov = Coverage(view, asked=[where])
        cov.note_read(len(frame))
        if hidden_from_members is not None and not self.sees_all(hidden_from_members[0]):
            cov.note_gap(where, None, hidden_from_members[1])
        return cov.attach(frame)

    def policy_set(self, policy_set_id: str) -> Record:
        """One policy set. ``GET /policy-sets/:id``."""
        return self._record(
            self._get(api_path("/policy-sets/{policy_set_id}", policy_set_id=policy_set_id)),
            "policy-set",
        )
