"""The request entries of a file audit log, as the least-privilege review reads them.

One DuckDB pass over the files (plain, gzip or zstd, in parallel): only the fields
the review needs are converted. Requests repeat, so the review decides each distinct
(policy set, identity, operation, path) once; :func:`read_requests` gives the
requests with the id of their distinct key, and the keys apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from .. import auditlog

__all__ = ["LoggedRequests", "read_requests"]

_COLUMNS = {
    "time": "VARCHAR",
    "type": "VARCHAR",
    "error": "VARCHAR",
    "auth": "STRUCT(accessor VARCHAR, display_name VARCHAR, entity_id VARCHAR, "
    "policies VARCHAR[], token_policies VARCHAR[], identity_policies VARCHAR[], "
    "metadata STRUCT(role_name VARCHAR, username VARCHAR, cert_name VARCHAR), "
    "policy_results STRUCT(allowed BOOLEAN, granting_policies STRUCT(name VARCHAR, "
    'namespace_id VARCHAR, "type" VARCHAR)[]))',
    "request": "STRUCT(operation VARCHAR, path VARCHAR, mount_point VARCHAR, "
    "namespace STRUCT(id VARCHAR, path VARCHAR))",
}
# The operations an ACL rule decides; the others (help, renew, alias-lookahead...) are
# the server's own and are counted apart.
ACL_OPERATIONS = ("create", "read", "update", "patch", "delete", "list")

_REQUESTS = """
create or replace temp table lp_requests as
select
    "type" as entry,
    try_cast("time" as timestamptz) as time,
    request.operation as operation,
    request.path as path,
    coalesce(request.namespace.path, '') as namespace,
    auth.accessor as accessor,
    auth.display_name as display_name,
    coalesce(auth.entity_id, '') as entity_id,
    auth.metadata.role_name as role_name,
    auth.metadata.username as username,
    auth.metadata.cert_name as cert_name,
    array_to_string(list_sort(list_distinct(
        coalesce(auth.token_policies, auth.policies, []) || coalesce(auth.identity_policies, [])
    )), ',') as policy_set,
    array_to_string(list_sort(coalesce(auth.identity_policies, [])), ',') as identity_policies,
    auth.policy_results.allowed as allowed,
    array_to_string(list_sort(list_transform(
        coalesce(auth.policy_results.granting_policies, []), lambda g: g.name)), ',') as granting
from {source}
where "type" is distinct from 'response'
"""


@dataclass
class LoggedRequests:
    """The log's request entries, kept in DuckDB as table ``lp_req`` of ``con`` (never
    all in pandas: a log of millions of lines stays in DuckDB's columns), what was left
    out (``skipped``), the times of its first and last entry, and its files.
    ``unread`` names what was skipped that may hide use: a gap in every frame."""

    con: Any
    skipped: dict[str, int]
    first_time: Any
    last_time: Any
    files: tuple[str, ...]

    @property
    def unread(self) -> dict[str, int]:
        hides = ("requests in a namespace", "requests whose time could not be read",
                 "lines that are not audit entries (not JSON, or no request)")  # fmt: skip
        return {k: v for k, v in self.skipped.items() if k in hides}

    def keys(self) -> pd.DataFrame:
        """Each distinct (policy set, identity, operation, path): what is decided once."""
        return self.con.execute(
            "select distinct policy_set, entity_id, operation, path from lp_req"
        ).df()

    def who(self) -> pd.DataFrame:
        """Each distinct (accessor, entity, username, role, cert, display name)."""
        return self.con.execute(f"select distinct {', '.join(WHO)} from lp_req").df()


# What names the principal of a request (empty text where the log has none).
WHO = ("accessor", "entity_id", "username", "role_name", "cert_name", "display_name")


def _source(paths: tuple[Any, ...]) -> str:
    files = "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"
    columns = "{" + ", ".join(f"'{k}': '{v}'" for k, v in _COLUMNS.items()) + "}"
    return (
        f"read_json({files}, format = 'newline_delimited', columns = {columns}, "
        "ignore_errors = true, compression = 'auto_detect', maximum_object_size = 67108864)"
    )


def read_requests(log: auditlog.AuditLog) -> LoggedRequests:
    """Every request entry of ``log`` that a token made and an ACL rule decides.

    Left out and counted in ``skipped``: requests with no token (logins and other
    unauthenticated paths), operations no ACL rule decides, entries in a namespace
    (their policies are the namespace's: not read here)."""
    con = log.con
    con.execute(_REQUESTS.format(source=_source(log.paths)))
    counts = con.execute(
        f"""
        select
            count(*) filter (where policy_set = '' and ok) as no_token,
            count(*) filter (where policy_set <> '' and ok and operation not in
                {ACL_OPERATIONS}) as not_acl,
            count(*) filter (where namespace <> '' and ok) as in_namespace,
            count(*) filter (where time is null and entry = 'request') as no_time,
            min(time), max(time),
            count(*) filter (where entry is null or (entry = 'request' and path is null))
                as unreadable
        from (select *, entry = 'request' and path is not null as ok from lp_requests)
        """
    ).fetchone()
    assert counts is not None
    con.execute(
        f"""
        create or replace temp table lp_req as
        select time, operation, path, policy_set, allowed, granting,
               {", ".join(f"coalesce({c}, '') as {c}" for c in WHO)}
        from lp_requests
        where entry = 'request' and path is not null and policy_set <> ''
          and operation in {ACL_OPERATIONS} and namespace = '' and time is not null
        """
    )
    con.execute("drop table lp_requests")
    skipped = {
        "requests without a token (logins, unauthenticated paths)": int(counts[0]),
        "operations no ACL rule decides (help, renew, ...)": int(counts[1]),
        "requests in a namespace": int(counts[2]),
        "requests whose time could not be read": int(counts[3]),
        "lines that are not audit entries (not JSON, or no request)": int(counts[6]),
    }
    return LoggedRequests(
        con, {k: v for k, v in skipped.items() if v}, counts[4], counts[5],
        tuple(str(p) for p in log.paths),
    )  # fmt: skip
