"""A client that fails to build holds its token nowhere a traceback shows.

Every frame of the failed construction's traceback (the toolkit's, past this
test's own) is walked: each local's ``repr``, as a debugger or
``%xmode Verbose`` would show it, and the whole traceback formatted with its
locals. The half-built client is among those locals (``self``): its ``repr``
must work, not raise.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

import toolkit
from tests._leaks import random_secret
from toolkit import PlatformClient, Sensitive
from toolkit.secrets import SecretsClient

Build = Callable[[str, Any], object]

CLIENTS: dict[str, Build] = {
    "SecretsClient": lambda address, token, **kw: SecretsClient(address, token, **kw),
    "PlatformClient": lambda address, token, **kw: PlatformClient(address, token, **kw),
    "connect_secrets": lambda address, token, **kw: toolkit.connect_secrets(address, token, **kw),
    "connect_platform": lambda address, token, **kw: toolkit.connect_platform(address, token, **kw),
}

# (what is wrong, the address, the token's shape, the options): each fails to build.
FAILURES: dict[str, tuple[str, Callable[[str], str], dict[str, Any]]] = {
    "a token with a line break": ("http://127.0.0.1:9", lambda t: t + "\n", {}),
    "a token with a line break inside": ("http://127.0.0.1:9", lambda t: t + "\r\nX: y", {}),
    "an address with no scheme": ("127.0.0.1:9", lambda t: t, {}),
    "an address with the API prefix": ("http://127.0.0.1:9/v1", lambda t: t, {}),
    "a CA file that does not exist": (
        "https://127.0.0.1:9",
        lambda t: t,
        {"ca_file": "/nonexistent/ca.pem"},
    ),
    "no concurrency": ("http://127.0.0.1:9", lambda t: t, {"max_concurrency": 0}),
    "a negative timeout": ("http://127.0.0.1:9", lambda t: t, {"timeout": -1.0}),
}


def _frames(tb: TracebackType | None) -> Iterator[TracebackType]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _failed(build: Build, address: str, token: Any, options: dict[str, Any]) -> BaseException:
    try:
        build(address, token, **options)
    except Exception as exc:
        return exc
    raise AssertionError("the client was built")


TOOLKIT = str(Path(toolkit.__file__).parent)


def _shown_locals(exc: BaseException) -> list[tuple[str, str, str]]:
    """(function, local, repr) of every local of every frame of the toolkit's."""
    shown = []
    for tb in _frames(exc.__traceback__):
        frame = tb.tb_frame
        if not frame.f_code.co_filename.startswith(TOOLKIT):
            continue
        for name, value in frame.f_locals.items():
            shown.append((frame.f_code.co_name, name, repr(value)))
    return shown


@pytest.mark.parametrize("plain", [True, False], ids=["plain token", "Sensitive token"])
@pytest.mark.parametrize("wrong", list(FAILURES))
@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_client_that_fails_to_build_shows_its_token_in_no_frame(
    client: str, wrong: str, plain: bool
) -> None:
    address, shape, options = FAILURES[wrong]
    if client.endswith("platform") or client == "PlatformClient":
        address = address.replace("/v1", "/api/v2")
    secret = shape(random_secret("hvs.construct"))
    token: Any = secret if plain else Sensitive(secret, "token")
    exc = _failed(CLIENTS[client], address, token, options)
    assert isinstance(exc, toolkit.ToolkitError), f"{wrong}: {type(exc).__name__}: {exc}"
    core = secret.strip()
    frames = [(where, name) for where, name, text in _shown_locals(exc) if core in text]
    assert frames == [], f"{client}, {wrong}: the token shows in {frames}"
    formatted = "".join(traceback.StackSummary.extract(
        ((tb.tb_frame, tb.tb_lineno) for tb in _frames(exc.__traceback__)
         if tb.tb_frame.f_code.co_filename.startswith(TOOLKIT)),
        capture_locals=True,
    ).format())  # fmt: skip
    assert core not in formatted
    assert "repr() failed" not in formatted  # every local, the half-built client too


@pytest.mark.parametrize("client", [SecretsClient, PlatformClient])
def test_a_half_built_client_has_a_repr_that_says_so(client: type) -> None:
    exc = _failed(lambda a, t: client(a, t), "127.0.0.1:9", random_secret(), {})
    (half,) = {
        id(tb.tb_frame.f_locals["self"]): tb.tb_frame.f_locals["self"]
        for tb in _frames(exc.__traceback__)
        if isinstance(tb.tb_frame.f_locals.get("self"), client)
    }.values()
    assert repr(half) == f"<{client.__name__} (not built)>"


@pytest.mark.parametrize("client", [SecretsClient, PlatformClient])
def test_a_built_client_whose_server_is_gone_shows_its_token_in_no_frame(client: type) -> None:
    from tests.servers._common import free_port

    secret = random_secret("hvs.refused")
    built = client(f"http://127.0.0.1:{free_port()}", secret, retry=toolkit.RetryPolicy(attempts=1))
    with built:
        call = built.seal.status if client is SecretsClient else built.ping
        exc = _failed(lambda a, t: call(), "", None, {})
    assert isinstance(exc, toolkit.ToolkitError), exc
    assert [(where, name) for where, name, text in _shown_locals(exc) if secret in text] == []
