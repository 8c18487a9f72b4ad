"""Scan checkpoints know whose they are, hold one run at a time, and refuse tampering by name (issue 34)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit._durable import Damaged, Locked, NotOurs, RecordFile
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.checkpoint import WalkInterrupted, server_identity
from toolkit.secrets.pki.estate import scan_certificates

FOLDER = "database/creds/scale-0"
LEASES = 60


@pytest.fixture
def client(empty_sandbox: Sandbox) -> Iterator[SecretsClient]:
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as c:
        yield c


def _seed(sandbox: Sandbox, n: int = LEASES) -> None:
    with sandbox.secrets.lock:
        for i in range(n):
            sandbox.secrets.leases.create(FOLDER, ttl=86400, suffix=f"c{i:04d}")


def _interrupted(client: SecretsClient, point: Path) -> None:
    """A lease scan stopped after its first chunk of 15, its checkpoint left behind."""
    with pytest.raises(WalkInterrupted):
        client.leases.scan(checkpoint=point, chunk=15, deadline=0)


def test_a_lease_checkpoint_from_another_server_is_refused_naming_both(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox)
    point = tmp_path / "scan"
    _interrupted(client, point)
    with Sandbox(demo=False) as other, SecretsClient(other.address, other.token) as them:
        _seed(other, 5)
        with pytest.raises(NotOurs) as caught:
            them.leases.scan(checkpoint=point)
    message = str(caught.value)
    assert empty_sandbox.secrets.seal.cluster_id in message
    assert other.secrets.seal.cluster_id in message and "\n" not in message


def test_a_lease_checkpoint_from_the_root_namespace_is_refused_in_another(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox)
    point = tmp_path / "scan"
    _interrupted(client, point)
    client.namespaces.create("admin")
    with pytest.raises(NotOurs, match="namespace admin/"):
        client.in_namespace("admin").leases.scan(checkpoint=point)


def test_token_and_certificate_checkpoints_are_tied_to_their_server_too(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    tokens, certs = tmp_path / "tokens", tmp_path / "certs"
    client.tokens.scan(checkpoint=tokens)
    with Sandbox() as other, SecretsClient(other.address, other.token) as them:
        with pytest.raises(NotOurs, match="tokens scan checkpoint"):
            them.tokens.scan(checkpoint=tokens)
        scan_certificates(them.http, "pki", checkpoint=certs)
    with (
        Sandbox() as third,
        SecretsClient(third.address, third.token) as others,
        pytest.raises(NotOurs, match="certificates scan checkpoint"),
    ):
        scan_certificates(others.http, "pki", checkpoint=certs)


def test_a_checkpoint_held_by_another_run_is_refused_naming_the_holder(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox)
    point = tmp_path / "scan"
    identity = server_identity(client.http, "leases scan checkpoint", {"starts": [""]})
    with RecordFile.open(point, identity), pytest.raises(Locked, match="in use by process"):
        client.leases.scan(checkpoint=point)


def _edit_content(point: Path, old: str, new: str) -> None:
    record = json.loads(point.read_text())
    assert old in record["content"]
    record["content"] = record["content"].replace(old, new)
    point.write_text(json.dumps(record))


def test_an_edited_row_count_is_named(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox)
    point = tmp_path / "scan"
    _interrupted(client, point)
    _edit_content(point, '"rows": 15', '"rows": 150')
    with pytest.raises(Damaged, match="checksum fails") as caught:
        client.leases.scan(checkpoint=point)
    assert str(point) in str(caught.value)


def test_a_missing_part_is_named(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox)
    point = tmp_path / "scan"
    _interrupted(client, point)
    (tmp_path / "scan.parts" / "part-000000.parquet").unlink()
    with pytest.raises(Damaged, match="part-000000.parquet is missing"):
        client.leases.scan(checkpoint=point)


def test_a_damaged_part_is_named(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox)
    point = tmp_path / "scan"
    _interrupted(client, point)
    part = tmp_path / "scan.parts" / "part-000000.parquet"
    part.write_bytes(part.read_bytes()[:-40] + b"\0" * 40)
    with pytest.raises(Damaged, match="part-000000.parquet was changed"):
        client.leases.scan(checkpoint=point)


def test_a_torn_checkpoint_is_named(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox)
    point = tmp_path / "scan"
    _interrupted(client, point)
    point.write_bytes(point.read_bytes()[:30])
    with pytest.raises(Damaged, match="not whole"):
        client.leases.scan(checkpoint=point)


def test_a_part_gone_after_the_scan_is_named_when_read(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox)
    scan = client.leases.scan(checkpoint=tmp_path / "scan", chunk=15)
    (tmp_path / "scan.parts" / "part-000001.parquet").unlink()
    with pytest.raises(Damaged, match="part-000001.parquet cannot be read"):
        scan.frame()


def test_a_part_written_after_the_last_save_is_dropped_and_the_scan_is_exact(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox)
    point = tmp_path / "scan"
    _interrupted(client, point)
    parts = tmp_path / "scan.parts"
    # As a run killed between writing a part and saving the checkpoint leaves it.
    (parts / "part-000001.parquet").write_bytes((parts / "part-000000.parquet").read_bytes())
    scan = client.leases.scan(checkpoint=point, chunk=15)
    frame = scan.frame()
    assert frame.index.is_unique and len(frame) == LEASES
