"""A second mount of the `ad` engine with a one-account directory, for client and form tests."""

from __future__ import annotations

from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.ad import AD


def corp_ad(sandbox: Sandbox, client: SecretsClient, mount: str = "corp-ad") -> AD:
    """Mount the engine at ``mount``, configure it, give it the account ``alice`` in set ``team``."""
    client.enable_engine(mount, "ad")
    corp = client.ad.at(mount)
    corp.configure("CN=bind,DC=corp", "pw")
    with sandbox.secrets.lock:
        found = sandbox.secrets.mounts.engine(mount)
        assert found is not None
        found.backend.set_directory([("alice", "CN=alice,DC=corp")])
    corp.write_set("team", ["alice"])
    return corp
