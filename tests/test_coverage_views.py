"""Each view that walks files what it could not read, a derived view keeps its
source's record, and no call returns a silently short answer."""

from __future__ import annotations

import pandas as pd
import pytest

import toolkit
from toolkit import PermissionDenied, PlatformClient, SecretsClient
from toolkit._coverage import Coverage
from toolkit.sandbox import Sandbox


def _token(sandbox: Sandbox, policy: str) -> str:
    with SecretsClient(sandbox.address, sandbox.token) as root:
        root.policies.write("acl", "narrow", policy)
        return root.tokens.create(policies=["narrow"], ttl="1h")["client_token"].reveal()


def _gaps(frame: pd.DataFrame) -> list[str]:
    return [str(p) for p in toolkit.coverage(frame)["path"]]


def test_the_mount_list_is_never_silently_short(sandbox: Sandbox) -> None:
    token = _token(sandbox, 'path "sys/mounts" { capabilities = ["read"] }')
    with SecretsClient(sandbox.address, token) as client:
        with pytest.raises(PermissionDenied, match="sys/auth"):
            client.leases.list_mounts()
        record = Coverage("mounts")
        mounts = client.leases.list_mounts(coverage=record)
    assert "pki/" in mounts and not any(m.startswith("auth/") for m in mounts)
    assert [g.path for g in record.gaps] == ["sys/auth"]


PKI_NARROW = """
path "pki/roles" { capabilities = ["list"] }
path "pki/roles/*" { capabilities = ["read"] }
path "pki/roles/root-ops" { capabilities = ["deny"] }
path "pki/issuers" { capabilities = ["list"] }
path "pki/issuer/*" { capabilities = ["read"] }
path "pki/config/issuers" { capabilities = ["deny"] }
path "pki/certs" { capabilities = ["list"] }
path "pki/cert/*" { capabilities = ["read"] }
"""


def test_pki_roles_and_issuers_note_the_reads_refused(sandbox: Sandbox) -> None:
    token = _token(sandbox, PKI_NARROW)
    with SecretsClient(sandbox.address, token) as client:
        roles = client.pki.roles_frame()
        issuers = client.pki.issuers_frame()
        certificates = client.pki.certificates_frame()
        found = client.pki.findings()
    assert "root-ops" not in set(roles.index) and _gaps(roles) == ["pki/roles/root-ops"]
    assert len(issuers) == 2 and _gaps(issuers) == ["pki/config/issuers"]
    assert toolkit.coverage(certificates).attrs["complete"] and len(certificates) > 0
    # The findings are built from all three: they are no more whole than those.
    assert sorted(_gaps(found)) == ["pki/config/issuers", "pki/roles/root-ops"]


def test_the_plugin_inventory_notes_entries_it_may_not_read(sandbox: Sandbox) -> None:
    # The catalog reads without sudo; an entry's details need it.
    token = _token(
        sandbox,
        'path "sys/plugins/catalog" { capabilities = ["read"] }\n'
        'path "sys/mounts" { capabilities = ["read"] }\n'
        'path "sys/auth" { capabilities = ["read"] }\n',
    )
    with SecretsClient(sandbox.address, token) as client:
        catalog = client.plugins.catalog()
        inventory = client.plugins.inventory()
        found = client.plugins.findings()
    assert toolkit.coverage(catalog).attrs["complete"] and len(catalog) > 0
    assert len(inventory) == 0 and len(found) == 0
    assert sorted(_gaps(inventory)) == [
        "sys/plugins/catalog/database/snowflake-database-plugin",
        "sys/plugins/catalog/secret/venafi-pki-backend",
    ]
    assert _gaps(found) == _gaps(inventory)


def test_a_members_token_cannot_prove_it_sees_every_workspace_team_or_pool(
    demo_sandbox: Sandbox,
) -> None:
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as owner:
        for frame in (
            owner.organizations.workspaces_frame("acme"),
            owner.organizations.teams_frame("acme"),
            owner.organizations.policy_sets_frame("acme"),
            owner.agent_pools.pools_frame("acme"),
        ):
            assert toolkit.coverage(frame).attrs["complete"]
        teams = len(owner.organizations.teams_frame("acme"))
        workspace = owner.organizations.workspaces_frame("acme").index[0]
        assert toolkit.coverage(owner.team_access.access_frame(workspace)).attrs["complete"]
    with PlatformClient(demo_sandbox.address, "demo-member-bob") as member:
        records = member.team_access.access_frame(workspace)
        workspaces = member.organizations.workspaces_frame("acme")
        hidden = member.organizations.teams_frame("acme")
        pools = member.agent_pools.pools_frame("acme", include="workspaces")
        policy_sets = member.organizations.policy_sets_frame("acme")
        capacity = member.agent_pools.agent_capacity("acme")
    assert len(hidden) < teams
    assert _gaps(workspaces) == ["organizations/acme/workspaces"]
    assert _gaps(hidden) == ["organizations/acme/teams"]
    assert _gaps(pools) == ["organizations/acme/agent-pools"]
    assert "organizations/acme/agent-pools" in _gaps(capacity)
    assert toolkit.coverage(policy_sets).attrs["complete"]  # any member may read them
    assert _gaps(records) == [f"team-workspaces?filter[workspace][id]={workspace}"]


def test_the_estate_views_keep_the_estates_record_and_an_empty_calendar_its_columns(
    empty_sandbox: Sandbox,
) -> None:
    token = _token(empty_sandbox, PKI_NARROW + 'path "sys/mounts" { capabilities = ["read"] }\n')
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as root:
        root.pki.write_role("root-ops", allow_any_name=True)
    with SecretsClient(empty_sandbox.address, token) as client:
        estate = client.pki.certificate_estate()
        views = {
            "frame": estate.frame(),
            "calendar": estate.calendar("W"),
            "tidy": estate.tidy(),
            "outliving_issuer": estate.outliving_issuer(),
            "roles_from_root": estate.roles_from_root(),
        }
    for name, frame in views.items():
        assert "pki/roles/root-ops" in _gaps(frame), name
    # No certificate yet: an empty calendar, still one column a mount.
    calendar = views["calendar"]
    assert len(calendar) == 0
    assert list(calendar.columns) == ["pki"] and str(calendar["pki"].dtype) == "int64"
    assert str(calendar.index.dtype) == "datetime64[ns, UTC]" and calendar.index.name == "expires"


def test_leases_views_derived_from_a_frame_keep_its_record(demo_sandbox: Sandbox) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        leases = client.leases.leases_by_mount(mounts=["broker/"])
        gapped = Coverage("leases.leases_by_mount")
        gapped.note_gap("sys/leases/lookup/broker/x/", 403, "permission denied")
        gapped.attach(leases)
        expiry = client.leases.expiry(leases)
        summary = client.leases.summary(leases)
        irrevocable = client.leases.irrevocable_frame()
    assert _gaps(expiry) == _gaps(summary) == ["sys/leases/lookup/broker/x/"]
    assert toolkit.coverage(irrevocable).attrs["complete"]
