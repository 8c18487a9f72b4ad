"""The runbook checks' rules, each on its own: what a parameters cell may hold, which
value fits which default, and what a run says about what it saw (toolkit/runbook.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from toolkit import Coverage, InputError, PartialCoverage
from toolkit.runbook import Run, check_parameters, declared_parameters, refuse_undeclared


def test_a_parameters_cell_declares_names_with_plain_defaults() -> None:
    assert declared_parameters("a = 1\nb = 'x'\nc = None\nd = [1, 2]\n") == {
        "a": 1,
        "b": "x",
        "c": None,
        "d": [1, 2],
    }
    assert declared_parameters("") == {}


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("a = (", "the parameters cell is not Python"),
        ("import os", "only `name = value` lines (line 1)"),
        ("a = 1\nb = c = 2", "only `name = value` lines (line 2)"),
        ("a.b = 1", "only `name = value` lines"),
        ("a, b = 1, 2", "only `name = value` lines"),
        ("a = len('x')", "the parameter 'a' must have a plain value as its default"),
    ],
)
def test_a_parameters_cell_with_anything_but_plain_assignments_is_refused(
    source: str, says: str
) -> None:
    with pytest.raises(InputError, match=says.replace("(", r"\(").replace(")", r"\)")):
        declared_parameters(source)


def test_an_undeclared_parameter_is_refused_naming_what_the_runbook_takes() -> None:
    declared: dict[str, Any] = {"target": "sandbox", "role": ""}
    refuse_undeclared(["role"], declared, "rb")
    with pytest.raises(InputError) as caught:
        refuse_undeclared(["role", "rol"], declared, "rb", where="target a: ")
    assert str(caught.value) == (
        "target a: unknown parameter 'rol' (did you mean 'role'?): rb takes role, target"
    )
    with pytest.raises(InputError, match=r"^unknown parameter 'zzz': rb takes role, target$"):
        refuse_undeclared(["zzz"], declared, "rb")


# -- check_parameters -----------------------------------------------------------------------

CELL = """target = "sandbox"
token_env = "VAULT_TOKEN"
count = 3
ratio = 0.5
apply = False
names = ["a"]
role = ""
evidence_dir = None
allow_incomplete = False
"""


def check(injected: dict[str, Any] | None = None, **kw: Any) -> Run:
    history = ["import toolkit", CELL, "run = check()"]
    namespace: dict[str, Any] = dict(declared_parameters(CELL))
    if injected is not None:
        history.insert(2, "# Parameters\n" + "\n".join(f"{k} = {v!r}" for k, v in injected.items()))
        namespace.update(injected)
    return check_parameters(namespace, "rb", history=history, **kw)


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("apply", 1, "the parameter apply must be True or False, not 1 (int)"),
        ("count", 2.5, "the parameter count must be a whole number, not 2.5 (float)"),
        ("count", False, "the parameter count must be a whole number, not False (bool)"),
        ("ratio", "1", "the parameter ratio must be a number, not '1' (str)"),
        ("ratio", True, "the parameter ratio must be a number, not True (bool)"),
        ("role", 1, "the parameter role must be a string, not 1 (int)"),
        ("names", "a", "the parameter names must be a list, not 'a' (str)"),
        ("evidence_dir", 3, "the parameter evidence_dir must be a path (or None), not 3 (int)"),
    ],
)
def test_a_value_is_refused_unless_it_is_of_its_defaults_kind(
    key: str, value: Any, says: str
) -> None:
    with pytest.raises(InputError) as caught:
        check({key: value})
    assert str(caught.value) == says


@pytest.mark.parametrize(
    ("key", "value"),
    [("count", 7), ("ratio", 2), ("ratio", 0.25), ("names", ("b",)), ("evidence_dir", None)],
)
def test_a_value_of_its_defaults_kind_is_taken(key: str, value: Any, tmp_path: Path) -> None:
    assert check({key: value}).parameters[key] == value
    new = str(tmp_path / "new")
    assert check({"evidence_dir": new}).parameters["evidence_dir"] == new


def test_a_secret_parameter_of_the_wrong_kind_is_not_shown() -> None:
    history = ["x", 'target = "sandbox"\npassword = ""\n']
    with pytest.raises(InputError) as caught:
        check_parameters({"target": "sandbox", "password": 12345}, "rb", history=history)
    assert str(caught.value) == "the parameter password must be a string, not a value (int)"


def test_the_run_holds_what_was_given_and_allowed() -> None:
    run = check({"allow_incomplete": True, "count": 5})
    assert run.name == "rb" and run.parameters["count"] == 5
    assert run.defaults["count"] == 3 and run.allow_incomplete and not run.rehearsal
    assert not check().allow_incomplete
    assert check(rehearsal=True).rehearsal
    assert check({"target": "live"}).parameters["target"] == "live"


def test_the_nearest_parameters_cell_counts_and_the_injected_one_after_it() -> None:
    older = 'target = "sandbox"\nold = 1\n'
    history = [older, CELL, "# Parameters\ncount = 4\n", "x = 1"]
    namespace = dict(declared_parameters(CELL), count=4)
    run = check_parameters(namespace, "rb", history=history)
    assert "old" not in run.parameters and run.parameters["count"] == 4
    with pytest.raises(InputError, match="unknown parameter 'old'"):
        check_parameters(namespace, "rb", history=[CELL, "# Parameters\nold = 2\n"])
    only_injected = ["# Parameters\ncount = 4\n"]
    with pytest.raises(InputError, match="run the parameters cell first"):
        check_parameters(namespace, "rb", history=only_injected)


def test_the_history_comes_from_the_kernels_inputs_without_the_checks_own_cell() -> None:
    namespace: dict[str, Any] = dict(declared_parameters(CELL))
    namespace["In"] = ["", CELL, 'target = "sandbox"\nlate = 1\n']
    run = check_parameters(namespace, "rb")
    assert "late" not in run.parameters


def test_a_variable_name_parameter_must_be_one() -> None:
    assert check({"token_env": "MY_TOKEN_2"}).parameters["token_env"] == "MY_TOKEN_2"
    for wrong in ("2TOKEN", "MY-TOKEN", "A B"):
        with pytest.raises(InputError, match="token_env must name an environment variable"):
            check({"token_env": wrong})


def test_an_evidence_path_that_is_a_file_or_full_is_refused_and_an_empty_folder_taken(
    tmp_path: Path,
) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="evidence_dir .* exists already and is not empty"):
        check({"evidence_dir": str(tmp_path / "file")})
    (tmp_path / "empty").mkdir()
    assert check({"evidence_dir": str(tmp_path / "empty")}).parameters["evidence_dir"]


# -- choosing names -------------------------------------------------------------------------


def test_an_unknown_name_is_refused_listing_ten_of_what_the_server_has() -> None:
    run = check({"role": "nope"})
    with pytest.raises(InputError) as caught:
        run.choose("role", [f"r{i:02d}" for i in range(12)], what="database role")
    assert str(caught.value) == (
        "role = 'nope': no database role of that name on this server (it has: r00, r01, r02, "
        "r03, r04, r05, r06, r07, r08, r09 ...); name one of them, or leave role empty to take "
        "the first"
    )
    with pytest.raises(InputError, match=r"\(it has: none\)"):
        check({"role": "nope"}).choose("role", [])
    assert check({"role": "b"}).choose("role", ["a", "b"]) == "b"
    assert check().choose("role", []) == ""


def test_one_of_several_is_never_picked_for_the_operator() -> None:
    with pytest.raises(InputError) as caught:
        check({"target": "live"}).choose_one("role", [], what="pool")
    assert str(caught.value) == "set role: this token sees 0 pool(s): none"
    assert check({"target": "live"}).choose_one("role", ["only"]) == "only"
    assert check({"role": "b"}).choose_one("role", ["a", "b"]) == "b"


def test_ten_names_are_listed_whole_and_an_eleventh_adds_an_ellipsis() -> None:
    ten = [f"r{i:02d}" for i in range(10)]
    with pytest.raises(InputError) as caught:
        check({"role": "nope"}).choose("role", ten)
    assert "(it has: r00, r01, r02, r03, r04, r05, r06, r07, r08, r09); " in str(caught.value)
    with pytest.raises(InputError) as caught:
        check({"role": "nope"}).choose("role", [*ten, "r10"])
    assert "(it has: r00, r01, r02, r03, r04, r05, r06, r07, r08, r09 ...); " in str(caught.value)


def test_a_parameter_without_a_noun_is_named_by_its_words() -> None:
    with pytest.raises(InputError, match=r"^token_env = 'nope': no token env of that name "):
        check({"token_env": "nope"}).choose("token_env", ["a"])


def test_choosing_one_of_several_lists_ten_and_names_them_with_the_noun_given() -> None:
    twelve = [f"p{i:02d}" for i in range(12)]
    with pytest.raises(InputError) as caught:
        check({"target": "live"}).choose_one("agent_pool", twelve)
    assert str(caught.value) == (
        "set agent_pool: this token sees 12 agent pool(s): "
        "p00, p01, p02, p03, p04, p05, p06, p07, p08, p09"
    )
    with pytest.raises(InputError, match=r"no pool of that name on this server"):
        check({"role": "nope"}).choose_one("role", ["a", "b"], what="pool")


# -- what a run saw ---------------------------------------------------------------------------


def _seen(gaps: int) -> pd.DataFrame:
    cov = Coverage("view", read=2)
    for i in range(gaps):
        cov.note_gap(f"p{i}", 403, "no")
    return cov.attach(pd.DataFrame({"a": [1]}))


def test_a_complete_run_says_how_many_views_it_saw(capsys: pytest.CaptureFixture[str]) -> None:
    run = check()
    frame = run.seen(a=_seen(0), b=_seen(0))
    assert capsys.readouterr().out == "Coverage: 2 view(s) complete\n"
    assert frame.empty and frame.attrs["complete"] is True
    assert run.complete and run.verdict == "complete"
    assert run.coverage_record() == {
        "verdict": "complete",
        "views": ["view: complete (2 read)", "view: complete (2 read)"],
        "without_record": [],
    }


def test_an_allowed_incomplete_run_counts_the_places_not_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = check({"allow_incomplete": True})
    run.seen(a=_seen(2), b=_seen(1))
    assert capsys.readouterr().out.startswith("INCOMPLETE (allowed): view: incomplete, 2 place")
    assert run.coverage_line() == (
        "Coverage: INCOMPLETE, 3 place(s) not read (allowed by allow_incomplete)"
    )
    assert not run.complete and run.coverage_frame().attrs["complete"] is False
    assert len(run.coverage_frame()) == 3


def test_a_run_with_a_frame_without_a_record_says_which(capsys: pytest.CaptureFixture[str]) -> None:
    run = check({"allow_incomplete": True})
    run.seen(a=_seen(0), plain=pd.DataFrame())
    capsys.readouterr()
    assert run.coverage_line() == "Coverage: 1 view(s) complete; no record from plain (unproven)"
    assert run.verdict == "unproven" and run.complete
    assert check().coverage_frame().empty


def test_a_run_without_evidence_folder_files_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert check().file(None, {}) == []
    assert capsys.readouterr().out == "Not filed: evidence_dir is None.\n"


def test_the_filed_parameters_name_the_fleets_token_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOOLKIT_FLEET_TOKEN_SOURCE", raising=False)
    assert check().filed_parameters()["token_env"] == "VAULT_TOKEN"
    monkeypatch.setenv("TOOLKIT_FLEET_TOKEN_SOURCE", "token_env PROD_TOKEN")
    assert check().filed_parameters()["token_env"] == "PROD_TOKEN"
    monkeypatch.setenv("TOOLKIT_FLEET_TOKEN_SOURCE", "a file")
    assert check().filed_parameters()["token_env"] == "VAULT_TOKEN"


def test_the_provenance_says_where_the_token_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLKIT_FLEET_TOKEN_SOURCE", raising=False)
    monkeypatch.delenv("TOOLKIT_FLEET_TARGET", raising=False)
    sandbox = check().provenance()
    assert sandbox["token_source"] == "the sandbox's token" and sandbox["fleet_target"] is None
    assert sandbox["coverage"]["verdict"] == "complete"
    assert sandbox["finished_at"] >= sandbox["started_at"]
    live = check({"target": "live"}).provenance()
    assert live["token_source"] == "token_env VAULT_TOKEN"
    monkeypatch.setenv("TOOLKIT_FLEET_TARGET", "prod")
    monkeypatch.setenv("TOOLKIT_FLEET_TOKEN_SOURCE", "token_env X")
    fleet = check().provenance()
    assert fleet["fleet_target"] == "prod" and fleet["token_source"] == "token_env X"


def test_the_runbooks_hash_given_by_the_fleet_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLKIT_RUNBOOK_SHA256", "abc")
    assert check().sha256 == "abc"
    monkeypatch.delenv("TOOLKIT_RUNBOOK_SHA256")
    assert check().sha256 is None


def test_the_summary_carries_the_runs_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    run = check({"allow_incomplete": True})
    run.seen(a=_seen(1))
    capsys.readouterr()
    run.summary(leases=3)
    assert "'text/plain': 'leases: 3, coverage: incomplete'" in capsys.readouterr().out


def test_the_runbook_file_is_the_one_jupyter_names_else_the_one_in_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    named = tmp_path / "named" / "rb.ipynb"
    named.parent.mkdir()
    named.write_text("{}")
    here = tmp_path / "rb.ipynb"
    here.write_text('{"cells": []}')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TOOLKIT_RUNBOOK_SHA256", raising=False)
    monkeypatch.setenv("JPY_SESSION_NAME", str(named))
    assert check().sha256 == hashlib.sha256(b"{}").hexdigest()
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "other.ipynb"))
    assert check().sha256 == hashlib.sha256(here.read_bytes()).hexdigest()
    monkeypatch.delenv("JPY_SESSION_NAME")
    assert check().sha256 == hashlib.sha256(here.read_bytes()).hexdigest()


def test_the_provenance_names_the_os_user_and_host() -> None:
    import getpass
    import socket

    provenance = check().provenance()
    assert provenance["os_user"] == getpass.getuser()
    assert provenance["host"] == socket.gethostname()
    assert provenance["runbook_sha256"] is None or len(provenance["runbook_sha256"]) == 64


def test_several_views_not_read_whole_are_named_in_one_line() -> None:
    with pytest.raises(PartialCoverage) as caught:
        check().seen(a=_seen(1), b=pd.DataFrame())
    message = str(caught.value)
    assert message.startswith("view: incomplete, 1 place(s) not read: p0 (403 no) (2 read); ")
    assert "; b: no coverage record (unproven) — " in message
    assert message.endswith("or rerun with allow_incomplete=True")


def test_one_of_none_is_named_by_its_parameter_without_a_noun_given() -> None:
    with pytest.raises(InputError, match=r"^set db_role: this token sees 0 db role\(s\): none$"):
        check({"target": "live"}).choose_one("db_role", [])


def test_a_run_files_its_frames_coverage_and_provenance_into_its_folder(
    demo_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from toolkit.secrets import SecretsClient

    folder = tmp_path / "evidence"
    run = check({"evidence_dir": str(folder)})
    run.seen(a=_seen(0))
    capsys.readouterr()
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        filed = run.file(client, {"leases": pd.DataFrame({"n": [1]})})
    assert filed and all(p.parent == folder and p.exists() for p in filed)
    names = {p.name for p in filed}
    assert {"rb-leases.csv", "rb-coverage.csv", "rb.header.json"} <= names
    header = json.loads((folder / "rb.header.json").read_text())
    assert header["runbook"] == "rb"
    assert header["coverage"]["verdict"] == "complete" and header["host"]
    assert header["parameters"]["evidence_dir"] == str(folder)
    out = capsys.readouterr().out
    assert out == f"Filed {len(filed)} file(s) into {folder}: coverage, leases\n"


def test_on_the_sandbox_without_a_demo_name_only_the_one_there_is_taken() -> None:
    assert check().choose_one("role", ["only"]) == "only"
    with pytest.raises(InputError, match=r"^set role: this token sees 2 role\(s\): a, b$"):
        check().choose_one("role", ["b", "a"])


def test_the_filed_header_names_the_server_and_the_organization_audited(
    demo_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from toolkit import PlatformClient

    folder = tmp_path / "evidence"
    run = check({"evidence_dir": str(folder)})
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as client:
        run.file(client, {"teams": pd.DataFrame({"n": [1]})}, organization="acme")
    capsys.readouterr()
    header = json.loads((folder / "rb.header.json").read_text())
    assert header["server"] == demo_sandbox.address and header["cluster"] == "acme"


def test_a_run_filed_incomplete_says_so_where_it_says_what_it_filed(
    demo_sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolkit.secrets import SecretsClient

    folder = tmp_path / "evidence"
    run = check({"evidence_dir": str(folder), "allow_incomplete": True})
    run.seen(a=_seen(1))
    capsys.readouterr()
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        filed = run.file(client, {"leases": pd.DataFrame({"n": [1]})})
    assert capsys.readouterr().out == (
        f"Filed {len(filed)} file(s) into {folder} (marked incomplete): coverage, leases\n"
    )


# -- what papermill injected ---------------------------------------------------------------


@pytest.mark.parametrize(
    "lines", [["count = 4", "old = 2", "ratio = 0.25"], ["count = 4", "ratio = 0.25", "old = 2"]]
)
def test_every_line_of_the_injected_cell_is_checked_against_the_declared_ones(
    lines: list[str],
) -> None:
    injected = "# Parameters\n" + "\n".join(lines) + "\n"
    namespace = dict(declared_parameters(CELL), count=4, ratio=0.25, old=2)
    with pytest.raises(InputError) as caught:
        check_parameters(namespace, "rb", history=[CELL, injected])
    assert str(caught.value) == (
        "unknown parameter 'old': rb takes allow_incomplete, apply, "
        "count, evidence_dir, names, ratio, role, target, token_env"
    )


def test_an_injected_cell_of_its_heading_alone_gives_no_parameter() -> None:
    run = check_parameters(dict(declared_parameters(CELL)), "rb", history=[CELL, "# Parameters"])
    assert run.parameters == declared_parameters(CELL)


def test_a_declared_parameter_the_notebook_lacks_takes_its_default() -> None:
    run = check_parameters({"target": "live"}, "rb", history=[CELL])
    assert run.parameters == {**declared_parameters(CELL), "target": "live"}


def test_a_runbook_that_declares_no_allow_incomplete_does_not_allow_an_incomplete_run() -> None:
    run = check_parameters({"target": "sandbox"}, "rb", history=['target = "sandbox"\n'])
    assert run.allow_incomplete is False
    with pytest.raises(PartialCoverage):
        run.seen(a=_seen(1))


def test_outside_a_kernel_without_a_history_the_check_asks_for_the_parameters_cell() -> None:
    with pytest.raises(InputError, match=r"^run the parameters cell first: "):
        check_parameters({}, "rb_nowhere")


# -- refusals, each in one line naming what to do --------------------------------------------


def test_a_rehearsal_on_live_is_refused_naming_the_runbook_that_reads_live() -> None:
    with pytest.raises(InputError) as caught:
        check({"target": "live"}, rehearsal=True)
    assert str(caught.value) == (
        "rb runs against the sandbox only (target='live'); the audit runbook reads a live server"
    )


def test_a_target_other_than_sandbox_or_live_is_refused_saying_nothing_was_sent() -> None:
    with pytest.raises(InputError) as caught:
        check({"target": "prod"})
    assert str(caught.value) == (
        "target must be 'sandbox' or 'live', not 'prod': nothing was sent anywhere"
    )


def test_a_secret_where_a_variable_name_belongs_is_refused_saying_to_put_it_in_one() -> None:
    with pytest.raises(InputError) as caught:
        check({"token_env": "s.secret-value"})
    assert str(caught.value) == (
        "token_env must name an environment variable (letters, digits, '_'); the value given "
        "is not one and is not shown: put the secret in a variable and name it"
    )


def test_a_full_evidence_folder_is_refused_by_its_full_name_asking_for_a_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old.csv").write_text("x\n")
    with pytest.raises(InputError) as caught:
        check({"evidence_dir": "~/full"})
    assert str(caught.value) == (
        f"evidence_dir {tmp_path / 'full'} exists already and is not empty: give each run its "
        "own folder (nothing was sent)"
    )


def test_a_live_run_of_a_runbook_without_a_token_variable_names_no_token_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOOLKIT_FLEET_TOKEN_SOURCE", raising=False)
    run = check_parameters({"target": "live"}, "rb", history=['target = "sandbox"\n'])
    assert run.provenance()["token_source"] is None


def test_a_run_names_every_frame_that_came_without_a_record(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = check({"allow_incomplete": True})
    run.seen(a=_seen(0), pools=pd.DataFrame(), teams=pd.DataFrame())
    capsys.readouterr()
    assert run.coverage_line() == (
        "Coverage: 1 view(s) complete; no record from pools, teams (unproven)"
    )


def test_papermills_cell_is_known_by_its_heading_after_blank_lines_and_never_declares() -> None:
    injected = "\n  # Parameters\ntarget = 'live'\nold = 1\n"
    namespace = dict(declared_parameters(CELL), target="live", old=1)
    with pytest.raises(InputError, match=r"^unknown parameter 'old': rb takes "):
        check_parameters(namespace, "rb", history=[CELL, injected])


def test_a_cell_after_the_parameters_cell_is_not_read_as_papermills() -> None:
    history = [CELL, "import os\nlate = 1\n"]
    run = check_parameters(dict(declared_parameters(CELL), late=1), "rb", history=history)
    assert "late" not in run.parameters
