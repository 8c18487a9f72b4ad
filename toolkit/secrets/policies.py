"""Access policies: ACL, RGP and EGP (spec section 4.2), and one frame of them all.

RGP and EGP exist only in the premium edition (OpenBao has neither): listing
a kind the server does not offer gives no policies in :meth:`Policies.policies_frame`
rather than an error.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from .._coverage import Coverage, carry, is_gap
from .._coverage import coverage_of as coverage_records
from .._errors import (
    APIError,
    DecodeError,
    InputError,
    MethodNotAllowed,
    MountNotFound,
    NamespaceNotFound,
    NotFound,
    PermissionDenied,
    TokenRefused,
)
from .._frames import Schema, build_frame
from .._http import api_path
from .._records import Record, text
from ._base import SecretsArea, listed_keys, unwrap

__all__ = ["ENFORCEMENT_LEVELS", "HOLDERS", "KINDS", "POLICIES", "Policies"]

KINDS = ("acl", "rgp", "egp")
ENFORCEMENT_LEVELS = ("advisory", "soft-mandatory", "hard-mandatory")

POLICIES = Schema.of("kind name enforcement_level paths:object policy_lines:int")

# Who carries a policy: a token (by accessor) or a token role.
HOLDERS = Schema.of("policy holder_kind holder")


# An EGP's name -> the paths it governs, each ``{"path", "glob"}``.
NamePathMap = dict[str, list[dict[str, Any]]]


def _kind(kind: str) -> str:
    if kind not in KINDS:
        raise InputError(f"policy kind must be one of {KINDS}, not {kind!r}")
    return kind


def _paths(paths: str | Sequence[str] | None) -> list[str]:
    if paths is None:
        return []
    items = paths.split(",") if isinstance(paths, str) else list(paths)
    return [p.strip() for p in items if p and p.strip()]


class Policies(SecretsArea):
    """``sys/policies/{acl,rgp,egp}``."""

    def list_policies(self, kind: str = "acl") -> list[str]:
        """Names of the policies of ``kind``. ``LIST /sys/policies/{kind}``.

        For EGP the names come from ``name_path_map``: the list's ``keys`` show
        each name with its paths, for the command line.
        """
        if _kind(kind) == "egp":
            return list(self.name_path_map())
        return self._list(api_path("/sys/policies/{kind}", kind=kind))

    def name_path_map(self) -> NamePathMap:
        """Each EGP's name, and the paths it governs: ``{"path", "glob"}`` dicts.

        ``LIST /sys/policies/egp``, its ``name_path_map`` (a glob's path is shown
        without its ``*``, with ``glob`` true). Empty when there are none.
        """
        try:
            payload = self._http.json("LIST", "/sys/policies/egp")
        except NotFound as exc:  # an empty list answers 404 with no message
            if type(exc) is not NotFound or exc.messages:
                raise
            return {}
        data = unwrap(payload)
        raw = data.get("name_path_map")
        if raw is None and isinstance(payload, Mapping):
            raw = payload.get("name_path_map")
        if not isinstance(raw, Mapping):
            raise DecodeError("LIST /sys/policies/egp: the answer has no name_path_map object")
        return {
            str(name): [
                {"path": str(entry.get("path", "")), "glob": bool(entry.get("glob"))}
                for entry in (entries if isinstance(entries, list) else [])
                if isinstance(entry, Mapping)
            ]
            for name, entries in sorted(raw.items())
        }

    def read(self, kind: str, name: str) -> Record:
        """One policy. ``GET /sys/policies/{kind}/:name``.

        A record with ``kind``, ``name``, ``policy`` (the text), and for RGP/EGP
        ``enforcement_level``, for EGP ``paths`` (a list).
        """
        data = self._read(api_path("/sys/policies/{kind}/{name}", kind=_kind(kind), name=name))
        record: dict[str, Any] = {
            "kind": kind,
            "name": data.get("name", name),
            "policy": text(data.get("policy"), "policy") or "",
        }
        if kind != "acl":
            record["enforcement_level"] = data.get("enforcement_level")
        if kind == "egp":
            paths = data.get("paths")  # a list, or a comma-separated text
            record["paths"] = _paths(
                paths if isinstance(paths, str) else listed_keys(paths, "paths")
            )
        return Record(record, kind=f"{kind}-policy")

    def write(
        self,
        kind: str,
        name: str,
        policy: str,
        *,
        enforcement_level: str | None = None,
        paths: str | Sequence[str] | None = None,
    ) -> None:
        """Create or update a policy. ``POST /sys/policies/{kind}/:name``.

        The text is sent base64-encoded. RGP and EGP need ``enforcement_level``
        (advisory, soft-mandatory, hard-mandatory); EGP needs ``paths`` (a list,
        or a comma-separated string). Checked here before anything is sent.
        """
        _kind(kind)
        if not name:
            raise InputError("a policy needs a name")
        if not policy or not policy.strip():
            raise InputError(f"{kind} policy {name!r}: the policy text is empty")
        body: dict[str, Any] = {"policy": base64.b64encode(policy.encode()).decode()}
        if kind in ("rgp", "egp"):
            if enforcement_level not in ENFORCEMENT_LEVELS:
                raise InputError(
                    f"{kind} policy {name!r}: enforcement_level must be one of "
                    f"{ENFORCEMENT_LEVELS}, not {enforcement_level!r}"
                )
            body["enforcement_level"] = enforcement_level
        elif enforcement_level is not None:
            raise InputError("enforcement_level applies to rgp and egp policies only")
        if kind == "egp":
            path_list = _paths(paths)
            if not path_list:
                raise InputError(f"egp policy {name!r}: paths is required")
            body["paths"] = path_list
        elif paths is not None:
            raise InputError("paths applies to egp policies only")
        self._send("POST", api_path("/sys/policies/{kind}/{name}", kind=kind, name=name), body)

    def delete(self, kind: str, name: str) -> None:
        """Delete a policy, with immediate effect. ``DELETE /sys/policies/{kind}/:name``."""
        self._send("DELETE", api_path("/sys/policies/{kind}/{name}", kind=_kind(kind), name=name))

    def policies_frame(self, kinds: Iterable[str] = KINDS) -> pd.DataFrame:
        """Every policy of ``kinds`` in one frame, read concurrently.

        Columns: ``kind``, ``name``, ``enforcement_level`` (empty for ACL),
        ``paths`` (a list, EGP only), ``policy_lines`` (lines of the text).
        A premium kind the server does not offer (400, 404, 405) contributes no
        rows and is named in ``attrs["not_offered"]``. ``attrs["coverage"]``
        notes each list or read refused (403) on the way; a refused ACL list, a
        missing namespace or a refused token is raised.
        """
        kinds = list(kinds)
        cov = Coverage("policies.policies_frame", asked=[f"sys/policies/{k}" for k in kinds])
        not_offered: list[str] = []
        wanted: list[tuple[str, str]] = []
        for kind in kinds:
            try:
                names = self.list_policies(kind)
            except NamespaceNotFound:
                raise
            except APIError as exc:
                # OpenBao answers 400 "unsupported path" for the premium kinds.
                premium = kind != "acl" and (
                    exc.status == 400 or isinstance(exc, MountNotFound | MethodNotAllowed)
                )
                if premium or (kind != "acl" and type(exc) is NotFound):
                    not_offered.append(kind)
                    continue
                if kind != "acl" and is_gap(exc):
                    cov.note_error(f"sys/policies/{kind}", exc)
                    continue
                raise
            wanted.extend((kind, n) for n in names)

        def one(item: tuple[str, str]) -> dict[str, Any] | None:
            path = f"sys/policies/{item[0]}/{item[1]}"
            record = cov.read_or_gap(path, lambda: self.read(*item))
            if record is None:
                return None
            text = record.get("policy") or ""
            return {
                "kind": item[0],
                "name": record["name"],
                "enforcement_level": record.get("enforcement_level"),
                "paths": record.get("paths", []),
                "policy_lines": len(text.splitlines()),
            }

        rows = [row for row in self._http.map(one, wanted) if row is not None]
        cov.note_read(len(rows))
        frame = build_frame(rows, POLICIES)
        frame.attrs["not_offered"] = not_offered
        return cov.attach(frame)

    # -- findings (ACL rules, and who holds which policy) ---------------------------------
    def acl_texts(self) -> dict[str, str]:
        """Every ACL policy's text by name: ``LIST /sys/policies/acl``, then a ``GET`` each."""
        return self._acl_texts(Coverage("policies.acl_texts", asked=["sys/policies/acl"]))

    def _acl_texts(self, cov: Coverage) -> dict[str, str]:
        """:meth:`acl_texts`, a policy whose read is refused a gap in ``cov``."""
        names = self.list_policies("acl")

        def one(name: str) -> str | None:
            where = f"sys/policies/acl/{name}"
            found = cov.read_or_gap(where, lambda: self.read("acl", name))
            return None if found is None else str(found.get("policy") or "")

        texts = dict(zip(names, self._http.map(one, names), strict=True))
        read = {name: text for name, text in texts.items() if text is not None}
        cov.note_read(len(read))
        return read

    def rules_frame(self) -> pd.DataFrame:
        """Every rule of every ACL policy: ``policy``, ``path``, ``capabilities`` (a list).

        One row per ``path`` block, parsed from the policy's HCL (or JSON);
        see :func:`toolkit.secrets.acl.rules_frame`.
        """
        from .acl import rules_frame

        cov = Coverage("policies.rules_frame", asked=["sys/policies/acl"])
        return cov.attach(rules_frame(self._acl_texts(cov)))

    def findings(self, rules: pd.DataFrame | None = None) -> pd.DataFrame:
        """What is dangerous in the ACL policies (:func:`toolkit.secrets.acl.rule_findings`):
        root-equivalent rules, ``sudo``, orphan-token creation, globs under ``sys/``."""
        from .acl import rule_findings

        rules = self.rules_frame() if rules is None else rules
        return carry(rule_findings(rules), rules, view="policies.findings")

    def holders(self, tokens: pd.DataFrame | None = None) -> pd.DataFrame:
        """Who carries which policy, where the server lets it be listed.

        Tokens from :meth:`Tokens.inventory` (``LIST /auth/token/accessors``,
        sudo; pass ``tokens`` to reuse one), token roles from ``LIST
        /auth/token/roles`` (their ``allowed_policies``). One row per (policy,
        holder): ``policy``, ``holder_kind`` (``token`` or ``token role``),
        ``holder`` (the accessor and display name, or the role's name). When
        accessors may not be listed, only the roles are shown and
        ``frame.attrs["not_permitted"]`` names what was refused.
        """
        from .tokens import Tokens

        area = Tokens(self._http)
        refused: list[str] = []
        rows: list[dict[str, Any]] = []
        cov = Coverage("policies.holders", asked=["auth/token/accessors", "auth/token/roles"])
        if tokens is None:
            tokens = _permitted(cov, refused, "auth/token/accessors", area.inventory)
        roles = _permitted(cov, refused, "auth/token/roles", area.roles_frame)
        # What the inventory or the roles could not read (a refused lookup) the holders lack too.
        for read in (tokens, roles):
            for record in coverage_records(read) if read is not None else ():
                cov.gaps.extend(record.gaps)
        if tokens is not None:
            for accessor, row in tokens.iterrows():
                rows.extend(
                    {
                        "policy": p,
                        "holder_kind": "token",
                        "holder": f"{accessor} ({row['display_name']})",
                    }
                    for p in row["policies"] or []
                )
        if roles is not None:
            for role, row in roles.iterrows():
                rows.extend(
                    {"policy": p, "holder_kind": "token role", "holder": str(role)}
                    for p in row["allowed_policies"] or []
                )
        frame = build_frame(rows, HOLDERS).sort_values(
            ["policy", "holder_kind", "holder"], kind="stable", ignore_index=True
        )
        frame.attrs["not_permitted"] = refused
        cov.note_read(len(frame))
        return cov.attach(frame)


def _permitted(
    cov: Coverage, refused: list[str], path: str, read: Callable[[], pd.DataFrame]
) -> pd.DataFrame | None:
    """What ``read`` answers, or None when the server refuses it (``path`` is then noted
    as refused and as a gap); a refused token itself is raised."""
    try:
        return read()
    except TokenRefused:
        raise
    except PermissionDenied as exc:
        refused.append(path)
        cov.note_error(path, exc)
        return None
