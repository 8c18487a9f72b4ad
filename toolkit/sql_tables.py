"""SQL over the live APIs: the audits' views as tables, read when a query names them.

    import toolkit
    toolkit.sql(secrets, "select mount, count(*) from leases group by mount")
    tables = toolkit.sql_tables.SQLTables(secrets, platform, organization="acme", history="history")
    tables.sql("select * from tokens t join history.tokens h using (accessor)")

A table is fetched only when a query names it (DuckDB says which tables a query
reads), then kept for the life of the :class:`SQLTables`, and of the kernel for
:func:`sql`, with the time it was read (:meth:`SQLTables.tables_frame`, and an
answer's ``attrs["read_at"]``: each live table it read and when, UTC ISO 8601;
:meth:`SQLTables.refresh` reads again). The tables:

- secrets server: ``leases``, ``tokens``, ``policies``, ``policy_rules``,
  ``certificates`` (every PKI mount), ``mounts`` (engines and auth methods),
  ``auth_roles`` (AppRole roles, userpass users, certificate roles);
- platform (with ``organization``): ``agents``, ``pools``, ``team_access``,
  ``parameters`` (every policy set's);
- ``history.<frame>``: the frames of a history (:mod:`toolkit.history`).

A table that could not be read in part (a PKI mount or an auth mount that
refused, a gap of the view's own coverage record) keeps what it read and lists
what it missed in :meth:`SQLTables.gaps_frame`; an answer that read such a table says
so itself: ``answer.attrs["coverage"]`` (a :class:`toolkit.Coverage` record over the
live tables the query read, ``toolkit.coverage(answer)`` shows it) and an
:class:`PartialAnswer` warning naming what was not read. A table they do not
have is an error naming the ones they have.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from ._coverage import Coverage, CoverageReport, carry, coverage_of
from ._errors import APIError, InputError, PermissionDenied
from .extras import require

require("sql", "SQL over the live views", "duckdb")
__all__ = ["SQLTables", "PartialAnswer", "SECRETS_TABLES", "PLATFORM_TABLES", "sql"]


class PartialAnswer(UserWarning):
    """A query read a table that could not be read whole: the answer may miss rows."""


SECRETS_TABLES = (
    "leases",
    "tokens",
    "policies",
    "policy_rules",
    "certificates",
    "mounts",
    "auth_roles",
)
PLATFORM_TABLES = ("agents", "pools", "team_access", "parameters")
# Where each auth method keeps its roles: method type -> (LIST path under the mount, kind).
_ROLE_PATHS = {"approle": ("role", "approle role"), "userpass": ("users", "userpass user"),
               "cert": ("certs", "cert role")}  # fmt: skip


@dataclass
class _Read:
    frame: pd.DataFrame
    read_at: datetime
    seconds: float
    coverage: Coverage


class SQLTables:
    """The live views of one or both services as DuckDB tables, each read on first use."""

    def __init__(
        self,
        secrets: Any = None,
        platform: Any = None,
        *,
        organization: str | None = None,
        history: str | Path | None = None,
    ) -> None:
        import duckdb

        if secrets is None and platform is None:
            raise InputError("give a secrets client, a platform client, or both")
        if platform is not None and not organization:
            raise InputError("the platform tables need organization='...'")
        self.secrets = secrets
        self.platform = platform
        self.organization = organization
        self.con = duckdb.connect()
        self._read: dict[str, _Read] = {}
        self._gaps: list[dict[str, str]] = []
        self._loaders: dict[str, Callable[[], pd.DataFrame]] = {}
        if secrets is not None:
            for name in SECRETS_TABLES:
                self._loaders[name] = getattr(self, f"_{name}")
        if platform is not None:
            for name in PLATFORM_TABLES:
                self._loaders[name] = getattr(self, f"_{name}")
        self.history = history
        if history is not None:
            from . import history as store

            self.con.execute("create schema if not exists history")
            store.open(history, connection=self.con, schema="history")

    def __repr__(self) -> str:
        return f"<SQLTables: {len(self._read)} of {len(self._loaders)} tables read>"

    def list_tables(self) -> list[str]:
        """The live tables these SQLTables can read."""
        return sorted(self._loaders)

    def sql(self, query: str) -> pd.DataFrame:
        """The answer to ``query`` as a frame; the live tables it names are read first."""
        import duckdb

        try:
            named = duckdb.get_table_names(query)
        except duckdb.ParserException as exc:
            raise InputError(f"the query does not parse: {str(exc).splitlines()[0]}") from None
        except duckdb.Error:
            # Some queries (a lateral UNNEST) are bound to be named: fall back to the words.
            words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", query.lower()))
            named = words & set(self._loaders)
        live = sorted(n for n in named if n in self._loaders)
        for name in live:
            if name not in self._read:
                self._load(name)
        try:
            answer = self.con.execute(query).df()
        except duckdb.CatalogException as exc:
            raise InputError(
                f"{str(exc).splitlines()[0]}; the live tables are {', '.join(self.list_tables())}"
            ) from None
        return self._covered(answer, live)

    def _covered(self, answer: pd.DataFrame, tables: list[str]) -> pd.DataFrame:
        """``answer`` with one record over the live ``tables`` it read (no more whole
        than the least whole of them), and a warning naming what they could not read."""
        record = Coverage.merged("sql_tables.sql", [self._read[t].coverage for t in tables])
        record.asked = tables
        record.read = len(answer)
        # When each live table was read: a kept table can be old (:func:`sql` keeps it).
        answer.attrs["read_at"] = {t: self._read[t].read_at.isoformat() for t in tables}
        if not record.complete:
            warnings.warn(
                f"this answer read tables not read whole: {record.summary()} "
                "(tables.gaps_frame() lists them)",
                PartialAnswer,
                stacklevel=3,
            )
        return record.attach(answer)

    def refresh(self, name: str | None = None) -> None:
        """Forget what was read (of ``name``, or all): the next query reads it again."""
        for key in [name] if name else list(self._read):
            if key not in self._loaders:
                raise InputError(
                    f"no table {key!r}: the tables are {', '.join(self.list_tables())}"
                )
            self._read.pop(key, None)
            self._gaps = [g for g in self._gaps if g["table"] != key]
            self.con.execute(f'drop view if exists "{key}"')

    def tables_frame(self) -> CoverageReport:
        """Each live table: whether it was read, when (UTC), its API walk's seconds, its rows."""
        rows = []
        for name in self.list_tables():
            got = self._read.get(name)
            rows.append(
                {
                    "table": name,
                    "read_at": got.read_at if got else pd.NaT,
                    "seconds": got.seconds if got else float("nan"),
                    "rows": len(got.frame) if got else pd.NA,
                }
            )
        frame = pd.DataFrame(rows, columns=["table", "read_at", "seconds", "rows"])
        frame["read_at"] = pd.to_datetime(frame["read_at"], utc=True)
        frame["rows"] = frame["rows"].astype("Int64")
        return frame.set_index("table")

    def gaps_frame(self) -> CoverageReport:
        """What a read table could not see: ``table``, ``part``, ``reason``."""
        return pd.DataFrame(self._gaps, columns=["table", "part", "reason"], dtype="string")

    # -- reading ---------------------------------------------------------------
    def _load(self, name: str) -> None:
        import time

        from ._frames import safe_frame as _safe_frame

        started = time.monotonic()
        before = len(self._gaps)
        frame = self._loaders[name]()
        walked = time.monotonic() - started  # the API walk alone
        # What the view itself could not read, and what these tables could not (a mount).
        caught = self._gaps[before:]
        found = coverage_of(frame)
        record = Coverage.merged(f"sql_tables.{name}", found)
        record.read = len(frame)
        if not found:
            record.note_gap(name, None, "the table's view carries no coverage record")
        for gap in record.gaps:
            status = f"{gap.status} " if gap.status is not None else ""
            self._gaps.append({"table": name, "part": gap.path, "reason": status + gap.reason})
        for caught_gap in caught:
            record.note_gap(caught_gap["part"], None, caught_gap["reason"])
        safe = _safe_frame(frame)
        if safe.index.name is not None or isinstance(safe.index, pd.MultiIndex):
            safe = safe.reset_index()
        safe.attrs = {}
        self._read[name] = _Read(safe, datetime.now(UTC), walked, record)
        self.con.register(name, safe)

    def _gap(self, table: str, part: str, exc: Exception) -> None:
        self._gaps.append({"table": table, "part": part, "reason": str(exc).splitlines()[0]})

    def _leases(self) -> pd.DataFrame:
        return self.secrets.leases.leases_by_mount()

    def _tokens(self) -> pd.DataFrame:
        return self.secrets.tokens.inventory()

    def _policies(self) -> pd.DataFrame:
        return self.secrets.policies.policies_frame()

    def _policy_rules(self) -> pd.DataFrame:
        return self.secrets.policies.rules_frame()

    def _mounts(self) -> pd.DataFrame:
        rows = []
        engines = self.secrets.mounts()
        for path, info in engines.items():
            rows.append(_mount_row("secrets", path, info))
        for path, info in self._auth_mounts().items():
            rows.append(_mount_row("auth", path, info))
        frame = pd.DataFrame(
            rows, columns=["kind", "path", "type", "accessor", "description", "local"]
        ).astype({c: "string" for c in ("kind", "path", "type", "accessor", "description")})
        # Two reads, each whole or raised.
        cov = Coverage("sql_tables.mounts", asked=["sys/mounts", "sys/auth"])
        cov.note_read(len(frame))
        return cov.attach(frame)

    def _auth_mounts(self) -> dict[str, dict[str, Any]]:
        from .secrets._base import unwrap

        data = unwrap(self.secrets.http.json("GET", "/sys/auth"))
        return {k: dict(v) for k, v in data.items() if k.endswith("/") and isinstance(v, dict)}

    def _auth_roles(self) -> pd.DataFrame:
        from .secrets._base import list_keys

        rows = []
        for path, info in self._auth_mounts().items():
            kind = _ROLE_PATHS.get(str(info.get("type")))
            if kind is None:
                continue
            try:
                names = list_keys(self.secrets.http, f"/auth/{path}{kind[0]}")
            except (PermissionDenied, APIError) as exc:
                self._gap("auth_roles", f"auth/{path}", exc)
                continue
            rows += [
                {"mount": path, "method": info.get("type"), "kind": kind[1], "name": n,
                 "mount_accessor": info.get("accessor")}
                for n in names
            ]  # fmt: skip
        columns = ["mount", "method", "kind", "name", "mount_accessor"]
        # A mount whose roles could not be listed is a gap the tables noted (_gap).
        cov = Coverage("sql_tables.auth_roles", asked=["sys/auth"])
        cov.note_read(len(rows))
        return cov.attach(pd.DataFrame(rows, columns=columns, dtype="string"))

    def _certificates(self) -> pd.DataFrame:
        parts = []
        for path, info in self.secrets.mounts().items():
            if info.get("type") != "pki":
                continue
            try:
                frame = self.secrets.pki.at(path.rstrip("/")).certificates_frame()
            except (PermissionDenied, APIError) as exc:
                self._gap("certificates", path, exc)
                continue
            parts.append(frame.reset_index().assign(mount=path))
        if not parts:
            return Coverage("pki.certificates_frame").attach(
                pd.DataFrame({"mount": pd.Series(dtype="string")})
            )
        # pd.concat keeps attributes only when every part's are equal: merge them.
        return carry(pd.concat(parts, ignore_index=True), *parts, view="pki.certificates_frame")

    def _agents(self) -> pd.DataFrame:
        return self.platform.agent_pools.all_agents(self.organization)

    def _pools(self) -> pd.DataFrame:
        return self.platform.agent_pools.pools_frame(self.organization)

    def _team_access(self) -> pd.DataFrame:
        return self.platform.team_access.organization_access(self.organization)

    def _parameters(self) -> pd.DataFrame:
        sets = self.platform.organizations.policy_sets_frame(self.organization)
        parts = []
        for set_id in sets.index:
            frame = self.platform.policy_set_parameters.parameters_frame(set_id)
            parts.append(frame.reset_index().assign(policy_set_id=set_id))
        view = "policy_set_parameters.parameters_frame"
        if not parts:
            return carry(
                pd.DataFrame({"policy_set_id": pd.Series(dtype="string")}), sets, view=view
            )
        # pd.concat keeps attributes only when every part's are equal: merge them.
        return carry(pd.concat(parts, ignore_index=True), sets, *parts, view=view)


def _mount_row(kind: str, path: str, info: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": kind,
        "path": path,
        "type": info.get("type"),
        "accessor": info.get("accessor"),
        "description": info.get("description"),
        "local": bool(info.get("local", False)),
    }


# The kernel's SQLTables, one per set of clients, kept for the kernel's life.
_KEPT: dict[tuple[int, int, str | None, str | None], SQLTables] = {}


def sql(
    client: Any,
    query: str,
    *,
    platform: Any = None,
    organization: str | None = None,
    history: str | Path | None = None,
) -> pd.DataFrame:
    """Answer ``query`` over the live tables of ``client`` (either service's client).

    Pass the other service's client as ``platform=`` to join across both. The
    tables read are kept for the kernel's life (one SQLTables per set of clients);
    ``answer.attrs["read_at"]`` says when each table the answer read was read.
    """
    secrets = client
    if hasattr(client, "agent_pools") and not hasattr(client, "leases"):
        secrets, platform = None, client
    key = (id(secrets), id(platform), organization, None if history is None else str(history))
    tables = _KEPT.get(key)
    if tables is None:
        tables = SQLTables(secrets, platform, organization=organization, history=history)
        _KEPT[key] = tables
    return tables.sql(query)
