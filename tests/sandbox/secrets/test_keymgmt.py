"""The key management engine over HTTP: keys, versions, KMS providers, distribution, refusals."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.sandbox.secrets._access_api import assert_error, issue, put_acl, v1
from toolkit._time import parse_time
from toolkit.sandbox import Sandbox
from toolkit.sandbox._plain import dump, round_trip
from toolkit.sandbox.secrets.engines.keymgmt.demo import DEMO_KEYS, DEMO_PROVIDERS
from toolkit.sandbox.secrets.engines.keymgmt.http import distribution_document, key_document
from toolkit.sandbox.secrets.engines.keymgmt.state import KeyManagementEngine


@pytest.fixture
def km(empty_sandbox: Sandbox) -> Iterator[httpx.Client]:
    """A root /v1 client of a sandbox without demo data (the engine starts empty)."""
    with v1(empty_sandbox) as client:
        yield client


def engine(sb: Sandbox, mount: str = "keymgmt") -> KeyManagementEngine:
    found = sb.secrets.mounts.engine(mount)
    assert found is not None
    backend: KeyManagementEngine = found.backend
    return backend


def ok(response: httpx.Response, status: int = 204) -> httpx.Response:
    assert response.status_code == status, response.text
    return response


def listing(client: httpx.Client, path: str) -> list[str]:
    response = client.request("LIST", path)
    if response.status_code == 404:
        return []
    return list(ok(response, 200).json()["data"]["keys"])


def data(client: httpx.Client, path: str) -> dict[str, Any]:
    return dict(ok(client.get(path), 200).json()["data"])


def snapshot(client: httpx.Client, mount: str = "keymgmt") -> dict[str, Any]:
    """Everything the engine answers: keys, providers and what each provider holds."""
    keys = {k: data(client, f"{mount}/key/{k}") for k in listing(client, f"{mount}/key")}
    providers = {}
    for name in listing(client, f"{mount}/kms"):
        held = {
            k: data(client, f"{mount}/kms/{name}/key/{k}")
            for k in listing(client, f"{mount}/kms/{name}/key")
        }
        providers[name] = {"provider": data(client, f"{mount}/kms/{name}"), "keys": held}
    return {"keys": keys, "providers": providers}


def setup_keys_and_providers(client: httpx.Client) -> None:
    ok(client.post("keymgmt/key/data", json={"type": "aes256-gcm96"}))
    ok(client.post("keymgmt/key/signer", json={"type": "rsa-2048"}))
    ok(client.put("keymgmt/kms/aws", json={"provider": "awskms", "key_collection": "us-east-1"}))
    ok(
        client.put(
            "keymgmt/kms/azure",
            json={"provider": "azurekeyvault", "key_collection": "kv-signing"},
        )
    )


# -- keys ---------------------------------------------------------------------------------------


def test_an_aes_key_has_real_material_that_is_never_answered(
    km: httpx.Client, empty_sandbox: Sandbox
) -> None:
    ok(km.post("keymgmt/key/data", json={"type": "aes256-gcm96"}))
    response = ok(km.get("keymgmt/key/data"), 200)
    key = response.json()["data"]
    assert key["type"] == "aes256-gcm96" and key["latest_version"] == 1
    assert key["deletion_allowed"] is False and key["min_enabled_version"] == 0
    assert set(key["keys"]) == {"1"} and set(key["keys"]["1"]) == {"creation_time"}
    material = engine(empty_sandbox).keys["data"].versions[1].material
    assert material is not None and len(material) == 32
    for form in (material.hex(), base64.b64encode(material).decode()):
        assert form not in response.text


@pytest.mark.parametrize("bits", [2048, 3072, 4096])
def test_an_rsa_key_answers_its_pem_public_key_of_the_type_size(
    km: httpx.Client, empty_sandbox: Sandbox, bits: int
) -> None:
    ok(km.post("keymgmt/key/signer", json={"type": f"rsa-{bits}"}))
    response = ok(km.get("keymgmt/key/signer"), 200)
    version = response.json()["data"]["keys"]["1"]
    public = serialization.load_pem_public_key(version["public_key"].encode())
    assert isinstance(public, rsa.RSAPublicKey) and public.key_size == bits
    private = serialization.load_der_private_key(
        engine(empty_sandbox).keys["signer"].versions[1].material or b"", password=None
    )
    assert isinstance(private, rsa.RSAPrivateKey)
    assert private.public_key().public_numbers() == public.public_numbers()
    assert "PRIVATE KEY" not in response.text


def test_a_key_is_rsa_2048_by_default_and_its_creation_time_is_the_sandbox_clock(
    km: httpx.Client, empty_sandbox: Sandbox
) -> None:
    before = empty_sandbox.clock.now()
    ok(km.post("keymgmt/key/default"))
    key = data(km, "keymgmt/key/default")
    assert key["type"] == "rsa-2048" and key["name"] == "default"
    created = parse_time(key["keys"]["1"]["creation_time"])
    assert created is not None and before <= created <= empty_sandbox.clock.now()


def test_the_type_is_fixed_at_creation(km: httpx.Client) -> None:
    ok(km.post("keymgmt/key/data", json={"type": "aes256-gcm96"}))
    before = snapshot(km)
    assert_error(
        km.post("keymgmt/key/data", json={"type": "rsa-4096"}),
        400,
        "type",
        "fixed at creation",
        "aes256-gcm96",
    )
    assert snapshot(km) == before
    # The same type again changes nothing and is no error.
    ok(km.post("keymgmt/key/data", json={"type": "aes256-gcm96"}))
    assert snapshot(km) == before


def test_an_unknown_key_type_is_refused_and_nothing_is_created(km: httpx.Client) -> None:
    assert_error(km.post("keymgmt/key/k", json={"type": "rsa-1024"}), 400, "type", "rsa-1024")
    assert km.get("keymgmt/key/k").status_code == 404


def test_keys_are_listed_and_an_empty_list_is_404_as_on_the_real_server(km: httpx.Client) -> None:
    empty = km.request("LIST", "keymgmt/key")
    assert empty.status_code == 404 and empty.json() == {"errors": []}
    ok(km.post("keymgmt/key/b", json={"type": "aes256-gcm96"}))
    ok(km.post("keymgmt/key/a", json={"type": "aes256-gcm96"}))
    assert listing(km, "keymgmt/key") == ["a", "b"]
    assert ok(km.get("keymgmt/key", params={"list": "true"}), 200).json()["data"]["keys"] == [
        "a",
        "b",
    ]


def test_rotate_adds_versions_each_with_its_own_creation_time(
    km: httpx.Client, empty_sandbox: Sandbox
) -> None:
    ok(km.post("keymgmt/key/signer", json={"type": "rsa-2048"}))
    empty_sandbox.clock.advance(3600)
    ok(km.put("keymgmt/key/signer/rotate"))
    empty_sandbox.clock.advance(3600)
    ok(km.post("keymgmt/key/signer/rotate"))
    key = data(km, "keymgmt/key/signer")
    assert key["latest_version"] == 3 and sorted(key["keys"]) == ["1", "2", "3"]
    times = [parse_time(key["keys"][v]["creation_time"]) for v in ("1", "2", "3")]
    assert times[0] < times[1] < times[2]  # type: ignore[operator]
    assert len({key["keys"][v]["public_key"] for v in ("1", "2", "3")}) == 3


def test_min_enabled_version_lies_between_zero_and_the_latest_version(km: httpx.Client) -> None:
    ok(km.post("keymgmt/key/data", json={"type": "aes256-gcm96"}))
    ok(km.put("keymgmt/key/data/rotate"))
    ok(km.put("keymgmt/key/data/rotate"))
    ok(km.put("keymgmt/key/data", json={"min_enabled_version": 2}))
    assert data(km, "keymgmt/key/data")["min_enabled_version"] == 2
    before = snapshot(km)
    assert_error(
        km.put("keymgmt/key/data", json={"min_enabled_version": 4}),
        400,
        "min_enabled_version",
        "latest version",
    )
    assert_error(
        km.put("keymgmt/key/data", json={"min_enabled_version": -1}),
        400,
        "min_enabled_version",
        "negative",
    )
    assert_error(
        km.put("keymgmt/key/data", json={"min_enabled_version": "two"}),
        400,
        "min_enabled_version",
    )
    assert snapshot(km) == before
    ok(km.put("keymgmt/key/data", json={"min_enabled_version": 0}))
    assert data(km, "keymgmt/key/data")["min_enabled_version"] == 0


def test_an_update_with_a_bad_field_changes_no_other_field(km: httpx.Client) -> None:
    ok(km.post("keymgmt/key/data", json={"type": "aes256-gcm96"}))
    before = snapshot(km)
    assert_error(
        km.put("keymgmt/key/data", json={"deletion_allowed": True, "min_enabled_version": 9}),
        400,
        "min_enabled_version",
    )
    assert_error(
        km.put("keymgmt/key/data", json={"deletion_allowed": "maybe"}), 400, "deletion_allowed"
    )
    assert snapshot(km) == before


def test_delete_is_refused_until_deletion_is_allowed(km: httpx.Client) -> None:
    ok(km.post("keymgmt/key/data", json={"type": "aes256-gcm96"}))
    assert_error(km.delete("keymgmt/key/data"), 400, "deletion_allowed", "not allowed")
    assert data(km, "keymgmt/key/data")["name"] == "data"
    ok(km.put("keymgmt/key/data", json={"deletion_allowed": True}))
    assert data(km, "keymgmt/key/data")["deletion_allowed"] is True
    ok(km.delete("keymgmt/key/data"))
    assert km.get("keymgmt/key/data").status_code == 404


def test_delete_is_refused_while_the_key_is_in_a_provider(km: httpx.Client) -> None:
    setup_keys_and_providers(km)
    ok(km.put("keymgmt/key/data", json={"deletion_allowed": True}))
    ok(km.put("keymgmt/kms/aws/key/data", json={"purpose": ["encrypt", "decrypt"]}))
    before = snapshot(km)
    assert_error(km.delete("keymgmt/key/data"), 400, "still distributed", "'aws'")
    assert snapshot(km) == before
    ok(km.delete("keymgmt/kms/aws/key/data"))
    ok(km.delete("keymgmt/key/data"))
    assert "data" not in listing(km, "keymgmt/key")


# -- KMS providers -------------------------------------------------------------------------------


def test_a_provider_answers_its_type_and_collection_and_never_its_credentials(
    km: httpx.Client, empty_sandbox: Sandbox
) -> None:
    secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY"
    body = {
        "provider": "awskms",
        "key_collection": "us-west-1",
        "credentials": {"access_key": "AKIAEXAMPLE", "secret_key": secret},
    }
    ok(km.put("keymgmt/kms/aws", json=body))
    response = ok(km.get("keymgmt/kms/aws"), 200)
    assert response.json()["data"] == {"key_collection": "us-west-1", "provider": "awskms"}
    assert secret not in response.text and "AKIAEXAMPLE" not in response.text
    # Not kept either: the stored state of the whole server does not hold them.
    with empty_sandbox.secrets.lock:
        stored = dump({"secrets": empty_sandbox.secrets})
    assert secret.encode() not in stored and b"AKIAEXAMPLE" not in stored
    assert listing(km, "keymgmt/kms") == ["aws"]


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        ({"key_collection": "us-east-1"}, ["missing provider"]),
        ({"provider": "awskms"}, ["missing key_collection"]),
        ({"provider": "vaultkms", "key_collection": "x"}, ["provider", "vaultkms", "awskms"]),
        (
            {"provider": "awskms", "key_collection": "x", "credentials": "key=value"},
            ["credentials"],
        ),
        (
            {"provider": "awskms", "key_collection": "x", "credentials": {"access_key": 1}},
            ["credentials"],
        ),
    ],
)
def test_a_bad_provider_is_refused_naming_the_field_and_not_created(
    km: httpx.Client, body: dict[str, Any], fragments: list[str]
) -> None:
    assert_error(km.put("keymgmt/kms/p", json=body), 400, *fragments)
    assert km.get("keymgmt/kms/p").status_code == 404


def test_provider_and_key_collection_are_fixed_after_creation(km: httpx.Client) -> None:
    setup_keys_and_providers(km)
    before = snapshot(km)
    assert_error(
        km.put("keymgmt/kms/aws", json={"provider": "gcpckms", "key_collection": "us-east-1"}),
        400,
        "provider",
        "fixed after creation",
    )
    assert_error(
        km.put("keymgmt/kms/aws", json={"provider": "awskms", "key_collection": "eu-west-1"}),
        400,
        "key_collection",
        "fixed after creation",
    )
    assert snapshot(km) == before
    # New credentials for the same provider are an update.
    ok(km.put("keymgmt/kms/aws", json={"credentials": {"access_key": "A", "secret_key": "S"}}))
    assert snapshot(km) == before


def test_a_provider_holding_keys_cannot_be_deleted(km: httpx.Client) -> None:
    setup_keys_and_providers(km)
    ok(km.put("keymgmt/kms/aws/key/data", json={"purpose": "encrypt"}))
    ok(km.put("keymgmt/kms/aws/key/signer", json={"purpose": "encrypt,decrypt"}))
    before = snapshot(km)
    assert_error(km.delete("keymgmt/kms/aws"), 400, "still holds keys", "data, signer")
    assert snapshot(km) == before
    ok(km.delete("keymgmt/kms/aws/key/data"))
    assert_error(km.delete("keymgmt/kms/aws"), 400, "signer")
    ok(km.delete("keymgmt/kms/aws/key/signer"))
    ok(km.delete("keymgmt/kms/aws"))
    assert listing(km, "keymgmt/kms") == ["azure"]
    assert {"data", "signer"} <= set(listing(km, "keymgmt/key"))


# -- distribution --------------------------------------------------------------------------------


def test_distributing_a_key_sends_every_version_under_a_timestamped_name(
    km: httpx.Client, empty_sandbox: Sandbox
) -> None:
    setup_keys_and_providers(km)
    ok(km.put("keymgmt/key/signer/rotate"))
    now = int(empty_sandbox.clock.now().timestamp())
    ok(km.put("keymgmt/kms/azure/key/signer", json={"purpose": ["sign", "verify"]}))
    held = data(km, "keymgmt/kms/azure/key/signer")
    name, _, stamp = held["name"].rpartition("-")
    assert name == "signer" and abs(int(stamp) - now) <= 2
    assert held["protection"] == "hsm"  # the default
    assert held["purpose"] == ["sign", "verify"]
    assert sorted(held["versions"]) == ["1", "2"]
    assert len(set(held["versions"].values())) == 2
    assert all(isinstance(v, str) and v for v in held["versions"].values())
    assert listing(km, "keymgmt/key/signer/kms") == ["azure"]
    assert listing(km, "keymgmt/kms/azure/key") == ["signer"]


def test_purpose_may_be_a_comma_separated_string_and_protection_is_kept(km: httpx.Client) -> None:
    setup_keys_and_providers(km)
    body = {"purpose": "encrypt, decrypt", "protection": "software"}
    ok(km.put("keymgmt/kms/azure/key/signer", json=body))
    held = data(km, "keymgmt/kms/azure/key/signer")
    assert held["purpose"] == ["encrypt", "decrypt"] and held["protection"] == "software"


def test_a_rotation_of_a_distributed_key_reaches_its_provider(km: httpx.Client) -> None:
    setup_keys_and_providers(km)
    ok(km.put("keymgmt/kms/aws/key/data", json={"purpose": ["encrypt", "decrypt"]}))
    first = data(km, "keymgmt/kms/aws/key/data")["versions"]
    ok(km.put("keymgmt/key/data/rotate"))
    after = data(km, "keymgmt/kms/aws/key/data")["versions"]
    assert sorted(after) == ["1", "2"] and after["1"] == first["1"]


def test_purpose_and_protection_are_fixed_once_distributed(km: httpx.Client) -> None:
    setup_keys_and_providers(km)
    ok(km.put("keymgmt/kms/aws/key/data", json={"purpose": ["encrypt", "decrypt"]}))
    before = snapshot(km)
    assert_error(
        km.put("keymgmt/kms/aws/key/data", json={"purpose": ["encrypt"]}),
        400,
        "purpose",
        "fixed",
    )
    assert_error(
        km.put(
            "keymgmt/kms/aws/key/data",
            json={"purpose": ["encrypt", "decrypt"], "protection": "software"},
        ),
        400,
        "protection",
        "fixed",
    )
    # The same request again is accepted and changes nothing.
    ok(km.put("keymgmt/kms/aws/key/data", json={"purpose": "decrypt,encrypt"}))
    assert snapshot(km) == before


def test_a_key_goes_to_one_provider_and_a_provider_takes_many_keys(km: httpx.Client) -> None:
    setup_keys_and_providers(km)
    ok(km.put("keymgmt/kms/aws/key/signer", json={"purpose": ["encrypt"]}))
    before = snapshot(km)
    assert_error(
        km.put("keymgmt/kms/azure/key/signer", json={"purpose": ["sign"]}),
        400,
        "already distributed",
        "'aws'",
        "one provider only",
    )
    assert snapshot(km) == before
    ok(km.put("keymgmt/kms/aws/key/data", json={"purpose": ["encrypt"]}))
    assert listing(km, "keymgmt/kms/aws/key") == ["data", "signer"]


def test_a_key_removed_from_a_provider_stays_and_can_go_to_another(km: httpx.Client) -> None:
    setup_keys_and_providers(km)
    ok(km.put("keymgmt/kms/aws/key/signer", json={"purpose": ["encrypt"]}))
    ok(km.delete("keymgmt/kms/aws/key/signer"))
    assert km.get("keymgmt/kms/aws/key/signer").status_code == 404
    assert data(km, "keymgmt/key/signer")["latest_version"] == 1
    assert listing(km, "keymgmt/key/signer/kms") == []
    ok(km.put("keymgmt/kms/azure/key/signer", json={"purpose": ["sign", "verify"]}))
    assert listing(km, "keymgmt/key/signer/kms") == ["azure"]


@pytest.mark.parametrize(
    ("provider", "key", "body", "fragments"),
    [
        ("aws", "data", {}, ["missing purpose"]),
        ("aws", "data", {"purpose": []}, ["missing purpose"]),
        ("aws", "data", {"purpose": " , "}, ["purpose", "at least one"]),
        ("aws", "data", {"purpose": [1]}, ["purpose"]),
        ("aws", "data", {"purpose": ["fly"]}, ["purpose", "'fly'"]),
        ("aws", "data", {"purpose": ["encrypt"], "protection": "vault"}, ["protection", "vault"]),
        # One cloud provider takes only encrypt and decrypt.
        ("aws", "signer", {"purpose": ["sign"]}, ["purpose", "sign", "awskms"]),
        # A symmetric key cannot sign.
        ("azure", "data", {"purpose": ["encrypt"]}, ["aes256-gcm96", "azurekeyvault"]),
    ],
)
def test_a_bad_distribution_is_refused_naming_the_field_and_distributes_nothing(
    km: httpx.Client, provider: str, key: str, body: dict[str, Any], fragments: list[str]
) -> None:
    setup_keys_and_providers(km)
    before = snapshot(km)
    assert_error(km.put(f"keymgmt/kms/{provider}/key/{key}", json=body), 400, *fragments)
    assert snapshot(km) == before


def test_a_symmetric_key_cannot_be_given_signing_purposes(km: httpx.Client) -> None:
    ok(km.post("keymgmt/key/data", json={"type": "aes256-gcm96"}))
    ok(km.put("keymgmt/kms/gcp", json={"provider": "gcpckms", "key_collection": "projects/p"}))
    assert_error(
        km.put("keymgmt/kms/gcp/key/data", json={"purpose": ["encrypt", "sign"]}),
        400,
        "purpose",
        "sign",
        "aes256-gcm96",
    )
    assert listing(km, "keymgmt/kms/gcp/key") == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "keymgmt/key/nope"),
        ("PUT", "keymgmt/key/nope/rotate"),
        ("DELETE", "keymgmt/key/nope"),
        ("LIST", "keymgmt/key/nope/kms"),
        ("GET", "keymgmt/kms/nope"),
        ("DELETE", "keymgmt/kms/nope"),
        ("LIST", "keymgmt/kms/nope/key"),
        ("PUT", "keymgmt/kms/nope/key/data"),
        ("PUT", "keymgmt/kms/aws/key/nope"),
        ("GET", "keymgmt/kms/aws/key/data"),
        ("DELETE", "keymgmt/kms/aws/key/data"),
    ],
)
def test_an_unknown_key_or_provider_is_404(km: httpx.Client, method: str, path: str) -> None:
    setup_keys_and_providers(km)
    before = snapshot(km)
    body = {"purpose": ["encrypt"]} if method == "PUT" else None
    response = km.request(method, path, json=body)
    assert response.status_code == 404, response.text
    assert snapshot(km) == before


def test_a_body_that_is_not_json_changes_nothing(km: httpx.Client) -> None:
    setup_keys_and_providers(km)
    before = snapshot(km)
    response = km.put(
        "keymgmt/kms/aws/key/data",
        content=b"{purpose: encrypt",
        headers={"Content-Type": "application/json"},
    )
    assert_error(response, 400, "JSON")
    assert snapshot(km) == before


# -- mounts and access ------------------------------------------------------------------------------


def test_the_engine_mounted_elsewhere_keeps_its_own_keys(km: httpx.Client) -> None:
    ok(km.post("sys/mounts/kms/eu", json={"type": "keymgmt"}))
    ok(km.post("kms/eu/key/eu-data", json={"type": "aes256-gcm96"}))
    ok(km.put("kms/eu/kms/gcp", json={"provider": "gcpckms", "key_collection": "projects/eu"}))
    ok(km.put("kms/eu/kms/gcp/key/eu-data", json={"purpose": "encrypt,decrypt"}))
    assert listing(km, "kms/eu/key") == ["eu-data"]
    assert listing(km, "keymgmt/key") == [] and listing(km, "keymgmt/kms") == []
    versions = data(km, "kms/eu/kms/gcp/key/eu-data")["versions"]
    assert versions["1"].startswith("projects/eu/cryptoKeys/eu-data-")


def test_a_token_without_the_capability_is_denied_and_nothing_changes(
    km: httpx.Client, empty_sandbox: Sandbox
) -> None:
    setup_keys_and_providers(km)
    put_acl(km, "key-readers", 'path "keymgmt/key/*" { capabilities = ["read"] }')
    token = issue(km, policies=["key-readers"])
    before = snapshot(km)
    with v1(empty_sandbox, token) as reader:
        assert data(reader, "keymgmt/key/data")["type"] == "aes256-gcm96"
        assert_error(reader.put("keymgmt/key/data/rotate"), 403, "permission denied")
        assert_error(reader.delete("keymgmt/key/data"), 403, "permission denied")
        assert_error(reader.get("keymgmt/kms/aws"), 403, "permission denied")
        assert_error(
            reader.put("keymgmt/kms/aws/key/data", json={"purpose": ["encrypt"]}),
            403,
            "permission denied",
        )
    assert snapshot(km) == before


def test_writing_a_new_key_needs_create_and_changing_one_needs_update(
    km: httpx.Client, empty_sandbox: Sandbox
) -> None:
    setup_keys_and_providers(km)
    put_acl(km, "key-updaters", 'path "keymgmt/key/*" { capabilities = ["update", "read"] }')
    token = issue(km, policies=["key-updaters"])
    with v1(empty_sandbox, token) as updater:
        ok(updater.put("keymgmt/key/data", json={"deletion_allowed": True}))
        assert_error(
            updater.post("keymgmt/key/fresh", json={"type": "aes256-gcm96"}),
            403,
            "permission denied",
        )
    assert km.get("keymgmt/key/fresh").status_code == 404
    assert data(km, "keymgmt/key/data")["deletion_allowed"] is True


# -- demo data ---------------------------------------------------------------------------------


def test_the_demo_has_keys_of_every_kind_rotated_and_spread_over_providers(
    demo_api: httpx.Client, demo_sandbox: Sandbox
) -> None:
    keys = listing(demo_api, "keymgmt/key")
    assert keys == sorted(k.name for k in DEMO_KEYS)
    assert listing(demo_api, "keymgmt/kms") == sorted(DEMO_PROVIDERS)
    state = engine(demo_sandbox)
    assert {k.type for k in state.keys.values()} >= {"aes256-gcm96", "rsa-2048", "rsa-3072"}
    assert any(k.latest_version >= 3 for k in state.keys.values())
    assert any(k.min_enabled_version > 1 for k in state.keys.values())
    for name, (provider, collection) in DEMO_PROVIDERS.items():
        assert data(demo_api, f"keymgmt/kms/{name}") == {
            "key_collection": collection,
            "provider": provider,
        }
        assert listing(demo_api, f"keymgmt/kms/{name}/key")  # every provider holds keys
    undistributed = [k for k in keys if not listing(demo_api, f"keymgmt/key/{k}/kms")]
    assert undistributed  # and some keys sit in the engine only


def test_demo_times_are_whole_days_before_the_clock_start(
    demo_api: httpx.Client, demo_sandbox: Sandbox
) -> None:
    start = demo_sandbox.clock.start
    key = data(demo_api, "keymgmt/key/payments-dek")
    for version in key["keys"].values():
        created = parse_time(version["creation_time"])
        assert created is not None and created < start
        assert (start - created).total_seconds() % 86400 == 0
    held = data(demo_api, "keymgmt/kms/aws-payments/key/payments-dek")
    stamp = int(held["name"].rpartition("-")[2])
    assert (int(start.timestamp()) - stamp) % 86400 == 0


def test_the_engine_state_survives_being_stored_and_loaded(
    km: httpx.Client, empty_sandbox: Sandbox
) -> None:
    setup_keys_and_providers(km)
    ok(km.put("keymgmt/kms/azure/key/signer", json={"purpose": ["sign", "verify"]}))
    before = snapshot(km)  # also makes the RSA material, which must be kept
    with empty_sandbox.secrets.lock:
        restored = round_trip({"secrets": empty_sandbox.secrets})["secrets"]
    mount = restored.mounts.engine("keymgmt")
    assert mount is not None and mount.backend.service is restored
    state: KeyManagementEngine = mount.backend
    assert key_document(state.read_key("signer")) == before["keys"]["signer"]
    assert (
        distribution_document(state.distribution("azure", "signer"))
        == (before["providers"]["azure"]["keys"]["signer"])
    )
