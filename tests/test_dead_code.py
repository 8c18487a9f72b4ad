"""No dead code: every function, method, class, attribute and variable of ``toolkit/`` and
``widgets/`` is used somewhere in the house (the package, its tests, its benchmarks or the
code cells of its runbooks), as vulture finds it, or is listed below with why it stays.

vulture reads names, not calls: a name used anywhere counts as used, so what it reports
is certain to be unused by name. What stays although nothing here names it is what another
program calls (Python's protocols, a base class of a library, the operator in a notebook of
their own) or a field of a record that is written out whole.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import vulture

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("toolkit", "widgets")
USERS = ("tests", "benchmarks")

# (file, name): why it stays although nothing in the house names it.
KEPT = {
    ("toolkit/__init__.py", "__getattr__"): "PEP 562: Python calls it for the lazy exports",
    ("widgets/__init__.py", "__getattr__"): "PEP 562: Python calls it for the lazy exports",
    (
        "toolkit/_client.py",
        "__suppress_context__",
    ): "read by traceback printing: the chained cause is not shown",
    ("toolkit/_ipython.py", "tb_offset"): "IPython's custom exception handler signature passes it",
    ("toolkit/_ipython.py", "last_type"): "sys.last_* are read by pdb and %tb after an error",
    ("toolkit/_ipython.py", "last_value"): "sys.last_* are read by pdb and %tb after an error",
    ("toolkit/_ipython.py", "last_traceback"): "sys.last_* are read by pdb and %tb after an error",
    ("toolkit/_http/policy.py", "handle_starttag"): "html.parser.HTMLParser calls it",
    ("toolkit/_http/policy.py", "handle_endtag"): "html.parser.HTMLParser calls it",
    ("toolkit/_http/policy.py", "handle_data"): "html.parser.HTMLParser calls it",
    (
        "toolkit/_http/transport.py",
        "is_connected",
    ): "aiohttp's connector calls it before reusing a connection",
    (
        "toolkit/_http/transport.py",
        "_retry_connection",
    ): "aiohttp's session reads it (no resend on a closed connection)",
    ("toolkit/sandbox/_server.py", "main_loop"): "uvicorn's Server.serve calls it",
    ("toolkit/secrets/auth.py", "daemon_threads"): "socketserver.ThreadingMixIn reads it",
    ("toolkit/secrets/auth.py", "do_GET"): "http.server calls it for a GET",
    (
        "toolkit/secrets/auth.py",
        "log_message",
    ): "http.server calls it (silenced: the callback carries a code)",
    (
        "toolkit/sql_tables.py",
        "_policy_rules",
    ): "a table's loader, found by getattr(self, f'_{name}')",
    (
        "toolkit/sql_tables.py",
        "_auth_roles",
    ): "a table's loader, found by getattr(self, f'_{name}')",
    ("toolkit/sql_tables.py", "_pools"): "a table's loader, found by getattr(self, f'_{name}')",
    (
        "toolkit/sql_tables.py",
        "_team_access",
    ): "a table's loader, found by getattr(self, f'_{name}')",
    ("toolkit/sandbox/lab.py", "signum"): "signal.signal's handler signature passes it",
    (
        "toolkit/auditlog/log.py",
        "usage_frame",
    ): "public: the one-pass summary every other audit-log frame reads from",
    (
        "toolkit/auditlog/log.py",
        "entries_frame",
    ): "public: every entry, for the operator's own SQL condition",
    ("toolkit/least_privilege/_generate.py", "_repr_markdown_"): "IPython shows a policy with it",
    ("toolkit/sandbox/secrets/logins.py", "_entity_for"): "read through __dict__ by __setstate__",
    (
        "toolkit/secrets/pki/certificate.py",
        "private_key_type",
    ): "an issued certificate's field as the server answers it",
    ("widgets/policy_set_parameter.py", "placeholder"): "an ipywidgets trait the browser shows",
}
# Record types written out whole (every field is data, read by whoever reads the record).
RECORDS = {
    "toolkit/_provenance.py": "the evidence header: every field is written into each file",
    "toolkit/platform/team_access.py": "the custom permissions a caller may pass, as the spec names them",
    "toolkit/sandbox/platform/team_access.py": "the custom permissions as the spec names them",
    "toolkit/sandbox/secrets/engines/pki/roles.py": "a certificate role's settings, read back whole",
    "toolkit/sandbox/secrets/engines/ad/state.py": "the directory config as written, stored whole as the server stores it (request_timeout: no directory to time out on)",
}


def _runbook_code(folder: Path) -> list[Path]:
    """The runbooks' code cells as Python files (magics left out), for vulture to read."""
    files = []
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        lines = [
            line
            for cell in cells
            if cell["cell_type"] == "code"
            for line in "".join(cell["source"]).splitlines()
            if not line.lstrip().startswith(("%", "!"))
        ]
        target = folder / f"{notebook.stem}.py"
        target.write_text("\n".join(lines) + "\n")
        files.append(target)
    return files


# Decorators that register what they decorate: the platform sandbox's route table calls
# every handler its decorator adds (``platform/http/_base.Routes.handles``).
REGISTERING_DECORATORS = ["@ROUTES.handles"]


def unused(extra: list[Path]) -> list[tuple[str, str, int, str]]:
    finder = vulture.Vulture(verbose=False, ignore_decorators=REGISTERING_DECORATORS)
    finder.scavenge([str(ROOT / name) for name in (*CHECKED, *USERS)] + [str(p) for p in extra])
    found = []
    for item in finder.get_unused_code(min_confidence=60):
        path = Path(item.filename).resolve()
        if not path.is_relative_to(ROOT) or path.relative_to(ROOT).parts[0] not in CHECKED:
            continue
        found.append(
            (path.relative_to(ROOT).as_posix(), item.name, item.first_lineno, item.message)
        )
    return found


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, int, str]]:
    return unused(_runbook_code(tmp_path_factory.mktemp("runbooks")))


def test_nothing_in_the_package_is_unused_unless_kept_with_a_reason(
    reported: list[tuple[str, str, int, str]],
) -> None:
    dead = [
        f"{file}:{line}: {message}"
        for file, name, line, message in reported
        if (file, name) not in KEPT and not (file in RECORDS and "variable" in message)
    ]
    assert not dead, "unused code (remove it, or keep it in KEPT with why):\n" + "\n".join(dead)


def test_every_kept_entry_is_still_reported_so_the_list_does_not_go_stale(
    reported: list[tuple[str, str, int, str]],
) -> None:
    stale = sorted(set(KEPT) - {(file, name) for file, name, _, _ in reported})
    assert not stale, f"kept entries nothing reports any more (remove them): {stale}"


def test_a_handler_its_route_decorator_registers_is_used_and_an_undecorated_one_is_not(
    tmp_path: Path,
) -> None:
    area = tmp_path / "area.py"
    area.write_text(
        'ROUTES = Routes()\n\n\n@ROUTES.handles("GET", "/x")\nasync def show_x(call):\n'
        "    return call\n\n\nasync def show_y(call):\n    return call\n"
    )
    finder = vulture.Vulture(verbose=False, ignore_decorators=REGISTERING_DECORATORS)
    finder.scavenge([str(area)])
    assert [i.name for i in finder.get_unused_code(min_confidence=60)] == ["show_y"]


def test_a_function_nothing_calls_is_found(tmp_path: Path) -> None:
    orphan = tmp_path / "orphan.py"
    orphan.write_text("def helper_nobody_calls():\n    return 1\n")
    finder = vulture.Vulture(verbose=False)
    finder.scavenge([str(orphan)])
    assert [i.name for i in finder.get_unused_code(min_confidence=60)] == ["helper_nobody_calls"]
