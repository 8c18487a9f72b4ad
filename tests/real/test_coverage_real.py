"""Issue 23 against a real OpenBao: a missing namespace or mount raises naming it,
an empty folder stays empty, and a refused token and a missing permission (a token
without sudo) are different errors, each naming what to do."""

from __future__ import annotations

import pytest

import toolkit
from tests.servers.openbao import OpenBao
from tests.test_coverage_walks import LIMITED
from toolkit import MountNotFound, NamespaceNotFound, NotFound, PermissionDenied, TokenRefused
from toolkit.secrets import SecretsClient

# The fast suite's limited policy, with the lists the audits need but no sudo.
NO_SUDO = (
    LIMITED
    + 'path "auth/token/accessors" { capabilities = ["list"] }\n'
    + 'path "sys/leases/lookup/*" { capabilities = ["list"] }\n'
)


def test_a_missing_namespace_raises_naming_it_on_openbao(bao: OpenBao) -> None:
    with SecretsClient(bao.address, bao.token, namespace="nope-issue23") as client:
        with pytest.raises(NamespaceNotFound, match="namespace 'nope-issue23'"):
            client.policies.list_policies()
        with pytest.raises(NamespaceNotFound):
            client.leases.leases_by_mount()
        with pytest.raises(NamespaceNotFound):
            client.tokens.inventory()


def test_a_missing_mount_raises_and_an_empty_folder_stays_empty_on_openbao(
    bao_client: SecretsClient,
) -> None:
    with pytest.raises(MountNotFound, match="nothing is mounted at 'databasex/'"):
        bao_client.database.at("databasex").roles_frame()
    assert bao_client.leases.list_leases("no-such-prefix-issue23/") == []
    with pytest.raises(MountNotFound, match="'databasex/'"):
        bao_client.leases.leases_by_mount(mounts=["databasex"])


def test_a_token_without_sudo_lacks_a_permission_and_a_bad_token_is_refused_on_openbao(
    bao_client: SecretsClient, bao: OpenBao
) -> None:
    bao_client.policies.write("acl", "no-sudo-issue23", NO_SUDO)
    token = bao_client.tokens.create(policies=["no-sudo-issue23"], ttl="10m")
    try:
        with SecretsClient(bao.address, token["client_token"]) as limited:
            with pytest.raises(PermissionDenied) as denied:
                limited.tokens.inventory()
            assert type(denied.value) is PermissionDenied
            assert "lacks 'list' and 'sudo' on 'auth/token/accessors'" in str(denied.value)
            assert "\n" not in str(denied.value)
            frame = limited.policies.policies_frame()
            assert "sys/policies/acl/root" in set(toolkit.coverage(frame)["path"])
        with (
            SecretsClient(bao.address, "hvs.not-a-token-issue23") as bad,
            pytest.raises(TokenRefused, match="log in again"),
        ):
            bad.policies.list_policies()
    finally:
        bao_client.policies.delete("acl", "no-sudo-issue23")


def test_a_mount_of_another_engine_is_not_an_empty_folder_on_openbao(
    bao_client: SecretsClient,
) -> None:
    # The key view pointed at a PKI mount: OpenBao answers 404 "unsupported path",
    # which is not an empty folder ({"errors":[]}, as the PKI mount's empty roles).
    bao_client.enable_engine("pki-issue23-review", "pki")
    try:
        with pytest.raises(NotFound, match="unsupported path") as caught:
            bao_client.keymgmt.at("pki-issue23-review").keys_frame()
        assert "client.mounts()" in str(caught.value)
        assert len(bao_client.pki.at("pki-issue23-review").roles_frame()) == 0
    finally:
        bao_client.disable_engine("pki-issue23-review")
