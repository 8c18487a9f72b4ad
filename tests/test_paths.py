"""Names in addresses: one rule (``toolkit._http.paths.segment``), used by every call.

A name given to a call, or a key a server listed, goes into a URL as exactly
one percent-encoded segment, or is refused with an ``InputError`` that names
the parameter before anything is sent. ``.`` and ``..`` would be removed by the
URL library (``policies.delete("acl", "..")`` sent ``DELETE /v1/sys/policies/``).

The calls that take names are derived, not listed: every public method of every
area of both clients is called against a scripted server (which answers 404 to
everything and records each request line) with a marker in each of its text
parameters; a parameter whose marker shows up in a request's path is a name.
Hypothesis then throws arbitrary text at each of them.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from yarl import URL

from tests._hypothesis import driving_servers
from tests._sockets import Threaded
from toolkit import InputError, PartialCoverage, PlatformClient, RetryPolicy, ToolkitError
from toolkit._area import Area
from toolkit._http import HTTPLayer, api_path, segment, segments
from toolkit.secrets import SecretsClient

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
MARKER = "zqxjmarker"
NOT_FOUND = b'{"errors":["not found"]}'
# Calls that wait for a person or start threads: not driven here.
NOT_DRIVEN = {("auth", "oidc"), ("auth", "keep_renewed"), ("namespaces", "across")}


def _not_found(head: bytes, n: int) -> tuple[bytes, bool]:
    return (
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(NOT_FOUND), NOT_FOUND),
        False,
    )


@dataclass(frozen=True)
class NamedCall:
    """One call's parameter that goes into an address: ``client.<area>.<method>(<param>=...)``."""

    service: str
    area: str
    method: str
    param: str
    text_filler: str = "a"  # what the call's other text parameters get

    def __str__(self) -> str:
        return f"{self.area}.{self.method}({self.param})"


class Recorder:
    """Both clients against one scripted server that answers 404 and records request targets."""

    def __init__(self) -> None:
        self.server = Threaded(_not_found)
        fast = RetryPolicy(attempts=1)
        self.clients = {
            "secrets": SecretsClient(self.server.address, token="s.paths-test", retry=fast),
            "platform": PlatformClient(self.server.address, token="paths-test", retry=fast),
        }

    def targets(self) -> list[str]:
        with self.server.lock:
            heads = list(self.server.heads)
        return [h.split(b" ", 2)[1].decode("latin-1") for h in heads]

    def run(self, call: Callable[[], Any]) -> tuple[BaseException | None, list[str]]:
        """(what the call raised or None, the request targets the server saw during it)."""
        before = len(self.targets())
        raised: BaseException | None = None
        try:
            result = call()
            if isinstance(result, Iterator):
                list(result)
        except Exception as exc:  # every kind is judged by the caller
            raised = exc
        return raised, self.targets()[before:]

    def close(self) -> None:
        for client in self.clients.values():
            client.close()
        self.server.stop()


# Text tried in turn for the other required text parameters, until the call takes it
# (a policy kind, a plugin type and a key type each allow a few words only).
TEXT_FILLERS = ("a", "acl", "secret", "internal")


def _filler(annotation: str, text_filler: str = "a") -> Any:
    """A harmless value for a required parameter of this annotation (None: cannot fill)."""
    text = annotation.replace(" ", "")
    if text.startswith(("Sequence", "Iterable")) or "list[" in text:
        return ["a"]
    if text.startswith(("Mapping", "dict")):
        return {}
    if "Duration" in text:
        return "1h"
    if text.startswith(("str", "Secret")):
        return text_filler
    if text.startswith("int"):
        return 1
    if text.startswith("float"):
        return 1.0
    if text.startswith("bool"):
        return False
    return None


def _arguments(
    method: Callable[..., Any], param: str, value: Any, text_filler: str = "a"
) -> dict[str, Any] | None:
    """Keyword arguments for ``method`` with ``param`` set to ``value`` and every other
    required parameter filled; None when one cannot be."""
    kwargs: dict[str, Any] = {}
    for name, p in inspect.signature(method).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if name == param:
            kwargs[name] = value
        elif p.default is inspect.Parameter.empty:
            filler = _filler(str(p.annotation), text_filler)
            if filler is None:
                return None
            kwargs[name] = filler
    return kwargs


def _areas(recorder: Recorder) -> Iterator[tuple[str, str, Area]]:
    for service, client in recorder.clients.items():
        for name, area in vars(client).items():
            if isinstance(area, Area):
                yield service, name, area


def _text_parameters(method: Callable[..., Any]) -> list[str]:
    return [
        name
        for name, p in inspect.signature(method).parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and re.match(r"(str|Secret)\b", str(p.annotation).replace(" ", ""))
    ]


def derive_named_calls(recorder: Recorder) -> list[NamedCall]:
    """Every (area, method, parameter) whose value lands in a request's path."""
    found = []
    for service, area_name, area in _areas(recorder):
        # Functions of the class: reading every attribute would run properties that send.
        for method_name, _ in inspect.getmembers(type(area), inspect.isfunction):
            if method_name.startswith("_") or (area_name, method_name) in NOT_DRIVEN:
                continue
            method = getattr(area, method_name)
            for param in _text_parameters(method):
                for filler in TEXT_FILLERS:
                    kwargs = _arguments(method, param, MARKER, filler)
                    if kwargs is None:
                        break
                    raised, targets = recorder.run(functools.partial(method, **kwargs))
                    if any(MARKER in URL(t).raw_path for t in targets):
                        found.append(NamedCall(service, area_name, method_name, param, filler))
                        break
                    if not isinstance(raised, InputError):
                        break  # the filler was taken: this parameter is not a name
    return found


@pytest.fixture(scope="module")
def recorder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorder]:
    # Calls driven with a marker for every text parameter may write where a path
    # parameter names (the radar's snapshots folder): into a folder of the test's own.
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("driven-calls"))
    recorder = Recorder()
    try:
        yield recorder
    finally:
        recorder.close()
        os.chdir(here)


@pytest.fixture(scope="module")
def named_calls(recorder: Recorder) -> list[NamedCall]:
    return derive_named_calls(recorder)


PREFIX = {"secrets": "/v1/", "platform": "/api/v2/"}


def _encodings(value: str) -> set[str]:
    """What a value may look like in a path: one segment, or (a mount, a prefix) one
    segment a part, with the slashes at its ends dropped."""
    core = value.lstrip("/")
    core = core[:-1] if core.endswith("/") else core
    return {
        quote(value, safe=""),
        quote(value.strip("/"), safe=""),
        "/".join(quote(p, safe="") for p in core.split("/")),
    }


def check_call(recorder: Recorder, call: NamedCall, value: str) -> None:
    """Either an InputError naming the parameter and nothing sent with the value, or
    every request under the API's prefix, unrewritten, one of them carrying the value
    as whole segments."""
    area = getattr(recorder.clients[call.service], call.area)
    method = getattr(area, call.method)
    kwargs = _arguments(method, call.param, value, call.text_filler)
    assert kwargs is not None
    raised, targets = recorder.run(lambda: method(**kwargs))
    assert raised is None or isinstance(raised, ToolkitError), f"{call}: {raised!r}"
    for target in targets:
        path = target.partition("?")[0]
        assert path.startswith(PREFIX[call.service]), f"{call} {value!r} sent {target}"
        assert URL("http://h" + path).raw_path == path, f"{call} {value!r}: {target} rewritten"
    if isinstance(raised, InputError):
        message = str(raised)
        # The field named: the parameter, or the one a call hands it on to
        # (``check_request(role)`` reads the role by ``name``), or the mount.
        fields = {call.param, call.param.rstrip("s"), "name", "mount"}
        assert any(f in message for f in fields), f"{call}: {message}"
        if len(value.strip()) > 3:
            assert value not in message, f"{call}: the value is in {message!r}"
        return
    assert targets, f"{call} {value!r}: nothing sent and no InputError"
    if not value.strip("/"):
        return  # an empty prefix or mount part: the call's own default applies
    # As yarl writes them (it leaves sub-delimiters such as ``,`` unencoded).
    wanted = {URL("http://h/" + e + "/").raw_path for e in _encodings(value) if e}
    assert any(w in t.partition("?")[0] + "/" for t in targets for w in wanted), (
        f"{call} {value!r}: no request carries it; sent {targets}"
    )


# -- the rule itself ---------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", ".", ".."])
def test_an_empty_name_or_a_dot_segment_is_refused_naming_the_parameter(value: str) -> None:
    with pytest.raises(InputError, match="^policy_name "):
        segment(value, "policy_name")


@pytest.mark.parametrize("value", ["ops\n", "a\rb", "a\x00", "\x7f", "a\x85b", "a\ud800"])
def test_control_characters_and_invalid_text_are_refused_and_not_shown(value: str) -> None:
    with pytest.raises(InputError, match="control character") as caught:
        segment(value, "name")
    assert value not in str(caught.value)
    assert "strip it" in str(caught.value)


def test_a_name_is_always_exactly_one_segment() -> None:
    assert segment("a/../b", "name") == "a%2F..%2Fb"
    assert segment("%2e%2e", "name") == "%252e%252e"
    assert segment("...", "name") == "..."
    assert segment("ops team?#", "name") == "ops%20team%3F%23"
    assert segment(42, "serial") == "42"


def test_a_path_of_several_parts_checks_each_part_and_keeps_no_empty_one() -> None:
    assert segments("/databases/eu/", "mount") == "databases/eu"
    for bad in ("a/../b", "a/./b", "a//b", "a//", "/", ""):
        with pytest.raises(InputError, match="^mount "):
            segments(bad, "mount")


def test_a_template_names_the_field_whose_value_is_refused() -> None:
    assert api_path("/sys/policies/{kind}/{name}", kind="acl", name="a b") == (
        "/sys/policies/acl/a%20b"
    )
    assert api_path("/x/{prefix:path}/y", prefix="a/b c") == "/x/a/b%20c/y"
    with pytest.raises(InputError, match="^name "):
        api_path("/sys/policies/{kind}/{name}", kind="acl", name="..")


@pytest.mark.parametrize(
    "path", ["/a/../b", "/a/%2E%2e/b", "/a/./b", "/a?b", "/a#b", "/a\n", "a", "/.."]
)
def test_the_layer_sends_nothing_on_a_path_the_url_library_would_rewrite(path: str) -> None:
    server = Threaded(_not_found)
    layer = HTTPLayer(server.address, "/v1", retry=RetryPolicy(attempts=1))
    try:
        with pytest.raises(InputError, match="would leave /v1"):
            layer.request("GET", path)
        with pytest.raises(InputError, match="would leave /v1"):
            list(layer.many([layer_request("GET", "/fine"), layer_request("GET", path)]))
        assert server.heads == []
    finally:
        layer.close()
        server.stop()


def layer_request(method: str, path: str) -> Any:
    from toolkit._http import Request

    return Request(method, path)


# -- the cases the probe found -------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c: c.leases.revoke_prefix("x/../../revoke-force/db"), "prefix"),
        (lambda c: c.leases.revoke_force("db/./x"), "prefix"),
        (lambda c: c.policies.delete("acl", ".."), "name"),
        (lambda c: c.namespaces.delete(".."), "name"),
        (lambda c: c.namespaces.create("."), "name"),
        (lambda c: c.database.at("../sys").read_role("app"), "mount"),
        (lambda c: c.auth.userpass("..", "pw"), "username"),
        (lambda c: c.pki.read_role("ops\n"), "name"),
    ],
)
def test_a_rewritten_path_is_refused_before_anything_is_sent(
    recorder: Recorder, call: Callable[[SecretsClient], Any], field: str
) -> None:
    raised, targets = recorder.run(lambda: call(recorder.clients["secrets"]))  # type: ignore[arg-type]
    assert isinstance(raised, InputError), raised
    assert str(raised).startswith(field)
    assert targets == []


def test_a_lease_key_the_server_lists_cannot_send_the_walk_outside_v1() -> None:
    listing = b'{"request_id":"1","data":{"keys":["ok/","../../../../auth/token/accessors/"]}}'

    def answer(head: bytes, n: int) -> tuple[bytes, bool]:
        target = head.split(b" ", 2)[1]
        body = listing if target.endswith(b"/lookup/") else b'{"data":{"keys":[]}}'
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body),
            False,
        )

    server = Threaded(answer)
    client = SecretsClient(server.address, token="s.walk-test", retry=RetryPolicy(attempts=1))
    try:
        with pytest.raises(PartialCoverage, match=r"\.\./\.\./\.\./\.\./auth/token/accessors"):
            client.leases.list_lease_ids()
        targets = [h.split(b" ", 2)[1].decode() for h in server.heads]
        assert targets and all(t.startswith("/v1/sys/leases/lookup/") for t in targets)
        assert not any("accessors" in t for t in targets)
    finally:
        client.close()
        server.stop()


# -- every call that takes a name ------------------------------------------------------------


def test_the_calls_that_take_names_are_derived_from_the_areas(
    named_calls: list[NamedCall],
) -> None:
    names = {str(c) for c in named_calls}
    for known in (
        "policies.delete(name)",
        "leases.revoke_prefix(prefix)",
        "leases.list_leases(prefix)",
        "namespaces.delete(name)",
        "auth.userpass(username)",
        "auth.userpass(mount)",
        "database.read_role(name)",
        "pki.read_cert(serial)",
        "keymgmt.read_distribution(provider)",
        "keymgmt.read_distribution(key)",
        "organizations.read(name)",
        "agent_pools.agents_frame(pool_id)",
        "team_access.read(team_access_id)",
        "policy_set_parameters.update(parameter_id)",
    ):
        assert known in names, f"{known} not derived; derived: {sorted(names)}"
    assert len(named_calls) >= 80


# Every call gets the two that rewrote paths; hypothesis draws the rest (and these).
NASTY = ["..", "a/../b"]
MORE_NASTY = ["", ".", "../../x", "./", "a//b", "/", "x\n", "%2e%2e", "?a#b", "é/ü", ","]


def test_every_call_that_takes_a_name_refuses_or_encodes_dot_segments(
    recorder: Recorder, named_calls: list[NamedCall]
) -> None:
    for call in named_calls:
        for value in NASTY:
            check_call(recorder, call, value)


names = st.one_of(
    st.sampled_from(NASTY + MORE_NASTY),
    st.text(max_size=24),
    st.text(alphabet=st.sampled_from("./%2eE\n\x00 ?#a"), max_size=12),
    st.lists(st.sampled_from(["", ".", "..", "a", "%2e", "b c"]), max_size=5).map("/".join),
)


@driving_servers(EXAMPLES)
@given(data=st.data())
def test_any_text_given_as_a_name_is_refused_or_sent_as_exactly_that_name(
    recorder: Recorder, named_calls: list[NamedCall], data: st.DataObject
) -> None:
    call = data.draw(st.sampled_from(named_calls), label="call")
    value = data.draw(names, label="value")
    check_call(recorder, call, value)
