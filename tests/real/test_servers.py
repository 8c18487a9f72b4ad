"""The launchers themselves: each real server starts on loopback, answers, and is usable."""

from __future__ import annotations

import stat

import httpx
import pytest

from tests.servers import ServerMissing
from tests.servers.openbao import AUDIT_DEVICE, KEY_SHARES, KEY_THRESHOLD, OpenBao
from tests.servers.postgres import Postgres
from tests.servers.rabbitmq import RabbitMQ

from .conftest import launch, require_module


def test_the_dev_openbao_is_unsealed_and_takes_the_known_root_token(bao: OpenBao) -> None:
    with bao.http() as http:
        assert http.get("sys/health").json()["sealed"] is False
        assert http.get("auth/token/lookup-self").json()["data"]["id"] == bao.token
    assert bao.plugin_directory.is_dir()


def test_the_raft_openbao_is_initialised_with_five_shares_threshold_three(
    raft_bao: OpenBao,
) -> None:
    assert len(raft_bao.shares) == KEY_SHARES
    with raft_bao.http() as http:
        status = http.get("sys/seal-status").json()
        assert (status["n"], status["t"], status["sealed"]) == (KEY_SHARES, KEY_THRESHOLD, False)
        assert status["storage_type"] == "raft"
        legacy = http.get("sys/rekey/init")
    # Without the listener option the legacy rekey endpoints are disabled.
    assert legacy.status_code == (200 if raft_bao.legacy_rekey else 405)


def test_an_audited_openbao_logs_each_request_with_its_body_readable_by_its_owner_only() -> None:
    with launch(lambda: OpenBao(audit=True)) as server, server.http() as http:
        devices = http.get("sys/audit").json()["data"]
        assert devices[f"{AUDIT_DEVICE}/"]["type"] == "file"
        assert http.post("auth/token/create", json={"display_name": "audited"}).status_code == 200
        assert http.request("LIST", "auth/token/accessors").status_code == 200
        records = server.audit_records()
        assert stat.S_IMODE(server.audit_log.stat().st_mode) == 0o600
    create = [r for r in records if r.body.get("display_name") == "audited"]
    assert len(create) == 1 and create[0].is_write
    assert (create[0].operation, create[0].path) == ("update", "auth/token/create")
    assert create[0].request_id and create[0].key() == (
        "auth/token/create",
        '{"display_name": "audited"}',
    )
    listing = [r for r in records if r.path.startswith("auth/token/accessors")]
    assert [(r.operation, r.is_write) for r in listing] == [("list", False)]
    with pytest.raises(ValueError, match="audit=True"):
        _ = OpenBao().audit_log


def test_postgres_takes_the_superuser_password(postgres: Postgres) -> None:
    with postgres.connect() as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("postgres",)
    assert "postgres" in postgres.roles()


def test_rabbitmq_management_api_answers_the_administrator_only(rabbitmq: RabbitMQ) -> None:
    with rabbitmq.management() as http:
        assert "administrator" in http.get("whoami").json()["tags"]
    assert (
        httpx.get(f"{rabbitmq.management_url}/api/whoami", auth=("guest", "guest")).status_code
        == 401
    )


def test_a_missing_server_fails_in_ci_and_skips_elsewhere_saying_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def absent() -> OpenBao:
        raise ServerMissing("the OpenBao binary `bao` is not installed: run `make setup`")

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="make setup"):
        launch(absent)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="make setup"):
        launch(absent)
    with pytest.raises(pytest.skip.Exception, match="make setup"):
        require_module("no_such_module_here")
