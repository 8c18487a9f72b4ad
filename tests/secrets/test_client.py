"""The secrets client: configuration, headers, repr."""

from __future__ import annotations

import pytest

from tests._sockets import Threaded
from toolkit import ConfigurationError, PermissionDenied
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient


def test_the_client_reads_bao_variables_when_no_argument_is_given(
    demo_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("VAULT_ADDR", "VAULT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BAO_ADDR", demo_sandbox.address)
    monkeypatch.setenv("BAO_TOKEN", demo_sandbox.token)
    with SecretsClient() as client:
        assert client.address == demo_sandbox.address
        assert "default" in client.policies.list_policies("acl")


def test_a_client_without_address_says_which_variable_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("VAULT_ADDR", "BAO_ADDR"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError, match="VAULT_ADDR"):
        SecretsClient(token="x")


def test_the_token_goes_in_both_the_spec_header_and_the_openbao_header() -> None:
    def answer(head: bytes, n: int) -> tuple[bytes, bool]:
        body = b'{"sealed": false}'
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body), False

    server = Threaded(answer)
    try:
        with SecretsClient(server.address, "s.the-token", namespace="team-a") as client:
            client.seal.status()
            assert "s.the-token" not in repr(client.http.headers)
    finally:
        server.stop()
    head = server.heads[0].decode().lower()
    assert "x-service-token: s.the-token" in head
    assert "x-vault-token: s.the-token" in head
    assert "x-vault-namespace: team-a" in head


def test_a_wrong_token_is_permission_denied(demo_sandbox: Sandbox) -> None:
    with (
        SecretsClient(demo_sandbox.address, "not-a-token") as client,
        pytest.raises(PermissionDenied) as denied,
    ):
        client.policies.list_policies("acl")
    assert denied.value.status == 403
    assert "not-a-token" not in str(denied.value)


def test_the_repr_shows_the_address_and_never_the_token(demo_sandbox: Sandbox) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        assert repr(client) == f"<SecretsClient {demo_sandbox.address}>"
        for area in (client.leases, client.rekey, client.seal, client.policies):
            assert demo_sandbox.token not in repr(area)
