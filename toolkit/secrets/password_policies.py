"""Password policies (spec section 4.1): read, write, generate, and test them.

Generated passwords come back as :class:`~toolkit.Sensitive`. The tester
:meth:`PasswordPolicies.test_policy` generates samples and reports only their
length and which character classes they hold, never the passwords.
"""

from __future__ import annotations

import base64
import string
from typing import Any

import pandas as pd

from .._coverage import OutcomeFrame
from .._errors import InputError
from .._frames import Schema, build_frame
from .._http import api_path
from .._masking import Sensitive, reveal
from .._records import Record
from ._base import SecretsArea

__all__ = ["PasswordPolicies", "POLICY_SAMPLES", "password_classes"]

POLICY_SAMPLES = Schema.of(
    "sample:int length:int lower:bool upper:bool digit:bool symbol:bool",
    index="sample",
)
CLASSES = ("lower", "upper", "digit", "symbol")


def password_classes(password: str | Sensitive) -> dict[str, Any]:
    """A password's length and which character classes it holds (nothing of the value)."""
    text = reveal(password)
    return {
        "length": len(text),
        "lower": any(c in string.ascii_lowercase for c in text),
        "upper": any(c in string.ascii_uppercase for c in text),
        "digit": any(c in string.digits for c in text),
        "symbol": any(not c.isalnum() for c in text),
    }


class PasswordPolicies(SecretsArea):
    """``sys/policies/password``: policies that say how passwords are generated."""

    def list_policies(self) -> list[str]:
        """Policy names. ``LIST /sys/policies/password`` (or ``GET ?list=true``)."""
        return self._list("/sys/policies/password")

    def read(self, name: str) -> Record:
        """The policy document. ``GET /sys/policies/password/:name``; a record with ``policy``."""
        data = self._read(api_path("/sys/policies/password/{name}", name=name))
        return Record({"name": name, "policy": data.get("policy", "")}, kind="password-policy")

    def write(self, name: str, policy: str, *, encode: bool = True) -> None:
        """Save or replace a policy. ``POST /sys/policies/password/:name``.

        The document is sent base64-encoded (``encode=True``), which the API
        accepts so that quoting inside the document needs no escaping. The server
        generates passwords from it before saving and refuses (400, with the
        reason) a policy it cannot satisfy.
        """
        if not name:
            raise InputError("a password policy needs a name")
        if not policy or not policy.strip():
            raise InputError(f"password policy {name!r}: the policy document is empty")
        text = base64.b64encode(policy.encode()).decode() if encode else policy
        self._send("POST", api_path("/sys/policies/password/{name}", name=name), {"policy": text})

    def delete(self, name: str) -> None:
        """Delete a policy (the server does not check engines using it).

        ``DELETE /sys/policies/password/:name``.
        """
        self._send("DELETE", api_path("/sys/policies/password/{name}", name=name))

    def generate(self, name: str) -> Sensitive:
        """One password from the policy. ``GET /sys/policies/password/:name/generate``."""
        data = self._read(api_path("/sys/policies/password/{name}/generate", name=name))
        return Sensitive(str(data.get("password", "")), "password")

    def test_policy(self, name: str, samples: int = 20) -> OutcomeFrame:
        """Generate ``samples`` passwords and show their shape, never their values.

        One row per sample (index ``sample``): ``length`` and booleans
        ``lower``, ``upper``, ``digit``, ``symbol``. ``frame.attrs["summary"]``
        holds min/max length and the share of samples holding each class.
        Samples are generated concurrently.
        """
        if samples < 1:
            raise InputError("samples must be at least 1")
        path = api_path("/sys/policies/password/{name}/generate", name=name)

        def one(index: int) -> dict[str, Any]:
            password = Sensitive(str(self._read(path).get("password", "")), "password")
            return {"sample": index, **password_classes(password)}

        frame = build_frame(list(self._http.map(one, range(1, samples + 1))), POLICY_SAMPLES)
        frame.attrs["summary"] = summarize_samples(frame)
        return frame


def summarize_samples(frame: pd.DataFrame) -> dict[str, Any]:
    """Min/max length and the share of samples holding each class, from a sample frame."""
    if frame.empty:
        return {"samples": 0, "min_length": None, "max_length": None, **dict.fromkeys(CLASSES)}
    return {
        "samples": len(frame),
        "min_length": int(frame["length"].min()),
        "max_length": int(frame["length"].max()),
        **{c: float(frame[c].astype(bool).mean()) for c in CLASSES},
    }
