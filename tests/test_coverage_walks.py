"""Issue 23: a missing name is an error naming it, a walk files what it could not
read, and each mistake an operator makes reads as one line naming what to do."""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import toolkit
from tests._http.test_hostile_servers import serve  # noqa: F401 - the fixture
from tests._sockets import Peer, Scripted, answer, certificate_files
from toolkit import (
    ConfigurationError,
    MountNotFound,
    NamespaceNotFound,
    NotFound,
    PermissionDenied,
    PlatformClient,
    SecretsClient,
    TokenRefused,
)
from toolkit._client import transport_hint
from toolkit._errors import ConnectError, TLSError
from toolkit._masking import HIDDEN
from toolkit.sandbox import Sandbox

# The scripted-server fixture (tests._http.test_hostile_servers.serve).
Serve = Callable[..., Scripted]

LIMITED = """
path "sys/policies/acl" { capabilities = ["list"] }
path "sys/policies/acl/*" { capabilities = ["read"] }
path "sys/policies/acl/root" { capabilities = ["deny"] }
"""


def test_a_missing_namespace_raises_naming_it(demo_sandbox: Sandbox) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token, namespace="nope") as client:
        with pytest.raises(NamespaceNotFound, match="namespace 'nope' does not exist"):
            client.policies.list_policies()
        with pytest.raises(NamespaceNotFound) as caught:
            client.leases.leases_by_mount()
        assert caught.value.namespace == "nope" and "\n" not in str(caught.value)


def test_a_missing_mount_raises_naming_it_and_an_empty_folder_stays_empty(
    demo_sandbox: Sandbox,
) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        with pytest.raises(MountNotFound, match="nothing is mounted at 'keymgmtx/'") as caught:
            client.keymgmt.at("keymgmtx").keys_frame()
        assert caught.value.mount == "keymgmtx/" and "client.mounts()" in str(caught.value)
        with pytest.raises(MountNotFound, match="'keymgmtx/'"):
            client.leases.lease_counts("keymgmtx/")
        assert len(client.leases.lease_counts("keymgmt/")) == 0  # mounted, no leases
        # An empty folder is still an empty list (404 with no message).
        assert client.leases.list_leases("keymgmt/") == []
        with pytest.raises(NotFound, match="no key 'nope'"):
            client.keymgmt.key_versions_frame(["nope"])


def test_a_refused_token_and_a_missing_permission_are_different_errors(
    sandbox: Sandbox,
) -> None:
    with SecretsClient(sandbox.address, sandbox.token) as root:
        root.policies.write("acl", "limited", LIMITED)
        token = root.tokens.create(policies=["limited"], ttl="1h")
        short = root.tokens.create(policies=["limited"], ttl="1s")
    with SecretsClient(sandbox.address, "not-a-token") as bad:
        with pytest.raises(TokenRefused, match="log in again") as refused:
            bad.policies.list_policies()
        assert not refused.value.expired
    # A Sensitive is taken where a token is (it failed as "broke the connection").
    with SecretsClient(sandbox.address, token["client_token"]) as limited:
        with pytest.raises(PermissionDenied) as denied:
            limited.tokens.list_accessors()
        assert type(denied.value) is PermissionDenied
        message = str(denied.value)
        assert "\n" not in message
        assert "lacks 'list' and 'sudo' on 'auth/token/accessors'" in message
        assert 'path "auth/token/accessors" { capabilities = ["list", "sudo"] }' in message
    with SecretsClient(sandbox.address, short["client_token"]) as expiring:
        expiring.tokens.lookup_self()  # the client learns the expiry
        sandbox.clock.advance(seconds=5)
        with pytest.raises(TokenRefused, match="the token expired at") as expired:
            expiring.policies.list_policies()
        assert expired.value.expired


def test_walking_views_read_whole_by_root_say_complete(demo_sandbox: Sandbox) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as root:
        frames = [
            root.policies.policies_frame(),
            root.tokens.inventory(),
            root.broker.roles_frame(),
            root.database.roles_frame(),
        ]
    table = toolkit.coverage(*frames)
    assert table.attrs["complete"] and table.empty
    assert all(": complete (" in line for line in table.attrs["views"])


def test_walking_views_file_what_they_could_not_read(sandbox: Sandbox) -> None:
    with SecretsClient(sandbox.address, sandbox.token) as root:
        root.policies.write("acl", "limited", LIMITED)
        token = root.tokens.create(policies=["limited"], ttl="1h")
    with SecretsClient(sandbox.address, token["client_token"]) as limited:
        frame = limited.policies.policies_frame()
        gaps = toolkit.coverage(frame)
        assert "sys/policies/acl/root" in set(gaps["path"])
        assert "root" not in set(frame["name"])
        with pytest.raises(toolkit.PartialCoverage, match="sys/policies/acl/root"):
            toolkit._coverage.require_complete(frame)
        holders = limited.policies.holders()
        assert set(toolkit.coverage(holders)["path"]) == {
            "auth/token/accessors",
            "auth/token/roles",
        }


def test_a_members_token_sees_part_of_the_team_access_and_says_so(
    demo_sandbox: Sandbox,
) -> None:
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as owner:
        full = owner.team_access.grants_frame("acme")
        assert toolkit.coverage(full).attrs["complete"]
    with PlatformClient(demo_sandbox.address, "demo-member-bob") as member:
        part = member.team_access.grants_frame("acme")
        assert len(part) < len(full)
        (gap,) = toolkit.coverage(part)["reason"]
        assert "team access of" in gap and "not visible to this token" in gap


def test_the_account_card_names_the_token_kind(demo_sandbox: Sandbox) -> None:
    with PlatformClient(demo_sandbox.address, "demo-org-acme") as org:
        account = org.account()
        assert account["kind"] == "organization token" and account["service_account"]
        assert "organization token (api-org-acme-" in org.connection()["token_owner"]
    with PlatformClient(demo_sandbox.address, "demo-member-alice") as member:
        assert member.account()["kind"] == "user"
        owner = member.connection()["token_owner"]
        assert owner.startswith("user-") and "no user account" not in owner
        assert "demo-member-alice" not in owner


@pytest.mark.parametrize(
    ("view", "named"),
    [
        (lambda c: c.team_access.grants_frame("acmex"), "organization 'acmex'"),
        (lambda c: c.agent_pools.pools_frame("acmex"), "organization 'acmex'"),
        (lambda c: c.team_access.access_frame("ws-nope"), "workspace 'ws-nope'"),
        (lambda c: c.agent_pools.agents_frame("apool-nope"), "agent pool 'apool-nope'"),
        (
            lambda c: c.policy_set_parameters.parameters_frame("polset-nope"),
            "policy set 'polset-nope'",
        ),
    ],
)
def test_a_missing_organization_workspace_pool_or_policy_set_is_named(
    demo_sandbox: Sandbox, view: Callable[[PlatformClient], Any], named: str
) -> None:
    with (
        PlatformClient(demo_sandbox.address, demo_sandbox.token) as client,
        pytest.raises(NotFound, match=f"{named} not found, or not visible to this token"),
    ):
        view(client)


def test_an_api_prefix_in_the_address_is_refused_with_the_address_to_use() -> None:
    with pytest.raises(ConfigurationError, match="use 'http://127.0.0.1:8200'"):
        SecretsClient("http://127.0.0.1:8200/v1", "t")
    with pytest.raises(ConfigurationError, match="use 'https://tfe.example'"):
        PlatformClient("https://tfe.example/api/v2/", "t")


def test_the_tf_token_hint_is_a_name_a_shell_can_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TFE_TOKEN", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")
    monkeypatch.delenv("TF_CLI_CONFIG_FILE", raising=False)
    with pytest.raises(ConfigurationError) as caught:
        PlatformClient("http://my-tfe.example.com:8200")
    assert "TF_TOKEN_my__tfe_example_com," in str(caught.value)
    assert ":8200" not in str(caught.value).split("TF_TOKEN_")[1].split()[0]


def test_address_mistakes_get_a_hint() -> None:
    wrong = TLSError("GET https://127.0.0.1:8200/v1/x: TLS failure: [SSL: WRONG_VERSION_NUMBER]")
    assert "use http://127.0.0.1:8200" in transport_hint(wrong, "https://127.0.0.1:8200")
    refused = ConnectError("cannot connect: Connect call failed ... Connection refused")
    assert "port 8201" in transport_hint(refused, "http://127.0.0.1:8201")


def test_connection_refused_is_one_line_naming_the_port() -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = SecretsClient(
        f"http://127.0.0.1:{port}", "s.issue23-token", retry=toolkit.RetryPolicy(attempts=1)
    )
    with client, pytest.raises(ConnectError, match=f"is the server running on port {port}"):
        client.policies.list_policies()


def test_agent_views_carry_their_coverage(demo_sandbox: Sandbox) -> None:
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as client:
        agents = client.agent_pools.all_agents("acme")
        (record,) = toolkit._coverage.coverage_of(agents)
        assert record.complete and record.read == len(agents) > 0
        assert "organizations/acme/agent-pools" in record.asked
        counts = client.organizations.across(client.agent_pools.agents_by_status)
        assert toolkit.coverage(counts).attrs["complete"]


def test_in_ipython_a_toolkit_error_is_its_last_line(capsys: pytest.CaptureFixture[str]) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from toolkit._ipython import register, unregister

    shell = InteractiveShell.instance(colors="nocolor")
    register(shell)
    try:
        result = shell.run_cell(
            "import toolkit\n"
            "raise toolkit.PermissionDenied(403, ['permission denied'], method='GET', url='u')"
        )
        shown = capsys.readouterr()
        assert not result.success  # papermill and nbval still see the cell fail
        text = shown.out + shown.err
        assert "PermissionDenied: GET u answered 403: permission denied" in text
        assert "raise toolkit.PermissionDenied" not in text  # no frames
        assert "%tb" in text
        shell.run_cell("%tb")
        assert "raise toolkit.PermissionDenied" in capsys.readouterr().out
        # Other errors keep IPython's own traceback.
        shell.run_cell("1/0")
        assert "ZeroDivisionError" in capsys.readouterr().out
    finally:
        unregister(shell)
        InteractiveShell.clear_instance()


def test_a_lease_walk_can_check_its_mounts_first(demo_sandbox: Sandbox) -> None:
    from toolkit.secrets._base import require_mounts

    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        require_mounts(client.http, ["database", "auth/token/"])
        with pytest.raises(MountNotFound, match="nothing is mounted at 'keymgmtx/'"):
            require_mounts(client.http, ["database/", "keymgmtx"])


def test_a_platform_client_takes_a_sensitive_token(demo_sandbox: Sandbox) -> None:
    token = toolkit.Sensitive(demo_sandbox.token, "token")
    with PlatformClient(demo_sandbox.address, token) as client:
        assert client.is_authenticated()


def test_durations_read_as_people_write_them() -> None:
    import pandas as pd

    from toolkit.display import format_duration, scrolling

    assert format_duration(pd.Timedelta("0 days 06:11:43.508485")) == "6h 11m"
    assert format_duration(-130) == "-2m 10s"
    assert format_duration(pd.NaT) == "" and format_duration(0) == "0s"
    frame = pd.DataFrame({"silent_for": [pd.Timedelta(hours=6, minutes=11)]})
    page = scrolling(frame)._repr_html_()
    assert "6h 11m" in page and "0 days" not in page
    assert str(frame["silent_for"].dtype).startswith("timedelta64")


def test_https_to_a_plain_port_names_the_fix(demo_sandbox: Sandbox) -> None:
    plain = demo_sandbox.address.replace("http://", "https://")
    once = toolkit.RetryPolicy(attempts=1)
    with (
        SecretsClient(plain, demo_sandbox.token, verify=False, retry=once) as client,
        pytest.raises(TLSError) as caught,
    ):
        client.policies.list_policies()
    message = str(caught.value)
    assert "does not speak TLS: use http://" in message and "\n" not in message


NGINX_400 = (
    b"<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>"
    b"\r\n<body>\r\n<center>The plain HTTP request was sent to HTTPS port</center>\r\n"
    b"<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
)
TLS_ALERT = b"\x15\x03\x01\x00\x02\x02\x46"  # a TLS record: alert, fatal, protocol_version


@pytest.mark.parametrize("peer", ["openssl", "go", "nginx", "tls-alert"])
def test_http_to_a_tls_port_names_the_fix(serve: Serve, tmp_path: Path, peer: str) -> None:  # noqa: F811
    # Plain http spoken to a TLS port, as the servers an operator meets answer it:
    # OpenSSL resets the connection, Go and nginx answer 400 in their own words, others
    # send a TLS alert record where the status line belongs.
    def handler(peer_: Peer) -> None:
        if peer_.request() is None:
            return
        if peer == "go":
            peer_.send(
                b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
            )
        elif peer == "nginx":
            head = "HTTP/1.1 400 Bad Request\r\nServer: nginx\r\nContent-Type: text/html\r\n"
            peer_.send(f"{head}Content-Length: {len(NGINX_400)}\r\n\r\n".encode() + NGINX_400)
        else:
            peer_.send(TLS_ALERT)

    tls = None
    if peer == "openssl":
        _, cert, key = certificate_files(tmp_path)
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(cert, key)
    server = serve(handler, tls)
    plain = f"http://127.0.0.1:{server.port}"
    once = toolkit.RetryPolicy(attempts=1)
    with (
        SecretsClient(plain, "s.issue23-token", retry=once, timeout=5) as client,
        pytest.raises(toolkit.ToolkitError) as caught,
    ):
        client.policies.list_policies()
    assert (
        caught.value.hint
        == f"if 127.0.0.1:{server.port} speaks TLS, use https://127.0.0.1:{server.port}"
    )
    # One line, whatever the peer sent: nginx's HTML page is its title's words.
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message and "<" not in message
    if peer == "nginx":
        assert "answered 400: 400 The plain HTTP request was sent to HTTPS port (hint" in message


def refused_with(serve: Serve, body: bytes, token: str, content_type: str = "text/html") -> Any:  # noqa: F811
    """The error a client with ``token`` raises when a peer answers 403 with ``body``."""

    def handler(peer_: Peer) -> None:
        if peer_.request() is None:
            return
        head = f"HTTP/1.1 403 Forbidden\r\nContent-Type: {content_type}\r\n"
        peer_.send(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)

    server = serve(handler)
    once = toolkit.RetryPolicy(attempts=1)
    with (
        SecretsClient(f"http://127.0.0.1:{server.port}", token, retry=once) as client,
        pytest.raises(toolkit.PermissionDenied) as caught,
    ):
        client.policies.list_policies()
    return caught.value


@pytest.mark.parametrize(
    ("content_type", "body", "said"),
    [
        (
            "application/json",
            b'{"errors": ["1 error occurred:\\n\\t* permission denied\\n\\n"]}',
            "permission denied",
        ),
        (
            "application/json",
            b'{"errors": [{"title": "bad", "detail": "line one\\nline two"}]}',
            "bad: line one line two",
        ),
        ("application/json", b'{"message": "first\\r\\nsecond"}', "first second"),
        ("text/plain", b"upstream\r\n  timed out\r\n", "upstream timed out"),
        (
            "text/html",
            b"<html><body><h1>502 Bad Gateway</h1>\n<p>try &amp; again</p></body></html>",
            "502 Bad Gateway try & again",
        ),
    ],
)
def test_a_servers_error_words_are_one_line(
    serve: Serve,  # noqa: F811
    content_type: str,
    body: bytes,
    said: str,
) -> None:
    error = refused_with(serve, body, "s.one-line", content_type)
    assert said in error.message
    assert "\n" not in str(error) and "\r" not in str(error)


@pytest.mark.parametrize(
    "page",
    [
        b"<html><head><title>token s.echoed-token refused</title></head></html>",
        b"<html><head><title>token s.echoed&#45;token refused</title></head></html>",
        b'<html><body><a href="/x?t=s.echoed-token">token</a> s.echoed-token</body></html>',
    ],
)
def test_an_html_error_page_never_shows_the_token(serve: Serve, page: bytes) -> None:  # noqa: F811
    error = refused_with(serve, page, "s.echoed-token")
    assert "echoed" not in str(error) and "token" in error.message


@pytest.mark.parametrize(
    "page",
    [
        b"<html><![x[ a ]]><title>refused</title></html>",  # html.parser asserts on it
        b"<a " * 30000,  # its time grows with the square of unclosed tags
    ],
)
def test_a_hostile_html_error_page_is_still_a_one_line_api_error(serve: Serve, page: bytes) -> None:  # noqa: F811
    started = time.process_time()
    error = refused_with(serve, page, "s.hostile")
    assert time.process_time() - started < 1.0
    assert "\n" not in str(error) and len(error.messages[-1]) <= 200


def test_a_masked_token_keeps_its_placeholder_in_an_html_page(serve: Serve) -> None:  # noqa: F811
    page = b"<html><head><title>Invalid token s.placeholder-token</title></head></html>"
    error = refused_with(serve, page, "s.placeholder-token")
    assert f"Invalid token {HIDDEN}" in error.message


def test_a_mistyped_lease_mount_raises_naming_it(demo_sandbox: Sandbox) -> None:
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        with pytest.raises(MountNotFound, match="'keymgmtx/'"):
            client.leases.leases_by_mount(mounts=["keymgmtx"])
        with pytest.raises(MountNotFound, match="'databasex/creds/'"):
            client.leases.leases_by_mount("databasex/creds/")
        assert len(client.leases.leases_by_mount(mounts=iter(["broker/"]))) > 0


def test_a_refused_platform_token_says_to_get_a_new_one(demo_sandbox: Sandbox) -> None:
    with (
        PlatformClient(demo_sandbox.address, "no-such-token") as client,
        pytest.raises(toolkit.Unauthorized, match="create a new one"),
    ):
        client.organizations.list_organizations()


def test_the_prefix_refusal_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULT_ADDR", "https://bao.example:8200/v1/")
    with pytest.raises(ConfigurationError, match=r"\(in VAULT_ADDR or address=\.\.\.\)"):
        SecretsClient(token="t")


def test_a_members_token_that_sees_each_listed_teams_grant_is_still_not_whole(
    empty_sandbox: Sandbox,
) -> None:
    # Every team the member can list has a grant it sees (the owners' organization-level
    # one, its own team's); a secret team's admin grant stays hidden from it.
    platform = empty_sandbox.platform
    platform.add_organization("initech")
    payroll = platform.add_workspace("initech", "payroll")
    platform.add_team("initech", "owners", members=["initech-owner-token"], owners=True)
    ops = platform.add_team("initech", "ops", members=["initech-member-token"])
    audit = platform.add_team("initech", "audit", members=["initech-other-token"], secret=True)
    platform.add_team_access(payroll, ops, "read")
    platform.add_team_access(payroll, audit, "admin")
    with PlatformClient(empty_sandbox.address, "initech-owner-token") as owner:
        full = owner.team_access.grants_frame("initech")
        assert toolkit.coverage(full).attrs["complete"]
    with PlatformClient(empty_sandbox.address, "initech-member-token") as member:
        part = member.team_access.grants_frame("initech")
    assert len(part) < len(full)
    assert not toolkit.coverage(part).attrs["complete"]


def test_a_mount_of_another_engine_is_not_an_empty_folder(demo_sandbox: Sandbox) -> None:
    # `-p mount pki` on the key view: the mount exists, the path does not
    # ("unsupported path"), so nothing was read, and nothing is not "no keys".
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        with pytest.raises(NotFound, match="unsupported path") as caught:
            client.keymgmt.at("pki").keys_frame()
        assert "is 'pki/' a mount of this engine?" in str(caught.value)
        assert client.leases.list_leases("keymgmt/") == []  # an empty folder still is


def test_a_token_lookup_without_a_verdict_is_not_repeated_for_each_refusal(serve: Serve) -> None:  # noqa: F811
    # Bare 403s (the wording of a refused token) while lookup-self itself fails: the
    # client says "missing permission" and must not look the token up again each time.
    def handler(peer: Peer) -> None:
        while (seen := peer.request()) is not None:
            refused = b'{"errors":["permission denied"]}'
            lookup = "lookup-self" in seen.target
            peer.send(answer(500, b'{"errors":["internal"]}') if lookup else answer(403, refused))

    server = serve(handler)
    retry = toolkit.RetryPolicy(attempts=1)
    with SecretsClient(server.address, "s.issue23-review-token", retry=retry) as client:
        for _ in range(3):
            with pytest.raises(PermissionDenied):
                client.policies.read("acl", "operators")
    assert len([r for r in server.requests() if "lookup-self" in r.target]) == 1


def test_a_refusal_taken_back_as_a_gap_never_shows_the_token(serve: Serve) -> None:  # noqa: F811
    # A lookup fan-out takes 403s back as gaps: the server's words go into the
    # coverage record (and so into evidence files), masked like any error.
    token = "s.issue23-review-token"

    def handler(peer: Peer) -> None:
        while (seen := peer.request()) is not None:
            if seen.method == "LIST":
                body = b'{"request_id": "r", "data": {"keys": ["acc1"]}}'
                peer.send(answer(200, body))
            else:
                echoed = f'{{"errors": ["1 error occurred: * {token} may not"]}}'
                peer.send(answer(403, echoed.encode()))

    server = serve(handler)
    with SecretsClient(server.address, token, retry=toolkit.RetryPolicy(attempts=1)) as client:
        frame = client.tokens.inventory()
    (reason,) = toolkit.coverage(frame)["reason"]
    assert token not in reason and "<hidden>" in reason


@pytest.mark.parametrize(
    ("client", "address"),
    [(SecretsClient, "http://127.0.0.1:8200/v1"), (PlatformClient, "http://127.0.0.1:1/api/v2")],
)
def test_a_refused_address_leaves_a_sensitive_token_hidden_in_the_frames(
    client: type, address: str
) -> None:
    value = "hvs.issue23-review-frames"
    with pytest.raises(ConfigurationError) as caught:
        client(address, toolkit.Sensitive(value, "token"))
    plain = [
        (tb.tb_frame.f_code.co_name, name)
        for tb in list(_frames(caught.value.__traceback__))[1:]  # past this test's frame
        for name, local in tb.tb_frame.f_locals.items()
        if isinstance(local, str) and value in local
    ]
    assert plain == []


def _frames(tb: Any) -> Iterator[Any]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


LEASES_ONLY = """
path "sys/leases/lookup/*" { capabilities = ["list", "sudo"] }
path "sys/leases/lookup" { capabilities = ["update"] }
"""


def test_a_lease_walk_that_cannot_check_its_mount_says_so(sandbox: Sandbox) -> None:
    # A token that may walk leases but not read sys/mounts: a mistyped mount cannot be
    # told from an empty one, so the empty frame is not a clean "no leases".
    with SecretsClient(sandbox.address, sandbox.token) as root:
        root.policies.write("acl", "leases-only", LEASES_ONLY)
        token = root.tokens.create(policies=["leases-only"], ttl="1h")["client_token"]
    with SecretsClient(sandbox.address, token) as client:
        frame = client.leases.leases_by_mount(mounts=["keymgmtx"])
    assert len(frame) == 0
    cov = toolkit.coverage(frame)
    assert not cov.attrs["complete"] and "sys/mounts" in set(cov["path"])


def test_a_members_token_cannot_prove_it_sees_every_pool_or_team_access_record(
    demo_sandbox: Sandbox,
) -> None:
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as owner:
        assert toolkit.coverage(owner.agent_pools.all_agents("acme")).attrs["complete"]
        assert toolkit.coverage(owner.team_access.permissions_long("acme")).attrs["complete"]
    with PlatformClient(demo_sandbox.address, "demo-member-bob") as member:
        agents = toolkit.coverage(member.agent_pools.agents_by_status("acme"))
        assert list(agents["path"]) == ["organizations/acme/agent-pools"]
        records = toolkit.coverage(member.team_access.organization_access("acme"))
        assert list(records["path"]) == ["organizations/acme/team-workspaces"]
        assert not toolkit.coverage(member.team_access.permissions_long("acme")).attrs["complete"]


def test_holders_keep_the_gaps_of_the_token_inventory_they_read(sandbox: Sandbox) -> None:
    lister = (
        'path "auth/token/accessors" { capabilities = ["list", "sudo"] }\n'
        'path "auth/token/roles" { capabilities = ["list"] }\n'
        'path "auth/token/lookup-accessor" { capabilities = ["deny"] }\n'
    )
    with SecretsClient(sandbox.address, sandbox.token) as root:
        root.policies.write("acl", "lister", lister)
        token = root.tokens.create(policies=["lister"], ttl="1h")
    with SecretsClient(sandbox.address, token["client_token"]) as narrow:
        holders = narrow.policies.holders()
    gaps = toolkit.coverage(holders)
    assert not gaps.attrs["complete"]
    assert any("lookup-accessor" in str(p) for p in gaps["path"]), list(gaps["path"])


@pytest.mark.parametrize(
    ("denied", "gap"),
    [
        # A provider the token may not read: none of its keys are known either.
        ("keymgmt/kms/vault-eu", "keymgmt/kms/vault-eu"),
        # A provider whose keys the token may not list.
        ("keymgmt/kms/vault-eu/key", "keymgmt/kms/vault-eu/key"),
        # One key in a provider the token may not read.
        ("keymgmt/kms/vault-eu/key/payments-dek", "keymgmt/kms/vault-eu/key/payments-dek"),
    ],
)
def test_a_provider_or_distribution_the_token_may_not_read_is_a_gap(
    empty_sandbox: Sandbox, denied: str, gap: str
) -> None:
    # Two providers, a key in each: the refused path is a gap in every view that walks
    # the providers, and the other provider's key is still read.
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as root:
        for name, provider in (("payments-dek", "vault-eu"), ("release-signing", "vault-us")):
            root.keymgmt.create_key(name, "rsa-2048")
            root.keymgmt.write_provider(provider, "azurekeyvault", f"{provider}-collection")
            root.keymgmt.distribute(provider, name, ["encrypt", "decrypt"])
        policy = f'path "keymgmt/*" {{ capabilities = ["read", "list"] }}\npath "{denied}" {{ capabilities = ["deny"] }}\n'
        root.policies.write("acl", "narrow-kms", policy)
        token = root.tokens.create(policies=["narrow-kms"], ttl="1h")
    with SecretsClient(empty_sandbox.address, token["client_token"]) as narrow:
        frames = {
            "providers": narrow.keymgmt.providers_frame(),
            "distributions": narrow.keymgmt.distributions_frame(),
            "keys": narrow.keymgmt.keys_frame(),
            "by provider": narrow.keymgmt.keys_by_provider(),
        }
    assert "release-signing" in list(frames["distributions"].index)
    assert "payments-dek" not in list(frames["distributions"].index)
    assert frames["keys"].loc["release-signing", "provider"] == "vault-us"
    for view, frame in frames.items():
        gaps = toolkit.coverage(frame)
        assert not gaps.attrs["complete"], view
        assert list(gaps["path"]) == [gap], (view, list(gaps["path"]))


def test_a_key_the_token_may_not_read_is_a_gap_in_the_key_views(empty_sandbox: Sandbox) -> None:
    # Every key readable but one: the key views file that key's path as a gap, and do not
    # read as a whole inventory without it.
    narrow_keys = (
        'path "keymgmt/*" { capabilities = ["read", "list"] }\n'
        'path "keymgmt/key/payments-dek" { capabilities = ["deny"] }\n'
    )
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as root:
        for name in ("payments-dek", "release-signing"):
            root.keymgmt.create_key(name, "aes256-gcm96")
        root.policies.write("acl", "narrow-keys", narrow_keys)
        token = root.tokens.create(policies=["narrow-keys"], ttl="1h")
    with SecretsClient(empty_sandbox.address, token["client_token"]) as narrow:
        # The walk over every key (keys_frame and key_versions_frame), and keys asked by name.
        frames = [
            narrow.keymgmt.keys_frame(),
            narrow.keymgmt.key_versions_frame(),
            narrow.keymgmt.key_versions_frame(["payments-dek", "release-signing"]),
        ]
    assert list(frames[0].index) == ["release-signing"]
    for frame in frames[1:]:
        assert set(frame.index.get_level_values("key")) == {"release-signing"}
    for frame in frames:
        gaps = toolkit.coverage(frame)
        assert not gaps.attrs["complete"]
        assert list(gaps["path"]) == ["keymgmt/key/payments-dek"], list(gaps["path"])
