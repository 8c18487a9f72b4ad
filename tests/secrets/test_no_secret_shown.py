"""No share, token or password appears in the repr or str of what the client returns or raises."""

from __future__ import annotations

import logging

import pandas as pd
import pytest

from toolkit import APIError, InputError
from toolkit.sandbox import Sandbox
from toolkit.secrets import RekeyCeremony, SecretsClient


def shown(value: object) -> str:
    text = repr(value) + str(value)
    if isinstance(value, pd.DataFrame):
        text += value.to_string() + value.to_html()
    html = getattr(value, "_repr_html_", None)
    if callable(html):
        text += str(html())
    return text


def test_no_share_or_token_is_shown_by_anything_the_ceremony_returns_or_raises(
    sandbox: Sandbox, client: SecretsClient, old_shares: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secrets = [*old_shares, sandbox.token]
    outputs: list[object] = [client, client.rekey, client.seal]
    ceremony = RekeyCeremony(client)
    outputs += [ceremony.start(3, 2, verify=True), ceremony]
    for share in old_shares[:3]:
        outputs.append(ceremony.submit_share(share))
    new = ceremony.new_shares
    secrets += [s.reveal() for s in new] + [s.reveal() for s in ceremony.new_shares_base64]
    outputs += [new, ceremony.new_shares_base64, ceremony.status(), ceremony]
    for bad in (old_shares[0], old_shares[0][:-2]):
        try:
            ceremony.verify_share(bad)
            ceremony.verify_share(old_shares[1])
        except (APIError, InputError) as exc:
            outputs.append(exc)
    for new_share in new[:2]:
        outputs.append(ceremony.verify_share(new_share))
    outputs.append(ceremony.prove_unseal(new[:2]))
    token = client.tokens.create(policies=["default"], ttl=600)
    secrets.append(token["client_token"].reveal())
    outputs += [token, client.tokens.lookup_self()]
    password = client.password_policies.generate("strong-32")
    assert len(password) == 32
    outputs.append(password)
    secrets.append(password.reveal())
    outputs.append(client.password_policies.test_policy("strong-32", samples=3))
    text = "".join(shown(o) for o in outputs) + caplog.text
    for secret in secrets:
        assert secret not in text
