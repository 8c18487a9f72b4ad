"""Feed known secrets through a path and grep every place a value could surface.

A :class:`Leaks` holds the secrets fed so far (each one random, so no other
test's data can match) and counts the places searched. ``check(where, *things)``
turns each thing into every text it can show: ``repr``/``str``, a DataFrame's
``to_string``/``to_html``, a record's HTML, an exception's ``args`` and its whole
``__cause__``/``__context__`` chain with the printed traceback, a widget's
``repr`` and saved state with its children's. A secret found fails the test
with the place it was found.
"""

from __future__ import annotations

import html
import json
import logging
import secrets
import threading
import time
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from toolkit import Sensitive
from toolkit.display import scrolling
from toolkit.sandbox import Sandbox


def random_secret(prefix: str = "s3cr3t") -> str:
    """A value that can only come from this run: prefix plus 24 random hex digits."""
    return f"{prefix}-{secrets.token_hex(12)}"


def _exception_texts(exc: BaseException) -> Iterator[str]:
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield str(link)
        yield repr(link)
        yield repr(link.args)
        yield repr(vars(link))  # attributes: url, messages, errors, headers, a request
        link = link.__cause__ or link.__context__
    yield "".join(traceback.format_exception(exc))


def _widget_texts(widget: Any) -> Iterator[str]:
    yield repr(widget)
    yield json.dumps(widget.get_state(), default=repr)
    for child in getattr(widget, "children", ()) or ():
        yield from _widget_texts(child)


def texts_of(thing: Any) -> Iterator[str]:
    """Every text ``thing`` can show."""
    import ipywidgets

    if isinstance(thing, str):
        yield thing
        return
    if isinstance(thing, BaseException):
        yield from _exception_texts(thing)
        return
    if isinstance(thing, ipywidgets.Widget):
        yield from _widget_texts(thing)
        return
    yield repr(thing)
    yield str(thing)
    if isinstance(thing, pd.DataFrame):
        yield thing.to_string()
        yield thing.to_html()
        yield scrolling(thing)._repr_html_()  # the runbooks' scrolling view
        yield repr(thing.attrs)
    for method in ("_repr_html_", "_repr_markdown_"):
        show = getattr(thing, method, None)
        if callable(show):
            yield str(show())
    widget = getattr(thing, "widget", None)
    if isinstance(widget, ipywidgets.Widget):
        yield repr(vars(thing))  # a form's attributes: nothing typed is kept in plain
        yield from _widget_texts(widget)


def all_widget_state() -> str:
    """The saved state of every live widget, as the widget manager would store it."""
    from ipywidgets import Widget

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        live = list(Widget.widgets.values())
    return json.dumps({w.model_id: w.get_state() for w in live}, default=repr)


def _written_forms(value: str) -> set[str]:
    """The value as written raw, HTML-escaped and JSON-escaped (how a widget state holds it)."""
    return {value, html.escape(value), html.escape(value, quote=False), json.dumps(value)[1:-1]}


class Leaks:
    """The secrets fed so far and the number of places searched for them."""

    def __init__(self) -> None:
        self.secrets: dict[str, str] = {}
        self.paths = 0

    def feed(self, value: str | Sensitive, what: str) -> str:
        """Remember a secret (one we send, or one the server handed back)."""
        plain = value.reveal() if isinstance(value, Sensitive) else str(value)
        assert len(plain) >= 8, f"{what}: too short to grep for reliably"
        self.secrets[plain] = what
        return plain

    def new(self, what: str, prefix: str = "s3cr3t") -> str:
        return self.feed(random_secret(prefix), what)

    def feed_private_key(self, pem: str, what: str) -> None:
        """Every line of a PEM key's body, so that any part of it shown is found."""
        body = [line for line in pem.strip().splitlines() if line and "-----" not in line]
        assert body, f"{what}: no PEM body"
        for i, line in enumerate(body):
            if len(line) >= 8:
                self.feed(line, f"{what}, line {i + 1}")

    def feed_unseal_shares(self, sandbox: Sandbox, folder: Path) -> list[str]:
        """The sandbox's current unseal shares (hex, as ``sys/init`` handed them out)."""
        init = folder / "init.json"
        sandbox.secrets.write_init_file(str(init))
        shares = [str(s) for s in json.loads(init.read_text())["keys"]]
        for i, share in enumerate(shares):
            self.feed(share, f"current unseal share {i + 1}")
        return shares

    def check(self, where: str, *things: Any) -> None:
        """Fail if any fed secret shows in any text of ``things``."""
        for thing in things:
            for text in texts_of(thing):
                self.paths += 1
                for value, what in self.secrets.items():
                    for shown in _written_forms(value):
                        assert shown not in text, f"{what} leaked through {where}"

    def summary(self) -> str:
        return f"fed {len(self.secrets)} secrets through {self.paths} paths"


# -- fixtures (a plugin of tests/conftest.py); a module opts in with usefixtures("debug_logs") --
@pytest.fixture
def leaks(record_property: Any) -> Iterator[Leaks]:
    """This test's secrets; their count and the places searched go into the test report."""
    found = Leaks()
    yield found
    record_property("secrets_fed", len(found.secrets))
    record_property("secret_paths", found.paths)


@pytest.fixture
def debug_logs(
    request: pytest.FixtureRequest,
    leaks: Leaks,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> Iterator[None]:
    """Every test runs with the root, httpx and httpcore loggers at DEBUG; all of it is grepped,
    and so is what reached stdout and stderr."""
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore"):
        caplog.set_level(logging.DEBUG, logger=name)
    threads = threading.active_count()
    yield
    # Closed clients' pool threads end on their own; let them, so that a test
    # counting threads after this one starts from a settled count.
    deadline = time.monotonic() + 5
    while threading.active_count() > threads and time.monotonic() < deadline:
        time.sleep(0.05)
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and "httpx" in callspec.id:
        assert any(r.name.startswith("httpcore") for r in caplog.records), "no HTTP log to grep"
    leaks.check("DEBUG logs", caplog.text, *(str(r.args) for r in caplog.records))
    out, err = capfd.readouterr()
    leaks.check("stdout/stderr", out, err)
