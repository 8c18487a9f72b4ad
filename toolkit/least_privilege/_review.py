"""The review: every logged request's deciding rule, held against used, impact of a change."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from .._coverage import Coverage
from .._errors import InputError
from .._spec.acl import ACL, UNKNOWN_IDENTITY, Identity, merged_patterns
from ._decide import Decider, Verdict
from ._log import LoggedRequests
from ._policies import Policies

__all__ = ["DANGER", "Review", "danger_of"]

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
    cut to the log's span: before the log begins, nothing is known."""

    def __init__(
        self,
        requests: LoggedRequests,
        policies: Policies,
        principals: Sequence[Any],
        *,
        window_days: int = 90,
        coverage: Coverage | None = None,
    ) -> None:
        if window_days < 1:
            raise InputError(f"window_days must be at least 1, not {window_days}")
        self.requests = requests
        self.policies = policies
        self.principals = {p.principal: p for p in principals}
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
        self._decided: pd.DataFrame | None = None
        self._who = self._principal_map()

    # -- who made each request -----------------------------------------------------
    def _principal_map(self) -> dict[tuple[Any, ...], tuple[str, tuple[str, ...]]]:
        """(accessor, entity, username, role, cert, display) -> (the principal, all counted)."""
        frame = self.requests.frame
        columns = ["accessor", "entity_id", "username", "role_name", "cert_name", "display_name"]
        by_entity: dict[str, list[str]] = {}
        by_name: dict[tuple[str, str], list[Any]] = {}
        for p in self.principals.values():
            if p.kind == "entity" and isinstance(p.identity, Identity):
                by_entity.setdefault(p.identity.entity_id, []).append(p.principal)
            by_name.setdefault((p.kind, p.name), []).append(p)
        found: dict[tuple[Any, ...], tuple[str, tuple[str, ...]]] = {}
        keys = frame[columns].drop_duplicates() if len(frame) else frame[columns]
        for row in keys.itertuples(index=False):
            key = tuple(None if pd.isna(v) else str(v) for v in row)
            accessor, entity, username, role, cert, display = key
            counted: list[str] = []
            for field_name, value in (("username", username), ("role_name", role),
                                      ("cert_name", cert)):  # fmt: skip
                if not value:
                    continue
                for kind in _LOGIN_KINDS[field_name]:
                    for p in by_name.get((kind, value), ()):
                        ident = p.identity
                        if (
                            entity
                            and isinstance(ident, Identity)
                            and ident.entity_id != entity
                        ):
                            continue
                        counted.append(p.principal)
            if entity:
                counted.extend(by_entity.get(entity, ()))
            token = f"auth/token/accessors/{accessor}" if accessor else ""
            if token in self.principals:
                counted.append(token)
            primary = counted[0] if counted else f"token {display or '?'} (not in the model)"
            found[key] = (primary, tuple(dict.fromkeys(counted)))
        return found

    # -- 1. the deciding rule of every request --------------------------------------
    def _decide_all(self) -> pd.DataFrame:
        if self._decided is not None:
            return self._decided
        frame = self.requests.frame
        keys = ["policy_set", "entity_id", "operation", "path"]
        distinct = frame[keys].drop_duplicates()
        verdicts = self.decider.decide_many(distinct.itertuples(index=False, name=None))
        table = distinct.assign(lp_verdict=verdicts)
        merged = frame.merge(table, on=keys, how="left")
        who_columns = ["accessor", "entity_id", "username", "role_name", "cert_name",
                       "display_name"]  # fmt: skip
        who = [
            self._who[tuple(None if pd.isna(v) else str(v) for v in row)]
            for row in merged[who_columns].itertuples(index=False)
        ]
        merged["principal"] = pd.array([w[0] for w in who], dtype="string")
        merged["lp_counted"] = [w[1] for w in who]
        self._decided = merged
        return merged

    def decisions(self) -> pd.DataFrame:
        """Every request of the log with the rule that decided it.

        Columns: ``time``, ``principal`` (where it is configured, as ``bao.access`` names
        it), ``operation`` (as logged, create or update resolved), ``path``,
        ``capability`` (``operation``, ``+sudo`` where the path needs sudo), ``policy``
        (the policies granting on the deciding pattern, by comma), ``pattern`` (as
        written: a template stays one), ``allowed`` (as logged), ``evaluator_allowed``,
        ``logged_policy`` (``policy_results.granting_policies``), ``decided_by``
        (``acl``, ``root``, or ``server`` for a request the server let through on no
        rule: its unauthenticated and self paths), ``agrees``."""
        merged = self._decide_all()
        rows = _decision_columns(merged)
        frame = pd.DataFrame(rows)
        frame.attrs["identity"] = IDENTITY_NOTE
        frame.attrs["skipped"] = dict(self.requests.skipped)
        self._attach(frame, len(frame))
        return frame

    def findings(self) -> pd.DataFrame:
        """The requests where the evaluator decides otherwise than the log says, with the
        likely cause: a policy changed or removed since, or a rule the toolkit lacks."""
        frame = self.decisions()
        found = frame[~frame["agrees"]].copy()
        found["cause"] = pd.array(
            [_cause(m) for m in self._decide_all().loc[found.index, "lp_verdict"]], dtype="string"
        )
        found.attrs = dict(frame.attrs)
        return found.reset_index(drop=True)

    # -- 2. held against used -------------------------------------------------------
    def _window(self) -> pd.DataFrame:
        merged = self._decide_all()
        if self.start is None:
            return merged.iloc[0:0]
        return merged[(merged["time"] >= self.start) & merged["allowed"].fillna(False)]

    def _acl_of(self, principal: Any, entity_id: str) -> ACL:
        identity = principal.identity
        if identity is UNKNOWN_IDENTITY:
            identity = self.identities.get(entity_id) if entity_id else None
        return ACL(self.policies.rules_of(list(principal.policies)), identity=identity)

    def used(self, principal: str) -> pd.DataFrame:
        """The principal's allowed requests of the window, each distinct (path, operation)
        once: ``path``, ``operation``, ``sudo``, ``entity_id``, ``requests``, ``last_used``."""
        window = self._window()
        mine = window[[principal in c for c in window["lp_counted"]]]
        if mine.empty:
            return pd.DataFrame(
                {"path": pd.array([], dtype="string"), "operation": pd.array([], dtype="string"),
                 "entity_id": pd.array([], dtype="string"), "sudo": pd.array([], dtype="bool"),
                 "requests": pd.array([], dtype="int64"),
                 "last_used": pd.to_datetime(pd.Series([], dtype="object"), utc=True)}
            )  # fmt: skip
        grouped = (
            mine.assign(sudo=[v.sudo for v in mine["lp_verdict"]])
            .groupby(["path", "operation", "entity_id", "sudo"], as_index=False, dropna=False)
            .agg(requests=("time", "size"), last_used=("time", "max"))
        )
        return grouped

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
        used: dict[tuple[str, str], tuple[Any, int]] = {}
        for row in self.used(principal.principal).itertuples(index=False):
            acl = self._acl_of(principal, str(row.entity_id or ""))
            decision = acl.decide(str(row.path), str(row.operation))
            if decision.pattern is None or not decision.allows(str(row.operation)):
                continue
            written = next(
                (acl.written_as[(p, decision.pattern)] for p in decision.policies
                 if (p, decision.pattern) in acl.written_as),
                decision.pattern,
            )  # fmt: skip
            caps = [str(row.operation)] + (["sudo"] if row.sudo else [])
            for cap in caps:
                last, count = used.get((written, cap), (None, 0))
                when = row.last_used if last is None or row.last_used > last else last
                used[(written, cap)] = (when, count + int(row.requests))
        identity = principal.identity
        acl = ACL(
            self.policies.rules_of(list(principal.policies)),
            identity=None if identity is UNKNOWN_IDENTITY else identity,
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
        if identity is UNKNOWN_IDENTITY:
            for rule in self.policies.rules_of(list(principal.policies)):
                if rule.templated and "deny" not in rule.capabilities:
                    held.extend(
                        (rule.pattern, c, (rule.policy,), "depends on identity")
                        for c in sorted(rule.capabilities)
                    )
        rows = []
        seen: set[tuple[str, str]] = set()
        for pattern, cap, policies, status in held:
            if (pattern, cap) in seen:
                continue
            seen.add((pattern, cap))
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
                    "danger": ", ".join(danger_of(pattern, cap)),
                }
            )
        return rows

    def ranking(self, principals: Iterable[str] | None = None) -> pd.DataFrame:
        """Principals sorted by how dangerous, then how much, of their access is unused:
        ``held``, ``used``, ``unused``, ``unused_share``, ``danger_score`` (the sum of
        :data:`DANGER` weights over unused grants), ``dangers`` (which kinds)."""
        standing = self.standing(principals)
        rows = []
        for name, group in standing.groupby("principal", sort=False):
            unused = group[group["unused"]]
            kinds = [d for text in unused["danger"] for d in str(text).split(", ") if d]
            rows.append(
                {
                    "principal": name,
                    "kind": group["kind"].iloc[0],
                    "held": len(group),
                    "used": int((~group["unused"]).sum()),
                    "unused": len(unused),
                    "unused_share": len(unused) / len(group) if len(group) else 0.0,
                    "danger_score": sum(DANGER[k] for k in kinds),
                    "dangers": ", ".join(sorted(set(kinds), key=lambda k: -DANGER[k])),
                }
            )
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
        merged = self._decide_all()
        keys = ["policy_set", "entity_id", "operation", "path"]
        distinct = merged[keys].drop_duplicates()
        touched = set(changes)
        changed: dict[tuple[str, str, str, str], Verdict] = {}
        for key in distinct.itertuples(index=False, name=None):
            if touched.isdisjoint(str(key[0]).split(",")):
                continue  # a policy set none of the changes touches decides the same
            old = self.decider.decide(*key)
            new = proposed.decide(*key)
            if old.allowed != new.allowed:
                changed[key] = new
        hit = merged[[k in changed for k in merged[keys].itertuples(index=False, name=None)]]
        cutoff = None if self.end is None else self.end - pd.Timedelta(days=recent_days)
        rows = []
        for row in hit.itertuples(index=False):
            key = (row.policy_set, row.entity_id, row.operation, row.path)
            old, new = row.lp_verdict, changed[key]
            rows.append(
                {
                    "time": row.time,
                    "principal": row.principal,
                    "operation": row.operation,
                    "path": row.path,
                    "capability": row.operation + ("+sudo" if old.sudo else ""),
                    "old_allowed": old.allowed,
                    "new_allowed": new.allowed,
                    "old_policy": ",".join(old.granting or old.holding),
                    "old_pattern": old.pattern,
                    "new_policy": ",".join(new.granting or new.holding),
                    "new_pattern": new.pattern,
                    "recent": cutoff is not None and row.time >= cutoff,
                }
            )
        frame = pd.DataFrame(
            rows,
            columns=["time", "principal", "operation", "path", "capability", "old_allowed",
                     "new_allowed", "old_policy", "old_pattern", "new_policy", "new_pattern",
                     "recent"],
        )  # fmt: skip
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
            f"DENIES RECENT USE: {lost} request(s) of the last {recent_days} days would be "
            "denied"
            if lost
            else f"denies nothing used in the last {recent_days} days"
        )
        frame.attrs["changes"] = {k: ("removed" if v is None else "new text") for k, v in
                                  changes.items()}  # fmt: skip
        self._attach(frame, len(merged))
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


def _cause(verdict: Verdict) -> str:
    if verdict.missing:
        return "policy " + ", ".join(verdict.missing) + " no longer exists"
    return "a policy changed since the request, or a rule the evaluator lacks"


def _decision_columns(merged: pd.DataFrame) -> dict[str, Any]:
    verdicts: list[Verdict] = list(merged["lp_verdict"])
    logged_allowed = merged["allowed"].fillna(False).astype(bool).tolist()
    logged = merged["granting"].fillna("").astype(str).tolist()
    policy_sets = merged["policy_set"].astype(str).tolist()
    decided_by, agrees, policy, pattern = [], [], [], []
    for v, ok, granting, pset in zip(verdicts, logged_allowed, logged, policy_sets, strict=True):
        if "root" in pset.split(","):
            kind = "root"
            same = ok
        elif ok and not granting:
            kind = "server"
            same = True
        else:
            kind = "acl"
            same = ok == v.allowed and (not ok or set(granting.split(",")) == set(v.granting))
        decided_by.append(kind)
        agrees.append(same)
        policy.append(",".join(v.granting) if v.allowed else ",".join(v.holding))
        pattern.append(v.pattern)
    return {
        "time": merged["time"],
        "principal": merged["principal"],
        "operation": merged["operation"].astype("string"),
        "path": merged["path"].astype("string"),
        "capability": pd.array(
            [o + ("+sudo" if v.sudo else "") for o, v in zip(merged["operation"], verdicts,
                                                            strict=True)], dtype="string"
        ),  # fmt: skip
        "policy": pd.array(policy, dtype="string"),
        "pattern": pd.array(pattern, dtype="string"),
        "allowed": pd.array(logged_allowed, dtype="bool"),
        "evaluator_allowed": pd.array([v.allowed for v in verdicts], dtype="bool"),
        "logged_policy": pd.array(logged, dtype="string"),
        "decided_by": pd.array(decided_by, dtype="string"),
        "agrees": pd.array(agrees, dtype="bool"),
    }
