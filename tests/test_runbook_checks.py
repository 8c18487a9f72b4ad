"""toolkit.runbook: the parameters a runbook is given are checked before its first request."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from toolkit import Coverage, InputError, PartialCoverage
from toolkit.runbook import check_parameters, declared_parameters, human_duration

PARAMETERS = """target = "sandbox"  # or "live"
token_env = "VAULT_TOKEN"
soon_seconds = 3600
ratio = 0.5
apply = False
role = ""
evidence_dir = None
allow_incomplete = False
"""


def _check(injected: dict[str, Any] | None = None, **kw: Any) -> Any:
    history = ["import toolkit", PARAMETERS]
    namespace: dict[str, Any] = dict(declared_parameters(PARAMETERS))
    if injected is not None:
        history.append("# Parameters\n" + "\n".join(f"{k} = {v!r}" for k, v in injected.items()))
        namespace.update(injected)
    return check_parameters(namespace, "05_lease_audit", history=history, **kw)


def test_the_declared_set_is_read_from_the_parameters_cell() -> None:
    run = _check()
    assert run.parameters["soon_seconds"] == 3600 and run.parameters["role"] == ""
    assert set(run.parameters) == set(declared_parameters(PARAMETERS))


def test_a_misspelt_parameter_is_refused_naming_the_one_meant() -> None:
    with pytest.raises(InputError) as caught:
        _check({"soon_secnds": 60})
    assert "unknown parameter 'soon_secnds' (did you mean 'soon_seconds'?)" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("target", ["sandbx", "Live", "", "production"])
def test_a_target_other_than_sandbox_or_live_is_refused(target: str) -> None:
    with pytest.raises(InputError, match="target must be 'sandbox' or 'live'"):
        _check({"target": target, "apply": True})


def test_a_rehearsal_refuses_live() -> None:
    with pytest.raises(InputError, match="runs against the sandbox only"):
        _check({"target": "live"}, rehearsal=True)


@pytest.mark.parametrize(
    ("key", "value"),
    [("apply", "yes"), ("apply", 1), ("soon_seconds", "60"), ("soon_seconds", True), ("role", 3)],
)
def test_a_value_of_the_wrong_type_is_refused(key: str, value: Any) -> None:
    with pytest.raises(InputError, match=f"the parameter {key} must be"):
        _check({key: value})


def test_an_int_is_a_number_where_the_default_is_a_float() -> None:
    assert _check({"ratio": 1}).parameters["ratio"] == 1


def test_a_token_given_where_a_variable_name_belongs_is_refused_and_not_echoed() -> None:
    with pytest.raises(InputError) as caught:
        _check({"token_env": "hvs.CAESIsecretvalue"})
    assert "hvs." not in str(caught.value) and "token_env must name" in str(caught.value)


def test_an_evidence_folder_that_holds_something_is_refused_before_the_run(
    tmp_path: Path,
) -> None:
    (tmp_path / "old.csv").write_text("x\n")
    with pytest.raises(InputError, match="exists already and is not empty"):
        _check({"evidence_dir": str(tmp_path)})
    assert _check({"evidence_dir": str(tmp_path / "new")}).parameters["evidence_dir"]


def test_without_a_parameters_cell_before_it_the_check_says_so() -> None:
    with pytest.raises(InputError, match="run the parameters cell first"):
        check_parameters({}, "x", history=["import toolkit"])


def test_a_demo_name_is_checked_against_the_server_or_chosen_from_it() -> None:
    run = _check({"role": "web-server"})
    with pytest.raises(InputError, match="no role of that name on this server .it has: edge, www"):
        run.choose("role", ["www", "edge"])
    run = _check()
    assert run.choose("role", ["www", "edge"]) == "edge"
    assert run.parameters["role"] == "edge"  # the evidence records the choice
    builtin = ["default", "root"]
    assert (
        _check({"target": "live"}).choose("role", [*builtin, "ops"], passed_over=builtin) == "ops"
    )
    assert _check({"target": "live"}).choose("role", builtin, passed_over=builtin) == "default"
    with pytest.raises(InputError, match="this token sees 2 organization"):
        _check({"target": "live"}).choose_one("role", ["acme", "beta"], what="organization")
    # On the sandbox an empty value takes the demo's name; live never does.
    assert _check().choose_one("role", ["acme", "beta"], demo="beta") == "beta"
    assert (
        _check({"target": "live"}).choose("role", ["x", "web-server"], demo="web") == "web-server"
    )


def _frame(gaps: int) -> pd.DataFrame:
    cov = Coverage("leases.leases_by_mount", asked=["database/"])
    cov.note_read(3)
    for _ in range(gaps):
        cov.note_gap("sys/leases/lookup/database/", 403, "permission denied")
    return cov.attach(pd.DataFrame({"a": [1, 2, 3]}))


def test_an_incomplete_view_fails_the_run_in_one_line() -> None:
    run = _check()
    run.seen(leases=_frame(0))
    assert run.verdict == "complete"
    with pytest.raises(PartialCoverage) as caught:
        run.seen(leases=_frame(1))
    assert "sys/leases/lookup/database/ (403 permission denied)" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_when_allowed_an_incomplete_run_goes_on_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = _check({"allow_incomplete": True})
    frame = run.seen(leases=_frame(2))
    assert run.verdict == "incomplete" and len(frame) == 2
    assert capsys.readouterr().out.startswith("INCOMPLETE (allowed): leases.leases_by_mount")
    assert run.coverage_record()["verdict"] == "incomplete"


def test_a_frame_without_a_record_leaves_the_run_unproven_and_stops_it_unless_allowed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(PartialCoverage, match=r"pools: no coverage record \(unproven\)"):
        _check().seen(pools=pd.DataFrame({"a": [1]}))
    run = _check({"allow_incomplete": True})
    run.seen(pools=pd.DataFrame({"a": [1]}))
    assert run.verdict == "unproven" and run.coverage_record()["without_record"] == ["pools"]
    assert "INCOMPLETE (allowed): pools: no coverage record" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (pd.Timedelta("0 days 06:11:43.508485"), "6h 11m"),
        (timedelta(days=3, hours=4, minutes=5), "3d 4h"),
        (timedelta(days=1, minutes=5), "1d 5m"),
        (timedelta(minutes=25), "25m"),
        (45.2, "45s"),
        (0, "0s"),
        (timedelta(minutes=-2), "-2m"),
        (None, ""),
        (pd.NaT, ""),
    ],
)
def test_durations_read_as_an_operator_says_them(value: Any, text: str) -> None:
    assert human_duration(value) == text


def test_without_the_cells_in_history_the_declared_set_comes_from_the_runbook_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nbval runs cells without keeping them in the history: the file's tagged cell counts.
    import hashlib
    import json

    cell = {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": PARAMETERS}
    path = tmp_path / "05_lease_audit.ipynb"
    path.write_text(json.dumps({"cells": [cell], "metadata": {}}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.delenv("TOOLKIT_RUNBOOK_SHA256", raising=False)
    namespace = dict(declared_parameters(PARAMETERS), apply="yes")
    with pytest.raises(InputError, match="the parameter apply must be True or False"):
        check_parameters(namespace, "05_lease_audit", history=[])
    run = check_parameters(dict(declared_parameters(PARAMETERS)), "05_lease_audit", history=[])
    assert run.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def _runbook_file(folder: Path, *cells: dict[str, Any], text: str | None = None) -> Path:
    import json

    path = folder / "05_lease_audit.ipynb"
    path.write_text(
        text
        if text is not None
        else json.dumps({"cells": list(cells), "metadata": {}}, ensure_ascii=False),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def in_runbook_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.delenv("TOOLKIT_RUNBOOK_SHA256", raising=False)
    return tmp_path


def _tagged(source: Any) -> dict[str, Any]:
    return {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": source}


def test_the_runbook_files_parameters_cell_saved_as_a_list_of_lines_is_read_whole(
    in_runbook_folder: Path,
) -> None:
    lines = PARAMETERS.splitlines(keepends=True)  # how Jupyter saves a cell's source
    _runbook_file(in_runbook_folder, {"cell_type": "markdown", "source": ["# x"]}, _tagged(lines))
    run = check_parameters(dict(declared_parameters(PARAMETERS)), "05_lease_audit", history=[])
    assert run.defaults == declared_parameters(PARAMETERS)


def test_the_runbook_file_is_read_as_utf8_whatever_the_locale(in_runbook_folder: Path) -> None:
    import locale

    _runbook_file(in_runbook_folder, _tagged('target = "sandbox"\nnote = "café"\n'))
    namespace = {"target": "sandbox", "note": "thé"}
    kept = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")  # an ASCII locale: only UTF-8 reads the file
    try:
        run = check_parameters(namespace, "05_lease_audit", history=[])
    finally:
        locale.setlocale(locale.LC_CTYPE, kept)
    assert run.defaults == {"target": "sandbox", "note": "café"}


@pytest.mark.parametrize(
    "cell",
    [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}},
        _tagged(["count = 3\n"]),
        _tagged(""),
    ],
)
def test_a_runbook_files_parameters_cell_without_target_is_refused_naming_the_file(
    in_runbook_folder: Path, cell: dict[str, Any]
) -> None:
    path = _runbook_file(in_runbook_folder, cell)
    with pytest.raises(InputError) as caught:
        check_parameters({"count": 3}, "05_lease_audit", history=[])
    assert str(caught.value) == (
        f"the parameters cell of {path} does not declare `target`: add "
        '`target = "sandbox"` (or "live") to it'
    )


def test_a_runbook_files_parameters_cell_that_is_not_text_is_refused_in_one_line(
    in_runbook_folder: Path,
) -> None:
    _runbook_file(in_runbook_folder, _tagged(None))
    with pytest.raises(InputError, match=r"^the parameters cell may hold only `name = value`"):
        check_parameters({}, "05_lease_audit", history=[])


@pytest.mark.parametrize(
    "text", ["{}", '{"cells": []}', "not json", "[]", '{"cells": [{"source": "x"}]}']
)
def test_a_runbook_file_without_a_tagged_parameters_cell_asks_for_the_cell_to_be_run(
    in_runbook_folder: Path, text: str
) -> None:
    _runbook_file(in_runbook_folder, text=text)
    with pytest.raises(InputError) as caught:
        check_parameters({}, "05_lease_audit", history=[])
    assert str(caught.value) == (
        "run the parameters cell first: no cell before this one declares `target`"
    )


def test_what_papermill_injected_is_checked_against_the_runbook_files_parameters_cell(
    in_runbook_folder: Path,
) -> None:
    _runbook_file(in_runbook_folder, _tagged(PARAMETERS))
    namespace = dict(declared_parameters(PARAMETERS), old=1)
    with pytest.raises(InputError, match=r"^unknown parameter 'old': 05_lease_audit takes "):
        check_parameters(namespace, "05_lease_audit", history=["\n# Parameters\nold = 1\n"])
