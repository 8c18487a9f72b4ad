"""The coverage record's rules, each on its own: what is a gap, what is an error,
and how records travel with frames and views built from them (toolkit/_coverage.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from toolkit import PartialCoverage
from toolkit._coverage import (
    Coverage,
    Gap,
    carry,
    coverage,
    coverage_of,
    is_gap,
    require_complete,
)
from toolkit._errors import (
    BadRequest,
    MountNotFound,
    NamespaceNotFound,
    NotFound,
    PermissionDenied,
    ServerError,
    TokenRefused,
)


def _refused(error: Exception) -> object:
    raise error


def test_a_403_without_error_words_is_still_a_gap_named_by_its_kind() -> None:
    cov = Coverage("v")
    assert cov.read_or_gap("sys/x", lambda: _refused(PermissionDenied(403, []))) is None
    assert cov.gaps == [Gap("sys/x", 403, "PermissionDenied")]
    assert not cov.complete


def test_a_403_with_words_is_a_gap_in_the_servers_words() -> None:
    cov = Coverage("v")
    error = PermissionDenied(403, ["permission denied", "no policy"])
    assert cov.read_or_gap("sys/x", lambda: _refused(error)) is None
    assert cov.gaps == [Gap("sys/x", 403, "permission denied; no policy")]


def test_a_404_with_a_reason_is_a_gap_and_one_without_is_a_record_gone_since() -> None:
    cov = Coverage("v")
    assert cov.read_or_gap("kv/a", lambda: _refused(NotFound(404, ["no such engine"]))) is None
    assert cov.gaps == [Gap("kv/a", 404, "no such engine")]
    vanished = Coverage("v")
    assert vanished.read_or_gap("kv/b", lambda: _refused(NotFound(404, []))) is None
    assert vanished.gaps == [] and vanished.complete


def test_a_read_that_succeeds_returns_its_value_and_notes_no_gap() -> None:
    cov = Coverage("v")
    assert cov.read_or_gap("kv/a", lambda: {"a": 1}) == {"a": 1}
    assert cov.complete


@pytest.mark.parametrize(
    "error",
    [
        TokenRefused(403, ["permission denied"]),
        MountNotFound(404, ["no handler for route"]),
        NamespaceNotFound(404, ["namespace not found"]),
        BadRequest(400, ["bad"]),
        ServerError(500, ["boom"]),
    ],
)
def test_a_refused_token_a_missing_mount_or_another_error_is_raised_not_a_gap(
    error: Exception,
) -> None:
    assert not is_gap(error)
    cov = Coverage("v")
    with pytest.raises(type(error)):
        cov.read_or_gap("kv/a", lambda: _refused(error))
    assert cov.gaps == []


def test_a_403_and_a_plain_404_are_gaps() -> None:
    assert is_gap(PermissionDenied(403, []))
    assert is_gap(NotFound(404, ["x"]))
    assert not is_gap(ValueError("x"))


def test_a_gap_reads_as_its_path_status_and_reason() -> None:
    assert str(Gap("sys/a", 403, "denied")) == "sys/a (403 denied)"
    assert str(Gap("sys/a", None, "deadline")) == "sys/a (deadline)"
    cov = Coverage("v")
    cov.note_error("sys/b", NotFound(404, ["gone", "really"]))
    assert cov.gaps == [Gap("sys/b", 404, "gone; really")]


def test_the_summary_names_three_gaps_and_counts_the_rest() -> None:
    cov = Coverage("v", read=7)
    assert cov.summary() == "v: complete (7 read)"
    assert repr(cov) == "<Coverage v: complete (7 read)>"
    for i in range(3):
        cov.note_gap(f"p{i}", 403, "no")
    assert cov.summary() == (
        "v: incomplete, 3 place(s) not read: p0 (403 no), p1 (403 no), p2 (403 no) (7 read)"
    )
    cov.note_gap("p3", None, "late")
    assert cov.summary().endswith("p2 (403 no) and 1 more (7 read)")


def test_reads_add_up_and_start_at_zero() -> None:
    cov = Coverage("v")
    assert cov.read == 0
    cov.note_read()
    cov.note_read(4)
    assert cov.read == 5


def test_a_record_goes_to_a_dict_and_back_whole() -> None:
    cov = Coverage("v", asked=["a/", "b/"], read=3)
    cov.note_gap("b/x", 403, "no")
    cov.note_gap("a/x", None, "limit")
    data = cov.as_dict()
    assert data == {
        "view": "v",
        "asked": ["a/", "b/"],
        "read": 3,
        "complete": False,
        "gaps": [
            {"path": "a/x", "status": None, "reason": "limit"},
            {"path": "b/x", "status": 403, "reason": "no"},
        ],
    }
    back = Coverage.from_dict(data)
    assert back.view == "v" and back.asked == ["a/", "b/"] and back.read == 3
    assert back.gaps == [Gap("a/x", None, "limit"), Gap("b/x", 403, "no")]
    assert Coverage.from_dict({"gaps": [{"path": "p", "status": "404"}]}) == Coverage(
        "", [], 0, [Gap("p", 404, "")]
    )
    assert Coverage.from_dict({"view": "v"}) == Coverage("v")


def test_merged_records_keep_every_ask_read_and_gap() -> None:
    one = Coverage("a", asked=["x/", "y/"], read=2, gaps=[Gap("x/1", 403, "no")])
    two = Coverage("b", asked=["y/", "z/"], read=5, gaps=[Gap("z/1", None, "late")])
    merged = Coverage.merged("both", [one, two])
    assert merged == Coverage(
        "both", ["x/", "y/", "z/"], 7, [Gap("x/1", 403, "no"), Gap("z/1", None, "late")]
    )


def test_coverage_of_reads_records_from_every_form_they_travel_in() -> None:
    cov = Coverage("v", read=1)
    assert coverage_of(cov) == [cov]
    assert coverage_of(cov.as_dict()) == [Coverage("v", [], 1, [])]
    listed = pd.DataFrame({"a": [1]})
    listed.attrs["coverage"] = [cov.as_dict(), Coverage("w")]
    assert coverage_of(listed) == [cov, Coverage("w")]
    assert coverage_of([cov, [Coverage("w")], 3, "text"]) == [cov, Coverage("w")]
    assert coverage_of(pd.DataFrame()) == []
    assert coverage_of({"other": 1}) == []
    assert coverage_of("v") == [] and coverage_of(b"v") == [] and coverage_of(None) == []


def test_a_view_built_from_a_frame_without_a_record_is_a_gap() -> None:
    whole = Coverage("leases", asked=["kv/"], read=4).attach(pd.DataFrame({"a": [1]}))
    derived = carry(pd.DataFrame({"b": [2]}), whole, pd.DataFrame({"c": [3]}), view="joined")
    (record,) = coverage_of(derived)
    assert record.view == "joined" and record.asked == ["kv/"] and record.read == 4
    assert record.gaps == [Gap("joined", None, "built from a frame with no coverage record")]
    kept = carry(pd.DataFrame(), whole, view="copy")
    assert coverage_of(kept)[0].complete


def test_the_coverage_frame_has_a_row_per_gap_and_says_whether_all_was_read() -> None:
    gappy = Coverage("v", read=2, gaps=[Gap("a", 403, "no"), Gap("b", None, "late")])
    table = coverage(gappy, Coverage("w", read=1))
    assert table.to_dict("list") == {
        "view": ["v", "v"],
        "path": ["a", "b"],
        "status": [403, None],
        "reason": ["no", "late"],
    }
    assert str(table["status"].dtype) == "Int64"
    assert table.attrs["complete"] is False
    assert table.attrs["views"] == [gappy.summary(), "w: complete (1 read)"]
    whole = coverage(Coverage("w"))
    assert whole.empty and whole.attrs["complete"] is True
    unproven = coverage(pd.DataFrame())
    assert unproven.to_dict("list") == {
        "view": ["?"],
        "path": [""],
        "status": [None],
        "reason": ["no coverage record"],
    }
    assert unproven.attrs["views"] == ["?: no coverage record"]


def test_requiring_full_coverage_names_only_the_incomplete_views() -> None:
    with pytest.raises(PartialCoverage) as caught:
        require_complete(Coverage("w", read=1), Coverage("v", gaps=[Gap("a", 403, "no")]))
    message = str(caught.value)
    assert message.startswith("v: incomplete, 1 place(s) not read: a (403 no) (0 read) — ")
    assert "w:" not in message
    with pytest.raises(PartialCoverage, match=r"^\?: no coverage record — "):
        require_complete(pd.DataFrame())
    with pytest.raises(PartialCoverage, match=r"^\?: no coverage record; v: incomplete, "):
        require_complete(pd.DataFrame(), Coverage("v", gaps=[Gap("a", 403, "no")]))
    assert require_complete(Coverage("w")).attrs["complete"]


def test_gaps_on_one_path_are_recorded_by_status_then_reason() -> None:
    cov = Coverage("v")
    cov.note_gap("p", 404, "a")
    cov.note_gap("p", 403, "z")
    cov.note_gap("p", None, "m")
    assert [(g["status"], g["reason"]) for g in cov.as_dict()["gaps"]] == [
        (None, "m"),
        (403, "z"),
        (404, "a"),
    ]
