"""The coverage record: what a view asked, read and could not read."""

from __future__ import annotations

import io

import pandas as pd
import pytest

import toolkit
from toolkit import Coverage, PartialCoverage


def test_a_view_with_no_gaps_is_complete_and_says_how_much_it_read():
    cov = Coverage("leases.leases_by_mount", asked=["database/"])
    cov.note_read(3)
    frame = toolkit.coverage(cov.attach(pd.DataFrame({"a": [1, 2, 3]})))
    assert frame.empty and frame.attrs["complete"]
    assert frame.attrs["views"] == ["leases.leases_by_mount: complete (3 read)"]


def test_a_gap_makes_the_view_incomplete_and_the_requirement_fails_in_one_line():
    cov = Coverage("policies.policies_frame", asked=["acl"])
    cov.note_gap("sys/policies/acl", 403, "permission denied")
    frame = cov.attach(pd.DataFrame())
    table = toolkit.coverage(frame)
    assert list(table.columns) == ["view", "path", "status", "reason"]
    assert table.loc[0, "status"] == 403 and str(table["status"].dtype) == "Int64"
    with pytest.raises(PartialCoverage) as caught:
        toolkit._coverage.require_complete(frame)
    message = str(caught.value)
    assert "\n" not in message
    assert "sys/policies/acl (403 permission denied)" in message
    assert "allow_incomplete=True" in message
    allowed = toolkit._coverage.require_complete(frame, allow_incomplete=True)
    assert not allowed.attrs["complete"]


def test_a_frame_without_a_record_is_not_evidence_of_full_coverage():
    table = toolkit.coverage(pd.DataFrame({"a": [1]}))
    assert not table.attrs["complete"]
    assert table.loc[0, "reason"] == "no coverage record"


def test_the_record_survives_parquet_and_copies():
    cov = Coverage("tokens.accessors_frame", asked=["auth/token/accessors"])
    cov.note_gap("auth/token/lookup-accessor", None, "deadline reached")
    frame = cov.attach(pd.DataFrame({"a": [1]}))
    buffer = io.BytesIO()
    frame.copy().to_parquet(buffer)
    back = pd.read_parquet(io.BytesIO(buffer.getvalue()))
    (again,) = toolkit._coverage.coverage_of(back)
    assert again == cov
    assert not again.complete


def test_a_long_list_of_gaps_stays_one_line():
    cov = Coverage("leases.leases_by_mount")
    for i in range(50):
        cov.note_gap(f"sys/leases/lookup/m{i}/", 403, "permission denied")
    summary = cov.summary()
    assert "and 47 more" in summary and "\n" not in summary


def test_a_record_lists_its_gaps_in_the_same_order_whatever_order_they_were_noted_in() -> None:
    """Concurrent reads note their gaps in any order: the record (and the evidence
    filed from it) reads the same from run to run."""
    noted = [("sys/b", 403, "permission denied"), ("sys/a", 404, "gone"), ("sys/a", 403, "x")]
    records = []
    for order in (noted, noted[::-1]):
        cov = Coverage("plugins.inventory")
        for path, status, reason in order:
            cov.note_gap(path, status, reason)
        records.append(cov.as_dict())
    assert records[0] == records[1]
    assert [g["path"] for g in records[0]["gaps"]] == ["sys/a", "sys/a", "sys/b"]
