"""Every call that walks a collection reports progress, through the HTTP layer's fan-outs.

The calls are derived, not listed: every view of both clients (each public call
of an area annotated to return a frame, as the coverage test finds them) is run
against the demo sandbox with bars forced on, and each is judged by what it
did: a call that sent more than a few requests walked a collection, and must
have drawn a bar (a walk that sent them one at a time outside the layer's
fan-outs, without :func:`~toolkit._progress.walking`, fails here). Every bar
drawn runs to its end and counts no more than was sent. Whether bars show by
default (a person at a Jupyter frontend, never papermill) is proven on a kernel.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from tests.test_every_view_covered import VIEWS, demo, view_call
from toolkit.display import use_progress
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient

__all__ = ["demo"]  # the coverage test's fixture, used here

# More requests than this, one after another, is a walk that bypassed the fan-outs.
SEQUENTIAL_WALK = 12


def _bars(err: str) -> list[tuple[str, int, int]]:
    """(label, done, total) of each bar's last state on stderr."""
    last: dict[str, tuple[int, int]] = {}
    for line in re.split(r"[\r\n]+", err):
        found = re.match(r"\s*(.*?):\s+\d+%\|.*?\|\s*(\d+)/(\d+)", line)
        if found:
            last[found[1]] = (int(found[2]), int(found[3]))
    return [(label, done, total) for label, (done, total) in last.items()]


class Answered:
    """How many answers a client's layer got (its response hooks see each one)."""

    def __init__(self) -> None:
        self.answered = 0
        self.lock = threading.Lock()

    def __call__(self, response: Any) -> None:
        with self.lock:
            self.answered += 1


@pytest.fixture
def bars_on() -> Iterator[None]:
    use_progress(True)
    yield
    use_progress(None)


@pytest.fixture(scope="module")
def clients(demo: dict[str, Any]) -> dict[str, Any]:
    return demo["clients"]


@pytest.mark.slow  # every view against a sandbox: 20 s (the coverage test runs them fast)
@pytest.mark.parametrize("name", VIEWS, ids=lambda v: v.removeprefix("toolkit."))
def test_every_view_that_fans_out_draws_a_bar_over_its_requests(
    demo: dict[str, Any], name: str, bars_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    call, positional, kwargs = view_call(demo, name)
    seen = Answered()
    layers = [client.http for client in demo["clients"].values()]
    capsys.readouterr()
    for layer in layers:
        layer.response_hooks.append(seen)
    try:
        frame = call(*positional, **kwargs)
    finally:
        for layer in layers:
            layer.response_hooks.remove(seen)
    assert isinstance(frame, pd.DataFrame)
    bars = _bars(capsys.readouterr().err)
    counted = sum(total for _, _, total in bars)
    assert all(done == total for _, done, total in bars), bars  # every bar ran to its end
    assert counted <= seen.answered, (bars, seen.answered)  # a bar counts what was sent
    if seen.answered > SEQUENTIAL_WALK:
        assert bars, f"{name}: {seen.answered} requests and no progress shown"


def test_a_bar_asked_for_replaces_the_fan_outs_own(
    clients: dict[str, Any], bars_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    clients["secrets"].leases.leases_by_mount(mounts=["broker/"], show_progress=True)
    labels = [label for label, _, _ in _bars(capsys.readouterr().err)]
    assert "looking up leases" in labels and "sys/leases/lookup" not in labels


def test_the_first_question_to_the_evaluator_and_widest_access_draw_bars(
    clients: dict[str, Any], bars_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolkit.secrets.tokens.sprawl import widest_access

    bao = clients["secrets"]
    scan = bao.tokens.scan()
    address, token = bao.address, bao.http.credentials()[0]
    for ask in (
        lambda fresh: fresh.access.who_can("read", "secret/data/app"),
        lambda fresh: widest_access(scan, lambda p: len(fresh.access.can(list(p)))),
    ):
        with SecretsClient(address, token) as fresh:  # its evaluator reads the server first
            capsys.readouterr()
            ask(fresh)
            assert _bars(capsys.readouterr().err)


@pytest.mark.parametrize("table", ["tokens", "certificates"])
def test_sql_over_a_walked_table_draws_a_bar(
    clients: dict[str, Any], table: str, bars_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    import toolkit

    with SecretsClient(clients["secrets"].address, clients["secrets"].http.credentials()[0]) as c:
        capsys.readouterr()
        answer = toolkit.sql(c, f"select count(*) as n from {table}")  # a catalog of its own
    assert int(answer["n"][0]) > 0
    assert _bars(capsys.readouterr().err), f"sql over {table}"


@pytest.mark.slow  # it starts a kernel
@pytest.mark.parametrize("person", [True, False], ids=["a frontend", "papermill"])
def test_a_kernel_shows_one_bar_a_cell_to_a_person_and_saves_none_for_papermill(
    person: bool,
) -> None:
    from jupyter_client.manager import start_new_kernel

    with Sandbox() as sandbox:
        manager, kernel = start_new_kernel(kernel_name="python3")
        try:
            code = (
                "from toolkit.secrets import SecretsClient\n"
                f"c = SecretsClient({sandbox.address!r}, {sandbox.token!r})\n"
                "frame = c.access.who_can('read', 'secret/data/app')\n"  # eight fan-outs
            )
            outputs: list[dict[str, Any]] = []
            reply = kernel.execute_interactive(
                code, allow_stdin=person, timeout=120, output_hook=lambda m: outputs.append(m)
            )
        finally:
            kernel.stop_channels()
            manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok", reply["content"]
    shown = [
        m for m in outputs if m["msg_type"] in ("display_data", "stream", "update_display_data")
    ]
    widgets = [
        m
        for m in shown
        if "application/vnd.jupyter.widget-view+json" in m["content"].get("data", {})
    ]
    if person:
        assert len(widgets) == 1, shown  # one bar for the cell's fan-outs
    else:
        assert shown == []
