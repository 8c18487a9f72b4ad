"""The access model is bounded on policies OpenBao accepts (issue 34 item 6): a policy it
cannot read is a gap naming it while the rest of the model stands, and a pattern with
twelve templates is matched in linear time."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.servers.openbao import OpenBao
from toolkit.secrets import SecretsClient

pytestmark = pytest.mark.slow


def test_pathological_policies_are_a_gap_or_answered_quickly_and_the_rest_stands(
    bao: OpenBao, bao_client: SecretsClient
) -> None:
    tag = uuid.uuid4().hex[:6]
    deep = (
        '{"path": {"deep/*": {"capabilities": ["read"], "allowed_parameters": {"k": '
        + "[" * 1100
        + "]" * 1100
        + "}}}}"
    )
    templates = "-".join(["{{identity.entity.name}}"] * 12)
    many = f'path "slow/{templates}-end" {{ capabilities = ["read"] }}'
    plain = 'path "fine/*" { capabilities = ["read"] }'
    names = (f"deep-{tag}", f"many-{tag}", f"fine-{tag}")
    with bao.http() as http:
        try:
            for name, text in zip(names, (deep, many, plain), strict=True):
                reply = http.put(f"sys/policies/acl/{name}", json={"policy": text})
                assert reply.status_code == 204, f"OpenBao refused {name}: {reply.text}"
            http.post(f"sys/auth/up-{tag}", json={"type": "userpass"}).raise_for_status()
            http.post(
                f"auth/up-{tag}/users/u",
                json={"password": "pw", "token_policies": [f"many-{tag}", f"fine-{tag}"]},
            ).raise_for_status()
            _ask(bao_client, tag)
        finally:
            # The server is the session's: a policy no reader can parse must not outlive
            # this test, or every later view of the policies is (rightly) incomplete.
            for name in names:
                http.delete(f"sys/policies/acl/{name}")
            http.delete(f"sys/auth/up-{tag}")


def _ask(bao_client: SecretsClient, tag: str) -> None:
    bao_client.access.load()
    started = time.perf_counter()
    slow = bao_client.access.who_can("read", "slow/" + "a-" * 200 + "zz")
    assert time.perf_counter() - started < 5
    assert f"auth/up-{tag}/users/u" not in slow.index
    fine = bao_client.access.who_can("read", "fine/x")
    assert f"auth/up-{tag}/users/u" in fine.index
    gaps = {g["path"]: g["reason"] for g in fine.attrs["coverage"]["gaps"]}
    assert f"sys/policies/acl/deep-{tag}" in gaps, gaps
    assert "nested too deep" in gaps[f"sys/policies/acl/deep-{tag}"]
