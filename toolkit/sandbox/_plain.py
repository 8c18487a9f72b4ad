"""The sandbox's state as plain data: what ``--state`` stores, and reads back without running code.

:func:`encode` turns an object graph of the sandbox's own state classes into
JSON-ready values (dicts, lists, strings, numbers), and :class:`Decoder` turns
them back. Unlike pickle, reading names no function to call: an object is
rebuilt by making an empty instance of a class *defined in the sandbox*
(``toolkit.sandbox.*``) and filling its attributes, and a stored file that names
anything else is refused. The forms, each a one-key (or two-key) JSON object:

- ``{"$o": "toolkit.sandbox.x:Class", "a": {...}, "#": n}``: an instance of a
  sandbox class, its attributes (or its ``__getstate__``), and its number for
  later references ``{"$r": n}`` (shared objects and cycles, as the service's
  back-references make);
- ``{"$m": [object, "name"]}``: a bound method (a lease's revocation callback),
  ``{"$p": [function, [args], {kwargs}]}``: a ``functools.partial`` of one,
  ``{"$f": "toolkit.sandbox.x:name"}``: a module-level function or class;
- ``{"$t": [...]}``, ``{"$s": [...]}``, ``{"$fs": [...]}``, ``{"$kv": [[k, v], ...]}``:
  tuples, sets, frozensets, and dicts whose keys are not plain strings;
- ``{"$dt": "iso"}``, ``{"$b": "base64"}``: datetimes and bytes;
- ``{"$rec": [table, key]}``: a record kept in a :class:`RecordTable`, stored in
  its own row (see ``_state``); ``{"$table": name}`` the table itself;
- ``{"$a": [[".", attr] or ["[", key], ...]}``: from a record's row, an object of
  the rest of the state, named by the path that reaches it from the root
  (``secrets.mounts.engines["ad/"].backend``), so rows stay valid whatever else
  changes.

Containers (dicts, lists, sets) are stored by value: the state classes hold no
container in two places, so nothing relies on two names for one list.

:class:`RecordTable` and :class:`StoredRecord` are how a store writes only what a
request changed: a table notes the keys set or removed, and a record notes its
own attribute assignments in the table that holds it.
"""

from __future__ import annotations

import base64
import functools
import importlib
import types
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar

__all__ = [
    "Decoder",
    "Encoder",
    "PlainDataError",
    "StoredRecord",
    "RecordTable",
    "dump",
    "round_trip",
]

_PACKAGE = "toolkit.sandbox"
_SCALARS = (str, int, float, bool, type(None))

V = TypeVar("V")


class PlainDataError(ValueError):
    """The stored data names something the sandbox does not store, or is malformed."""


class StoredRecord:
    """A value kept in a :class:`RecordTable`: assigning an attribute marks it changed there.

    The table sets ``_home`` (itself and the key) when the record is stored in
    it; a record that no table holds notes nothing.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        home = self.__dict__.get("_home")
        if home is not None:
            home[0].dirty.add(home[1])


class RecordTable(dict[str, V]):
    """A dict of records by key that remembers which keys changed since the last store.

    ``name`` is unique within the state; the store keeps one row per record.
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        # Every key set or removed since the store last took this set.
        self.dirty: set[str] = set()

    def _adopt(self, key: str, value: Any) -> None:
        if isinstance(value, StoredRecord):
            object.__setattr__(value, "_home", (self, key))
        self.dirty.add(key)

    def __setitem__(self, key: str, value: V) -> None:
        super().__setitem__(key, value)
        self._adopt(key, value)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.dirty.add(key)

    def pop(self, key: str, *default: Any) -> Any:  # type: ignore[override]
        self.dirty.add(key)
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, V]:
        key, value = super().popitem()
        self.dirty.add(key)
        return key, value

    def setdefault(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        self.dirty.update(self)
        super().clear()

    def holds(self, value: object) -> str | None:
        """The key under which this table holds ``value`` itself, else None."""
        home = getattr(value, "__dict__", {}).get("_home")
        if home is not None and home[0] is self and super().get(home[1]) is value:
            return str(home[1])
        return None

    def __reduce__(self) -> Any:
        raise TypeError(
            "the sandbox's state is not pickled: copy it with toolkit.sandbox._plain.round_trip"
        )


def _custom(cls: type, name: str) -> Any:
    """``cls.name`` when a sandbox class defines it itself (not ``object``'s default)."""
    found = getattr(cls, name, None)
    return None if found is getattr(object, name, None) else found


def _class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _sandbox_class(cls: type | types.FunctionType) -> bool:
    module = cls.__module__
    return module == _PACKAGE or module.startswith(_PACKAGE + ".")


Path = list[list[Any]]


# A path from the root, built as a linked list while walking (cheap to extend):
# (parent, kind, key), kind "." for an attribute, "[" for an item, "x" for no way back.
_Link = tuple[Any, str, Any]


def _path_of(link: _Link | None) -> Path:
    steps: Path = []
    while link is not None:
        link, kind, key = link
        steps.append([kind, key])
    return steps[::-1]


class Encoder:
    """Encodes the state's root areas, then records whose references point back into them.

    Each area is numbered on its own; an object met in an earlier area (the
    clock, which both services share) is named by its path (``$a``), so an area
    that did not change encodes the same whether or not the others are encoded.
    ``encode_root`` notes the path of every object it meets and every table;
    records are encoded afterwards, each on its own, naming objects of the
    areas by their path.
    """

    def __init__(self) -> None:
        self._memo: dict[int, int] = {}
        self._keep: list[object] = []  # keeps ids stable while encoding
        self._anchors: dict[int, tuple[str, _Link | None]] = {}
        self.tables: dict[str, RecordTable[Any]] = {}
        self._link: _Link | None = None
        self._blind = 0  # how many steps with no way back ("x") we are under
        self._area = ""
        self._in_record: object = None

    # -- entry points --------------------------------------------------------------
    def encode_root(self, areas: dict[str, object]) -> dict[str, Any]:
        """Each area's plain form, in order."""
        out: dict[str, Any] = {}
        for name, value in areas.items():
            self._memo, self._area, self._link = {}, name, (None, ".", name)
            out[name] = self._value(value)
        self._link = None
        return out

    def encode_record(self, value: object) -> Any:
        """One record's plain form; other records and area objects by reference."""
        saved = self._memo, self._area, self._in_record
        self._memo, self._area, self._in_record = {}, "", value
        try:
            return self._value(value)
        finally:
            self._memo, self._area, self._in_record = saved

    # -- the walk ------------------------------------------------------------------
    def _value(self, value: Any) -> Any:
        if isinstance(value, _SCALARS):
            return value
        if isinstance(value, list):
            return [self._step("[", i, v) for i, v in enumerate(value)]
        if isinstance(value, RecordTable):
            self.tables.setdefault(value.name, value)
            if self.tables[value.name] is not value:
                raise PlainDataError(f"two record tables are named {value.name!r}")
            return {"$table": value.name}
        if isinstance(value, dict):
            if all(isinstance(k, str) and not k.startswith("$") for k in value):
                return {k: self._step("[", k, v) for k, v in value.items()}
            return {
                "$kv": [
                    [self._step("x", None, k), self._step("x", None, v)] for k, v in value.items()
                ]
            }
        if isinstance(value, tuple):
            return {"$t": [self._step("[", i, v) for i, v in enumerate(value)]}
        if isinstance(value, frozenset):
            return {"$fs": [self._step("x", None, v) for v in value]}
        if isinstance(value, set):
            return {"$s": [self._step("x", None, v) for v in value]}
        if isinstance(value, datetime):
            return {"$dt": value.isoformat()}
        if isinstance(value, bytes):
            return {"$b": base64.b64encode(value).decode("ascii")}
        if isinstance(value, types.MethodType):
            return {"$m": [self._step("x", None, value.__self__), value.__func__.__name__]}
        if isinstance(value, functools.partial):
            return {
                "$p": [
                    self._step("x", None, value.func),
                    [self._step("x", None, v) for v in value.args],
                    {k: self._step("x", None, v) for k, v in value.keywords.items()},
                ]
            }
        if isinstance(value, type | types.FunctionType):
            if not _sandbox_class(value):
                raise PlainDataError(f"cannot store a reference to {value!r}")
            if "<locals>" in value.__qualname__:
                raise PlainDataError(f"cannot store a closure: {value.__qualname__}")
            return {"$f": f"{value.__module__}:{value.__qualname__}"}
        return self._object(value)

    def _step(self, kind: str, key: Any, value: Any) -> Any:
        if isinstance(value, _SCALARS):
            return value
        saved = self._link
        self._link = (saved, kind, key)
        blind = kind == "x"
        self._blind += blind
        try:
            return self._value(value)
        finally:
            self._link = saved
            self._blind -= blind

    def _object(self, value: Any) -> Any:
        cls = type(value)
        if not _sandbox_class(cls):
            raise PlainDataError(f"cannot store a {cls.__module__}.{cls.__qualname__}")
        if value is not self._in_record:
            home = value.__dict__.get("_home") if isinstance(value, StoredRecord) else None
            if home is not None and home[0].holds(value) is not None:
                table = self._value(home[0])["$table"]
                return {"$rec": [table, home[1]]}
            anchor = self._anchors.get(id(value))
            if anchor is not None and anchor[0] != self._area:
                return {"$a": _path_of(anchor[1])}
        number = self._memo.get(id(value))
        if number is not None:
            return {"$r": number}
        number = len(self._memo)
        self._memo[id(value)] = number
        self._keep.append(value)
        if self._in_record is None and not self._blind:
            # (Reached through a set, a dict key or a callback, no path leads back to it.)
            self._anchors[id(value)] = (self._area, self._link)
        getstate = _custom(cls, "__getstate__")
        if getstate is not None:
            state = getstate(value)
        elif hasattr(value, "__dict__"):
            state = value.__dict__
        else:
            state = {s: getattr(value, s) for s in _slots(cls) if hasattr(value, s)}
        if not isinstance(state, dict):
            raise PlainDataError(f"{_class_name(cls)}.__getstate__ must return a dict")
        attrs = {k: self._step(".", k, v) for k, v in state.items() if k != "_home"}
        return {"$o": _class_name(cls), "#": number, "a": attrs}


def _slots(cls: type) -> Iterable[str]:
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        yield from ((slots,) if isinstance(slots, str) else slots)


def _load_name(ref: str) -> Any:
    """The sandbox class or function ``module:qualname``; nothing outside the sandbox."""
    if not isinstance(ref, str) or ":" not in ref:
        raise PlainDataError(f"malformed name {ref!r}")
    module_name, _, qualname = ref.partition(":")
    if not (module_name == _PACKAGE or module_name.startswith(_PACKAGE + ".")):
        raise PlainDataError(f"refusing {ref!r}: not a class of the sandbox")
    if "<" in qualname or any(part.startswith("__") for part in qualname.split(".")):
        raise PlainDataError(f"refusing {ref!r}")
    try:
        found: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = found.__dict__[part]
    except (ImportError, KeyError, AttributeError):
        raise PlainDataError(f"the stored state names {ref!r}, which this sandbox lacks") from None
    if not isinstance(found, type | types.FunctionType) or found.__module__ != module_name:
        raise PlainDataError(f"refusing {ref!r}: not a class or function of the sandbox")
    return found


class Decoder:
    """Rebuilds what :class:`Encoder` wrote: areas first, then records into their shells.

    ``tables`` holds every record table, with an empty shell for each stored
    record, before anything else is decoded, so areas and records may refer to
    records; ``root`` resolves ``$a`` paths once the areas are decoded.
    """

    def __init__(self) -> None:
        self.tables: dict[str, RecordTable[Any]] = {}
        self.root: dict[str, Any] = {}
        self._memo: dict[int, Any] = {}
        self.loaded: list[object] = []

    def shell(self, table: str, key: str, doc: Any) -> None:
        """An empty instance for the record ``key`` of ``table``, filled by :meth:`fill`."""
        if not (isinstance(doc, dict) and "$o" in doc):
            raise PlainDataError(f"record {table}/{key} is not an object")
        cls = _load_name(doc["$o"])
        if not isinstance(cls, type):
            raise PlainDataError(f"record {table}/{key} names a function")
        obj: Any = object.__new__(cls)
        records = self.tables.setdefault(table, RecordTable(table))
        dict.__setitem__(records, key, obj)
        if isinstance(obj, StoredRecord):
            object.__setattr__(obj, "_home", (records, key))

    def decode_root(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Decode the areas in order (each numbered on its own; later ones name earlier ones)."""
        self.root = {}
        for name, value in doc.items():
            self._memo = {}
            self.root[name] = self.value(value)
        return self.root

    def fill(self, table: str, key: str, doc: dict[str, Any]) -> None:
        """Decode a record's attributes into the shell :meth:`shell` made for it."""
        self._memo = {}
        obj = dict.__getitem__(self.tables[table], key)
        self._fill(obj, doc)

    def finish(self) -> None:
        """Run each loaded object's ``after_load`` (rebuilding indexes), then forget changes."""
        for obj in self.loaded:
            hook = getattr(obj, "after_load", None)
            if callable(hook):
                hook()
        for table in self.tables.values():
            table.dirty.clear()

    # -- the walk ------------------------------------------------------------------
    def value(self, doc: Any) -> Any:
        if isinstance(doc, _SCALARS):
            return doc
        if isinstance(doc, list):
            return [self.value(v) for v in doc]
        if not isinstance(doc, dict):
            raise PlainDataError(f"unexpected {type(doc).__name__} in stored state")
        if not any(k.startswith("$") for k in doc):
            return {k: self.value(v) for k, v in doc.items()}
        if "$o" in doc:
            cls = _load_name(doc["$o"])
            if not isinstance(cls, type):
                raise PlainDataError(f"{doc['$o']} is not a class")
            obj: Any = object.__new__(cls)
            self._memo[_int(doc.get("#"))] = obj
            self._fill(obj, doc)
            return obj
        (tag,) = doc.keys() if len(doc) == 1 else (None,)
        body = doc.get(tag) if tag else None
        if tag == "$r":
            try:
                return self._memo[_int(body)]
            except KeyError:
                raise PlainDataError(f"dangling reference {body!r}") from None
        if tag == "$t":
            return tuple(self.value(v) for v in _list(body))
        if tag == "$s":
            return {self.value(v) for v in _list(body)}
        if tag == "$fs":
            return frozenset(self.value(v) for v in _list(body))
        if tag == "$kv":
            return {self.value(k): self.value(v) for k, v in _list(body)}
        if tag == "$dt":
            return datetime.fromisoformat(str(body))
        if tag == "$b":
            return base64.b64decode(str(body), validate=True)
        if tag == "$f":
            return _load_name(str(body))
        if tag == "$m":
            owner, name = _list(body)
            return self._method(self.value(owner), name)
        if tag == "$p":
            func, args, kwargs = _list(body)
            target = self.value(func)
            if not isinstance(target, types.MethodType | types.FunctionType):
                raise PlainDataError("a stored partial must wrap a sandbox method or function")
            return functools.partial(
                target, *(self.value(a) for a in _list(args)), **self.value(kwargs)
            )
        if tag == "$rec":
            table, key = _list(body)
            try:
                return dict.__getitem__(self.tables[table], key)
            except KeyError:
                raise PlainDataError(f"record {table}/{key} is referenced but missing") from None
        if tag == "$table":
            return self.tables.setdefault(str(body), RecordTable(str(body)))
        if tag == "$a":
            return self._navigate(_list(body))
        raise PlainDataError(f"unknown stored form {sorted(doc)!r}")

    def _fill(self, obj: Any, doc: dict[str, Any]) -> None:
        attrs = doc.get("a")
        if not isinstance(attrs, dict):
            raise PlainDataError(f"stored {doc.get('$o')} has no attributes")
        state = {k: self.value(v) for k, v in attrs.items()}
        setstate = _custom(type(obj), "__setstate__")
        if setstate is not None:
            setstate(obj, state)
        elif hasattr(obj, "__dict__"):
            obj.__dict__.update(state)
        else:
            for name, value in state.items():
                object.__setattr__(obj, name, value)
        self.loaded.append(obj)

    def _method(self, owner: Any, name: Any) -> Callable[..., Any]:
        if not isinstance(name, str) or name.startswith("__"):
            raise PlainDataError(f"refusing method {name!r}")
        func = getattr(type(owner), name, None)
        if not isinstance(func, types.FunctionType) or not _sandbox_class(type(owner)):
            raise PlainDataError(f"{type(owner).__qualname__} has no method {name!r}")
        return types.MethodType(func, owner)

    def _navigate(self, path: list[Any]) -> Any:
        node: Any = self.root
        first = True
        for step in path:
            kind, key = _list(step)
            try:
                if first:
                    node = self.root[key]
                elif kind == ".":
                    node = node.__dict__[key] if hasattr(node, "__dict__") else getattr(node, key)
                else:
                    node = node[key]
            except (KeyError, AttributeError, IndexError, TypeError):
                raise PlainDataError(f"stored path {path!r} leads nowhere") from None
            first = False
        return node


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise PlainDataError(f"expected an object number, got {value!r}")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise PlainDataError(f"expected a list, got {type(value).__name__}")
    return value


def dump(areas: dict[str, Any]) -> bytes:
    """``areas`` and their records as ``--state`` stores them, in one JSON document."""
    import orjson

    encoder = Encoder()
    roots = encoder.encode_root(areas)
    rows = [
        [name, key, encoder.encode_record(value)]
        for name, table in encoder.tables.items()
        for key, value in dict.items(table)
    ]
    return orjson.dumps({"areas": roots, "records": rows})


def round_trip(areas: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``areas`` made the way ``--state`` stores and reads them, with no file.

    Tests use it to check that a state class stores whole (records included).
    """
    import orjson

    stored = orjson.loads(dump(areas))
    decoder = Decoder()
    for name, key, doc in stored["records"]:
        decoder.shell(name, key, doc)
    copied = decoder.decode_root(stored["areas"])
    for name, key, doc in stored["records"]:
        decoder.fill(name, key, doc)
    decoder.finish()
    return copied
