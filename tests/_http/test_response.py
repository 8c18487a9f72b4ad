"""An answer's headers: a credential header never shows, whichever API named it."""

from __future__ import annotations

from toolkit._http.response import Headers, is_credential_header
from toolkit._spec.headers import TOKEN_HEADERS


def test_credential_headers_in_an_answer_are_hidden_by_their_name() -> None:
    raw = {
        "Content-Type": "application/json",
        "Set-Cookie": "session=abc123",
        "Authorization": "Bearer abc123",
        **dict.fromkeys(TOKEN_HEADERS, "s.abc123"),
        "X-Runner-Token": "abc123",
    }
    shown = repr(Headers(raw))
    assert "abc123" not in shown
    assert "application/json" in shown
    assert all(is_credential_header(h) for h in [*TOKEN_HEADERS, "set-cookie", "AUTHORIZATION"])
    assert not is_credential_header("X-Vault-Namespace")
