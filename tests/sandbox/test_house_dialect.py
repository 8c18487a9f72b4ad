"""One sandbox dialect: both halves are built one way, and these tests keep them so.

- the platform's HTTP side is one module an area, its route table gathered
  from them (how handlers reach the state: ``test_one_door.py``);
- one request class (``_wire.SandboxRequest``) and one function that shapes
  API errors (``_wire.error_response``);
- the state of both halves raises typed errors, mapped to a status only at
  the HTTP edge;
- the secrets state hands over records, never an answer's shape (the
  envelope's lease fields, or ``data`` beside its lease).

Each rule is read from the code (its syntax tree), and each checker is also
shown a made-up breach, so that a checker that sees nothing cannot pass.
"""

from __future__ import annotations

import ast
import json
import typing
from pathlib import Path

import httpx
import pytest

from toolkit.sandbox import Sandbox, _wire
from toolkit.sandbox.platform.http import _base as platform_base
from toolkit.sandbox.platform.http import routes as platform_routes
from toolkit.sandbox.secrets import errors as secrets_errors
from toolkit.sandbox.secrets.http import _base as secrets_base

SANDBOX = Path(_wire.__file__).resolve().parent
PLATFORM_HTTP = SANDBOX / "platform" / "http"


def _modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


# The platform's state modules: the service and the stores it holds, which may reach each other.
PLATFORM_STATE = {"models.py", "organizations.py", "pools.py", "agents.py", "parameters.py"}
PLATFORM_STATE |= {"team_access.py"}


# -- the platform's HTTP side: one module an area, the table gathered from them -----------


def test_every_platform_area_module_is_gathered_into_the_route_table() -> None:
    folder = {p.stem for p in PLATFORM_HTTP.glob("*.py") if not p.stem.startswith("_")} - {"routes"}
    gathered = {m.__name__.rpartition(".")[2] for m in platform_routes.AREAS}
    assert gathered == folder
    assert all(m.ROUTES for m in platform_routes.AREAS), "an area module declares its ROUTES"
    assert len(platform_routes.rows()) == len({(m, p) for m, p, _ in platform_routes.rows()})


def test_each_platform_handler_lives_in_the_module_of_its_area() -> None:
    for area in platform_routes.AREAS:
        for _method, _path, handler in area.ROUTES:
            assert handler.__module__ == area.__name__


# -- one request class ------------------------------------------------------------------


def test_both_halves_see_a_request_as_the_one_request_class() -> None:
    assert typing.get_origin(secrets_base.SecretsRequest) is _wire.SandboxRequest
    assert typing.get_origin(platform_base.PlatformRequest) is _wire.SandboxRequest


def request_classes(source: str) -> list[str]:
    """Classes in ``source`` that carry an HTTP request (a ``request: Request`` field)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if (
                isinstance(item, ast.AnnAssign)
                and isinstance(item.target, ast.Name)
                and item.target.id == "request"
                and "Request" in ast.unparse(item.annotation)
            ):
                found.append(node.name)
    return found


def test_the_request_class_checker_sees_a_second_request_class() -> None:
    second = "@dataclass\nclass PlatformCall:\n    request: Request\n    body: Any\n"
    assert request_classes(second) == ["PlatformCall"]


def test_the_sandbox_has_one_request_class() -> None:
    found = {
        f"{path.relative_to(SANDBOX)}:{name}"
        for path in _modules(SANDBOX)
        for name in request_classes(path.read_text())
    }
    assert found == {"_wire.py:SandboxRequest"}


# -- one function that shapes API errors -------------------------------------------------


def error_shapers(source: str) -> list[str]:
    """The functions of ``source`` that build an API error body (a dict with ``errors``)."""
    found: list[str] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{where}.{child.name}" if where else child.name
            if isinstance(child, ast.Dict) and any(
                isinstance(k, ast.Constant) and k.value == "errors" for k in child.keys
            ):
                found.append(where or "<module>")
            visit(child, name)

    visit(ast.parse(source), "")
    return found


def test_the_error_checker_sees_a_second_error_shaper() -> None:
    second = (
        "def refuse(status, text):\n"
        "    return JSONResponse({'errors': [text]}, status_code=status)\n"
    )
    assert error_shapers(second) == ["refuse"]


def test_the_sandbox_shapes_api_errors_in_one_function() -> None:
    found = {
        f"{path.relative_to(SANDBOX)}:{where}"
        for path in _modules(SANDBOX)
        for where in error_shapers(path.read_text())
    }
    assert found == {"_wire.py:error_response"}


@pytest.mark.parametrize(
    ("api", "errors", "body"),
    [
        ("secrets", (), {"errors": []}),
        ("secrets", ("no handler",), {"errors": ["no handler"]}),
        ("platform", ("not found",), {"errors": [{"status": "404", "title": "not found"}]}),
        (
            "platform",
            ({"title": "invalid attribute", "detail": "x", "source": {"pointer": "/data"}},),
            {
                "errors": [
                    {
                        "status": "404",
                        "title": "invalid attribute",
                        "detail": "x",
                        "source": {"pointer": "/data"},
                    }
                ]
            },
        ),
    ],
)
def test_the_one_error_shaper_answers_each_api_in_its_shape(
    api: _wire.API, errors: tuple[typing.Any, ...], body: dict[str, typing.Any]
) -> None:
    answer = _wire.error_response(api, 404, *errors)
    assert answer.status_code == 404 and json.loads(bytes(answer.body)) == body
    assert answer.media_type == ("application/json" if api == "secrets" else _wire.JSON_API)


# -- wire shapes only on the HTTP side ------------------------------------------------------

# The envelope's own fields (spec part 1, convention 4): what only the HTTP side writes.
ENVELOPE_KEYS = frozenset(
    {"lease_id", "lease_duration", "renewable", "data", "wrap_info", "warnings", "auth"}
)


def _secrets_state_modules() -> list[Path]:
    """The secrets sandbox's modules but its HTTP side (``http/``, each engine's ``http.py``)."""
    root = SANDBOX / "secrets"
    return [
        path
        for path in _modules(root)
        if path.relative_to(root).parts[0] != "http" and path.name != "http.py"
    ]


def wire_returns(source: str) -> list[str]:
    """Where ``source`` hands over an answer's shape: a returned dict literal (or
    ``dict(...)``) naming a field of the envelope, or a dict literal returned beside
    something else (an answer's ``data`` beside its lease or warnings)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        paired = isinstance(node.value, ast.Tuple)
        for value in node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]:
            keys: list[object] = []
            if isinstance(value, ast.Dict):
                keys = [k.value for k in value.keys if isinstance(k, ast.Constant)]
                if paired:
                    found.append(f"line {node.lineno}: a dict beside other values")
            elif isinstance(value, ast.Call) and getattr(value.func, "id", "") == "dict":
                keys = [k.arg for k in value.keywords if k.arg]
            found += [f"line {node.lineno}: {k}" for k in keys if k in ENVELOPE_KEYS]
    return found


def test_the_wire_checker_sees_lease_fields_and_data_handed_over_by_state() -> None:
    lease = "def f(lease):\n    return {'lease_id': lease.id, 'renewable': False}\n"
    assert wire_returns(lease) == ["line 2: lease_id", "line 2: renewable"]
    called = "def f(lease):\n    return dict(data={}, lease_duration=lease.ttl)\n"
    assert wire_returns(called) == ["line 2: data", "line 2: lease_duration"]
    beside = "def f(user, lease):\n    return {'username': user}, lease\n"
    assert wire_returns(beside) == ["line 2: a dict beside other values"]
    typed = "def f(user, lease):\n    return Credentials(user, 'pw'), lease\n"
    assert wire_returns(typed) == []
    assert wire_returns("def f():\n    return {'username': 'u'}\n") == []


def test_no_secrets_state_module_hands_over_a_wire_shape() -> None:
    modules = _secrets_state_modules()
    assert any(p.name == "issuance.py" for p in modules)
    assert not any(p.name == "http.py" or "http" in p.relative_to(SANDBOX).parts for p in modules)
    found = sorted(
        f"{path.relative_to(SANDBOX)} {where}"
        for path in modules
        for where in wire_returns(path.read_text())
    )
    assert found == []


# -- typed errors raised by state, a status only at the HTTP edge --------------------------


def bare_refusals(source: str) -> list[int]:
    """The lines of ``source`` that raise the untyped ``SecretsError`` itself."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Raise)
        and isinstance(node.exc, ast.Call)
        and isinstance(node.exc.func, ast.Name)
        and node.exc.func.id == "SecretsError"
    ]


def test_the_refusal_checker_sees_an_untyped_refusal() -> None:
    assert bare_refusals("def f():\n    raise SecretsError('no')\n") == [2]
    assert bare_refusals("def f():\n    raise Invalid('no')\n") == []


def test_the_secrets_sandbox_raises_only_typed_refusals() -> None:
    found = {
        f"{path.relative_to(SANDBOX)}:{line}"
        for path in _modules(SANDBOX / "secrets")
        for line in bare_refusals(path.read_text())
    }
    assert found == set()


# Every platform module outside http/: the stores, the service, ids, the demo.
PLATFORM_STATE_MODULES = [
    p for p in _modules(SANDBOX / "platform") if PLATFORM_HTTP not in p.parents
]
BUILTIN_REFUSALS = {"KeyError", "ValueError", "LookupError"}
NOT_A_REFUSAL = "# not a client's refusal"


def builtin_refusals(source: str) -> list[int]:
    """The lines of ``source`` that raise a bare ``KeyError``, ``ValueError`` or
    ``LookupError`` (called or not), except a line that says it is no client's refusal
    (an operator's configuration, a guard the HTTP side answers before it)."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        name = raised.id if isinstance(raised, ast.Name) else getattr(raised, "attr", None)
        if name in BUILTIN_REFUSALS and NOT_A_REFUSAL not in lines[node.lineno - 1]:
            found.append(node.lineno)
    return sorted(found)


def test_the_builtin_refusal_checker_sees_a_bare_key_value_or_lookup_error() -> None:
    breach = (
        "def f(x):\n"
        "    if x:\n"
        "        raise KeyError(x)\n"
        "    raise ValueError\n"
        "    raise builtins.LookupError('no')\n"
        "    raise RecordNotFound('no')\n"
        "    raise ValueError('limit')  # not a client's refusal: the operator's\n"
        "    raise\n"
    )
    assert builtin_refusals(breach) == [3, 4, 5]


def test_the_platform_state_raises_only_typed_refusals() -> None:
    """A missing record or a broken rule is a ``PlatformError`` the HTTP edge maps to its
    status; the few bare raises left are marked, and each mark is one reviewed here."""
    assert {p.name for p in PLATFORM_STATE_MODULES} >= PLATFORM_STATE
    found = {
        f"{path.relative_to(SANDBOX)}:{line}"
        for path in PLATFORM_STATE_MODULES
        for line in builtin_refusals(path.read_text())
    }
    assert found == set()
    marked = sorted(
        path.name
        for path in PLATFORM_STATE_MODULES
        for line in path.read_text().splitlines()
        if NOT_A_REFUSAL in line and "raise" in line
    )
    assert marked == ["pools.py", "pools.py"]  # pool_limit (configuration), sort (HTTP: 400)


def test_a_secrets_refusal_carries_no_status_and_each_kind_has_one_at_the_edge() -> None:
    kinds = [
        k
        for k in vars(secrets_errors).values()
        if isinstance(k, type)
        and issubclass(k, secrets_errors.SecretsError)
        and k is not secrets_errors.SecretsError
    ]
    assert set(kinds) == set(secrets_base.STATUS)
    for kind in kinds:
        refusal = kind("why")
        assert not hasattr(refusal, "status")
        assert secrets_base.status_of(refusal) == secrets_base.STATUS[kind]


# -- the app's own refusals, through the one shaper, on the wire ---------------------------


def test_the_rate_limit_refusal_is_a_json_api_error_with_its_headers() -> None:
    with Sandbox(demo=False, rate_limit=1) as sandbox, httpx.Client(timeout=10) as client:
        token = {"Authorization": f"Bearer {sandbox.token}"}
        client.get(f"{sandbox.address}/api/v2/organizations", headers=token)
        limited = client.get(f"{sandbox.address}/api/v2/organizations", headers=token)
    assert limited.status_code == 429
    assert limited.json() == {"errors": [{"status": "429", "title": "Too many requests"}]}
    assert limited.headers["content-type"] == _wire.JSON_API
    assert {"retry-after", "x-ratelimit-limit", "x-ratelimit-reset"} <= set(limited.headers)


def test_an_unknown_path_and_a_foreign_host_answer_in_the_secrets_apis_shape(
    demo_sandbox: Sandbox,
) -> None:
    address = demo_sandbox.address
    with httpx.Client(timeout=10) as client:
        unknown = client.get(f"{address}/v1/no/such/path")
        foreign = client.get(f"{address}/v1/sys/health", headers={"Host": "evil.example"})
    assert unknown.status_code == 404
    assert unknown.json() == {"errors": ["no handler for route '/v1/no/such/path'"]}
    assert foreign.status_code == 400 and "--allow-host" in foreign.json()["errors"][0]


def test_a_store_of_the_sandbox_is_named_a_store() -> None:
    """One word for one kind of thing: a store is ``<Thing>Store``; the two facades are
    the only services, and the server's own names (mount table, plugin catalog) stay."""
    facades = {"SecretsService", "PlatformService"}
    odd = sorted(
        f"{path.relative_to(SANDBOX)}: {node.name}"
        for path in _modules(SANDBOX)
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ClassDef)
        and node.name.endswith(("Manager", "Tree", "Service"))
        and node.name not in facades
    )
    assert odd == []
