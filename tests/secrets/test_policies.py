"""Password policies, access policies and the plugin catalog through the client."""

from __future__ import annotations

import pytest

from toolkit import BadRequest, InputError, NotFound, Sensitive
from toolkit.secrets import SecretsClient


def test_password_policies_are_written_read_generated_and_deleted(
    client: SecretsClient,
) -> None:
    text = 'length = 24\nrule "charset" {\n  charset = "abcdef\\"0123"\n}\n'
    client.password_policies.write("quoted", text)
    assert "quoted" in client.password_policies.list_policies()
    assert client.password_policies.read("quoted")["policy"] == text
    password = client.password_policies.generate("quoted")
    assert isinstance(password, Sensitive) and len(password) == 24
    client.password_policies.delete("quoted")
    with pytest.raises(NotFound, match="policy does not exist"):
        client.password_policies.read("quoted")


def test_an_unsatisfiable_password_policy_is_refused_with_the_reason(
    client: SecretsClient,
) -> None:
    with pytest.raises(BadRequest):
        client.password_policies.write("impossible", 'length = 0\nrule "charset" {}\n')
    assert "impossible" not in client.password_policies.list_policies()


def test_the_policy_tester_shows_shape_and_never_the_passwords(
    demo_client: SecretsClient,
) -> None:
    frame = demo_client.password_policies.test_policy("strong-32", samples=10)
    assert list(frame.columns) == ["length", "lower", "upper", "digit", "symbol"]
    assert len(frame) == 10 and frame.index.name == "sample"
    assert frame[["lower", "upper", "digit", "symbol"]].all().all()
    assert frame.attrs["summary"]["min_length"] == frame.attrs["summary"]["max_length"] == 32
    narrow = demo_client.password_policies.test_policy("alnum-20", samples=5)
    assert not narrow["symbol"].any()
    with pytest.raises(InputError):
        demo_client.password_policies.test_policy("alnum-20", samples=0)


def test_acl_rgp_and_egp_policies_round_trip(client: SecretsClient) -> None:
    client.policies.write("acl", "readers", 'path "kv/*" {\n  capabilities = ["read"]\n}\n')
    assert "readers" in client.policies.list_policies("acl")
    assert 'path "kv/*"' in client.policies.read("acl", "readers").policy
    client.policies.write(
        "egp",
        "guard",
        "main = rule { true }",
        enforcement_level="advisory",
        paths="kv/*, sys/mounts",
    )
    egp = client.policies.read("egp", "guard")
    assert egp["paths"] == ["kv/*", "sys/mounts"] and egp["enforcement_level"] == "advisory"
    assert "guard" in client.policies.list_policies("egp")
    assert client.policies.name_path_map()["guard"] == [
        {"path": "kv/", "glob": True},
        {"path": "sys/mounts", "glob": False},
    ]
    client.policies.delete("egp", "guard")
    assert "guard" not in client.policies.list_policies("egp")
    assert "guard" not in client.policies.name_path_map()


def test_the_egp_names_come_from_the_name_path_map_not_the_command_line_keys(
    demo_client: SecretsClient,
) -> None:
    assert demo_client.policies.list_policies("egp") == ["internal-network", "protect-policies"]
    assert demo_client.policies.name_path_map() == {
        "internal-network": [
            {"path": "database/", "glob": True},
            {"path": "sys/leases/", "glob": True},
        ],
        "protect-policies": [{"path": "sys/policies/acl/", "glob": True}],
    }
    frame = demo_client.policies.policies_frame(["egp"])
    assert list(frame["name"]) == ["internal-network", "protect-policies"]


def test_the_demo_rgp_and_egp_texts_say_the_sandbox_does_not_evaluate_them(
    demo_client: SecretsClient,
) -> None:
    for kind in ("rgp", "egp"):
        for name in demo_client.policies.list_policies(kind):
            text = demo_client.policies.read(kind, name)["policy"]
            assert text.startswith("# Stored, not evaluated by the sandbox."), (kind, name)


def test_policy_arguments_are_checked_before_sending(client: SecretsClient) -> None:
    with pytest.raises(InputError, match="enforcement_level"):
        client.policies.write("rgp", "r", "main = rule { true }", enforcement_level="strict")
    with pytest.raises(InputError, match="paths is required"):
        client.policies.write("egp", "e", "main = rule { true }", enforcement_level="advisory")
    with pytest.raises(InputError, match="kind"):
        client.policies.list_policies("sentinel")


def test_the_policies_frame_holds_every_kind(demo_client: SecretsClient) -> None:
    frame = demo_client.policies.policies_frame()
    assert list(frame.columns) == ["kind", "name", "enforcement_level", "paths", "policy_lines"]
    assert set(frame["kind"]) == {"acl", "rgp", "egp"}
    egp = frame[frame["name"] == "internal-network"].iloc[0]
    assert egp["kind"] == "egp" and egp["paths"] == ["database/*", "sys/leases/*"]
    assert egp["enforcement_level"] == "advisory"
    default = frame[(frame["kind"] == "acl") & (frame["name"] == "default")].iloc[0]
    text = demo_client.policies.read("acl", "default").policy
    assert default["policy_lines"] == len(text.splitlines())


def test_the_plugin_catalog_frame_and_registration(client: SecretsClient) -> None:
    catalog = client.plugins.catalog()
    assert catalog.index.names == ["type", "name", "version"]
    assert catalog.index.is_unique
    assert list(catalog.columns) == ["builtin", "deprecation_status"]
    assert ("database", "snowflake-database-plugin") in catalog.index
    assert len(catalog.groupby(level="type")) == 3
    client.plugins.register(
        "secret",
        "my-engine",
        sha256="ab" * 32,
        command="my-engine",
        args=["-v"],
        env={"LEVEL": "debug"},
        version="v1.0.0",
    )
    assert "my-engine" in client.plugins.list_plugins("secret")
    entry = client.plugins.read("secret", "my-engine", version="v1.0.0")
    assert entry["sha256"] == "ab" * 32 and entry["args"] == ["-v"]
    client.plugins.delete("secret", "my-engine", version="v1.0.0")
    assert "my-engine" not in client.plugins.list_plugins("secret")


def test_a_plugin_sha256_that_is_not_64_hex_digits_is_refused_before_sending(
    client: SecretsClient,
) -> None:
    with pytest.raises(InputError, match="64 hexadecimal"):
        client.plugins.register("secret", "x", sha256="abc", command="x")
    with pytest.raises(InputError, match="key=value"):
        client.plugins.register("secret", "x", sha256="0" * 64, command="x", env=["oops"])
    assert "x" not in client.plugins.list_plugins("secret")
