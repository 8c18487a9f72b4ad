"""One door into the sandbox's state, on both halves (issue 36, item 5).

A handler reaches state the way the secrets half always has: through the
service's stores (``call.service.tokens``, ``call.service.pool_store``) and
the service's own operations that span stores (``authenticate``,
``enable_engine``), under the lock the endpoint holds for the whole request.
So the rules, read from the code (its syntax tree):

- no service holds a method that only passes its call on to a store (with or
  without taking the lock): that would be a second door. The platform's
  seeding API is the one exception, listed here: callers outside a request
  (the demo, scripts, tests) use it, and it takes the lock for them;
- every name a handler reaches on its service exists there, and none is a
  pass-through; a platform handler reaches only the stores, the clock and the
  lock, never the seeding API;
- nothing else in the sandbox reaches a platform store but the platform's
  state and HTTP modules.

Each checker is also shown a made-up breach, so that a checker that sees
nothing cannot pass. docs/decisions.md ("One door into the sandbox's state")
says why the stores are the door rather than a facade.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from toolkit.sandbox import _wire

SANDBOX = Path(_wire.__file__).resolve().parent
PLATFORM = SANDBOX / "platform"
SECRETS = SANDBOX / "secrets"

# The platform's Python API for callers outside a request: each takes the lock
# itself and passes the call on. No handler calls them (checked below).
PLATFORM_SEEDING = {
    "add_organization",
    "add_workspace",
    "add_team",
    "add_policy_set",
    "assign_workspace_pool",
    "describe_tokens",
}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _class(path: Path, name: str) -> ast.ClassDef:
    found = [n for n in _tree(path).body if isinstance(n, ast.ClassDef) and n.name == name]
    assert len(found) == 1, f"{path.name} defines no class {name}"
    return found[0]


def _platform_handlers() -> list[Path]:
    return sorted((PLATFORM / "http").rglob("*.py"))


def _secrets_handlers() -> list[Path]:
    """The secrets half's HTTP side: ``http/`` and each engine's ``http`` module or package."""
    return sorted(
        path
        for path in SECRETS.rglob("*.py")
        if path.relative_to(SECRETS).parts[0] == "http"
        or "http" in {path.stem, *path.relative_to(SECRETS).parts[:-1]}
    )


# -- what a pass-through is --------------------------------------------------------------


def _is_self_attribute(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def pass_throughs(cls: ast.ClassDef) -> list[str]:
    """The methods of ``cls`` whose whole body (its docstring aside, and a
    ``with self.lock:`` unwrapped) is one call of ``self.<held>.<method>`` with
    nothing but the method's own parameters: they add no rule, only a door."""
    found = []
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef) or method.name.startswith("__"):
            continue
        body = method.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        if (
            len(body) == 1
            and isinstance(body[0], ast.With)
            and len(body[0].items) == 1
            and ast.unparse(body[0].items[0].context_expr) == "self.lock"
        ):
            body = body[0].body
        if len(body) != 1 or not isinstance(body[0], ast.Return | ast.Expr):
            continue
        call = body[0].value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        if not _is_self_attribute(call.func.value):
            continue
        own = {a.arg for a in (*method.args.args, *method.args.kwonlyargs)} - {"self"}
        passed = [*call.args, *(k.value for k in call.keywords)]
        if all(isinstance(v, ast.Name) and v.id in own for v in passed):
            found.append(method.name)
    return found


def held_names(cls: ast.ClassDef) -> set[str]:
    """What an instance of ``cls`` answers to: its methods and properties, and every
    attribute a method of it sets (``self.x = ...``)."""
    names = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.attr for t in targets if _is_self_attribute(t)}  # type: ignore[union-attr]
    return names


def service_reaches(source: str) -> list[tuple[int, str]]:
    """Every ``service.<name>`` and ``<x>.service.<name>`` in ``source``: (line, name)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        if (isinstance(owner, ast.Name) and owner.id == "service") or (
            isinstance(owner, ast.Attribute) and owner.attr == "service"
        ):
            found.append((node.lineno, node.attr))
    return sorted(found)


def wrong_doors(
    source: str, held: set[str], passing: set[str], allowed: set[str] | None = None
) -> list[str]:
    """What a handler reaches on its service that is not a door: a name the service
    does not hold (a removed pass-through), a pass-through, or (with ``allowed``) a
    name outside it."""
    found = []
    for line, name in service_reaches(source):
        if name not in held:
            found.append(f"line {line}: .{name} (the service has none)")
        elif name in passing:
            found.append(f"line {line}: .{name} (a pass-through)")
        elif allowed is not None and name not in allowed:
            found.append(f"line {line}: .{name} (not a store)")
    return found


# -- the services ------------------------------------------------------------------------


def _platform_service() -> ast.ClassDef:
    return _class(PLATFORM / "models.py", "PlatformService")


def _secrets_service() -> ast.ClassDef:
    return _class(SECRETS / "models.py", "SecretsService")


def _platform_doors() -> set[str]:
    """What a platform handler may reach: the stores, the clock and the lock."""
    held = held_names(_platform_service())
    return {name for name in held if name.endswith("_store")} | {"clock", "lock"}


def test_the_pass_through_checker_sees_a_method_that_only_passes_a_call_on() -> None:
    facade = (
        "class S:\n"
        "    def pools(self, caller, org, *, q=None):\n"
        '        """GET /organizations/:name/agent-pools."""\n'
        "        with self.lock:\n"
        "            return self.pool_store.list_pools(caller, org, q=q)\n"
        "    def role(self, caller, org):\n"
        "        return self.org_store.role(caller, org)\n"
        "    def delete(self, caller, pool_id):\n"
        "        with self.lock:\n"
        "            self.agents.forget(self.pool_store.delete(caller, pool_id))\n"
        "    def seal_file(self, path):\n"
        "        self.seal.write(path, self.root_token)\n"
        "    def sealed(self):\n"
        "        return self.seal.sealed\n"
    )
    cls = ast.parse(facade).body[0]
    assert isinstance(cls, ast.ClassDef)
    assert pass_throughs(cls) == ["pools", "role"]


def test_no_service_passes_a_call_on_but_the_platforms_seeding_api() -> None:
    assert set(pass_throughs(_platform_service())) == PLATFORM_SEEDING
    assert pass_throughs(_secrets_service()) == []
    # A namespace's view overrides some of the service's operations (a child's mount
    # table holds system mounts only): the same door, narrowed, not a second one.
    scope = pass_throughs(_class(SECRETS / "models.py", "NamespaceScope"))
    operations = {n.name for n in _secrets_service().body if isinstance(n, ast.FunctionDef)}
    assert set(scope) <= operations


# -- the handlers ------------------------------------------------------------------------


def test_the_door_checker_sees_a_removed_pass_through_a_kept_one_and_a_seeding_call() -> None:
    held = held_names(_platform_service())
    doors = _platform_doors()
    assert {"org_store", "pool_store", "agent_store", "access_store"} <= doors
    handler = (
        "async def h(call):\n"
        "    service = call.service\n"
        "    call.service.pools(call.caller, 'acme')\n"
        "    service.describe_tokens()\n"
        "    call.service.add_pool('acme', 'p')\n"
        "    return call.service.pool_store.list_pools(call.caller, 'acme')\n"
    )
    assert wrong_doors(handler, held, PLATFORM_SEEDING, doors) == [
        "line 3: .pools (the service has none)",
        "line 4: .describe_tokens (a pass-through)",
        "line 5: .add_pool (not a store)",
    ]
    secrets = "async def h(call):\n    return call.service.tokens.get(call.caller.id)\n"
    assert wrong_doors(secrets, held_names(_secrets_service()), set()) == []


@pytest.mark.parametrize("path", _platform_handlers(), ids=lambda p: p.name)
def test_a_platform_handler_reaches_state_through_a_store(path: Path) -> None:
    held = held_names(_platform_service())
    assert wrong_doors(path.read_text(), held, PLATFORM_SEEDING, _platform_doors()) == []


@pytest.mark.parametrize("path", _secrets_handlers(), ids=lambda p: str(p.relative_to(SECRETS)))
def test_a_secrets_handler_reaches_state_through_a_store_or_an_operation(path: Path) -> None:
    service = _secrets_service()
    held = held_names(service) | held_names(_class(SECRETS / "models.py", "NamespaceScope"))
    assert wrong_doors(path.read_text(), held, set(pass_throughs(service))) == []


def test_both_halves_handlers_are_all_read() -> None:
    """The checks above read every handler module (a moved folder would leave them idle)."""
    assert {p.name for p in _platform_handlers()} >= {"pools.py", "agents.py", "_base.py"}
    secrets = {str(p.relative_to(SECRETS)) for p in _secrets_handlers()}
    assert "http/auth_token.py" in secrets
    assert any(p.startswith("engines/pki/") for p in secrets)
    reached = {
        name
        for path in (*_platform_handlers(), *_secrets_handlers())
        for _, name in service_reaches(path.read_text())
    }
    assert {"pool_store", "tokens", "leases", "authenticate"} <= reached


# -- nobody else reaches a platform store --------------------------------------------------

# The platform's state modules (the service and the stores, which reach each other).
PLATFORM_STATE = {"models.py", "organizations.py", "pools.py", "agents.py", "parameters.py"}
PLATFORM_STATE |= {"team_access.py"}


def store_reaches(source: str, stores: set[str]) -> list[str]:
    """Every ``<expr>.<name>`` in ``source`` whose name is a platform store."""
    return [
        f"line {node.lineno}: .{node.attr}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr in stores
    ]


def test_the_store_checker_sees_a_module_that_reaches_a_store() -> None:
    stores = {n for n in held_names(_platform_service()) if n.endswith("_store")}
    assert len(stores) == 5
    reach = "def seed(sandbox):\n    sandbox.platform.org_store.add_team('o', 't')\n"
    assert store_reaches(reach, stores) == ["line 2: .org_store"]
    assert (
        store_reaches("def seed(sandbox):\n    sandbox.platform.add_team('o', 't')\n", stores) == []
    )


def test_nothing_else_in_the_sandbox_reaches_a_platform_store() -> None:
    """The rest of the sandbox (the app, the demo, scale, the lab) seeds through the
    service's Python API, which takes the lock; only state and handlers reach a store."""
    stores = {n for n in held_names(_platform_service()) if n.endswith("_store")}
    found = {
        f"{path.relative_to(SANDBOX)}: {reach}"
        for path in sorted(SANDBOX.rglob("*.py"))
        if not (path.parent == PLATFORM and path.name in PLATFORM_STATE)
        and PLATFORM / "http" not in path.parents
        for reach in store_reaches(path.read_text(), stores)
    }
    assert found == set()
