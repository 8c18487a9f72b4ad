"""The toolkit through a real reverse proxy: Debian's nginx in front of a real OpenBao.

nginx terminates TLS (a CA made by the test, given to the client as ``ca_file``)
and keeps HTTP/1.1 connections alive to two upstream entries: first a TCP
forwarder the test can kill (``tests/servers/forwarder.py``), then OpenBao
itself as a ``backup`` entry. So nginx's retry to the next upstream
(``proxy_next_upstream error timeout``) runs whenever the forwarder dies.

OpenBao's file audit device (declared in its configuration file) logs every
request before OpenBao acts on it: reading it afterwards shows whether a write
arrived twice. Token creates carry a unique ``display_name`` each, so two audit
entries with one name are one write sent twice.

Every step is bounded in time: the clients have timeouts, and every fan-out
runs in a worker whose result is awaited with a deadline.
"""

from __future__ import annotations

import socket
import ssl
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pandas as pd
import pytest

import toolkit
from tests.real import _seed
from tests.servers.forwarder import Forwarder
from tests.servers.nginx import Nginx
from tests.servers.openbao import AuditRecord, OpenBao
from toolkit import ToolkitError
from toolkit.secrets import RekeyCeremony, SecretsClient
from toolkit.secrets.leases import lease_summary

from .conftest import launch

AUDIT_LEASES = 300  # the lease audit and bulk revoke: a few hundred real leases
FAN_OUT_LEASES = 2000  # the lookup fan-out nginx is restarted in
WRITES = 300  # the token-create fan-out nginx is restarted in
DEADLINE = 90.0  # seconds any one fan-out may take, restarts included
CLIENT_TIMEOUT = 20.0
# The error raised for a write whose outcome is unknown (issue 13).
OUTCOME_UNKNOWN: type[Exception] = toolkit.OutcomeUnknown


# -- the servers ----------------------------------------------------------------
@dataclass
class Front:
    """OpenBao with its audit device, the forwarder, and nginx in front of both."""

    bao: OpenBao
    hop: Forwarder
    nginx: Nginx

    def client(self) -> SecretsClient:
        return SecretsClient(
            self.nginx.address,
            self.bao.token,
            ca_file=str(self.nginx.ca_file),
            timeout=CLIENT_TIMEOUT,
        )

    def direct(self) -> SecretsClient:
        return SecretsClient(self.bao.address, self.bao.token, timeout=CLIENT_TIMEOUT)

    @property
    def bao_entry(self) -> str:
        return f"127.0.0.1:{self.bao.port}"


def front_of(bao: OpenBao) -> Iterator[Front]:
    with (
        Forwarder(("127.0.0.1", bao.port)) as hop,
        launch(lambda: Nginx([hop.address], backup=[f"127.0.0.1:{bao.port}"])) as nginx,
    ):
        yield Front(bao, hop, nginx)


@pytest.fixture(scope="module")
def audited_bao() -> Iterator[OpenBao]:
    """A dev OpenBao of this module's own, so that its audit log holds only these tests."""
    with launch(lambda: OpenBao(audit=True)) as server:
        yield server


@pytest.fixture(scope="module")
def module_front(audited_bao: OpenBao) -> Iterator[Front]:
    yield from front_of(audited_bao)


@pytest.fixture
def front(module_front: Front) -> Front:
    """The module's servers, with the forwarder alive and nginx running."""
    module_front.hop.revive()
    return module_front


@pytest.fixture(scope="module")
def audit_leases(audited_bao: OpenBao) -> str:
    """A few hundred real token leases under a prefix of their own; returns the prefix.

    Their ttls (30 to 35 minutes) stay clear of the summary's 1-hour mark while the
    two audits run, so the counts cannot differ by a lease crossing it."""
    _seed.tokens(audited_bao, "nginx-audit", AUDIT_LEASES, first_ttl=1800)
    return "auth/token/create/nginx-audit/"


@pytest.fixture(scope="module")
def fan_out_leases(audited_bao: OpenBao) -> list[str]:
    """Thousands of real token leases; returns their lease ids."""
    role = "nginx-fan-out"
    _seed.tokens(audited_bao, role, FAN_OUT_LEASES)
    prefix = f"auth/token/create/{role}/"
    return [prefix + key for key in _seed.lease_keys(audited_bao, prefix)]


# -- helpers --------------------------------------------------------------------
def marked(test: str, count: int) -> list[str]:
    """``count`` display names no other request of any run carries."""
    run = uuid.uuid4().hex[:8]
    return [f"{test}-{run}-{i}" for i in range(count)]


def settled_audit(bao: OpenBao) -> list[AuditRecord]:
    """The audit log once it has stopped growing for a moment: a request a killed proxy
    had already handed over may still reach OpenBao's log after the caller gave up."""
    size, deadline = -1, time.monotonic() + 10
    while time.monotonic() < deadline:
        current = bao.audit_log.stat().st_size
        if current == size:
            break
        size = current
        time.sleep(0.3)
    return bao.audit_records()


def arrivals(bao: OpenBao, path: str, names: Sequence[str]) -> Counter[str]:
    """How many times OpenBao's audit log saw a write to ``path`` for each display name."""
    wanted = set(names)
    return Counter(
        str(r.body.get("display_name"))
        for r in settled_audit(bao)
        if r.is_write and r.path == path and r.body.get("display_name") in wanted
    )


def trusting(nginx: Nginx) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(nginx.ca_file))


def logged_lookups(nginx: Nginx) -> int:
    try:
        return nginx.access_log.read_text(errors="replace").count("/v1/sys/leases/lookup")
    except FileNotFoundError:
        return 0


def when(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f}s")
        time.sleep(0.02)


def create_token(client: SecretsClient, name: str) -> str | ToolkitError:
    """A token create with a unique display name: its accessor, or the error raised."""
    try:
        return str(client.tokens.create(display_name=name, ttl=3600, no_parent=True).accessor)
    except ToolkitError as exc:
        return exc


def write_fan_out(client: SecretsClient, names: Sequence[str]) -> list[str | ToolkitError]:
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(lambda n: create_token(client, n), names))


def settle(future: Future[Any], what: str) -> Any:
    """The fan-out's result within :data:`DEADLINE`; a hang fails the test."""
    try:
        return future.result(timeout=DEADLINE)
    except TimeoutError:
        pytest.fail(f"{what} still running after {DEADLINE:.0f}s: it hangs")


def assert_no_write_twice(
    front: Front, names: Sequence[str], outcomes: Sequence[str | ToolkitError]
) -> None:
    """Each write arrived at most once; each one the caller saw succeed, exactly once;
    and each error tells the truth: a write that arrived but whose answer was lost
    raises ``OutcomeUnknown``, never an error that reads as "not sent" (a refused
    connection, a 502)."""
    seen = arrivals(front.bao, "auth/token/create", names)
    twice = {name: n for name, n in seen.items() if n > 1}
    assert not twice, f"{len(twice)} token creates arrived more than once: {twice}"
    misleading = []
    for name, outcome in zip(names, outcomes, strict=True):
        if isinstance(outcome, str):
            assert seen[name] == 1, f"{name}: created, but logged {seen[name]} times"
            continue
        assert "auth/token/create" in str(outcome), f"an error that names no call: {outcome}"
        if seen[name] and not isinstance(outcome, OUTCOME_UNKNOWN):
            misleading.append(f"{type(outcome).__name__}: {str(outcome)[:120]}")
    assert not misleading, (
        f"{len(misleading)} writes arrived, yet the caller was told otherwise than "
        f"'outcome unknown': {misleading[:3]}"
    )


def frames_agree(proxied: pd.DataFrame, direct: pd.DataFrame) -> None:
    """The same leases with the same times; ``ttl`` counts down, so it may differ by seconds."""
    pd.testing.assert_frame_equal(proxied.drop(columns="ttl"), direct.drop(columns="ttl"))
    assert ((proxied["ttl"] - direct["ttl"]).abs() <= 5).all()


# -- the setup itself -------------------------------------------------------------
def test_nginx_terminates_tls_with_the_test_ca_and_keeps_upstream_connections_alive(
    front: Front,
) -> None:
    before = front.hop.accepted
    with front.client() as client:
        for _ in range(30):
            assert client.tokens.lookup_self()["policies"] == ["root"]
    # Thirty calls over one kept-alive upstream connection (or a very few), not thirty.
    assert front.hop.accepted - before <= 2
    last = front.nginx.access_records()[-30:]
    assert {r["upstream_addr"] for r in last} == {front.hop.address}
    # Without the test CA the client refuses nginx's certificate.
    with (
        SecretsClient(front.nginx.address, front.bao.token, timeout=5) as untrusting,
        pytest.raises(toolkit.TLSError),
    ):
        untrusting.tokens.lookup_self()


def test_the_launchers_free_their_ports_and_folders_on_stop(audited_bao: OpenBao) -> None:
    with Forwarder(("127.0.0.1", audited_bao.port)) as hop:
        nginx = launch(lambda: Nginx([hop.address])).start()
        try:
            folder, ports = nginx.folder, (nginx.port, hop.port)
            assert folder is not None and folder.is_dir()
            with httpx.Client(verify=trusting(nginx), timeout=5) as http:
                assert http.get(f"{nginx.address}/v1/sys/health").status_code == 200
        finally:
            nginx.stop()
    assert not folder.exists()
    for port in ports:
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still listening"
            sock.bind(("127.0.0.1", port))  # and free to take


# -- the operator's work through nginx ---------------------------------------------
def test_the_lease_audit_through_nginx_gives_what_the_server_gives_directly(
    front: Front, audit_leases: str
) -> None:
    with front.client() as proxied, front.direct() as direct:
        through = proxied.leases.leases_by_mount(prefix=audit_leases)
        straight = direct.leases.leases_by_mount(prefix=audit_leases)
        assert len(through) == AUDIT_LEASES
        assert lease_summary(through).loc["auth/token/", "expiring_1h"] == AUDIT_LEASES
        frames_agree(through, straight)
        pd.testing.assert_frame_equal(
            lease_summary(through).drop(columns=["min_ttl", "median_ttl"]),
            lease_summary(straight).drop(columns=["min_ttl", "median_ttl"]),
        )
        everything = proxied.leases.leases_by_mount(mounts=["auth/token/"])
        assert set(through.index) <= set(everything.index)


def test_a_bulk_revoke_through_nginx_revokes_each_lease_once_like_a_direct_one(
    front: Front,
) -> None:
    role = f"nginx-revoke-{uuid.uuid4().hex[:6]}"
    _seed.tokens(front.bao, role, 60)
    prefix = f"auth/token/create/{role}/"
    with front.client() as proxied, front.direct() as direct:
        ids = sorted(proxied.leases.list_lease_ids(prefix))
        assert len(ids) == 60
        through = proxied.leases.revoke_leases(ids[:30], dry_run=False, show_progress=False)
        straight = direct.leases.revoke_leases(ids[30:], dry_run=False, show_progress=False)
        assert set(through["action"]) == set(straight["action"]) == {"revoked"}
        assert list(through.columns) == list(straight.columns)
        assert direct.leases.list_lease_ids(prefix) == []
    revokes = Counter(
        r.body.get("lease_id")
        for r in front.bao.audit_records()
        if r.path == "sys/leases/revoke" and r.body.get("lease_id") in set(ids)
    )
    assert set(revokes) == set(ids) and set(revokes.values()) == {1}


@pytest.fixture(params=[True, False], ids=["legacy-rekey", "rotate-root"])
def raft_front(request: pytest.FixtureRequest) -> Iterator[Front]:
    """A raft OpenBao (5 shares, threshold 3) with its audit device, behind nginx."""
    with launch(lambda: OpenBao(dev=False, legacy_rekey=request.param, audit=True)) as server:
        yield from front_of(server)


def test_the_rekey_ceremony_through_nginx_rotates_the_shares_and_sends_each_once(
    raft_front: Front,
) -> None:
    bao = raft_front.bao
    old = list(bao.shares)
    with raft_front.client() as client:
        ceremony = RekeyCeremony(client)
        assert ceremony.api_flavour == ("legacy" if bao.legacy_rekey else "rotate-root")
        ceremony.start(shares=4, threshold=2, verify=True)
        for share in old[:3]:
            status = ceremony.submit_share(share)
        assert status["phase"] == "verifying"
        new = [s.reveal() for s in ceremony.new_shares]
        assert len(new) == 4 and not set(new) & set(old)
        ceremony.verify_share(new[0])
        assert ceremony.verify_share(new[3])["phase"] == "complete"
        assert (client.seal.status()["n"], client.seal.status()["t"]) == (4, 2)
        assert ceremony.prove_unseal(new[1:3])["sealed"] is False
        bao.wait_active()
        # The old shares no longer open the server; the new ones do.
        client.seal.seal()
        with pytest.raises(toolkit.APIError):
            for share in old[:3]:
                client.seal.unseal(share)
        client.seal.unseal(reset=True)
    bao.unseal(new[2:])
    # Every share the ceremony sent (three to rotate, two to verify) reached OpenBao once.
    steps = Counter(
        r.body["key"]
        for r in bao.audit_records()
        if r.is_write and r.body.get("key") and "unseal" not in r.path
    )
    assert sorted(steps.elements()) == sorted([*old[:3], new[0], new[3]])


# -- restarts and a dying upstream ---------------------------------------------------
def test_an_nginx_restart_in_a_lookup_fan_out_still_gives_every_lease(
    front: Front, fan_out_leases: list[str]
) -> None:
    assert len(fan_out_leases) >= FAN_OUT_LEASES - 50
    start = logged_lookups(front.nginx)
    with front.client() as client, ThreadPoolExecutor(1) as runner:
        future = runner.submit(client.leases.lookup_leases, fan_out_leases, ["auth/token/"])
        when(lambda: logged_lookups(front.nginx) - start >= 300, 30, "300 lookups through nginx")
        assert not future.done(), "the fan-out ended before nginx was restarted"
        front.nginx.restart()
        # Lookups are safe to repeat: the client gets through the restart, with no error.
        frame = settle(future, "the lookup fan-out")
    assert sorted(frame.index) == sorted(fan_out_leases)
    assert frame["issue_time"].notna().all()
    assert front.nginx.starts >= 2


def test_an_nginx_restart_in_a_write_fan_out_sends_no_write_twice(front: Front) -> None:
    names = marked("restart", WRITES)
    start = front.nginx.access_log.read_text().count("/v1/auth/token/create")
    with front.client() as client, ThreadPoolExecutor(1) as runner:
        future = runner.submit(write_fan_out, client, names)

        def written() -> int:
            return front.nginx.access_log.read_text().count("/v1/auth/token/create") - start

        when(lambda: written() >= WRITES // 3, 30, "a third of the token creates")
        assert not future.done(), "the fan-out ended before nginx was restarted"
        front.nginx.restart()
        outcomes = settle(future, "the write fan-out")
    assert_no_write_twice(front, names, outcomes)
    created = [o for o in outcomes if isinstance(o, str)]
    assert len(created) >= WRITES // 3, "nearly every create failed"
    assert len(set(created)) == len(created)


def test_reads_go_to_the_second_upstream_when_the_first_dies_and_no_post_arrives_twice(
    front: Front, audit_leases: str
) -> None:
    names = marked("next-upstream", 80)
    with front.direct() as direct:
        ids = direct.leases.list_lease_ids(audit_leases)
    first = len(front.nginx.access_records())
    with front.client() as client, ThreadPoolExecutor(2) as runner:
        # Dies as the 20th token create's answer comes back: that write was applied and
        # its answer is lost, while other requests are in flight on its connections.
        front.hop.die_on_answer(after=20, marker=b"client_token")
        reads = runner.submit(client.leases.lookup_leases, ids, ["auth/token/"])
        writes = runner.submit(write_fan_out, client, names)
        frame = settle(reads, "the lookup fan-out")
        outcomes = settle(writes, "the write fan-out")
    assert not front.hop.alive and front.hop.answers_cut == 1
    # Every read succeeded, the later ones through OpenBao directly (entry 2).
    assert sorted(frame.index) == sorted(ids)
    records = front.nginx.access_records()[first:]
    failed_over = [r for r in records if r["upstream_addr"].endswith(front.bao_entry)]
    assert failed_over and all(r["status"] == "200" for r in failed_over if "lookup" in r["uri"])
    assert any(", " in r["upstream_addr"] for r in failed_over), "nginx never tried entry 2"
    # The POSTs cut on the dying entry were not sent again (by nginx or the client),
    # and their callers were told the outcome is unknown.
    assert_no_write_twice(front, names, outcomes)
    assert any(not isinstance(o, str) for o in outcomes), "no write was cut: nothing tested"


@pytest.mark.parametrize(
    ("method", "times", "status"),
    [("PUT", 2, 200), ("POST", 1, 502)],
    ids=["put-arrives-twice", "post-arrives-once"],
)
def test_nginx_sends_a_cut_put_to_the_next_upstream_again_but_never_a_post(
    front: Front, method: str, times: int, status: int
) -> None:
    """Why the client sends the secrets API's writes as POST: OpenBao treats PUT and POST
    alike, and nginx does not. Plain httpx here, to show what nginx itself does."""
    (name,) = marked(method.lower(), 1)
    front.hop.die_on_answer()
    with httpx.Client(
        base_url=f"{front.nginx.address}/v1",
        verify=trusting(front.nginx),
        headers={"X-Vault-Token": front.bao.token},
        timeout=CLIENT_TIMEOUT,
    ) as http:
        reply = http.request(method, "auth/token/create", json={"display_name": name})
    assert reply.status_code == status
    assert arrivals(front.bao, "auth/token/create", [name])[name] == times
    last = front.nginx.access_records()[-1]
    assert (last["method"], last["uri"]) == (method, "/v1/auth/token/create")
    tried = [a.strip() for a in last["upstream_addr"].split(",")]
    assert tried == ([front.hop.address, front.bao_entry] if times == 2 else [front.hop.address])
