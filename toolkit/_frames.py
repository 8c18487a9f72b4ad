"""Building DataFrames from records: stable columns, real dtypes, right when empty.

A view declares its columns once as a :class:`Schema`; :func:`build_frame`
turns a list of flat dicts into a frame with exactly those columns, in that
order, with those dtypes, the record id as the index, in one pass over the
records (column lists, then one Series each).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd

from ._errors import DecodeError
from ._masking import HIDDEN, Sensitive, plain
from ._time import NotATime, parse_time

__all__ = [
    "Col",
    "Schema",
    "build_frame",
    "frame_from_columns",
    "from_sql",
    "keeps_index",
    "parquet_ready",
    "safe_frame",
    "scope_part",
    "stack_scopes",
    "DTYPES",
]

# The dtype names a schema may use, and what pandas dtype each becomes.
DTYPES: dict[str, Any] = {
    "str": "string",
    "int": "Int64",
    "float": "Float64",
    "bool": "boolean",
    "datetime": "datetime64[ns, UTC]",
    "object": "object",
    "category": "category",
}


@dataclass(frozen=True)
class Col:
    """One column: its name, its dtype name (a key of DTYPES), the record key it comes from."""

    name: str
    dtype: str = "str"
    source: str | None = None

    @property
    def key(self) -> str:
        return self.source or self.name


@dataclass(frozen=True)
class Schema:
    """The columns of a view and the column used as index (``None``: a range index).

    A view declares its table in words: ``Schema.of("name db_name ttl:int", index="name")``,
    each word a column ``name`` or ``name:dtype`` (a key of :data:`DTYPES`; ``str`` when
    left out), in frame order. A computed column is a :class:`Col` among the words.
    """

    columns: tuple[Col, ...]
    index: str | None = None

    @classmethod
    def of(cls, *columns: Col | str, index: str | None = None) -> Schema:
        """The schema of these columns: :class:`Col` values and strings of column words.

        A word with an unknown dtype, a name given twice or an index that is no column
        raises :class:`ValueError` at once (a table is read at import).
        """
        cols: list[Col] = []
        for part in columns:
            cols.extend([part] if isinstance(part, Col) else _words(part))
        for col in cols:
            if col.dtype not in DTYPES:
                raise ValueError(
                    f"schema column {col.name!r} has dtype {col.dtype!r}; "
                    f"use one of {', '.join(DTYPES)}"
                )
        names = [c.name for c in cols]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"a schema names column {twice[0]!r} twice; name each column once")
        if index is not None and index not in names:
            raise ValueError(f"a schema's index {index!r} is none of its columns; add it")
        return cls(tuple(cols), index)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


def _words(spec: str) -> list[Col]:
    """The columns of a string of ``name`` and ``name:dtype`` words."""
    cols = []
    for word in spec.split():
        name, colon, dtype = word.partition(":")
        if not name.isidentifier():
            raise ValueError(f"schema word {word!r} names no column; write name or name:dtype")
        cols.append(Col(name, dtype if colon else "str"))
    return cols


# Value types that need no masking in a text column (checked per column, not per value).
_PLAIN = frozenset({str, type(None)})


def _series(values: list[Any], dtype: str, name: str) -> pd.Series:
    try:
        return _typed(values, dtype, name)
    # LookupError: pandas indexes a column of nested lists as if it were two-dimensional.
    except (ValueError, TypeError, OverflowError, ArithmeticError, LookupError) as exc:
        if dtype == "datetime":
            return _times_one_by_one(values, name)
        raise DecodeError(
            f"the server's answer holds a value that is not {_WHAT.get(dtype, dtype)} "
            f"for column {name!r} ({type(exc).__name__})"
        ) from None


_TIME_TEXT = {str, type(None), datetime, pd.Timestamp}
_WHAT = {"int": "an integer in range", "float": "a number", "bool": "true or false"}


def _times_one_by_one(values: list[Any], name: str) -> pd.Series:
    """A time column whose values did not convert at once: each on its own. A time
    outside what the column holds (years 1677 to 2262: Go's zero time ``0001-01-01``,
    a ``9999-12-31`` meaning never) is empty; a value that is no time is an error."""
    out: list[Any] = []
    for value in values:
        if value is None or value == "" or value is pd.NaT:
            out.append(pd.NaT)
            continue
        try:
            when = parse_time(value)
        except NotATime:
            raise DecodeError(
                f"the server's answer holds a value that is not a time for column {name!r}"
            ) from None
        if when is None:
            out.append(pd.NaT)
            continue
        try:
            out.append(pd.Timestamp(when).as_unit("ns"))
        except (pd.errors.OutOfBoundsDatetime, OverflowError, ValueError):
            out.append(pd.NaT)
    return pd.Series(out, name=name, dtype=DTYPES["datetime"])


def _typed(values: list[Any], dtype: str, name: str) -> pd.Series:
    if dtype == "datetime":
        cleaned: Any = [None if v == "" else v for v in values] if "" in values else values
        if not set(map(type, cleaned)) <= _TIME_TEXT:
            # A number or anything else is read one by one: pandas would take a number
            # as a format error now and as an epoch later (a deprecation, not an answer).
            raise TypeError("not text")
        parsed: Any = pd.to_datetime(cleaned, utc=True, format="ISO8601")
        return pd.Series(parsed, name=name, dtype=DTYPES["datetime"])
    if dtype in ("str", "category") and not set(map(type, values)) <= _PLAIN:
        values = [HIDDEN if isinstance(v, Sensitive) else v for v in values]
    if dtype == "object":
        series = pd.Series(values, name=name, dtype=object)
        return series
    return pd.Series(values, name=name, dtype=DTYPES[dtype])


def build_frame(records: Iterable[Mapping[str, Any]], schema: Schema) -> pd.DataFrame:
    """A DataFrame with exactly the schema's columns and dtypes, indexed by its index column."""
    rows: Sequence[Mapping[str, Any]] = records if isinstance(records, list) else list(records)
    try:
        columns = {c.name: [r.get(c.key) for r in rows] for c in schema.columns}
    except AttributeError:  # a record that is not an object (a server's list of anything)
        raise DecodeError("the server's answer holds a record that is not an object") from None
    return frame_from_columns(columns, schema)


def frame_from_columns(columns: Mapping[str, list[Any]], schema: Schema) -> pd.DataFrame:
    """The schema's frame from one value list per column name (all of one length).

    For callers that can take each column straight from the answers (see
    ``platform._jsonapi.resources_frame``) instead of building a dict a record.
    """
    data = {c.name: _series(columns[c.name], c.dtype, c.name) for c in schema.columns}
    frame = pd.DataFrame(data, columns=schema.names)
    if schema.index is not None:
        frame = frame.set_index(schema.index)
    return frame


# -- one frame over several scopes (namespaces, organizations) ---------------------------
def scope_part(
    column: str, label: str, frame: pd.DataFrame | None, problem: str = ""
) -> pd.DataFrame:
    """One scope's share of an ``across`` frame: ``frame`` with ``column`` = ``label``
    first (its named index kept as a column) and an empty ``problem``; or, with no
    frame, one row saying ``problem`` (the scope refused the call, or is gone)."""
    if frame is None:
        return pd.DataFrame(
            {
                column: pd.Series([label], dtype="string"),
                "problem": pd.Series([problem], dtype="string"),
            }
        )
    named = any(name is not None for name in frame.index.names)
    part = frame.reset_index() if named else frame.reset_index(drop=True)
    part.insert(0, column, pd.Series([label] * len(part), dtype="string"))
    part["problem"] = pd.Series([pd.NA] * len(part), dtype="string")
    # A matrix labels its columns ("team"); stacked, they are no longer all teams.
    part.columns.name = None
    return part


def stack_scopes(column: str, parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The parts of :func:`scope_part` as one frame: ``column`` first, ``problem`` last."""
    if not parts:
        return pd.DataFrame(
            {column: pd.Series(dtype="string"), "problem": pd.Series(dtype="string")}
        )
    frames = [p for p in parts if not p.empty] or parts[:1]
    stacked = pd.concat(frames, ignore_index=True)
    stacked[column] = stacked[column].astype("string")
    stacked["problem"] = stacked["problem"].astype("string")
    return stacked[[column, *[c for c in stacked if c not in (column, "problem")], "problem"]]


def from_sql(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame as DuckDB hands it back, given the house's dtypes: times in UTC, text as
    ``string`` (DuckDB gives ``object``). Changed in place and returned."""
    for column in frame.columns:
        series = frame[column]
        if isinstance(series.dtype, pd.DatetimeTZDtype):
            frame[column] = series.dt.tz_convert("UTC")
        elif series.dtype == object:
            frame[column] = series.astype("string")
    return frame


def safe_frame(original: pd.DataFrame) -> pd.DataFrame:
    """A copy in which no cell holds a :class:`~._masking.Sensitive` (each becomes
    ``<hidden>``), and whose ``attrs`` are plain JSON values (Parquet stores them as JSON)."""
    attrs: dict[Hashable, Any] = {str(k): plain(v) for k, v in original.attrs.items()}
    kept = original.attrs
    # pandas deep-copies attrs into every copy, and a Sensitive refuses to be copied.
    original.attrs = {}
    try:
        frame = original.copy()
    finally:
        original.attrs = kept
    frame.attrs = attrs
    for column in frame.columns:
        series = frame[column]
        if series.dtype == object and series.map(lambda v: isinstance(v, Sensitive)).any():
            frame[column] = series.map(lambda v: HIDDEN if isinstance(v, Sensitive) else v)
    return frame


def keeps_index(frame: pd.DataFrame) -> bool:
    """Whether a frame's index is worth filing: a named index is the record id, a range
    index carries nothing."""
    return frame.index.name is not None or isinstance(frame.index, pd.MultiIndex)


def parquet_ready(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy Parquet can store: it needs one type a column, so object columns of mixed
    values become text (JSON for anything but text and missing values)."""
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(
                lambda v: v if v is None or isinstance(v, str) else json.dumps(plain(v))
            )
    return frame
