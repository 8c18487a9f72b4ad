"""Least privilege from evidence: what each principal holds against what it used, a policy
generated from its use and proved on the log, and the impact of a change before it is made.

    from toolkit import least_privilege
    rv = least_privilege.review(client, "/var/log/openbao/audit.log", days=90)
    rv.decisions()       # every request: the policy and pattern that decided it
    rv.findings()        # where the evaluator decides otherwise than the log says
    rv.ranking()         # principals by how dangerous and how much of their access is unused
    rv.standing("auth/userpass/users/alice")   # each pattern+capability: last used, unused
    gen = rv.generate("auth/userpass/users/alice", generalise_above=5)
    print(gen.hcl); gen.lost                   # proved: covers the window, widens nothing
    rv.impact({"reader": gen.hcl})             # every logged request whose outcome changes

What the file audit device logs, and what it does not (OpenBao 2.7): the operation
(create or update already resolved), the path, the token's and identity policies, the
entity id, and ``policy_results`` (the granting policies of an allowed request's winning
pattern; ``allowed: false`` alone on a denied one). It does not log the token role,
whether an identity policy came from the entity or a group, whether ``sudo`` was needed
(the server's root-protected paths say: :mod:`toolkit._spec.sudo`), nor the parameter values a rule's
``allowed_parameters`` test (HMAC'd): such rules are kept as written in a generated
policy and listed. Templated patterns are filled from the identity store as it is now.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from .. import auditlog
from .._coverage import Coverage
from .._errors import InputError
from .._spec.sudo import needs_sudo
from ._decide import Decider, Verdict
from ._demo import audit_file_of, sandbox_demo_traffic
from ._generate import Generated, ProofFailed
from ._log import read_requests
from ._policies import PolicyTexts
from ._review import DANGER, Review, danger_of

__all__ = [
    "DANGER",
    "POLICY_TEXTS",
    "RANKING",
    "Decider",
    "Generated",
    "PolicyTexts",
    "ProofFailed",
    "Review",
    "Verdict",
    "audit_file_of",
    "danger_of",
    "file_policies",
    "last_ranking",
    "needs_sudo",
    "policies_as_of",
    "review",
    "sandbox_demo_traffic",
]

# The history frame every review files its policy texts into, and its ranking.
POLICY_TEXTS = "policy_texts"
RANKING = "least_privilege_ranking"


def review(
    client: Any,
    log: str | Path | Iterable[str | Path] | auditlog.AuditLog,
    *,
    days: int = 90,
    policies: Mapping[str, str] | None = None,
    model: Any = None,
) -> Review:
    """A :class:`Review` of ``log`` (a file, a glob, a list, or an opened
    :class:`toolkit.auditlog.AuditLog`) with the server's policies and principals.

    ``policies`` (name -> text) decides with other texts, such as those of a date
    (:func:`policies_as_of`); else the server's, read now. ``model`` is an access
    model already loaded (``client.access.load()``); else it is loaded."""
    opened = log if isinstance(log, auditlog.AuditLog) else auditlog.open(log)  # type: ignore[arg-type]
    record = Coverage("least_privilege.review", asked=[str(p) for p in opened.paths])
    if model is None:
        model = client.access.load()
    record.gaps.extend(model.coverage.gaps)
    texts = dict(policies) if policies is not None else client.policies.acl_texts()
    parsed = PolicyTexts(texts, record)
    requests = read_requests(opened)
    for what, count in requests.unread.items():
        # Use hidden there is unknown: "unused" would be a false finding without a gap.
        record.note_gap(", ".join(requests.files), None, f"{count} {what}: not decided")
    accessors = _hashed_accessors(client, requests, model.principals, record)
    return Review(
        requests, parsed, model.principals, window_days=days, coverage=record, accessors=accessors
    )


def _hashed_accessors(
    client: Any, requests: Any, principals: Iterable[Any], record: Coverage
) -> dict[str, str]:
    """Each token principal's accessor as the log's devices hash it (``sys/audit-hash``),
    hashed -> plain, when the log's accessors are hashed (OpenBao's default): else a
    token's use could not be matched and it would look unused. What the server refuses
    to hash is a gap."""
    from .._errors import APIError

    logged = requests.who()["accessor"]
    if not logged.astype(str).str.startswith(auditlog.HMAC_PREFIX).any():
        return {}
    plain = [p.principal.rsplit("/", 1)[1] for p in principals if p.kind == "token"]
    if not plain:
        return {}
    found: dict[str, str] = {}
    try:
        for device in auditlog.audit_devices(client):
            hashes = auditlog.audit_hashes(client, device, plain)
            found.update({hashed: accessor for accessor, hashed in hashes.items()})
    except APIError as exc:
        record.note_gap(
            "sys/audit-hash", getattr(exc, "status", None),
            f"tokens not matched to the log's hashed accessors ({exc}): their use is unknown",
        )  # fmt: skip
    return found


def file_policies(
    root: str | Path,
    texts: Mapping[str, str],
    header: Any,
    *,
    target: str | None = None,
    taken_at: datetime | None = None,
    frames: Mapping[str, pd.DataFrame] | None = None,
) -> list[Path]:
    """File every policy's text into the history store at ``root`` (frame
    :data:`POLICY_TEXTS`: ``policy``, ``text``), so later reviews decide with the
    policies of that day (:func:`policies_as_of`); ``frames`` are filed with them, as
    one audit (the review's ranking: :data:`RANKING`)."""
    from .. import history

    frame = pd.DataFrame(
        {"policy": pd.array(sorted(texts), dtype="string"),
         "text": pd.array([texts[k] for k in sorted(texts)], dtype="string")}
    )  # fmt: skip
    return history.append(
        root, {POLICY_TEXTS: frame, **(frames or {})}, header, target=target, taken_at=taken_at
    )


def last_ranking(root: str | Path, *, target: str) -> pd.DataFrame | None:
    """The ranking (:data:`RANKING`) the last review of ``target`` filed, or None when no
    review filed one: the drift since the last review is read against it."""
    from .. import history

    if not Path(root).is_dir() or RANKING not in history.list_frames(root):
        return None
    con = history.open(root)
    frame = con.execute(
        f"select * from {RANKING} where audit_target = ? and audit_at = (select max(audit_at) "
        f"from {RANKING} where audit_target = ?)",
        [target, target],
    ).df()
    return None if frame.empty else frame


def policies_as_of(root: str | Path, when: datetime | str, *, target: str) -> dict[str, str]:
    """The policy texts of ``target`` as the last review on or before ``when`` filed them."""
    from .. import history

    moment = pd.Timestamp(when)
    moment = moment.tz_localize(UTC) if moment.tzinfo is None else moment.tz_convert(UTC)
    if POLICY_TEXTS not in history.list_frames(root):
        raise InputError(f"the history at {root} holds no policy texts: run a review first")
    con = history.open(root)
    runs = con.execute(
        f"select audit_run, max(audit_at) from {POLICY_TEXTS} where audit_target = ? "
        "and audit_at <= ? group by audit_run order by 2 desc limit 1",
        [target, moment.to_pydatetime()],
    ).fetchall()
    if not runs:
        raise InputError(
            f"no policy texts of target {target!r} filed on or before {moment.isoformat()}"
        )
    rows = con.execute(
        f"select policy, text from {POLICY_TEXTS} where audit_run = ? and audit_target = ?",
        [runs[0][0], target],
    ).fetchall()
    return {str(p): str(t) for p, t in rows}
