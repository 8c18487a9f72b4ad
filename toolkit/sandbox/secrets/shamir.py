"""Shamir secret sharing over GF(2^8), as the real server splits its root key.

The field is the AES field (reduction polynomial x^8 + x^4 + x^3 + x + 1), so
shares made here combine with the real server's and the other way round. A
share is the polynomial's value for every secret byte followed by one byte,
the share's x-coordinate (unique, never zero); the server shows shares hex
encoded (``keys``) and base64 encoded (``keys_base64``).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

__all__ = ["MAX_SHARES", "ShamirError", "combine", "split"]

MAX_SHARES = 255
_POLYNOMIAL = 0x11B


class ShamirError(ValueError):
    """A split or combine that cannot be done; the message says why (never the shares)."""


def _multiply(a: int, b: int) -> int:
    """Product in GF(2^8): shift-and-add, reducing by the AES polynomial."""
    product = 0
    for _ in range(8):
        if b & 1:
            product ^= a
        b >>= 1
        a <<= 1
        if a & 0x100:
            a ^= _POLYNOMIAL
    return product


def _inverse(a: int) -> int:
    """Multiplicative inverse in GF(2^8): a^254, since a^255 = 1 for a != 0."""
    if a == 0:
        raise ShamirError("zero has no inverse")
    result, power, exponent = 1, a, 254
    while exponent:
        if exponent & 1:
            result = _multiply(result, power)
        power = _multiply(power, power)
        exponent >>= 1
    return result


def _evaluate(coefficients: Sequence[int], x: int) -> int:
    """The polynomial with ``coefficients`` (constant first) at ``x``, by Horner's rule."""
    value = 0
    for coefficient in reversed(coefficients):
        value = _multiply(value, x) ^ coefficient
    return value


def split(secret: bytes, shares: int, threshold: int) -> list[bytes]:
    """Split ``secret`` into ``shares`` parts, any ``threshold`` of which rebuild it.

    Coefficients and x-coordinates come from the operating system's
    cryptographic random source.
    """
    if not secret:
        raise ShamirError("cannot split an empty secret")
    if shares < threshold:
        raise ShamirError("parts cannot be less than threshold")
    if shares > MAX_SHARES:
        raise ShamirError(f"parts cannot exceed {MAX_SHARES}")
    if threshold < 2:
        raise ShamirError("threshold must be at least 2")
    rng = secrets.SystemRandom()
    x_coordinates = rng.sample(range(1, MAX_SHARES + 1), shares)
    ys = [bytearray(len(secret)) for _ in range(shares)]
    for position, byte in enumerate(secret):
        coefficients = [byte, *(secrets.randbelow(256) for _ in range(threshold - 1))]
        for index, x in enumerate(x_coordinates):
            ys[index][position] = _evaluate(coefficients, x)
    return [bytes(y) + bytes([x]) for y, x in zip(ys, x_coordinates, strict=True)]


def combine(parts: Sequence[bytes]) -> bytes:
    """Rebuild the secret from ``parts`` by Lagrange interpolation at x = 0.

    Too few parts give a wrong secret, not an error: only the caller can tell
    (by comparing with what it expects).
    """
    if len(parts) < 2:
        raise ShamirError("less than two parts cannot be used to reconstruct the secret")
    length = len(parts[0])
    if length < 2:
        raise ShamirError("parts must be at least two bytes")
    if any(len(part) != length for part in parts):
        raise ShamirError("all parts must be the same length")
    xs = [part[-1] for part in parts]
    if len(set(xs)) != len(xs):
        raise ShamirError("duplicate part detected")
    if 0 in xs:
        raise ShamirError("a part has the x-coordinate zero")
    # The Lagrange basis at zero for each part; subtraction is XOR in GF(2^8).
    weights = []
    for i, xi in enumerate(xs):
        weight = 1
        for j, xj in enumerate(xs):
            if i != j:
                weight = _multiply(weight, _multiply(xj, _inverse(xi ^ xj)))
        weights.append(weight)
    secret = bytearray(length - 1)
    for position in range(length - 1):
        value = 0
        for part, weight in zip(parts, weights, strict=True):
            value ^= _multiply(part[position], weight)
        secret[position] = value
    return bytes(secret)
