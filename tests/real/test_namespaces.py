"""Namespaces on a real OpenBao (2.3+: its dev server has them, no flag needed).

OpenBao 2.7 serves policies and leases in child namespaces too (the spec
restricts them to the root or administrative namespace): there the walk finds
every namespace's own data and no refusal.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.servers.openbao import OpenBao
from toolkit.secrets import SecretsClient

TIMEOUT = 10.0


@pytest.fixture
def tree(bao: OpenBao) -> Iterator[SecretsClient]:
    """Root client with ``ns-a/``, ``ns-a/ns-b/``, ``ns-a/ns-b/ns-c/`` and ``ns-z/``, removed after."""
    with SecretsClient(bao.address, bao.token, timeout=TIMEOUT) as client:
        client.namespaces.create("ns-a", {"team": "a"})
        client.namespaces.create("ns-z")
        client.in_namespace("ns-a").namespaces.create("ns-b")
        client.in_namespace("ns-a/ns-b").namespaces.create("ns-c")
        try:
            yield client
        finally:
            for parent, name in (
                ("ns-a/ns-b", "ns-c"),
                ("ns-a", "ns-b"),
                ("", "ns-a"),
                ("", "ns-z"),
            ):
                _delete_when_empty(client.in_namespace(parent), name)
            _wait_until_gone(client, ("ns-a/", "ns-z/"))


def _wait_until_gone(root: SecretsClient, paths: tuple[str, ...]) -> None:
    """Wait (at most 20 s) until OpenBao has removed ``paths`` in the background: until
    then the names are "tainted" and the next test could not create them again."""
    deadline = time.monotonic() + 20
    while set(paths) & set(root.namespaces.list_namespaces()) and time.monotonic() < deadline:
        time.sleep(0.2)


def _delete_when_empty(parent: SecretsClient, name: str) -> None:
    """Delete ``name`` once OpenBao has finished removing its children (it does so in
    the background): until then it refuses, and a refused delete changes nothing."""
    child = parent.in_namespace(f"{(parent.namespace or '')}{name}")
    deadline = time.monotonic() + 20
    while child.namespaces.list_namespaces() and time.monotonic() < deadline:
        time.sleep(0.2)
    parent.namespaces.delete(name)


def test_the_walk_finds_nested_namespaces_on_openbao(tree: SecretsClient) -> None:
    walked = tree.namespaces.list_all()
    assert {"ns-a/", "ns-z/", "ns-a/ns-b/", "ns-a/ns-b/ns-c/"} <= set(walked)
    assert walked.index("ns-a/") < walked.index("ns-a/ns-b/") < walked.index("ns-a/ns-b/ns-c/")
    frame = tree.namespaces.namespaces_frame()
    assert frame.loc["ns-a/ns-b/ns-c/", "parent"] == "ns-a/ns-b/"
    assert frame.loc["ns-a/ns-b/ns-c/", "depth"] == 3
    assert frame.loc["ns-a/", "custom_metadata"] == {"team": "a"}


def test_policies_and_mounts_are_listed_per_namespace_on_openbao(tree: SecretsClient) -> None:
    tree.in_namespace("ns-a/ns-b").policies.write(
        "acl", "b-only", 'path "x" { capabilities = ["read"] }'
    )
    policies = tree.namespaces.policies_by_namespace()
    names = policies.groupby("namespace")["name"].apply(set)
    assert "b-only" in names["ns-a/ns-b/"]
    assert "b-only" not in names["root"] and "b-only" not in names["ns-a/ns-b/ns-c/"]
    # OpenBao serves policies in child namespaces: nothing refused (the spec would).
    assert policies["problem"].isna().all()
    tree.enable_engine("kv-root-only", "kv")
    try:
        mounts = tree.namespaces.mounts_by_namespace()
        by_ns = mounts.groupby("namespace")["path"].apply(set)
        assert "kv-root-only/" in by_ns["root"]
        assert "kv-root-only/" not in by_ns["ns-a/ns-b/ns-c/"]
        assert "sys/" in by_ns["ns-a/ns-b/ns-c/"]
    finally:
        tree.disable_engine("kv-root-only")


def test_leases_by_namespace_runs_in_every_namespace_on_openbao(tree: SecretsClient) -> None:
    frame = tree.namespaces.leases_by_namespace()
    assert frame["problem"].isna().all()
    assert list(frame.columns[:1]) == ["namespace"]


def test_deleting_a_namespace_with_children_is_refused_on_openbao(tree: SecretsClient) -> None:
    from toolkit import APIError

    with pytest.raises(APIError, match="child namespaces"):
        tree.namespaces.delete("ns-a")
    assert "ns-a/ns-b/ns-c/" in tree.namespaces.list_all()


def test_a_namespace_the_caller_names_that_does_not_exist_is_an_error_on_openbao(
    tree: SecretsClient,
) -> None:
    import toolkit

    with pytest.raises(toolkit.NamespaceNotFound, match="ns-x"):
        tree.namespaces.across(lambda c: c.policies.policies_frame(), ["ns-a", "ns-x"])
    whole = tree.namespaces.across(lambda c: c.policies.policies_frame(), ["ns-a", "ns-z"])
    assert toolkit.coverage(whole).attrs["complete"] and set(whole["namespace"]) == {
        "ns-a/",
        "ns-z/",
    }
