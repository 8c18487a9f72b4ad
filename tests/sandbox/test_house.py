"""The house drawn from the code: no import cycle in the secrets sandbox, and an engine is one folder.

The import graph is drawn with grimp (which import-linter is built on),
counting the imports made only for type checking: a cycle through them is a
cycle a reader has to hold in their head all the same.

The echo engine below is the smallest engine there is. It is what a new
engine's folder holds (state, HTTP handlers, demo data, one descriptor), and
it is added to a server by one line; the tests then serve it, list it, mount
it elsewhere and fuzz it, with nothing else in the sandbox told about it.
"""

from __future__ import annotations

import dataclasses
import json
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grimp
import httpx
import mypy.api
import pytest
from starlette.responses import Response

from tests.test_fuzz import engine_endpoints, fuzz_once, fuzzed
from toolkit import NotFound, Record
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets import fields
from toolkit.sandbox.secrets.backends import Engine, EngineRegistry
from toolkit.sandbox.secrets.engines import ENGINES
from toolkit.sandbox.secrets.errors import InvalidRequest, PathNotFound, SecretsError
from toolkit.sandbox.secrets.host import EngineHost
from toolkit.sandbox.secrets.http._base import (
    EngineRoute,
    SecretsRequest,
    engine_route,
    engine_state,
    envelope,
    listing,
    no_content,
    resource,
)
from toolkit.sandbox.secrets.mounts import Mount
from toolkit.secrets import SecretsClient
from toolkit.secrets._base import EngineArea, Names
from toolkit.secrets.engines import ENGINE_AREAS, AreaSlot, area_slots

SECRETS = "toolkit.sandbox.secrets"
ENGINES_DIR = Path(__file__).resolve().parents[2] / "toolkit" / "sandbox" / "secrets" / "engines"


def _cycles(package: str, root: str = "toolkit") -> list[list[str]]:
    """Every set of modules under ``package`` that import each other round (Tarjan's SCCs)."""
    graph = grimp.build_graph(
        root, include_external_packages=False, exclude_type_checking_imports=False
    )
    inside = {m for m in graph.modules if m == package or m.startswith(package + ".")}
    edges = {m: sorted(set(graph.find_modules_directly_imported_by(m)) & inside) for m in inside}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(inside):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_inside_the_secrets_sandbox_counting_type_only_imports() -> None:
    assert _cycles(SECRETS) == []


def test_the_cycle_finder_finds_a_cycle_through_a_type_only_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "house_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles("house_probe", root="house_probe") == [["house_probe.a", "house_probe.b"]]


@pytest.mark.parametrize("engine", list(ENGINES), ids=lambda e: e.type)
def test_each_built_in_engine_is_one_folder_with_state_http_and_demo(engine: Engine) -> None:
    module = engine.state.__module__  # type: ignore[attr-defined]
    folder = module.removeprefix(f"{SECRETS}.engines.").split(".")[0]
    assert engine.mount == folder + "/", "an engine's folder is named for its default mount"
    assert {"__init__.py", "state.py", "http.py", "demo.py"} <= {
        p.name for p in (ENGINES_DIR / folder).iterdir()
    }
    assert engine.routes.__module__ == f"{SECRETS}.engines.{folder}.http"
    assert engine.demo is not None and engine.demo.__module__ == f"{SECRETS}.engines.{folder}.demo"


def test_every_engine_folder_is_registered() -> None:
    folders = {p.name for p in ENGINES_DIR.iterdir() if (p / "__init__.py").is_file()}
    assert folders == {engine.mount.rstrip("/") for engine in ENGINES}


def test_an_engine_in_a_folder_takes_its_handlers_and_demo_from_the_folder_and_its_type() -> None:
    http, demo = types.ModuleType("http"), types.ModuleType("demo")
    http.routes = echo_routes  # type: ignore[attr-defined]
    demo.load_demo = load_echo_demo  # type: ignore[attr-defined]
    plain = Engine.in_folder(type="echo", description="d", state=EchoState, http=http, demo=demo)
    assert (plain.mount, plain.catalog_name) == ("echo/", "echo")
    assert (plain.routes, plain.demo) == (echo_routes, load_echo_demo)
    told = Engine.in_folder(
        type="echo",
        mount="words/",
        catalog_name=None,
        description="d",
        state=EchoState,
        http=http,
        demo=demo,
    )
    assert (told.mount, told.catalog_name) == ("words/", None)


def test_the_server_s_tables_are_read_from_the_descriptors(demo_sandbox: Sandbox) -> None:
    service = demo_sandbox.secrets
    for engine in ENGINES:
        mount = service.mounts.engine(engine.mount)
        assert mount is not None and mount.type == engine.type
        assert mount.description == engine.description
        assert isinstance(mount.backend, engine.state)  # type: ignore[arg-type]
    catalog = set(service.plugins.names("secret"))
    assert {e.catalog_name for e in ENGINES if e.catalog_name} <= catalog


# -- the echo engine: a folder's worth, defined here ------------------------------------------
class EchoState:
    """state.py: the words written to one mount, plain data."""

    def __init__(self, host: EngineHost, mount: Mount) -> None:
        self.host = host
        self.mount = mount
        self.words: dict[str, str] = {}

    def write(self, name: str, text: str) -> None:
        if not text:
            raise InvalidRequest("text: required")
        self.words[name] = text

    def read(self, name: str) -> dict[str, Any]:
        if name not in self.words:
            raise PathNotFound()
        return {"name": name, "text": self.words[name]}


async def write_word(call: SecretsRequest) -> Response:
    """http.py: ``POST words/:name`` with ``text``."""
    state: EchoState = engine_state(call)
    state.write(call.params["name"], fields.string(call.body, "text", default=""))
    return no_content()


async def read_word(call: SecretsRequest) -> Response:
    state: EchoState = engine_state(call)
    return envelope(state.read(call.params["name"]))


async def list_words(call: SecretsRequest) -> Response:
    state: EchoState = engine_state(call)
    return listing(list(state.words))


def echo_routes() -> list[EngineRoute]:
    return [
        engine_route("words", list_words, ["LIST"]),
        resource("words/{name}", {"GET": read_word, "POST": write_word}),
    ]


def load_echo_demo(service: Any) -> None:
    """demo.py: one word at the default mount."""
    mount = service.mounts.engine("echo/")
    mount.backend.write("hello", "world")


ECHO = Engine(
    type="echo",
    mount="echo/",
    description="says back what it is told",
    catalog_name="echo",
    state=EchoState,
    routes=echo_routes,
    demo=load_echo_demo,
)


@pytest.fixture(scope="module")
def echo_server() -> Iterator[tuple[Sandbox, httpx.Client]]:
    # The one registration line.
    engines = EngineRegistry(*ENGINES, ECHO)
    with Sandbox(engines=engines) as sandbox:
        headers = {"X-Vault-Token": sandbox.token}
        with httpx.Client(base_url=sandbox.address, headers=headers, timeout=20) as http:
            yield sandbox, http


def test_a_new_engine_is_served_at_its_default_mount_with_its_demo_data(
    echo_server: tuple[Sandbox, httpx.Client],
) -> None:
    _, http = echo_server
    assert http.get("/v1/echo/words/hello").json()["data"] == {"name": "hello", "text": "world"}
    assert http.request("LIST", "/v1/echo/words").json()["data"]["keys"] == ["hello"]
    assert http.get("/v1/echo/nowhere").status_code == 404


def test_a_new_engine_is_listed_in_the_mounts_and_the_plugin_catalog(
    echo_server: tuple[Sandbox, httpx.Client],
) -> None:
    _, http = echo_server
    mounts = http.get("/v1/sys/mounts").json()["data"]
    assert mounts["echo/"]["type"] == "echo"
    assert mounts["echo/"]["description"] == "says back what it is told"
    catalog = http.request("LIST", "/v1/sys/plugins/catalog/secret").json()["data"]["keys"]
    assert "echo" in catalog
    # The built-in engines are all still there.
    assert {e.mount for e in ENGINES} <= set(mounts)


def test_a_new_engine_mounts_elsewhere_and_its_mounts_are_apart(
    echo_server: tuple[Sandbox, httpx.Client],
) -> None:
    _, http = echo_server
    answer = http.post("/v1/sys/mounts/team/echo", json={"type": "echo"})
    assert answer.status_code == 204, answer.text
    try:
        assert http.post("/v1/team/echo/words/hi", json={"text": "there"}).status_code == 204
        assert http.get("/v1/team/echo/words/hi").json()["data"]["text"] == "there"
        assert http.get("/v1/echo/words/hi").status_code == 404
        assert http.post("/v1/team/echo/words/hi", json={}).status_code == 400
    finally:
        http.delete("/v1/sys/mounts/team/echo")


def test_a_server_without_the_engine_does_not_know_its_type(demo_sandbox: Sandbox) -> None:
    with httpx.Client(base_url=demo_sandbox.address, timeout=20) as http:
        answer = http.post(
            "/v1/sys/mounts/echo",
            headers={"X-Vault-Token": demo_sandbox.token},
            json={"type": "echo"},
        )
    assert answer.status_code == 400
    assert "plugin not found in the catalog: echo" in answer.json()["errors"][0]


def _echo_state(sandbox: Sandbox) -> str:
    with sandbox.secrets.lock:
        return json.dumps(
            {
                path: mount.backend.words
                for path, mount in sorted(sandbox.secrets.mounts.engines.items())
                if isinstance(mount.backend, EchoState)
            },
            sort_keys=True,
        )


ECHO_ENDPOINTS = engine_endpoints(EngineRegistry(ECHO))


@pytest.mark.parametrize(("api", "template", "allowed"), ECHO_ENDPOINTS)
@fuzzed
def test_a_new_engine_is_fuzzed_like_the_others(
    echo_server: tuple[Sandbox, httpx.Client],
    api: str,
    template: str,
    allowed: frozenset[str],
    method: str,
    value: str,
    body: bytes,
    known_method: bool,
) -> None:
    fuzz_once(echo_server, api, template, allowed, method, value, body, known_method, _echo_state)


# -- the client's half: its registry, and the echo engine's area plugged in by one line --------
def _one_sided(client: type, engines: EngineRegistry) -> list[str]:
    """Each engine registered on one side only, said so; [] when both sides agree."""
    areas = set(area_slots(client))
    served = {e.mount.rstrip("/") for e in engines}
    return [f"{m}: the client's registry only" for m in sorted(areas - served)] + [
        f"{m}: the sandbox's registry only" for m in sorted(served - areas)
    ]


def test_the_client_and_the_sandbox_register_the_same_engines() -> None:
    assert _one_sided(SecretsClient, ENGINES) == []


def test_an_engine_registered_on_one_side_only_is_named_with_its_side() -> None:
    assert _one_sided(EchoClient, ENGINES) == ["echo: the client's registry only"]
    assert _one_sided(SecretsClient, EngineRegistry(*ENGINES, ECHO)) == [
        "echo: the sandbox's registry only"
    ]


def test_each_client_area_is_its_module_s_and_made_at_its_mount_by_the_registry() -> None:
    # One name per engine: the registry's line, the client's attribute and module, the
    # sandbox's folder and descriptor mount are all the engine's default mount.
    assert {m: s.area for m, s in area_slots(SecretsClient).items()} == ENGINE_AREAS
    client = SecretsClient("http://127.0.0.1:9", "t")
    try:
        view = client.in_namespace("team")
        for mount, area in ENGINE_AREAS.items():
            home = f"toolkit.secrets.{mount}"  # a module, or a package of that name
            assert area.__module__ == home or area.__module__.startswith(home + ".")
            made = getattr(client, mount)
            assert type(made) is area and made.mount == mount
            assert getattr(view, mount)._http is view.http is not client.http
    finally:
        client.close()


def test_an_area_read_before_the_client_made_it_is_made_then() -> None:
    client = SecretsClient("http://127.0.0.1:9", "t")
    try:
        del client.pki  # as if the client had not made it yet
        made = client.pki
        assert type(made) is ENGINE_AREAS["pki"] and made.mount == "pki"
        assert made._http is client.http and client.pki is made
        assert isinstance(SecretsClient.pki, AreaSlot)
    finally:
        client.close()


class Echo(EngineArea):
    """secrets/echo.py: the echo engine's calls, a client module's worth."""

    def list_words(self) -> Names:
        """``LIST /echo/words``."""
        return self._list(self._path("words"))

    def read_word(self, name: str) -> Record:
        """``GET /echo/words/:name``."""
        return self._record(self._read(self._path("words/{name}", name=name)), "echo word")

    def write_word(self, name: str, text: str) -> None:
        """``POST /echo/words/:name``."""
        self._send("POST", self._path("words/{name}", name=name), {"text": text})


class EchoClient(SecretsClient):
    echo = AreaSlot(Echo)  # the one registration line


def _told_of_engines(graph: grimp.ImportGraph) -> dict[str, list[str]]:
    """For each engine area, the modules of the package besides its own that import it."""
    told = {}
    for mount in ENGINE_AREAS:
        home = f"toolkit.secrets.{mount}"
        own = {m for m in graph.modules if m == home or m.startswith(home + ".")}
        importers = set().union(*(graph.find_modules_that_directly_import(m) for m in own))
        told[mount] = sorted(importers - own)
    return told


def test_an_engine_area_is_known_to_the_client_by_its_registry_line_only() -> None:
    # Adding an engine to the client is its module (and any forms) plus its line in
    # EngineAreas: no other module of the package names it, type-only imports counted.
    # The package alone, as _cycles draws it: grimp keeps one cache a set of packages, and
    # its meta file is shared, so a second set can read a stale graph. The forms import
    # their engines' areas as any user does, and are not asked about.
    graph = grimp.build_graph(
        "toolkit", include_external_packages=False, exclude_type_checking_imports=False
    )
    registry = "toolkit.secrets.engines"
    assert _told_of_engines(graph) == {mount: [registry] for mount in ENGINE_AREAS}
    # The check can fail: a client module importing an engine's area is named.
    graph.add_import(importer="toolkit.secrets.client", imported="toolkit.secrets.ad")
    assert _told_of_engines(graph)["ad"] == ["toolkit.secrets.client", registry]


def test_a_new_engine_area_plugs_into_the_client_and_calls_the_sandbox(
    echo_server: tuple[Sandbox, httpx.Client],
) -> None:
    sandbox, _ = echo_server
    with EchoClient(sandbox.address, sandbox.token) as client:
        assert client.echo.mount == "echo"
        assert dict(client.echo.read_word("hello")) == {"name": "hello", "text": "world"}
        client.echo.write_word("client", "was here")
        assert client.echo.list_words() == ["client", "hello"]
        client.enable_engine("team/echo2", "echo")
        try:
            elsewhere = client.echo.at("team/echo2")
            elsewhere.write_word("hi", "there")
            assert elsewhere.list_words() == ["hi"]
            with pytest.raises(NotFound):
                client.echo.read_word("hi")
        finally:
            client.disable_engine("team/echo2")
        # A namespace view has the area too, on the view's own layer.
        view = client.in_namespace("team")
        assert type(view.echo) is Echo and view.echo._http is view.http is not client.http
        # The built-in engines' areas are all still there, and the line reached no other client.
        assert set(area_slots(EchoClient)) - set(area_slots(SecretsClient)) == {"echo"}
        assert set(ENGINE_AREAS) < set(area_slots(EchoClient))
    assert "echo" not in area_slots(SecretsClient) and not hasattr(SecretsClient, "echo")


@pytest.mark.slow
def test_the_type_checker_knows_each_engine_area_s_type_and_a_plugged_in_one_s(
    tmp_path: Path,
) -> None:
    snippet = tmp_path / "areas.py"
    snippet.write_text(
        "from toolkit.secrets import SecretsClient\n"
        "from tests.sandbox.test_house import EchoClient\n"
        "reveal_type(SecretsClient().pki)\n"
        "reveal_type(SecretsClient().ad)\n"
        "reveal_type(EchoClient().echo)\n"
    )
    # The snippet alone, the package read for its types only (about a minute, cold).
    options = ["--config-file=", "--ignore-missing-imports", "--follow-imports=silent"]
    out, _, _ = mypy.api.run([*options, f"--cache-dir={tmp_path / 'cache'}", str(snippet)])
    assert 'Revealed type is "toolkit.secrets.pki.engine.PKI"' in out, out
    assert 'Revealed type is "toolkit.secrets.ad.AD"' in out, out
    assert 'Revealed type is "tests.sandbox.test_house.Echo"' in out, out


def test_the_registry_refuses_a_second_engine_of_a_type_or_a_mount_and_a_bad_mount() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        EngineRegistry(ECHO, ECHO)
    with pytest.raises(ValueError, match="default mount 'echo/'"):
        EngineRegistry(ECHO, dataclasses.replace(ECHO, type="echo2"))
    with pytest.raises(ValueError, match="write it as 'name/'"):
        EngineRegistry(dataclasses.replace(ECHO, mount="/echo"))
    with pytest.raises(SecretsError, match="plugin not found in the catalog: nope"):
        ENGINES.get("nope")
