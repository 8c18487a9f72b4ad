"""Reading key holders' PGP public keys for a rekey: fingerprints, formats, private keys refused."""

from __future__ import annotations

import base64
import warnings

import pysequoia
import pytest

from toolkit import InputError
from toolkit.secrets.pgp import read_public_key


@pytest.fixture(scope="module")
def cert() -> pysequoia.Cert:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pysequoia.Cert.generate("Key Holder <holder@example.org>")


@pytest.mark.parametrize("form", ["binary", "armored", "base64"])
def test_a_public_key_is_read_in_each_form_a_key_holder_may_hand_over(
    cert: pysequoia.Cert, form: str
) -> None:
    data = {
        "binary": bytes(cert),
        "armored": str(cert).encode(),
        "base64": base64.b64encode(bytes(cert)),
    }[form]
    key = read_public_key(data)
    assert key.fingerprint == cert.fingerprint.lower()
    assert key.user_ids == ("Key Holder <holder@example.org>",)
    assert base64.b64decode(key.key_base64) == bytes(cert)
    assert key.label == f"{key.fingerprint} (Key Holder <holder@example.org>)"
    assert key.key_base64 not in repr(key)


def test_a_private_key_file_is_refused_by_name(cert: pysequoia.Cert) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        secret = cert.secrets
        assert secret is not None
        private = bytes(secret)
    with pytest.raises(InputError, match="holder.key: the file holds a private key"):
        read_public_key(private, "holder.key")


@pytest.mark.parametrize("data", [b"", b"   ", b"not a key at all"])
def test_what_is_not_a_key_is_refused(data: bytes) -> None:
    with pytest.raises(InputError, match="upload.asc"):
        read_public_key(data, "upload.asc")
