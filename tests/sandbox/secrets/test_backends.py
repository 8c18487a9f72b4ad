"""The engine descriptors (``backends``): an engine's demo loader (``demo_at``) fills its own default mount, and only that."""

from __future__ import annotations

from tests.sandbox.secrets._access_api import v1
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.engines import keymgmt, pki


def test_an_engine_s_demo_fills_its_default_mount_when_the_mount_is_there(
    empty_sandbox: Sandbox,
) -> None:
    with v1(empty_sandbox) as api:
        assert api.request("LIST", "pki/issuers").status_code == 404
        assert pki.ENGINE.demo is not None
        pki.ENGINE.demo(empty_sandbox.secrets)
        listed = api.request("LIST", "pki/issuers")
        assert listed.status_code == 200, listed.text
        assert len(listed.json()["data"]["keys"]) == 2


def test_an_engine_s_demo_leaves_alone_a_mount_of_another_engine_at_its_path(
    empty_sandbox: Sandbox,
) -> None:
    with v1(empty_sandbox) as api:
        assert api.delete("sys/mounts/keymgmt").status_code == 204
        assert api.post("sys/mounts/keymgmt", json={"type": "pki"}).status_code == 204
        assert keymgmt.ENGINE.demo is not None
        keymgmt.ENGINE.demo(empty_sandbox.secrets)
        assert api.request("LIST", "keymgmt/issuers").status_code == 404
        assert api.request("LIST", "keymgmt/key").status_code in (404, 405)


def test_an_engine_s_demo_does_nothing_when_its_mount_is_gone(empty_sandbox: Sandbox) -> None:
    with v1(empty_sandbox) as api:
        assert api.delete("sys/mounts/pki").status_code == 204
        assert pki.ENGINE.demo is not None
        pki.ENGINE.demo(empty_sandbox.secrets)
        assert api.request("LIST", "pki/issuers").status_code == 404
