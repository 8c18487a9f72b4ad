"""Secrets that never print (toolkit/_masking.py)."""

from __future__ import annotations

import pickle

import pytest

from toolkit import Record, Sensitive


def test_a_sensitive_value_never_prints_and_cannot_be_pickled():
    secret = Sensitive("s.abcdef", "token")
    assert "abcdef" not in repr(secret) + str(secret) + secret._repr_html_() + f"{secret}"
    assert secret.reveal() == "s.abcdef"
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    record = Record(token=secret, name="x")
    assert "abcdef" not in repr(record) + record._repr_html_()
