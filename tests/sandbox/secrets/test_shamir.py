"""Shamir secret sharing over GF(2^8), the way the real server splits its root key."""

from __future__ import annotations

import itertools
import os

import pytest

from toolkit.sandbox.secrets import shamir


def test_the_field_is_the_aes_field() -> None:
    # FIPS-197's worked product, and a known inverse pair of the AES field.
    assert shamir._multiply(0x57, 0x83) == 0xC1
    assert shamir._multiply(0x53, 0xCA) == 0x01
    assert shamir._inverse(0x53) == 0xCA


def test_every_threshold_subset_recombines_to_the_secret() -> None:
    secret = os.urandom(32)
    parts = shamir.split(secret, 5, 3)
    for size in (3, 4, 5):
        for subset in itertools.combinations(parts, size):
            assert shamir.combine(list(subset)) == secret


def test_fewer_parts_than_the_threshold_do_not_give_the_secret() -> None:
    secret = os.urandom(32)
    parts = shamir.split(secret, 5, 3)
    for subset in itertools.combinations(parts, 2):
        assert shamir.combine(list(subset)) != secret


def test_a_share_is_the_y_bytes_then_a_unique_nonzero_x_byte() -> None:
    parts = shamir.split(os.urandom(32), 255, 2)
    assert all(len(part) == 33 for part in parts)
    xs = [part[-1] for part in parts]
    assert sorted(xs) == list(range(1, 256))


def test_two_splits_of_one_secret_differ() -> None:
    secret = os.urandom(16)
    assert shamir.split(secret, 3, 2) != shamir.split(secret, 3, 2)


def test_duplicate_parts_are_refused() -> None:
    parts = shamir.split(b"secret", 3, 2)
    with pytest.raises(shamir.ShamirError, match="duplicate part"):
        shamir.combine([parts[0], parts[0]])


@pytest.mark.parametrize(
    ("secret", "shares", "threshold", "message"),
    [
        (b"", 3, 2, "empty secret"),
        (b"s", 2, 3, "less than threshold"),
        (b"s", 256, 2, "cannot exceed 255"),
        (b"s", 3, 1, "at least 2"),
    ],
)
def test_impossible_splits_are_refused(
    secret: bytes, shares: int, threshold: int, message: str
) -> None:
    with pytest.raises(shamir.ShamirError, match=message):
        shamir.split(secret, shares, threshold)


def test_parts_that_cannot_be_combined_are_refused() -> None:
    parts = shamir.split(b"secret", 3, 2)
    with pytest.raises(shamir.ShamirError, match="less than two parts"):
        shamir.combine(parts[:1])
    with pytest.raises(shamir.ShamirError, match="same length"):
        shamir.combine([parts[0], parts[1][1:]])
    with pytest.raises(shamir.ShamirError, match="at least two bytes"):
        shamir.combine([b"a", b"b"])
