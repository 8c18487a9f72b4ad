"""Agent pools and agents (spec 000 section 4.1), and the views operators ask of them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from .._coverage import BuiltFrame, Coverage, OutcomeFrame, carries_coverage, carry, coverage_of
from .._errors import APIError, DecodeError, InputError, NotFound
from .._frames import Col, Schema, build_frame
from .._gc import collector_paused
from .._http import api_path
from .._progress import progress
from .._records import Record
from .._spec.team_access import AGENT_STATUSES, REMOVABLE_AGENT_STATUSES
from .._time import format_iso_ms, parse_time
from ._base import PlatformArea
from ._jsonapi import (
    MAX_PAGE_SIZE,
    FrameBuilder,
    PageSink,
    flatten,
    iter_resources,
    read_lists,
    resources_frame,
)
from .agent_health import AGENT_CAPACITY, UNKNOWN_HOLD, agent_capacity, stale
from .organizations import Organizations

__all__ = [
    "AGENTS",
    "AGENT_STATUSES",
    "DEFAULT_SILENCE",
    "POOLS",
    "POOLS_WITH_WORKSPACES",
    "REMOVABLE_AGENT_STATUSES",
    "AGENT_CAPACITY",
    "AgentPools",
    "agent_capacity",
    "agents_frame",
]

POOLS = Schema.of(
    """id name organization_scoped:bool agent_count:int created_at:datetime workspace_ids:object
    allowed_workspace_ids:object""",
    index="id",
)
# The pool list with ``include="workspaces"``: the attached workspaces' names too.
POOLS_WITH_WORKSPACES = Schema.of(*POOLS.columns, "workspaces:object", index="id")
# What ``include`` may name on the pool endpoints (spec 000, convention 5).
POOL_INCLUDES = ("workspaces",)
AGENTS = Schema.of("id name status ip_address last_ping_at:datetime pool_id", index="id")
STATUS_COUNTS = Schema.of(
    "pool_id pool_name",
    *(Col(s, "int") for s in AGENT_STATUSES),
    "total:int",
    index="pool_id",
)
CLEANUP = Schema.of(
    "agent_id pool_id name status last_ping_at:datetime action detail",
    index="agent_id",
)

# How long an agent must have been silent before the clean-up removes it by default:
# an ``unknown`` agent silent for minutes may be a network blip, not a dead host.
DEFAULT_SILENCE = timedelta(hours=1)


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def _check_name(name: str) -> None:
    if not name or not set(name) <= _NAME_CHARS:
        raise InputError(f"agent pool name {name!r} may hold only letters, numbers, '-' and '_'")


def _include_names(include: str | Sequence[str] | None) -> list[str]:
    """The related resources asked for, checked against :data:`POOL_INCLUDES`."""
    if include is None:
        return []
    names = [include] if isinstance(include, str) else list(include)
    unknown = [n for n in names if n not in POOL_INCLUDES]
    if unknown:
        raise InputError(
            f"include {', '.join(map(repr, unknown))} is not allowed on agent pools; "
            f"allowed: {', '.join(POOL_INCLUDES)}"
        )
    return list(dict.fromkeys(names))


def _pool_body(
    name: str | None,
    organization_scoped: bool,
    allowed_workspace_ids: Sequence[str] | None,
    pool_id: str | None = None,
) -> dict[str, Any]:
    attributes: dict[str, Any] = {"organization-scoped": organization_scoped}
    if name is not None:
        _check_name(name)
        attributes["name"] = name
    data: dict[str, Any] = {"type": "agent-pools", "attributes": attributes}
    if pool_id:
        data["id"] = pool_id
    if allowed_workspace_ids is not None:
        data["relationships"] = {
            "allowed-workspaces": {
                "data": [{"type": "workspaces", "id": w} for w in allowed_workspace_ids]
            }
        }
    return {"data": data}


class AgentPools(PlatformArea):
    """Agent pools and their agents."""

    # The agent statuses, and those an agent may be removed in, at hand from the client.
    AGENT_STATUSES = AGENT_STATUSES
    REMOVABLE_AGENT_STATUSES = REMOVABLE_AGENT_STATUSES

    # -- pools ---------------------------------------------------------------------
    def pools_frame(
        self,
        organization: str,
        *,
        q: str | None = None,
        sort: str | None = None,
        allowed_workspace: str | None = None,
        include: str | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """The organization's pools, all pages.

        ``GET /organizations/:organization_name/agent-pools`` with ``q``, ``sort``
        (``name``, ``created-at``, ``-`` to reverse),
        ``filter[allowed_workspaces][name]`` and ``include``. ``include="workspaces"``
        adds a ``workspaces`` column: the names of the workspaces attached to each
        pool, from the answer's ``included`` member, in ``workspace_ids`` order.
        """
        includes = _include_names(include)
        params: dict[str, Any] = {}
        if q:
            params["q"] = q
        if sort:
            params["sort"] = sort
        if allowed_workspace:
            params["filter[allowed_workspaces][name]"] = allowed_workspace
        path = api_path("/organizations/{organization}/agent-pools", organization=organization)
        if not includes:
            frame = self._frame(path, POOLS, params)
            return _covered(
                "agent_pools.pools_frame", self._sees_all(organization), (), frame, len(frame)
            )
        params["include"] = ",".join(includes)
        included: list[dict[str, Any]] = []
        pools = [flatten(r) for r in iter_resources(self._http, path, params, included=included)]
        names = {
            r.get("id"): (r.get("attributes") or {}).get("name")
            for r in included
            if r.get("type") == "workspaces"
        }
        for pool in pools:
            pool["workspaces"] = [names.get(w) for w in pool.get("workspace_ids") or []]
        frame = build_frame(pools, POOLS_WITH_WORKSPACES)
        return _covered(
            "agent_pools.pools_frame", self._sees_all(organization), (), frame, len(frame)
        )

    def status_counts(self, organization: str, **filters: Any) -> dict[str, int]:
        """``meta.status-counts`` of the pool list: ``total`` and ``matching``."""
        meta: dict[str, Any] = {}
        params = {k: v for k, v in filters.items() if v}
        next(
            iter_resources(
                self._http,
                api_path("/organizations/{organization}/agent-pools", organization=organization),
                params,
                page_size=1,
                meta=meta,
            ),
            None,
        )
        counts = meta.get("status-counts") or {}
        return {k: int(v) for k, v in counts.items()}

    def read(self, pool_id: str, *, include_workspaces: bool = False) -> Record:
        """One pool. ``GET /agent-pools/:id`` (``include=workspaces`` adds ``workspaces``)."""
        params = {"include": "workspaces"} if include_workspaces else None
        doc = self._get(api_path("/agent-pools/{pool_id}", pool_id=pool_id), params)
        record = self._record(doc, "agent-pool")
        if include_workspaces:
            record["workspaces"] = [flatten(r) for r in (doc or {}).get("included") or []]
        return record

    def create(
        self,
        organization: str,
        name: str,
        *,
        organization_scoped: bool = True,
        allowed_workspace_ids: Sequence[str] | None = None,
    ) -> Record:
        """Create a pool. ``POST /organizations/:organization_name/agent-pools``."""
        body = _pool_body(name, organization_scoped, allowed_workspace_ids)
        doc = self._send(
            "POST",
            api_path("/organizations/{organization}/agent-pools", organization=organization),
            body,
        )
        return self._record(doc, "agent-pool")

    def update(
        self,
        pool_id: str,
        *,
        name: str | None = None,
        organization_scoped: bool = True,
        allowed_workspace_ids: Sequence[str] | None = None,
    ) -> Record:
        """Update a pool. ``PATCH /agent-pools/:id``.

        As the API does, ``organization_scoped`` is set to ``True`` unless given.
        """
        body = _pool_body(name, organization_scoped, allowed_workspace_ids, pool_id)
        return self._record(
            self._send("PATCH", api_path("/agent-pools/{pool_id}", pool_id=pool_id), body),
            "agent-pool",
        )

    def delete(self, pool_id: str) -> None:
        """Delete a pool. ``DELETE /agent-pools/:agent_pool_id``."""
        self._send("DELETE", api_path("/agent-pools/{pool_id}", pool_id=pool_id))

    # -- agents --------------------------------------------------------------------
    def agents_frame(
        self, pool_id: str, *, last_ping_since: datetime | None = None
    ) -> pd.DataFrame:
        """The pool's agents, all pages. ``GET /agent-pools/:agent_pool_id/agents``."""
        params = (
            {"filter[last-ping-since]": format_iso_ms(last_ping_since)} if last_ping_since else None
        )
        path = api_path("/agent-pools/{pool_id}/agents", pool_id=pool_id)
        frame = agents_frame(iter_resources(self._http, path, params), pool_id)
        # One pool's list, every page: whole, or raised (a missing pool names itself).
        cov = Coverage("agent_pools.agents_frame", asked=[path.lstrip("/")])
        cov.note_read(len(frame))
        return cov.attach(frame)

    def read_agent(self, agent_id: str) -> Record:
        """One agent with its status. ``GET /agents/:id``."""
        return self._record(self._get(api_path("/agents/{agent_id}", agent_id=agent_id)), "agent")

    def delete_agent(self, agent_id: str) -> None:
        """Delete an agent. ``DELETE /agents/:id``: 412 (PreconditionFailed) while idle or busy."""
        self._send("DELETE", api_path("/agents/{agent_id}", agent_id=agent_id))

    # -- views ---------------------------------------------------------------------
    def all_agents(
        self,
        organization: str,
        *,
        show_progress: bool = False,
        pools: pd.DataFrame | None = None,
    ) -> pd.DataFrame:
        """Every agent of every pool of the organization, with its ``pool_id``.

        The pools' agent lists (all pages each) are read concurrently: the first
        pages of all pools, then every other page. ``show_progress`` shows a bar
        over the pages; ``pools`` (the frame of :meth:`pools_frame`) saves listing them.
        """
        if pools is None:
            pools = self.pools_frame(organization)
        pool_ids = list(pools.index)
        with collector_paused():
            builders = [FrameBuilder(AGENTS, {"pool_id": pid}) for pid in pool_ids]
            self._read_agents(pools, builders, show_progress)
            frames = [builder.frame() for builder in builders]
        if not frames:
            agents = build_frame([], AGENTS)
        else:
            agents = pd.concat(frames) if len(frames) > 1 else frames[0]
        sees = self._sees_all(organization, pools)
        return _covered("agent_pools.all_agents", sees, pool_ids, agents, len(agents))

    def agents_by_status(self, organization: str, *, show_progress: bool = False) -> pd.DataFrame:
        """Per pool, how many agents are in each status (one column per status, and ``total``)."""
        pools = self.pools_frame(organization)
        tally = self._tally(pools, show_progress)
        counts = count_by_status(pools, tally)
        read = sum(tally.values())
        sees = self._sees_all(organization, pools)
        return _covered("agent_pools.agents_by_status", sees, pools.index, counts, read)

    def _sees_all(self, organization: str, pools: pd.DataFrame | None = None) -> dict[str, bool]:
        """Whether this token sees every pool of ``organization``: a pool a caller has
        no permission on answers 404, as a missing one (spec part 3, rule 3), so only a
        token that may manage the organization's pools (or update it) can tell.
        ``pools``, a frame of :meth:`pools_frame`, already says: no second request."""
        listing = f"organizations/{organization}/agent-pools"
        for record in [] if pools is None else coverage_of(pools):
            if record.view == "agent_pools.pools_frame" and listing in record.asked:
                return {organization: all(gap.path != listing for gap in record.gaps)}
        permissions = Organizations(self._http).caller_permissions(organization)
        sees = not permissions or bool(
            permissions.get("can-update") or permissions.get("can-update-agent-pools")
        )
        return {organization: sees}

    def _tally(self, pools: pd.DataFrame, show_progress: bool) -> Counter[tuple[str, Any]]:
        """The agents of ``pools`` counted by status as their pages arrive (no frame)."""
        pairs: Counter[tuple[str, Any]] = Counter()
        with collector_paused():
            self._read_agents(
                pools, [StatusTally(pid, pairs) for pid in pools.index], show_progress
            )
        return pairs

    def _read_agents(
        self, pools: pd.DataFrame, sinks: Sequence[PageSink], show_progress: bool
    ) -> None:
        """Every page of each pool's agent list into that pool's sink, as pages arrive.

        Each pool's ``agent_count`` says how many pages to ask for with its first."""
        read_lists(
            self._http,
            [(api_path("/agent-pools/{pool_id}/agents", pool_id=p), None) for p in pools.index],
            show_progress=show_progress,
            desc="reading agents",
            builders=sinks,
            expected_pages=[_pages_of(n) for n in pools["agent_count"]],
        )

    def stale_agents(
        self,
        organization: str,
        *,
        older_than: timedelta = timedelta(minutes=5),
        now: datetime | None = None,
    ) -> pd.DataFrame:
        """Agents whose last ping is older than ``older_than``, oldest first.

        Age is measured against the server's clock (its ``Date`` header) unless
        ``now`` is given, so a skewed local clock does not change the verdict.
        Adds a ``silent_for`` column (timedelta).
        """
        agents = self.all_agents(organization)
        reference = now or self._http.server_now()
        return stale(agents, reference, older_than)

    def agent_capacity(
        self,
        organization: str,
        *,
        hold: timedelta = UNKNOWN_HOLD,
        window: timedelta = timedelta(hours=24),
    ) -> pd.DataFrame:
        """Per pool: agents working, idle, holding capacity while ``unknown``, to remove,
        and when the pool runs out at the current rate of errors: :func:`agent_capacity`,
        judged by the server's clock."""
        pools = self.pools_frame(organization)
        agents = self.all_agents(organization, pools=pools)
        capacity = agent_capacity(
            agents, pools, now=self._http.server_now(), hold=hold, window=window
        )
        return carry(capacity, agents, view="agent_pools.agent_capacity")

    # -- bulk ----------------------------------------------------------------------
    def remove_agents(
        self,
        organization: str,
        *,
        statuses: Iterable[str] = REMOVABLE_AGENT_STATUSES,
        pool_ids: Iterable[str] | None = None,
        older_than: timedelta | float = DEFAULT_SILENCE,
        now: datetime | None = None,
        dry_run: bool = True,
        show_progress: bool = True,
    ) -> OutcomeFrame:
        """Remove the agents in ``statuses`` (default exited, errored, unknown) that have
        been silent longer than ``older_than`` (a timedelta, or seconds; default an hour).

        With ``dry_run`` (the default) nothing is deleted: the frame is the plan,
        each agent ``would remove`` or ``skipped`` with the reason (its status, or
        a last ping too recent, judged by the server's clock unless ``now`` is
        given; ``older_than=0`` sets no age condition). Otherwise the plan is carried out by :meth:`remove_planned`.
        Columns: pool_id, name, status, last_ping_at, action (``would remove``,
        ``removed``, ``skipped``, ``failed``), detail.
        """
        wanted = set(statuses)
        unknown = wanted - set(AGENT_STATUSES)
        if unknown:
            raise InputError(f"unknown agent status {sorted(unknown)}; allowed: {AGENT_STATUSES}")
        silence = _silence(older_than)
        agents = self.all_agents(organization)
        if pool_ids is not None:
            agents = agents[agents["pool_id"].isin(list(pool_ids))]
        cutoff = pd.Timestamp(now or self._http.server_now()) - pd.Timedelta(silence)
        plan = []
        for agent_id, row in agents.iterrows():
            last = row["last_ping_at"]
            if row["status"] not in wanted:
                action, detail = "skipped", f"status is {row['status']}"
            elif silence and not pd.isna(last) and last >= cutoff:
                action, detail = "skipped", f"pinged within {_span(silence)}"
            else:
                action, detail = "would remove", ""
            plan.append(
                {
                    "agent_id": agent_id,
                    "pool_id": row["pool_id"],
                    "name": row["name"],
                    "status": row["status"],
                    "last_ping_at": last,
                    "action": action,
                    "detail": detail,
                }
            )
        frame = build_frame(plan, CLEANUP)
        if dry_run:
            return frame
        return self.remove_planned(frame, show_progress=show_progress)

    def remove_planned(self, plan: pd.DataFrame, *, show_progress: bool = True) -> OutcomeFrame:
        """Carry out a :meth:`remove_agents` plan: exactly the agents it marks ``would remove``.

        Each such agent is read again first (``GET /agents/:id``); one whose
        status or last ping changed since the plan, or that is gone, is
        ``skipped`` with what changed, and only the others are deleted
        (``DELETE /agents/:id``, once each). A refusal (412: it came back to
        life between the read and the delete) is ``failed`` with the server's
        message and never stops the rest. Agents the plan did not mark are
        never touched. Returns the plan's frame with the outcomes.
        """
        missing = [c for c in ("status", "last_ping_at", "action") if c not in plan.columns]
        if missing:
            raise InputError(f"not a clean-up plan: it lacks the columns {missing}")
        result = plan.copy()
        todo = list(result.index[result["action"] == "would remove"])
        for agent_id in progress(todo, desc="removing agents", enabled=show_progress):
            action, detail = self._remove_if_unchanged(str(agent_id), result.loc[agent_id])
            result.loc[agent_id, "action"] = action
            result.loc[agent_id, "detail"] = detail
        return result

    def _remove_if_unchanged(self, agent_id: str, planned: pd.Series) -> tuple[str, str]:
        try:
            current = self.read_agent(agent_id)
        except NotFound:
            return "skipped", "gone since the preview"
        except APIError as exc:
            return "failed", f"{exc.status}: {exc.message}"
        if current.get("status") != planned["status"]:
            return "skipped", (
                f"status changed since the preview: {planned['status']} -> {current.get('status')}"
            )
        pinged = parse_time(current.get("last_ping_at"))
        previous = planned["last_ping_at"]
        if pinged is not None and not pd.isna(previous) and pinged > previous:
            return "skipped", "pinged since the preview"
        try:
            self.delete_agent(agent_id)
        except APIError as exc:
            return "failed", f"{exc.status}: {exc.message}"
        return "removed", ""


def _covered(
    view: str,
    organizations: Mapping[str, bool],
    pool_ids: Iterable[Any],
    frame: pd.DataFrame,
    read: int,
) -> pd.DataFrame:
    """``frame`` with its coverage record: each organization's pool list and each
    pool's agent list read (a list that could not be read raises: a missing
    organization or pool names itself), ``read`` agents. An organization whose
    pools this token cannot all see (``organizations[name]`` false) is a gap."""
    asked = [f"organizations/{o}/agent-pools" for o in organizations]
    asked += [f"agent-pools/{p}/agents" for p in pool_ids]
    cov = Coverage(view, asked=asked)
    cov.note_read(read)
    for organization, sees_all in organizations.items():
        if not sees_all:
            cov.note_gap(
                f"organizations/{organization}/agent-pools",
                None,
                "pools this token has no permission on answer as missing: only a token that "
                "may manage the organization's agent pools sees them all",
            )
    return cov.attach(frame)


def _silence(older_than: timedelta | float) -> timedelta:
    if isinstance(older_than, bool) or not isinstance(older_than, timedelta | int | float):
        raise InputError(f"older_than must be a timedelta or seconds, not {older_than!r}")
    span = older_than if isinstance(older_than, timedelta) else timedelta(seconds=older_than)
    if span < timedelta(0):
        raise InputError(f"older_than must not be negative, not {older_than!r}")
    return span


def _span(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    if minutes and minutes % 60 == 0:
        return f"{minutes // 60}h"
    return f"{minutes}m" if minutes else f"{int(span.total_seconds())}s"


def agents_frame(resources: Iterable[Mapping[str, Any]], pool_id: str) -> BuiltFrame:
    """The :data:`AGENTS` frame of a pool's agent resources (JSON:API), built in one pass."""
    return resources_frame(list(resources), AGENTS, {"pool_id": pool_id})


class StatusTally:
    """A pool's agents counted into ``pairs`` by (pool id, status), a page of
    resources at a time: what :meth:`AgentPools.agents_by_status` needs, without
    a frame of every agent."""

    # The one attribute it reads: read_lists hands it each page's statuses alone.
    attribute = "status"

    def __init__(self, pool_id: str, pairs: Counter[tuple[str, Any]]) -> None:
        self.pool_id = pool_id
        self.pairs = pairs

    def add(self, resources: Sequence[Mapping[str, Any]]) -> None:
        self.add_values([(r.get("attributes") or {}).get("status") for r in resources])

    def add_values(self, statuses: Sequence[Any]) -> None:
        """Count a page's statuses (text, or None for an agent without one)."""
        try:
            counted = Counter(statuses)
        except TypeError:  # an object or a list: not hashable, and no status either
            counted = None
        if counted is None or not all(s is None or type(s) is str for s in counted):
            raise DecodeError("the server's answer has an agent 'status' that is not text")
        pid, pairs = self.pool_id, self.pairs
        for status, n in counted.items():
            pairs[(pid, status)] += n


def _pages_of(agent_count: Any) -> int:
    """The pages of 100 a pool's ``agent_count`` fills (0, no hint, when it is missing);
    ``read_lists`` bounds how many it asks for at once."""
    if agent_count is pd.NA or agent_count is None:
        return 0
    return -(-int(agent_count) // MAX_PAGE_SIZE)


@carries_coverage("agent_pools.count_by_status")
def count_by_status(pools: pd.DataFrame, pairs: Counter[tuple[str, Any]]) -> pd.DataFrame:
    """Agents per status for each pool (pools without agents count zero), from the
    agents counted by (pool id, status) (:class:`StatusTally`)."""
    counts: dict[str, dict[str, int]] = {
        pid: dict.fromkeys(AGENT_STATUSES, 0) for pid in pools.index
    }
    for (pid, status), n in pairs.items():
        bucket = counts.setdefault(pid, dict.fromkeys(AGENT_STATUSES, 0))
        if status in bucket:
            bucket[status] += n
    rows = [
        {
            "pool_id": pid,
            "pool_name": pools["name"].get(pid) if pid in pools.index else None,
            **c,
            "total": sum(c.values()),
        }
        for pid, c in counts.items()
    ]
    return build_frame(rows, STATUS_COUNTS)
