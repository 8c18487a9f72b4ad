"""The review: every logged request's deciding rule, held against used, impact of a change."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._coverage import Coverage
from .._errors import InputError
from .._frames import from_sql
from .._spec.acl import ACL, merged_patterns
from .._spec.identity_templates import UNKNOWN_IDENTITY, Identity
from ._decide import Decider, Verdict
from ._log import WHO, LoggedRequests
from ._policies import PolicyTexts

if TYPE_CHECKING:
    from ._generate import Generated

__all__ = ["DANGER", "Review", "danger_of"]

# From this many distinct keys on, they are decided in two forked processes (2 cores).
PARALLEL_ABOVE = 50_000
# What makes unused access dangerous, and how much (the ranking sums these weights).
DANGER = {
    "sudo": 8,
    "policy writes": 8,
    "orphan tokens": 6,
    "every secret": 5,
    "sys/": 4,
}
_WRITES = frozenset({"create", "update", "patch", "delete"})
IDENTITY_NOTE = (
    "templated patterns are filled from the identity store as it is now, not as it was "
    "when the request was made"
)
_LOGIN_KINDS = {
    "username": ("userpass_user", "ldap_user"),
    "role_name": ("approle_role", "jwt_role", "oidc_role", "kubernetes_role"),
    "cert_name": ("cert_role",),
}


def _reaches(pattern: str, prefix: str) -> bool:
    """Whether some path under ``prefix`` (or ``prefix`` itself) matches ``pattern``."""
    cut = [i for i in (pattern.find("+"), pattern.find("*"), pattern.find("{{")) if i >= 0]
    fixed = pattern[: min(cut)] if cut else pattern
    return fixed.startswith(prefix) or (bool(cut) and prefix.startswith(fixed))


@functools.lru_cache(maxsize=65536)
def _dangers(pattern: str, capability: str) -> str:
    return ", ".join(danger_of(pattern, capability))


def danger_of(pattern: str, capability: str) -> list[str]:
    """The dangers of holding ``capability`` on ``pattern`` (keys of :data:`DANGER`)."""
    found = []
    if capability == "sudo":
        found.append("sudo")
    if capability in _WRITES and (
        _reaches(pattern, "sys/policy") or _reaches(pattern, "sys/policies/")
    ):
        found.append("policy writes")
    if capability in ("update", "create", "sudo") and (
        _reaches(pattern, "auth/token/create-orphan") or _reaches(pattern, "auth/token/create/")
    ):
        found.append("orphan tokens")
    cut = [i for i in (pattern.find("+"), pattern.find("*")) if i >= 0]
    if cut and pattern[: min(cut)].count("/") <= 1 and pattern.endswith("*"):
        found.append("every secret")
    if _reaches(pattern, "sys/"):
        found.append("sys/")
    return found


class Review:
    """A least-privilege review: the log's requests decided with ``policies``.

    Built by :func:`toolkit.least_privilege.review` from a server (or offline from texts
    and an access model). ``window_days`` counts back from the log's last request and is
    cut to the log's span: before the log begins, nothing is known. ``workers``: the
    processes deciding (None: two from :data:`PARALLEL_ABOVE` distinct keys on)."""

    def __init__(
        self,
        requests: LoggedRequests,
        policies: PolicyTexts,
        principals: Sequence[Any],
        *,
        window_days: int = 90,
        coverage: Coverage | None = None,
        workers: int | None = None,
        accessors: Mapping[str, str] | None = None,
    ) -> None:
        if window_days < 1:
            raise InputError(f"window_days must be at least 1, not {window_days}")
        self.requests = requests
        self.policies = policies
        self.workers = workers
        self.principals = {p.principal: p for p in principals}
        # The log's hashed accessors -> the token principals' own (empty: logged plain).
        self.accessors = dict(accessors or {})
        self.identities: dict[str, Identity] = {}
        for p in principals:
            if isinstance(p.identity, Identity) and p.identity.entity_id:
                self.identities.setdefault(p.identity.entity_id, p.identity)
        self.decider = Decider(policies, self.identities)
        self.coverage = coverage or Coverage("least_privilege.review")
        self.coverage.gaps.extend(policies.coverage.gaps)
        self.window_days = window_days
        last = requests.last_time
        first = requests.first_time
        self.end = None if last is None else pd.Timestamp(last).tz_convert("UTC")
        start = None if self.end is None else self.end - pd.Timedelta(days=window_days)
        self.clamped = first is not None and start is not None and start < pd.Timestamp(first)
        self.start = pd.Timestamp(first).tz_convert("UTC") if self.clamped else start
        self._decided = False
        self._verdicts: dict[tuple[str, str, str, str], Verdict] = {}
        self._used: dict[str, list[tuple[Any, ...]]] | None = None
        self._held_cache: dict[tuple[str, str, bool], list[tuple[str, str, tuple[str, ...], str]]]
        self._held_cache = {}

    # -- who made each request -----------------------------------------------------
    def _principal_map(self) -> pd.DataFrame:
        """Each distinct (accessor, entity, username, role, cert, display) of the log with
        its principal (the first counted) and every principal it counts for."""
        by_entity: dict[str, list[str]] = {}
        by_name: dict[tuple[str, str], list[Any]] = {}
        for p in self.principals.values():
            if p.kind == "entity" and isinstance(p.identity, Identity):
                # The entity, then the identity groups it is in (as the store is now):
                # the log does not say whether a group's policy was the one used.
                groups = [f"identity/group/name/{g.name}" for g in p.identity.groups]
                by_entity.setdefault(p.identity.entity_id, []).extend(
                    [p.principal, *(g for g in groups if g in self.principals)]
                )
            by_name.setdefault((p.kind, p.name), []).append(p)
        who = self.requests.who()
        primary: list[str] = []
        counted_all: list[list[str]] = []
        for row in who.itertuples(index=False):
            accessor, entity, username, role, cert, display = (str(v) for v in row)
            counted: list[str] = []
            for field_name, value in (("username", username), ("role_name", role),
                                      ("cert_name", cert)):  # fmt: skip
                if not value:
                    continue
                for kind in _LOGIN_KINDS[field_name]:
                    for p in by_name.get((kind, value), ()):
                        ident = p.identity
                        if entity and isinstance(ident, Identity) and ident.entity_id != entity:
                            continue
                        counted.append(p.principal)
            if entity:
                counted.extend(by_entity.get(entity, ()))
            plain = self.accessors.get(accessor, accessor)
            token = f"auth/token/accessors/{plain}" if accessor else ""
            if token in self.principals:
                counted.append(token)
            counted = list(dict.fromkeys(counted))
            primary.append(counted[0] if counted else f"token {display or '?'} (not in the model)")
            counted_all.append(counted)
        who["principal"] = primary
        who["counted"] = counted_all
        return who

    # -- 1. the deciding rule of every request --------------------------------------
    def _decide_all(self) -> None:
        """Decide each distinct key once; the verdicts and the principals go to DuckDB
        (tables ``lp_verdicts`` and ``lp_who``) beside the requests."""
        if self._decided:
            return
        keys = self.requests.keys()
        tuples = list(keys.itertuples(index=False, name=None))
        workers = self.workers if self.workers is not None else (
            2 if len(tuples) >= PARALLEL_ABOVE else 1
        )  # fmt: skip
        verdicts = self.decider.decide_many(tuples, workers=workers)
        self._verdicts = dict(zip(keys.itertuples(index=False, name=None), verdicts,
                                  strict=True))  # fmt: skip
        table = _verdict_table(keys, verdicts, "v")
        who = self._principal_map()
        con = self.requests.con
        con.register("lp_verdicts_view", table)
        con.execute("create or replace temp table lp_verdicts as select * from lp_verdicts_view")
        con.unregister("lp_verdicts_view")
        con.register("lp_who_view", who)
        con.execute("create or replace temp table lp_who as select * from lp_who_view")
        con.unregister("lp_who_view")
        self._decided = True

    def _joined(self, where: str = "true", columns: str = "*", also: str = "") -> str:
        """The requests joined with their verdicts (``v``) and principals (``w``); ``also``
        joins one more table of verdicts by key."""
        on_who = " and ".join(f"r.{c} = w.{c}" for c in WHO)
        return (
            f"select {columns} from lp_req r join lp_verdicts v using (policy_set, entity_id, "
            f"operation, path) {also} join lp_who w on {on_who} where {where}"
        )

    def decisions(self, where: str | None = None) -> pd.DataFrame:
        """Every request of the log with the rule that decided it, oldest first.

        Columns: ``time``, ``principal`` (where it is configured, as ``bao.access`` names
        it), ``operation`` (as logged, create or update resolved), ``path``,
        ``capability`` (``operation``, ``+sudo`` where the path needs sudo), ``policy``
        (the policies granting on the deciding pattern, by comma), ``pattern`` (as
        written: a template stays one), ``allowed`` (as logged), ``evaluator_allowed``,
        ``logged_policy`` (``policy_results.granting_policies``), ``decided_by``
        (``acl``, ``root``, or ``server`` for a request the server let through on no
        rule: its unauthenticated and self paths), ``agrees``, ``constrained`` (the
        deciding rule tests parameters: the log cannot judge it). ``where``: a SQL
        condition on those columns (``"not agrees"``), run in DuckDB before anything
        reaches pandas."""
        self._decide_all()
        query = f"select * from ({self._joined(columns=_DECISION_COLUMNS)})"
        if where:
            query += f" where ({where})"
        frame = self.requests.con.execute(query + " order by time, path").df()
        frame = from_sql(frame)
        if where != _FINDINGS:
            frame = frame.drop(columns="cause")
        frame.attrs["identity"] = IDENTITY_NOTE
        frame.attrs["skipped"] = dict(self.requests.skipped)
        self._attach(frame, len(frame))
        return frame

    def findings(self) -> pd.DataFrame:
        """The requests where the evaluator decides otherwise than the log says, with the
        likely ``cause``: a policy removed since, a policy changed since, or a rule the
        toolkit lacks."""
        return self.decisions(_FINDINGS)

    # -- 2. held against used -------------------------------------------------------
    def _all_used(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every principal's allowed requests of the window, each distinct (path,
        operation, entity) once, in one DuckDB pass: (path, operation, entity_id, sudo,
        requests, last_used) tuples by principal."""
        if self._used is None:
            self._decide_all()
            found: dict[str, list[tuple[Any, ...]]] = {}
            if self.start is not None:
                inner = self._joined(
                    "r.allowed and r.time >= ?",
                    "unnest(w.counted) as principal, r.path, r.operation, r.entity_id, "
                    "v.v_sudo as sudo, r.time",
                )
                rows = self.requests.con.execute(
                    "select principal, path, operation, entity_id, sudo, count(*) as requests, "
                    f"max(time) as last_used from ({inner}) group by all",
                    [self.start.to_pydatetime()],
                ).fetchall()
                for principal, *rest in rows:
                    found.setdefault(principal, []).append(tuple(rest))
            self._used = found
        return self._used

    def used(self, principal: str) -> pd.DataFrame:
        """The principal's allowed requests of the window, each distinct (path, operation)
        once: ``path``, ``operation``, ``entity_id``, ``sudo``, ``requests``, ``last_used``."""
        rows = self._all_used().get(principal, [])
        columns: list[Sequence[Any]] = (
            list(zip(*rows, strict=True)) if rows else [() for _ in range(6)]
        )
        frame = pd.DataFrame(
            {
                "path": pd.array(columns[0], dtype="string"),
                "operation": pd.array(columns[1], dtype="string"),
                "entity_id": pd.array(columns[2], dtype="string"),
                "sudo": pd.array(columns[3], dtype="bool"),
                "requests": pd.array(columns[4], dtype="int64"),
                "last_used": pd.to_datetime(pd.Series(columns[5], dtype="object"), utc=True),
            }
        )
        self._attach(frame, len(rows))
        return frame

    def _acl_of(self, principal: Any, entity_id: str) -> ACL:
        identity = principal.identity
        if identity is UNKNOWN_IDENTITY:
            identity = self.identities.get(entity_id) if entity_id else None
        return ACL(self.policies.rules_of(list(principal.policies)), identity=identity)

    def standing(self, principals: Iterable[str] | None = None) -> pd.DataFrame:
        """Per principal, every (pattern, capability) it holds: ``last_used`` in the
        window (from the log), ``requests``, ``unused``, ``danger`` (what makes it
        dangerous, see :data:`DANGER`), ``status`` (``granted``, or ``depends on
        identity`` for a template a role's logins fill)."""
        names = self._names(principals)
        rows: list[dict[str, Any]] = []
        for name in names:
            principal = self.principals[name]
            rows.extend(self._held_rows(principal))
        frame = pd.DataFrame(
            rows,
            columns=["principal", "kind", "pattern", "capability", "policies", "status",
                     "last_used", "requests", "unused", "danger"],
        )  # fmt: skip
        frame["last_used"] = pd.to_datetime(frame["last_used"], utc=True)
        frame["requests"] = frame["requests"].astype("int64")
        frame["unused"] = frame["unused"].astype("bool")
        for column in ("principal", "kind", "pattern", "capability", "status", "danger"):
            frame[column] = frame[column].astype("string")
        self._attach(frame, len(names))
        return frame

    def _held_rows(self, principal: Any) -> list[dict[str, Any]]:
        if "root" in principal.policies:
            return []
        policy_set = ",".join(sorted(set(principal.policies)))
        identity = principal.identity
        unknown = identity is UNKNOWN_IDENTITY
        own_entity = identity.entity_id if isinstance(identity, Identity) else ""
        used: dict[tuple[str, str], tuple[Any, int]] = {}
        for path, operation, entity_id, sudo, requests, last_used in self._all_used().get(
            principal.principal, ()
        ):
            # The decider's answers are kept by (policy set, entity, operation, path): a
            # token's own requests were decided already.
            verdict = self.decider.decide(
                policy_set, entity_id if unknown else own_entity, operation, path
            )
            if not verdict.allowed:
                continue
            for cap in [operation] + (["sudo"] if sudo else []):
                last, count = used.get((verdict.pattern, cap), (None, 0))
                when = last_used if last is None or last_used > last else last
                used[(verdict.pattern, cap)] = (when, count + int(requests))
        rows = []
        for pattern, cap, policies, status in self._held(policy_set, own_entity, unknown):
            last, count = used.get((pattern, cap), (None, 0))
            rows.append(
                {
                    "principal": principal.principal,
                    "kind": principal.kind,
                    "pattern": pattern,
                    "capability": cap,
                    "policies": list(policies),
                    "status": status,
                    "last_used": last,
                    "requests": count,
                    "unused": last is None,
                    "danger": _dangers(pattern, cap),
                }
            )
        return rows

    def _held(
        self, policy_set: str, entity_id: str, unknown: bool
    ) -> list[tuple[str, str, tuple[str, ...], str]]:
        """Each (pattern as written, capability, policies, status) a policy set holds for
        an identity (kept: principals share policy sets)."""
        key = (policy_set, entity_id, unknown)
        found = self._held_cache.get(key)
        if found is not None:
            return found
        names = [n for n in policy_set.split(",") if n]
        acl = ACL(
            self.policies.rules_of(names),
            identity=self.identities.get(entity_id) if entity_id else None,
        )
        held: list[tuple[str, str, tuple[str, ...], str]] = []
        for pattern, caps, policies in merged_patterns(acl.sources):
            if "deny" in caps:
                continue
            written = next(
                (acl.written_as[(p, pattern)] for p in policies if (p, pattern) in acl.written_as),
                pattern,
            )
            held.extend((written, c, policies, "granted") for c in sorted(caps))
        if unknown:
            for rule in self.policies.rules_of(names):
                if rule.templated and "deny" not in rule.capabilities:
                    held.extend(
                        (rule.pattern, c, (rule.policy,), "depends on identity")
                        for c in sorted(rule.capabilities)
                    )
        seen: set[tuple[str, str]] = set()
        found = []
        for item in held:
            if (item[0], item[1]) not in seen:
                seen.add((item[0], item[1]))
                found.append(item)
        self._held_cache[key] = found
        return found

    def ranking(self, principals: Iterable[str] | None = None) -> pd.DataFrame:
        """Principals sorted by how dangerous, then how much, of their access is unused:
        ``held``, ``used``, ``unused``, ``unused_share``, ``danger_score`` (the sum of
        :data:`DANGER` weights over unused grants), ``dangers`` (which kinds)."""
        standing = self.standing(principals)
        tally: dict[str, dict[str, Any]] = {}
        for name, kind, unused, danger in zip(
            standing["principal"],
            standing["kind"],
            standing["unused"],
            standing["danger"],
            strict=True,
        ):
            row = tally.setdefault(name, {"principal": name, "kind": kind, "held": 0,
                                          "used": 0, "unused": 0, "danger_score": 0,
                                          "kinds": set()})  # fmt: skip
            row["held"] += 1
            if unused:
                row["unused"] += 1
                kinds = [k for k in str(danger).split(", ") if k]
                row["danger_score"] += sum(DANGER[k] for k in kinds)
                row["kinds"].update(kinds)
            else:
                row["used"] += 1
        rows = [
            {**{k: v for k, v in row.items() if k != "kinds"},
             "unused_share": row["unused"] / row["held"],
             "dangers": ", ".join(sorted(row["kinds"], key=lambda k: (-DANGER[k], k)))}
            for row in tally.values()
        ]  # fmt: skip
        frame = pd.DataFrame(
            rows,
            columns=["principal", "kind", "held", "used", "unused", "unused_share",
                     "danger_score", "dangers"],
        ).sort_values(["danger_score", "unused", "principal"], ascending=[False, False, True],
                      kind="stable").reset_index(drop=True)  # fmt: skip
        for column in ("held", "used", "unused", "danger_score"):
            frame[column] = frame[column].astype("int64")
        frame["unused_share"] = frame["unused_share"].astype("float64")
        for column in ("principal", "kind", "dangers"):
            frame[column] = frame[column].astype("string")
        self._attach(frame, len(frame))
        return frame

    # -- 3. a policy generated from use -----------------------------------------------
    def generate(
        self,
        principals: str | Sequence[str],
        *,
        generalise_above: int | None = None,
        name: str | None = None,
    ) -> Generated:
        """The smallest ACL policy (HCL) allowing every request ``principals`` made in the
        window, proved before it is returned: it covers (every allowed request of the
        window is allowed by it) and never widens (nothing it allows is denied by any of
        the principals' current policy sets, identity policies included: checked on the
        patterns themselves, on every path where the two could differ).
        ``generalise_above``: siblings under one folder, at least that many, become
        ``folder/+`` (or ``folder/*`` when deeper), each said in the rule's note with how
        many paths it stands for; None generalises nothing. :class:`ProofFailed` if a
        proof fails (the policy is not shown)."""
        from ._generate import generate

        return generate(self, principals, generalise_above=generalise_above, name=name)

    # -- 4. impact of a change ------------------------------------------------------
    def impact(self, changes: Mapping[str, str | None], *, recent_days: int = 30) -> pd.DataFrame:
        """Every logged request (the whole log, not a sample) whose outcome would change
        with ``changes`` (policy name -> new text, or None to remove it).

        Columns: ``time``, ``principal``, ``operation``, ``path``, ``capability``,
        ``old_allowed``, ``new_allowed``, ``old_policy``, ``old_pattern``,
        ``new_policy``, ``new_pattern``, ``recent`` (within ``recent_days`` of the log's
        end). Denials of recent use come first; ``attrs["flag"]`` says how many."""
        if not changes:
            raise InputError("impact needs at least one policy change: {name: text or None}")
        proposed = Decider(self.policies.changed(changes), self.identities, self.decider.sudo)
        self._decide_all()
        touched = set(changes)
        keys, news = [], []
        for key, old in self._verdicts.items():
            if touched.isdisjoint(key[0].split(",")):
                continue  # a policy set none of the changes touches decides the same
            new = proposed.decide(*key)
            if old.allowed != new.allowed:
                keys.append(key)
                news.append(new)
        table = _verdict_table(
            pd.DataFrame(keys, columns=["policy_set", "entity_id", "operation", "path"]),
            news,
            "n",
        )
        con = self.requests.con
        con.register("lp_changed_view", table)
        cutoff = None if self.end is None else self.end - pd.Timedelta(days=recent_days)
        frame = con.execute(
            self._joined(columns="r.time, w.principal, r.operation, r.path, r.operation || "
                         "case when v.v_sudo then '+sudo' else '' end as capability, "
                         "v.v_allowed as old_allowed, c.n_allowed as new_allowed, "
                         "case when v.v_allowed then v.v_granting else v.v_holding end "
                         "as old_policy, v.v_pattern as old_pattern, case when c.n_allowed "
                         "then c.n_granting else c.n_holding end as new_policy, c.n_pattern "
                         "as new_pattern, coalesce(r.time >= ?, false) as recent",
                         also="join lp_changed_view c using (policy_set, entity_id, operation, "
                         "path)"),
            [None if cutoff is None else cutoff.to_pydatetime()],
        ).df()  # fmt: skip
        con.unregister("lp_changed_view")
        frame["time"] = pd.to_datetime(frame["time"], utc=True)
        for column in ("old_allowed", "new_allowed", "recent"):
            frame[column] = frame[column].astype("bool")
        for column in ("principal", "operation", "path", "capability", "old_policy",
                       "old_pattern", "new_policy", "new_pattern"):  # fmt: skip
            frame[column] = frame[column].astype("string")
        frame["_first"] = frame["recent"] & ~frame["new_allowed"]
        frame = frame.sort_values(["_first", "time"], ascending=[False, False], kind="stable")
        frame = frame.drop(columns="_first").reset_index(drop=True)
        lost = int((frame["recent"] & ~frame["new_allowed"]).sum())
        frame.attrs["flag"] = (
            f"DENIES RECENT USE: {lost} request(s) of the last {recent_days} days would be denied"
            if lost
            else f"denies nothing used in the last {recent_days} days"
        )
        frame.attrs["changes"] = {k: ("removed" if v is None else "new text") for k, v in
                                  changes.items()}  # fmt: skip
        self._attach(frame, len(self._verdicts))
        return frame

    # -- shared ---------------------------------------------------------------------
    def _names(self, principals: Iterable[str] | None) -> list[str]:
        if principals is None:
            return list(self.principals)
        if isinstance(principals, str):
            principals = [principals]
        names = []
        for name in principals:
            key = str(name).strip().strip("/")
            if key not in self.principals:
                raise InputError(
                    f"no principal {name!r}: name one by where it is configured "
                    "(see bao.access.who_can's index), e.g. 'auth/userpass/users/alice'"
                )
            names.append(key)
        return names

    def window(self) -> dict[str, Any]:
        """The window: its start and end, whether the log's span cut it, and the log."""
        return {
            "start": None if self.start is None else self.start.isoformat(),
            "end": None if self.end is None else self.end.isoformat(),
            "days": self.window_days,
            "cut_to_log": bool(self.clamped),
            "note": "a request the log does not hold is no evidence of non-use before "
            "the log begins",
            "files": list(self.requests.files),
        }

    def _attach(self, frame: pd.DataFrame, read: int) -> None:
        record = Coverage(self.coverage.view, asked=list(self.requests.files))
        record.gaps.extend(self.coverage.gaps)
        record.note_read(read)
        record.attach(frame)
        frame.attrs["window"] = self.window()


def _verdict_table(keys: pd.DataFrame, verdicts: Sequence[Verdict], prefix: str) -> pd.DataFrame:
    """``keys`` with each verdict's fields as columns named ``<prefix>_...``."""
    table = keys.reset_index(drop=True).copy()
    table[f"{prefix}_allowed"] = pd.array([v.allowed for v in verdicts], dtype="bool")
    table[f"{prefix}_pattern"] = [v.pattern for v in verdicts]
    table[f"{prefix}_granting"] = [",".join(v.granting) for v in verdicts]
    table[f"{prefix}_holding"] = [",".join(v.holding) for v in verdicts]
    table[f"{prefix}_sudo"] = pd.array([v.sudo for v in verdicts], dtype="bool")
    table[f"{prefix}_missing"] = [",".join(v.missing) for v in verdicts]
    table[f"{prefix}_constrained"] = pd.array([v.constrained for v in verdicts], dtype="bool")
    return table


_FINDINGS = "not agrees"
_DECISION_COLUMNS = """
    r.time, w.principal, r.operation, r.path,
    r.operation || case when v.v_sudo then '+sudo' else '' end as capability,
    case when v.v_allowed then v.v_granting else v.v_holding end as policy,
    v.v_pattern as pattern,
    coalesce(r.allowed, false) as allowed,
    v.v_allowed as evaluator_allowed,
    r.granting as logged_policy,
    case when list_contains(string_split(r.policy_set, ','), 'root') then 'root'
         when coalesce(r.allowed, false) and r.granting = '' then 'server'
         else 'acl' end as decided_by,
    case when list_contains(string_split(r.policy_set, ','), 'root')
              then coalesce(r.allowed, false)
         when coalesce(r.allowed, false) and r.granting = '' then true
         else coalesce(r.allowed, false) = v.v_allowed
              and (not coalesce(r.allowed, false) or r.granting = v.v_granting) end as agrees,
    v.v_constrained as constrained,
    case when v.v_missing <> '' then 'policy ' || v.v_missing || ' no longer exists'
         when v.v_constrained then 'the deciding rule tests parameters, whose values the '
              || 'log does not show (HMAC''d)'
         else 'a policy changed since the request, or a rule the evaluator lacks' end
         as cause
"""
