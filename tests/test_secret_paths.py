"""Known secrets fed through every client call that takes or returns one, grepped for everywhere.

Each test sends secrets it made (random, so nothing else can match) or keeps
the ones the sandbox handed back, then looks for them in the ``repr``/``str``/
HTML of what came back, in every view frame's ``to_string``/``to_html``, in the
errors of calls made to fail (a bad share, a wrong nonce, a secret token
refused, a refused address, a TLS failure, a 400) with their whole cause and
context chain, in DEBUG logs (httpx and httpcore included) and on stdout and
stderr. The module reports how many secrets went through how many places.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._leaks import Leaks
from toolkit import (
    APIError,
    BadRequest,
    ConnectError,
    PermissionDenied,
    PlatformClient,
    Sensitive,
    TimeoutError,
    TLSError,
    ToolkitError,
    Unauthorized,
)
from toolkit._http import RetryPolicy
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient

pytestmark = pytest.mark.usefixtures("debug_logs")

Connect = Callable[..., Any]


@pytest.fixture(params=["default connector", "connector passed in"])
def connect(request: pytest.FixtureRequest) -> Iterator[Connect]:
    """Build clients on the HTTP layer's own connector, or on one passed in (no TLS checks)."""
    opened: list[Any] = []

    def make(cls: type[Any], address: str, token: str, **options: Any) -> Any:
        if request.param == "connector passed in":
            import aiohttp

            options["connector"] = lambda: aiohttp.TCPConnector(ssl=False)
        client = cls(address, token, **options)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()


@pytest.fixture
def root(sandbox: Sandbox, connect: Connect) -> SecretsClient:
    client: SecretsClient = connect(SecretsClient, sandbox.address, sandbox.token)
    return client


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the grep itself ---------------------------------------------------------------------
def test_the_grep_finds_a_secret_wherever_it_was_put() -> None:
    """The checks below could fail: a secret in a log line, a frame, a cause is found."""
    import pandas as pd

    probe = Leaks()
    value = probe.new("probe")
    inner = ValueError(f"body was {value}")
    outer = RuntimeError("wrapped")
    outer.__context__ = inner
    for where, thing in [
        ("a log line", f"DEBUG sent {value}"),
        ("a frame", pd.DataFrame({"x": [value]})),
        ("an exception's context", outer),
        ("a record's repr", {"password": value}),
    ]:
        with pytest.raises(AssertionError, match="probe leaked"):
            probe.check(where, thing)
    probe.check("a hidden value", Sensitive(value), pd.DataFrame({"x": [Sensitive(value)]}))


# -- tokens --------------------------------------------------------------------------------
def test_a_created_token_shows_nowhere_and_its_refusals_do_not_name_it(
    sandbox: Sandbox, root: SecretsClient, connect: Connect, leaks: Leaks
) -> None:
    created = root.tokens.create(["default"], "1h", display_name="leak-probe")
    token = leaks.feed(created["client_token"], "created token")
    leaks.check("tokens.create record", created, created["client_token"])
    limited = connect(SecretsClient, sandbox.address, token)
    me = limited.tokens.lookup_self()
    leaks.check("lookup_self record", me, limited, limited.tokens)
    refusals = [
        lambda: limited.database.generate_credentials("app"),
        lambda: limited.ad.check_out("break-glass"),
        lambda: limited.pki.issue("web-server", "www.example.com"),
        lambda: limited.broker.generate_credentials("consumer"),
        lambda: limited.ad.configure("cn=admin", leaks.new("bind password sent with a 403")),
    ]
    for call in refusals:
        with pytest.raises(PermissionDenied) as caught:
            call()
        leaks.check("a 403 for a created token", caught.value)


def test_an_unknown_secret_token_is_refused_without_being_named(
    sandbox: Sandbox, connect: Connect, leaks: Leaks
) -> None:
    token = leaks.new("unknown secrets token")
    client = connect(SecretsClient, sandbox.address, token)
    with pytest.raises(PermissionDenied) as caught:
        client.tokens.lookup_self()
    leaks.check("a 403 for an unknown token", caught.value, client)
    bearer = leaks.new("unknown platform token")
    platform = connect(PlatformClient, sandbox.address, bearer)
    with pytest.raises(Unauthorized) as refused:
        platform.organizations.organizations_frame()
    leaks.check("a 401 for an unknown platform token", refused.value, platform)


# -- the HTTP layer's errors ------------------------------------------------------------------
def test_transport_errors_carry_no_token(sandbox: Sandbox, connect: Connect, leaks: Leaks) -> None:
    """Refused address, TLS failure, 403 and 400: no header, no body in the error or its chain."""
    token = leaks.new("token")
    share = leaks.new("share body")
    refused = f"http://127.0.0.1:{_free_port()}"
    tls = sandbox.address.replace("http://", "https://")
    expected: list[tuple[str, type[ToolkitError]]] = [(refused, ConnectError), (tls, TLSError)]
    once = RetryPolicy(attempts=1)  # what is refused once is refused again: no pauses
    for address, error in expected:
        client = connect(SecretsClient, address, token, timeout=5, retry=once)
        with pytest.raises(error) as caught:
            client.rekey.update(share, "nonce")
        leaks.check(f"{error.__name__} from {address}", caught.value)
        platform = connect(PlatformClient, address, token, timeout=5, retry=once)
        with pytest.raises(error) as caught:
            platform.organizations.organizations_frame()
        leaks.check(f"platform {error.__name__} from {address}", caught.value)
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"http://127.0.0.1:{silent.getsockname()[1]}"
        client = connect(SecretsClient, address, token, timeout=0.5, retry=RetryPolicy(attempts=1))
        with pytest.raises(TimeoutError) as timed_out:
            client.rekey.update(share, "nonce")
        leaks.check("a timeout", timed_out.value)
    stranger = connect(SecretsClient, sandbox.address, token)
    with pytest.raises(PermissionDenied) as denied:
        stranger.ad.configure("cn=admin", share)
    leaks.check("a 403 with a secret token and a password in the body", denied.value)
    root = connect(SecretsClient, sandbox.address, sandbox.token)
    with pytest.raises(BadRequest) as bad:
        root.rekey.update(share, "nonce")  # no attempt in progress, and not a share
    leaks.check("a 400 with a share in the body", bad.value)
    with pytest.raises(BadRequest) as bad_plugin:
        root.database.configure_connection("leaky", "no-such-plugin", password=share)
    leaks.check("a 400 with a database password in the body", bad_plugin.value)


# -- rekey shares and the new keys -------------------------------------------------------------
def test_rekey_shares_sent_and_received_show_nowhere(
    sandbox: Sandbox, root: SecretsClient, leaks: Leaks, tmp_path: Path
) -> None:
    shares = leaks.feed_unseal_shares(sandbox, tmp_path)
    status = root.rekey.init(3, 2)
    nonce = str(status["nonce"])
    bad = leaks.new("a made-up share")
    with pytest.raises(APIError) as wrong_share:
        root.rekey.update(bad, nonce)
    leaks.check("a refused made-up share", wrong_share.value)
    with pytest.raises(APIError) as wrong_nonce:
        root.rekey.update(shares[0], "not-the-nonce")
    leaks.check("a real share with a wrong nonce", wrong_nonce.value)
    last = None
    for share in shares[: int(root.seal.status()["t"])]:
        last = root.rekey.update(Sensitive(share, "key share"), nonce)
        leaks.check("a rekey update record", last)
    assert last is not None and last.get("complete")
    new = last["keys"] + last.get("keys_base64", [])
    assert new, "the last update hands out the new shares"
    for i, value in enumerate(new):
        leaks.feed(value, f"new share {i + 1}")
    leaks.check("the completed rekey", last, new, root.rekey.status())


# -- generated passwords ----------------------------------------------------------------------
def test_generated_passwords_show_nowhere(root: SecretsClient, leaks: Leaks) -> None:
    for name in root.password_policies.list_policies():
        password = root.password_policies.generate(name)
        leaks.feed(password, f"password from {name}")
        leaks.check("a generated password", password, [password], {"p": password})
        leaks.check("a policy sample frame", root.password_policies.test_policy(name, 5))


# -- database, broker and directory credentials -------------------------------------------------
def test_database_credentials_show_nowhere(root: SecretsClient, leaks: Leaks) -> None:
    db = root.database
    configured = db.configure_connection(
        "leak-probe",
        "postgresql-database-plugin",
        connection_url="postgresql://{{username}}:{{password}}@db.example:5432/app",
        username="admin",
        password=leaks.new("database admin password"),
        allowed_roles="*",
    )
    in_url = leaks.new("a password written into the URL")
    warned = db.configure_connection(
        "leak-probe-url",
        "postgresql-database-plugin",
        connection_url=f"postgresql://admin:{in_url}@db.example:5432/app",
        allowed_roles="*",
    )
    assert warned["warnings"], "the server warns of a password in the URL"
    leaks.check(
        "a connection with a password in its URL", warned, db.read_connection("leak-probe-url")
    )
    for role in db.list_roles():
        creds = db.generate_credentials(role)
        leaks.feed(creds["password"], f"database password for {role}")
        leaks.check("dynamic database credentials", creds)
    for role in db.list_static_roles():
        creds = db.static_credentials(role)
        leaks.feed(creds["password"], f"static password of {role}")
        leaks.check("static database credentials", creds, db.rotate_static_role(role))
    leaks.check(
        "database views",
        configured,
        db.read_connection("leak-probe"),
        db.connections_frame(),
        db.roles_frame(),
        db.static_roles_frame(),
        root.leases.list_leases("database/creds/app/"),
    )


def test_broker_credentials_show_nowhere(root: SecretsClient, leaks: Leaks) -> None:
    broker = root.broker
    broker.configure_connection(
        "http://broker.example:15672",
        "admin",
        leaks.new("broker admin password"),
        verify_connection=False,
    )
    for role in broker.list_roles():
        creds = broker.generate_credentials(role)
        leaks.feed(creds["password"], f"broker password for {role}")
        leaks.check("broker credentials", creds)
    leaks.check(
        "broker views", broker.roles_frame(), broker.vhost_permissions(), broker.topic_permissions()
    )


def test_directory_credentials_and_check_outs_show_nowhere(
    root: SecretsClient, leaks: Leaks
) -> None:
    ad = root.ad
    config = ad.read_config()
    ad.configure(str(config["binddn"]), leaks.new("bind password"), url=config.get("url"))
    leaks.check("directory config", ad.read_config())
    for role in ad.list_roles():
        creds = ad.creds(role)
        for field in ("current_password", "last_password"):
            if creds.get(field):
                leaks.feed(creds[field], f"{field} of {role}")
        leaks.check("directory creds", creds)
    for name in ad.list_sets():
        lent = ad.check_out(name)
        leaks.feed(lent["password"], f"password checked out of {name}")
        leaks.check("a check-out", lent, ad.status(name), ad.library_status())
        ad.check_in(name, str(lent["service_account_name"]))
    leaks.check("directory views", ad.library_status(), ad.roles_frame())


# -- private keys --------------------------------------------------------------------------------
def test_private_keys_show_nowhere(root: SecretsClient, leaks: Leaks, tmp_path: Path) -> None:
    pki = root.pki
    issued = pki.issue("web-server", "leak.example.com")
    assert issued.private_key is not None
    key = issued.private_key_pem()
    leaks.feed_private_key(key, "issued private key")
    leaks.check(
        "an issued certificate",
        issued,
        issued.record(),
        pki.session_certificates(),
        issued.private_key,
    )
    saved = issued.save_key(tmp_path / "leak.key")
    assert saved.read_text().strip() == key.strip(), "the key itself is still handed over"
    with pytest.raises(APIError) as bad_bundle:
        pki.import_bundle(
            "-----BEGIN PRIVATE KEY-----\n"
            + leaks.new("a broken key")
            + "\n-----END PRIVATE KEY-----\n"
        )
    leaks.check("a refused key bundle", bad_bundle.value)
    for ref in pki.list_keys():
        leaks.check("a PKI key record", pki.read_key(ref))
    leaks.check("PKI views", pki.issuers_frame(), pki.roles_frame())


# -- KMS provider credentials --------------------------------------------------------------------
def test_kms_provider_credentials_show_nowhere(root: SecretsClient, leaks: Leaks) -> None:
    kms = root.keymgmt
    credentials = {
        "access_key": leaks.new("KMS access key"),
        "secret_key": Sensitive(leaks.new("KMS secret key"), "secret key"),
    }
    written = kms.write_provider("leak-probe", "awskms", "leak-collection", credentials)
    leaks.check("a KMS provider", written, kms.read_provider("leak-probe"), kms.providers_frame())
    key = kms.create_key("leak-probe-key")
    distributed = kms.distribute("leak-probe", "leak-probe-key", ["encrypt", "decrypt"])
    leaks.check(
        "KMS views",
        key,
        distributed,
        kms.distributions_frame(),
        kms.keys_by_provider(),
        kms.keys_frame(),
        kms.key_versions_frame(),
    )
    with pytest.raises(APIError) as refused:
        kms.write_provider(
            "leak-probe", "gcpckms", "other", {"credentials": credentials["access_key"]}
        )
    leaks.check("a refused provider change", refused.value)


# -- sensitive policy-set parameters ---------------------------------------------------------------
def test_sensitive_parameters_show_nowhere(
    sandbox: Sandbox, connect: Connect, leaks: Leaks
) -> None:
    platform = connect(PlatformClient, sandbox.address, sandbox.token)
    sets = platform.organizations.policy_sets_frame("acme")
    polset = str(sets.index[0])
    params = platform.policy_set_parameters
    value = leaks.new("sensitive parameter value")
    created = params.create(polset, "LEAK_PROBE", Sensitive(value), sensitive=True)
    updated = params.update(
        polset, created["id"], value=Sensitive(leaks.new("updated sensitive value"))
    )
    leaks.check("a sensitive parameter", created, updated, params.parameters_frame(polset))
    with pytest.raises(APIError) as duplicate:
        params.create(polset, "LEAK_PROBE", leaks.new("duplicate value"), sensitive=True)
    leaks.check("a refused duplicate parameter", duplicate.value)
    with pytest.raises(ToolkitError) as refused:  # no key: refused before sending
        params.create(polset, "", Sensitive(leaks.new("value without a key")), sensitive=True)
    leaks.check("a refused parameter without a key", refused.value)
