"""Namespaces against the sandbox: the tree, the walk, frames across namespaces, refusals."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

import toolkit
from toolkit.sandbox import Sandbox
from toolkit.sandbox._plain import round_trip
from toolkit.secrets import SecretsClient
from toolkit.secrets.namespaces import refusal_findings

# Every exchange is bounded: the clients' timeout, and httpx's in raw().
TIMEOUT = 10.0


@pytest.fixture
def admin_sandbox() -> Iterator[Sandbox]:
    with Sandbox(admin_namespace="ops/admin") as sandbox:
        yield sandbox


@pytest.fixture
def client(admin_sandbox: Sandbox) -> Iterator[SecretsClient]:
    with SecretsClient(admin_sandbox.address, admin_sandbox.token, timeout=TIMEOUT) as c:
        c.namespaces.create("team-a", {"owner": "alice"})
        c.in_namespace("team-a").namespaces.create("sub")
        c.in_namespace("team-a/sub").namespaces.create("leaf")
        yield c


def raw(
    sandbox: Sandbox, method: str, path: str, namespace: str = "", **kw: object
) -> httpx.Response:
    headers = {"X-Vault-Token": sandbox.token}
    if namespace:
        headers["X-Vault-Namespace"] = namespace
    return httpx.request(
        method, f"{sandbox.address}/v1/{path}", headers=headers, timeout=TIMEOUT, **kw
    )  # type: ignore[arg-type]


def test_the_walk_finds_nested_namespaces_parents_first(client: SecretsClient) -> None:
    assert client.namespaces.list_all() == [
        "ops/",
        "team-a/",
        "ops/admin/",
        "team-a/sub/",
        "team-a/sub/leaf/",
    ]
    frame = client.namespaces.namespaces_frame()
    assert frame.loc["team-a/sub/leaf/", "parent"] == "team-a/sub/"
    assert frame.loc["team-a/sub/leaf/", "depth"] == 3
    assert frame.loc["team-a/", "custom_metadata"] == {"owner": "alice"}
    assert frame["id"].str.len().eq(6).all()


def test_a_walk_from_a_child_namespace_covers_only_its_subtree(client: SecretsClient) -> None:
    assert client.in_namespace("team-a").namespaces.list_all() == [
        "team-a/sub/",
        "team-a/sub/leaf/",
    ]


def test_mounts_by_namespace_has_a_namespace_column_and_no_root_engines_in_children(
    client: SecretsClient,
) -> None:
    frame = client.namespaces.mounts_by_namespace()
    assert list(frame.columns[:2]) == ["namespace", "path"]
    assert set(frame["namespace"]) == {
        "root",
        "ops/",
        "ops/admin/",
        "team-a/",
        "team-a/sub/",
        "team-a/sub/leaf/",
    }
    leaf = frame[frame["namespace"] == "team-a/sub/leaf/"]
    assert sorted(leaf["path"]) == ["cubbyhole/", "identity/", "sys/"]
    assert "database/" in set(frame[frame["namespace"] == "root"]["path"])
    assert frame["problem"].isna().all()


def test_a_refused_restricted_endpoint_is_a_row_not_an_error(client: SecretsClient) -> None:
    frame = client.namespaces.policies_by_namespace()
    refused = frame[frame["problem"].notna()].set_index("namespace")["problem"]
    assert set(refused.index) == {"ops/", "team-a/", "team-a/sub/", "team-a/sub/leaf/"}
    assert refused["team-a/sub/"].startswith("not permitted in namespace team-a/sub/")
    # The root and the administrative namespace answer; the admin one has none of the root's.
    assert "root" in set(frame[frame["problem"].isna()]["namespace"])
    admin = frame[(frame["namespace"] == "ops/admin/") & frame["problem"].isna()]
    root_names = set(frame[frame["namespace"] == "root"]["name"])
    assert set(admin["name"]) == {"default", "root"} < root_names
    findings = refusal_findings(frame)
    assert set(findings["object"]) == set(refused.index)
    assert (findings["severity"] == "info").all()
    # The refusals are the frame's coverage gaps too (issue 23): incomplete, not clean.
    gaps = toolkit.coverage(frame)
    assert not gaps.attrs["complete"]
    assert set(gaps["path"]) == set(refused.index)
    assert set(gaps["status"]) == {403}


def test_leases_are_listed_in_the_admin_namespace_and_refused_in_others(
    client: SecretsClient,
) -> None:
    frame = client.namespaces.leases_by_namespace()
    assert frame[frame["namespace"] == "root"]["count"].sum() > 0
    assert "ops/admin/" not in set(frame["namespace"][frame["problem"].notna()])
    assert frame[frame["namespace"] == "ops/admin/"].empty  # no leases there: no rows
    assert frame[frame["namespace"] == "team-a/"]["problem"].notna().all()


def test_deleting_a_namespace_with_children_is_refused_and_changes_nothing(
    admin_sandbox: Sandbox, client: SecretsClient
) -> None:
    answer = raw(admin_sandbox, "DELETE", "sys/namespaces/team-a")
    assert answer.status_code == 400
    assert answer.json()["errors"] == ["unable to delete namespace containing child namespaces"]
    assert "team-a/sub/leaf/" in client.namespaces.list_all()
    client.in_namespace("team-a/sub").namespaces.delete("leaf")
    assert "team-a/sub/leaf/" not in client.namespaces.list_all()


def test_the_server_answers_as_openbao_does(admin_sandbox: Sandbox, client: SecretsClient) -> None:
    assert raw(admin_sandbox, "GET", "sys/mounts", "nope").json() == {
        "errors": ["namespace not found"]
    }
    assert raw(admin_sandbox, "GET", "sys/mounts", "nope").status_code == 404
    slash = raw(admin_sandbox, "POST", "sys/namespaces/a/b", json={})
    assert slash.status_code == 400 and "cannot contain /" in slash.json()["errors"][0]
    gone = raw(admin_sandbox, "DELETE", "sys/namespaces/never")
    assert gone.status_code == 200 and gone.json()["warnings"] == [
        "requested namespace does not exist"
    ]
    assert raw(admin_sandbox, "LIST", "sys/namespaces", "team-a/sub/leaf").status_code == 404
    assert raw(admin_sandbox, "GET", "sys/namespaces/missing").status_code == 404
    # An engine of the root is not reachable from a child namespace.
    assert raw(admin_sandbox, "GET", "pki/ca/pem", "team-a").status_code == 404
    refused = raw(admin_sandbox, "POST", "sys/mounts/kv", "team-a", json={"type": "kv"})
    assert refused.status_code == 400


def test_a_child_namespaces_policies_are_its_own(
    admin_sandbox: Sandbox, client: SecretsClient
) -> None:
    admin = client.in_namespace("ops/admin")
    admin.policies.write("acl", "only-here", 'path "x" { capabilities = ["read"] }')
    assert "only-here" in admin.policies.list_policies("acl")
    assert "only-here" not in client.policies.list_policies("acl")


def test_without_an_admin_namespace_only_the_root_may_call_restricted_endpoints() -> None:
    with (
        Sandbox(demo=False) as sandbox,
        SecretsClient(sandbox.address, sandbox.token, timeout=TIMEOUT) as c,
    ):
        c.namespaces.create("admin")
        frame = c.namespaces.policies_by_namespace()
        assert frame.set_index("namespace").loc["admin/", "problem"].startswith("not permitted")


def test_the_admin_namespace_option_is_on_the_command_line() -> None:
    from toolkit.__main__ import _sandbox_parser

    args = _sandbox_parser().parse_args(["--admin-namespace", "admin/"])
    assert args.admin_namespace == "admin/"


def test_namespaces_survive_a_stored_state(client: SecretsClient, admin_sandbox: Sandbox) -> None:
    copied = round_trip({"secrets": admin_sandbox.secrets})["secrets"]
    tree = copied.namespaces
    assert tree.admin == "ops/admin/"
    assert [ns.path for ns in tree.children("team-a/")] == ["team-a/sub/"]
    assert tree.get("team-a/").custom_metadata == {"owner": "alice"}
    assert tree.get("team-a/").mounts.engine("sys") is not None


def test_a_namespace_the_caller_names_that_does_not_exist_is_an_error_not_a_row(
    client: SecretsClient,
) -> None:
    with pytest.raises(toolkit.NamespaceNotFound, match="team-x"):
        client.namespaces.across(lambda c: c.policies.policies_frame(), ["team-a", "team-x"])
    # One the walk found that has gone by the time it is called is a gap and a row.
    walked = client.namespaces.list_all()

    def children(view: SecretsClient) -> object:
        if view.namespace == "team-a/sub/leaf/":
            client.in_namespace("team-a/sub").namespaces.delete("leaf")
        return view.namespaces.namespaces_frame()

    frame = client.namespaces.across(children)
    assert "team-a/sub/leaf/" in walked
    (gone,) = frame.loc[frame["namespace"] == "team-a/sub/leaf/", "problem"]
    assert gone == "namespace team-a/sub/leaf/ no longer exists"
    assert "team-a/sub/leaf/" in set(toolkit.coverage(frame)["path"])
