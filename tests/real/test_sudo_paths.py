"""The sudo table (toolkit/_spec/sudo.py) is OpenBao's own: its OpenAPI document's
``x-vault-sudo`` paths, and each one answers 403 to a token holding every capability but
``sudo`` there, while a path outside the table does not ask for it."""

from __future__ import annotations

import pytest

from tests.servers.openbao import OpenBao
from tests.servers.sudo_paths import render
from toolkit._spec.sudo import SUDO_PATHS, derive, needs_sudo

pytestmark = pytest.mark.slow


def test_the_sudo_table_is_the_live_servers_openapi_list(bao: OpenBao) -> None:
    with bao.http() as http:
        reply = http.get("sys/internal/specs/openapi")
    reply.raise_for_status()
    live = derive(reply.json())
    assert live == SUDO_PATHS, (
        "toolkit/_spec/sudo.py differs from the server: run `python -m tests.servers.sudo_paths`"
        f"\n{render(live, 'the live server')}"
    )


@pytest.mark.parametrize(
    ("method", "path", "sudo"),
    [
        ("LIST", "auth/token/accessors/", True),
        ("LIST", "sys/leases/lookup/database/creds/", True),
        ("GET", "sys/auth/token/tune", True),
        ("GET", "sys/raw/core/mounts", True),
        ("POST", "sys/leases/lookup", False),
        ("GET", "sys/policies/acl/default", False),
        ("POST", "auth/token/lookup-accessor", False),
    ],
)
def test_a_token_without_sudo_is_refused_exactly_on_the_tables_paths(
    bao: OpenBao, method: str, path: str, sudo: bool
) -> None:
    everything = '["create", "read", "update", "patch", "delete", "list"]'
    with bao.http() as http:
        http.put(
            "sys/policies/acl/all-but-sudo",
            json={"policy": f'path "*" {{ capabilities = {everything} }}'},
        ).raise_for_status()
        token = http.post(
            "auth/token/create", json={"policies": ["all-but-sudo"], "ttl": "5m"}
        ).json()["auth"]["client_token"]
    with bao.http(token) as http:
        reply = http.request(method, path, json={} if method == "POST" else None)
    assert needs_sudo(path) is sudo
    assert (reply.status_code == 403) is sudo, f"{method} {path}: {reply.status_code} {reply.text}"
