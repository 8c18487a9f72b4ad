"""Revocation outcomes on a real OpenBao: what its answers allow the journal to know (issue 34)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.real import _seed
from tests.servers.openbao import OpenBao
from toolkit._durable import Journal, NotOurs
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.checkpoint import server_identity

_counter = itertools.count()


def _leases(bao: OpenBao, n: int) -> list[str]:
    role = f"revoke{next(_counter)}"
    _seed.tokens(bao, role, n)
    prefix = f"auth/token/create/{role}/"
    return [prefix + key for key in _seed.lease_keys(bao, prefix)]


def test_openbao_answers_204_to_revoking_a_lease_it_does_not_hold_and_400_to_its_lookup(
    bao: OpenBao, bao_client: SecretsClient
) -> None:
    [lease] = _leases(bao, 1)
    bao_client.leases.revoke(lease)
    with bao.http() as http:
        for gone in (lease, "auth/token/create/nobody/never-issued"):
            assert http.post("sys/leases/revoke", json={"lease_id": gone}).status_code == 204
            lookup = http.post("sys/leases/lookup", json={"lease_id": gone})
            assert lookup.status_code == 400 and lookup.json()["errors"] == ["invalid lease"]


def test_each_outcome_on_openbao_revoked_or_already_gone_known_by_lookup(
    bao: OpenBao, bao_client: SecretsClient, tmp_path: Path
) -> None:
    ids = _leases(bao, 4)
    bao_client.leases.revoke(ids[0])  # gone before the run
    never = "auth/token/create/nobody/never-issued"
    journal = tmp_path / "journal"
    done = bao_client.leases.revocation_plan(
        [*ids, never], rate=100, batch_size=2, apply=True, journal=journal
    )
    assert done.loc[ids[0], "outcome"] == "already gone"
    assert done.loc[never, "outcome"] == "already gone"
    assert set(done.loc[ids[1:], "outcome"]) == {"revoked"}
    assert _seed.lease_keys(bao, ids[0].rsplit("/", 1)[0] + "/") == []
    again = bao_client.leases.revocation_plan([*ids, never], rate=100, apply=True, journal=journal)
    assert again["detail"].str.startswith("recorded by an earlier run").all()


def test_a_lost_answer_on_openbao_is_looked_up_before_anything_is_sent_again(
    bao: OpenBao, bao_client: SecretsClient, tmp_path: Path
) -> None:
    reached, lost = _leases(bao, 2)
    journal = tmp_path / "journal"
    identity = server_identity(
        bao_client.http, "revocation journal", {"revoke": "sys/leases/revoke"}
    )
    with Journal.open(journal, identity) as j:
        j.append_many(
            [{"lease": reached, "step": "about to send"}, {"lease": lost, "step": "about to send"}]
        )
    bao_client.leases.revoke(reached)  # the earlier run's request had reached the server
    posts: list[str] = []
    bao_client.http.response_hooks.append(
        lambda r: posts.append(r.url) if r.url.endswith("/sys/leases/revoke") else None
    )
    done = bao_client.leases.revocation_plan([reached, lost], rate=100, apply=True, journal=journal)
    assert (
        done.loc[reached, "outcome"] == "revoked"
        and "looked up: gone" in done.loc[reached, "detail"]
    )
    assert done.loc[lost, "outcome"] == "revoked"
    assert len(posts) == 1  # only the lease still live was sent


def test_without_lookup_on_openbao_revocations_are_sent_not_confirmed(
    bao: OpenBao, bao_client: SecretsClient
) -> None:
    ids = _leases(bao, 2)
    bao_client.policies.write(
        "acl", "revoke-only", 'path "sys/leases/revoke" { capabilities = ["update"] }'
    )
    answer = bao_client.http.json(
        "POST", "/auth/token/create", json={"policies": ["revoke-only"], "no_default_policy": True}
    )
    with SecretsClient(bao.address, answer["auth"]["client_token"]) as revoker:
        done = revoker.leases.revocation_plan(ids, rate=100, apply=True)
    assert set(done["outcome"]) == {"sent, not confirmed"}
    assert not done.attrs["coverage"]["complete"]
    assert _seed.lease_keys(bao, ids[0].rsplit("/", 1)[0] + "/") == []


def test_a_journal_of_openbao_is_refused_on_the_sandbox(
    bao: OpenBao, bao_client: SecretsClient, tmp_path: Path
) -> None:
    journal = tmp_path / "journal"
    bao_client.leases.revocation_plan(_leases(bao, 1), rate=100, apply=True, journal=journal)
    cluster = bao_client.health()["cluster_id"]
    with (
        Sandbox(demo=False) as sandbox,
        SecretsClient(sandbox.address, sandbox.token) as other,
        pytest.raises(NotOurs, match=str(cluster)),
    ):
        other.leases.revocation_plan(["x/y/z"], rate=100, apply=True, journal=journal)
