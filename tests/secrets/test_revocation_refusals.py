"""What a revocation run refuses, sending nothing: a lone lease id string, and a journal
that is not its to use (held by another run, of another server or namespace, edited);
and a run not told to apply only previews (issues 33, 34)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.secrets.test_revocation import _journal_of, _leases, _revokes
from toolkit import InputError
from toolkit._durable import Damaged, Locked, NotOurs
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.leases.revocation import revoke_leases


@pytest.fixture
def client(empty_sandbox: Sandbox) -> Iterator[SecretsClient]:
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as c:
        yield c


def test_a_journal_held_by_another_run_is_refused_and_nothing_is_sent(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    ids = _leases(empty_sandbox, 2)
    path = tmp_path / "journal"
    with _journal_of(client, path), pytest.raises(Locked, match="in use by process"):
        client.leases.revocation_plan(ids, rate=1000, apply=True, journal=path)
    assert _revokes(empty_sandbox) == 0


def test_a_journal_of_another_server_is_refused_naming_both(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    path = tmp_path / "journal"
    client.leases.revocation_plan(_leases(empty_sandbox, 1), rate=1000, apply=True, journal=path)
    with Sandbox(demo=False) as other, SecretsClient(other.address, other.token) as them:
        ids = _leases(other, 2)
        with pytest.raises(NotOurs) as caught:
            them.leases.revocation_plan(ids, rate=1000, apply=True, journal=path)
        assert _revokes(other) == 0
    mine = empty_sandbox.secrets.seal.cluster_id
    theirs = other.secrets.seal.cluster_id
    assert mine in str(caught.value) and theirs in str(caught.value)


def test_a_journal_of_another_namespace_is_refused(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    path = tmp_path / "journal"
    client.leases.revocation_plan(_leases(empty_sandbox, 1), rate=1000, apply=True, journal=path)
    client.namespaces.create("team-a")
    with pytest.raises(NotOurs, match="namespace team-a/"):
        client.in_namespace("team-a").leases.revocation_plan(["x/y"], rate=1000, journal=path)


def test_an_edited_journal_is_named_and_nothing_is_sent(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    first, second = _leases(empty_sandbox, 2)
    path = tmp_path / "journal"
    client.leases.revocation_plan([first], rate=1000, apply=True, journal=path)
    path.write_text(path.read_text().replace(first, second))
    with pytest.raises(Damaged, match="line 2 was changed"):
        client.leases.revocation_plan([first, second], rate=1000, apply=True, journal=path)
    assert empty_sandbox.secrets.leases.revoke_requests[second] == 0


def test_a_lone_lease_id_string_is_refused_in_one_line(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    [lease] = _leases(empty_sandbox, 1)
    with pytest.raises(InputError, match="not one string") as caught:
        client.leases.revocation_plan(lease, rate=10, apply=True)
    assert "\n" not in str(caught.value)
    assert _revokes(empty_sandbox) == 0


def test_revoking_leases_previews_unless_told_to_apply(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    ids = _leases(empty_sandbox, 2)
    plan = revoke_leases(client.http, ids, rate=1000)
    assert set(plan["outcome"]) == {"will send"} and plan.attrs["apply"] is False
    assert _revokes(empty_sandbox) == 0
