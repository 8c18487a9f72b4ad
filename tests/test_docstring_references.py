"""Every cross-reference in a docstring names something that exists.

A docstring's ``:mod:``, ``:func:``, ``:class:``, ``:meth:``, ``:attr:``, ``:exc:``,
``:data:`` and ``:obj:`` roles are how a reader finds their way; one that names a module,
method or error since renamed sends them nowhere. Each reference of ``toolkit/`` and
``widgets/`` is resolved as Sphinx would: relative to its module (a leading ``.`` goes up
the packages), then its enclosing classes, then as an absolute name, and an unqualified
one by its last parts anywhere in the package. Names are looked up by importing (so
lazy exports and inherited methods count) and, for instance attributes and dataclass
fields that no class object holds, in the modules' syntax.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("toolkit", "widgets")
ROLE = re.compile(r":(mod|func|class|meth|attr|exc|data|obj):`([^`]+)`")
DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class _Index:
    """The names each module defines, its classes' attributes and what it imports."""

    def __init__(self) -> None:
        self.files = sorted(p for name in PACKAGES for p in (ROOT / name).rglob("*.py"))
        self.modules = {_module_name(p): p for p in self.files}
        self.defined: set[str] = set()
        self.aliases: dict[str, str] = {}
        for name, path in self.modules.items():
            self._add(name, self.package(name), ast.parse(path.read_text()).body, in_class=False)
        self.by_last: dict[str, set[str]] = {}
        for qualified in self.defined | set(self.modules):
            self.by_last.setdefault(qualified.rsplit(".", 1)[-1], set()).add(qualified)

    def package(self, module: str) -> str:
        is_package = self.modules[module].name == "__init__.py"
        return module if is_package else module.rpartition(".")[0]

    def _add(self, prefix: str, package: str, body: list[ast.stmt], *, in_class: bool) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.defined.add(f"{prefix}.{node.name}")
                if in_class:  # attributes the methods set on self
                    for sub in ast.walk(node):
                        if (
                            isinstance(sub, ast.Attribute)
                            and isinstance(sub.ctx, ast.Store)
                            and isinstance(sub.value, ast.Name)
                            and sub.value.id == "self"
                        ):
                            self.defined.add(f"{prefix}.{sub.attr}")
            elif isinstance(node, ast.ClassDef):
                self.defined.add(f"{prefix}.{node.name}")
                self._add(f"{prefix}.{node.name}", package, node.body, in_class=True)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            self.defined.add(f"{prefix}.{name.id}")
            elif isinstance(node, ast.Import | ast.ImportFrom) and not in_class:
                self._imports(prefix, package, node)
            elif isinstance(node, ast.If | ast.Try):
                self._add(prefix, package, node.body, in_class=in_class)
                for handler in getattr(node, "handlers", []):
                    self._add(prefix, package, handler.body, in_class=in_class)
                self._add(prefix, package, node.orelse, in_class=in_class)

    def _imports(self, prefix: str, package: str, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if isinstance(node, ast.Import):
                local = alias.asname or alias.name.split(".")[0]
                source = alias.name if alias.asname else local
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                local, source = alias.asname or alias.name, f"{base}.{alias.name}"
            self.aliases[f"{prefix}.{local}"] = source

    def exists(self, qualified: str, depth: int = 0) -> bool:
        if depth > 8:
            return False
        if qualified in self.defined or qualified in self.modules or _imported(qualified):
            return True
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            head = ".".join(parts[:cut])
            if head in self.aliases:
                return self.exists(".".join([self.aliases[head], *parts[cut:]]), depth + 1)
        return False

    def resolves(self, reference: str, module: str, classes: list[str]) -> bool:
        name = reference.lstrip("~!").removesuffix("()")
        package = self.package(module)
        if name.startswith("."):
            rest = name.lstrip(".")
            ups = package.split(".")
            candidates = [f"{module}.{rest}"] + [
                ".".join([*ups[: len(ups) - up], rest]) for up in range(len(ups))
            ]
            return any(self.exists(c) for c in candidates)
        candidates = [name, f"{module}.{name}", f"{package}.{name}", f"builtins.{name}"]
        candidates += [f"{module}.{'.'.join(classes[: i + 1])}.{name}" for i in range(len(classes))]
        if any(self.exists(c) for c in candidates):
            return True
        parts = name.split(".")
        return any(q.split(".")[-len(parts) :] == parts for q in self.by_last.get(parts[-1], ()))


@cache
def _imported(qualified: str) -> bool:
    """True when ``qualified`` is a module, or an attribute reached from one by getattr."""
    parts = qualified.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            nxt = getattr(target, part, None)
            if nxt is None and isinstance(target, type):
                fields = {f for k in target.__mro__ for f in getattr(k, "__annotations__", {})}
                nxt = True if part in fields else None
            if nxt is None:
                return False
            target = nxt
        return True
    return hasattr(builtins, qualified)


def stale_references(index: _Index) -> list[str]:
    found = []
    for module, path in index.modules.items():
        tree = ast.parse(path.read_text())

        def visit(
            node: ast.AST, classes: list[str], module: str = module, path: Path = path
        ) -> None:
            if isinstance(node, DOCUMENTED):
                for role, reference in ROLE.findall(ast.get_docstring(node, clean=False) or ""):
                    if not index.resolves(reference, module, classes):
                        line = getattr(node, "lineno", 1)
                        found.append(f"{path.relative_to(ROOT)}:{line}: :{role}:`{reference}`")
            inner = [*classes, node.name] if isinstance(node, ast.ClassDef) else classes
            for child in ast.iter_child_nodes(node):
                if isinstance(
                    child, ast.stmt
                ):  # definitions are statements, never inside expressions
                    visit(child, inner)

        visit(tree, [])
    return found


@cache
def _index() -> _Index:
    return _Index()


def test_every_docstring_reference_names_something_that_exists() -> None:
    stale = stale_references(_index())
    assert not stale, "docstring references to nothing:\n" + "\n".join(stale)


def test_a_renamed_error_method_or_module_is_found_stale() -> None:
    index = _index()
    organizations = "toolkit.sandbox.platform.organizations"
    assert not index.resolves("~.errors.NotFound", organizations, [])
    assert index.resolves("~.errors.RecordNotFound", organizations, [])
    assert not index.resolves("Database.connections", "toolkit.secrets.database", [])
    assert index.resolves("Database.connections_frame", "toolkit.secrets.database", [])
    assert not index.resolves(".engine", "toolkit._http", [])
    assert index.resolves(".transport", "toolkit._http", [])
    # a relative reference goes up packages; an inherited method resolves through its class
    assert index.resolves(".._spec.acl.ACL.capabilities", "toolkit.secrets.access", [])
    assert index.resolves("PKI.revoke", "toolkit.secrets.pki", [])
    assert not index.resolves("PKI.revoke_everything", "toolkit.secrets.pki", [])
