"""The live read-only proof: every runbook, headless with ``target = "live"`` and its
default parameters, sends no request that changes state and issues no credential.

The secrets runbooks whose engines OpenBao has run against a real OpenBao (dev
server, file audit device on) with those engines mounted and seeded: the
database engine on a real PostgreSQL, the RabbitMQ engine on a real RabbitMQ,
PKI. The audit log is the witness: it records every request OpenBao received.

The runbooks whose engines OpenBao lacks (key management, the directory library)
and the platform runbooks run against a sandbox standing in for production, behind
a real nginx that logs every request it forwards: the access log is the witness.

Each run also files its evidence (as a fleet run asks), which must send no write
either. Two runs with ``apply = True`` prove that the witnesses do see writes.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests._runbooks import RUNBOOKS, engines_of, run_runbook, services_of
from tests.real import _seed
from tests.servers.nginx import Nginx
from tests.servers.openbao import READ_OPERATIONS, AuditRecord, OpenBao
from tests.servers.postgres import Postgres
from tests.servers.rabbitmq import RabbitMQ
from toolkit import Sensitive
from toolkit.sandbox import ENV_ADDRESS, ENV_TOKEN, Sandbox
from toolkit.sandbox.secrets.engines import ENGINES
from toolkit.secrets import SecretsClient

from .conftest import launch

# Seconds a cell (and a kernel start) may take before the run fails.
CELL_TIMEOUT = 120

# Endpoints OpenBao logs as `update` (a PUT or POST) that change nothing: lookups,
# capability checks, a renewal of the caller's own token. Everything else is judged
# by its operation.
READ_ONLY_UPDATES = frozenset(
    {
        "sys/leases/lookup",
        "auth/token/lookup",
        "auth/token/lookup-self",
        "auth/token/lookup-accessor",
        "sys/capabilities",
        "sys/capabilities-self",
        "sys/capabilities-accessor",
        "sys/wrapping/lookup",
        "auth/token/renew-self",
    }
)
LOGIN = re.compile(r"^auth/[^/]+/login(/|$)")
# A read of one of these issues a credential (a user, a lease, a certificate, a
# rotated password): a write whatever the operation.
CREDENTIAL = re.compile(r"(^|/)(creds|issue)/|(^|/)sign(-[a-z-]+)?(/|$)")
# Methods that change nothing, on either API (LIST is the secrets API's list).
READ_METHODS = frozenset({"GET", "HEAD", "LIST", "OPTIONS"})

PASSWORD_POLICY = (
    'length = 32\nrule "charset" {\n  charset = "abcdefghijklmnopqrstuvwxyz0123456789"\n}\n'
)
OPERATORS = 'path "sys/leases/lookup/*" {\n  capabilities = ["list", "sudo"]\n}\n'
AUDITORS = 'path "sys/policies/*" {\n  capabilities = ["read", "list"]\n}\n'


def why_a_write(operation: str, path: str) -> str | None:
    """Why a request changes state (or issues a credential); None when it does not.

    ``operation`` is OpenBao's (``read``, ``list``, ``update``, ...) or an HTTP method;
    ``path`` has no ``/v1/`` prefix and no query.
    """
    path = path.strip("/")
    # Listing or looking up leases under `sys/` names `creds/` paths and issues nothing.
    lists = operation.lower() == "list" or operation.upper() == "LIST"
    if CREDENTIAL.search(path) and not path.startswith("sys/") and not lists:
        return "issues a credential"
    if operation.lower() in READ_OPERATIONS or operation.upper() in READ_METHODS:
        return None
    if path in READ_ONLY_UPDATES or LOGIN.match(path):
        return None
    return f"{operation} changes state"


@dataclass(frozen=True)
class Tally:
    """What a witness saw during some runs: every request, and the ones that write."""

    requests: int
    allowed_updates: int
    writes: list[tuple[str, str, str]]


def judge_audit(records: list[AuditRecord]) -> Tally:
    writes = []
    allowed = 0
    for record in records:
        reason = why_a_write(record.operation, record.path)
        if reason:
            writes.append((record.operation, record.path, reason))
        elif record.is_write:
            allowed += 1
    return Tally(len(records), allowed, writes)


def judge_access_log(records: list[dict[str, str]]) -> Tally:
    writes = []
    allowed = 0
    for record in records:
        method = record["method"]
        path = urlsplit(record["uri"]).path.removeprefix("/v1/")
        reason = why_a_write(method, path)
        if reason:
            writes.append((method, path, reason))
        elif method not in READ_METHODS:
            allowed += 1
    return Tally(len(records), allowed, writes)


# -- the judge itself, both ways --------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "path"),
    [
        ("read", "sys/mounts"),
        ("list", "sys/leases/lookup/auth/token/create/"),
        ("update", "sys/leases/lookup"),
        ("update", "auth/token/lookup-self"),
        ("update", "sys/capabilities-self"),
        ("update", "auth/approle/login"),
        ("GET", "api/v2/organizations/acme/agent-pools"),
        ("LIST", "ad/library"),
        ("list", "sys/leases/lookup/database/creds/readonly/"),
        ("update", "sys/leases/lookup"),
        ("read", "database/static-roles/orders"),
    ],
)
def test_the_judge_lets_reads_and_listed_lookups_pass(operation: str, path: str) -> None:
    assert why_a_write(operation, path) is None


@pytest.mark.parametrize(
    ("operation", "path"),
    [
        ("update", "auth/token/create"),
        ("update", "database/rotate-root/main"),
        ("delete", "sys/plugins/catalog/secret/x"),
        ("read", "database/creds/readonly"),
        ("read", "broker/creds/consumer"),
        ("read", "ad/creds/webapp"),
        ("update", "pki/issue/web-server"),
        ("update", "pki/issuer/root/sign-intermediate"),
        ("update", "pki/sign/web-server"),
        ("update", "sys/leases/revoke"),
        ("POST", "api/v2/policy-sets/polset-1/parameters"),
        ("DELETE", "api/v2/agents/agent-1"),
        ("PATCH", "api/v2/team-workspaces/tws-1"),
    ],
)
def test_the_judge_calls_writes_and_issued_credentials_writes(operation: str, path: str) -> None:
    assert why_a_write(operation, path) is not None


# -- the real OpenBao --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def audited(postgres: Postgres, rabbitmq: RabbitMQ) -> Iterator[OpenBao]:
    """A dev OpenBao with a file audit device, seeded with what the runbooks' defaults name."""
    with launch(lambda: OpenBao(audit=True)) as server:
        _seed_server(server, postgres, rabbitmq)
        yield server


# What the runbooks' demo defaults name, and the engines' settings around them.
DEMO_NAMES = {
    "policy": "operators",
    "scoped": "auditors",
    "password_policy": "strong-32",
    "connection": "main",
    "database_role": "readonly",
    "broker_role": "consumer",
    "vhost": "live",
    "pki_role": "web-server",
    "issuer": "root-2026",
    "domain": "example.com",
}


def _seed_server(server: OpenBao, postgres: Postgres, rabbitmq: RabbitMQ) -> None:
    with postgres.connect() as conn:
        for statement in (
            "DROP ROLE IF EXISTS live_orders_batch",
            "CREATE ROLE live_orders_batch LOGIN PASSWORD 'orders-initial'",
        ):
            conn.execute(statement)
    _seed_names(server, postgres, rabbitmq, DEMO_NAMES)
    with SecretsClient(server.address, server.token) as client:
        client.database.write_static_role("orders-batch", "main", "live_orders_batch", "1h")
    _seed.tokens(server, "runbook", 10)
    # A dynamic credential, so that the lease audit has an engine lease to show.
    _seed.read_many(server, "database/creds/readonly", 2)


def _seed_names(
    server: OpenBao, postgres: Postgres, rabbitmq: RabbitMQ, names: dict[str, str]
) -> None:
    """Two ACL policies, a password policy, and a role each on the database, broker and
    certificate engines, under ``names``."""
    admin = f"{names['vhost']}_admin"
    with postgres.connect() as conn:
        conn.execute(f"DROP ROLE IF EXISTS {admin}")
        conn.execute(f"CREATE ROLE {admin} LOGIN CREATEROLE PASSWORD '{names['vhost']}-admin'")
    with rabbitmq.management() as management:
        assert management.put(f"vhosts/{names['vhost']}").status_code in (201, 204)
    with SecretsClient(server.address, server.token) as client:
        client.policies.write("acl", names["policy"], OPERATORS)
        client.policies.write("acl", names["scoped"], AUDITORS)
        client.password_policies.write(names["password_policy"], PASSWORD_POLICY)
        client.enable_engine("database", "database")
        client.database.configure_connection(
            names["connection"],
            "postgresql-database-plugin",
            connection_url=postgres.template_url,
            username=admin,
            password=f"{names['vhost']}-admin",
            allowed_roles="*",
        )
        client.database.write_role(
            names["database_role"],
            names["connection"],
            [_seed.CREATE_ROLE],
            revocation_statements=[_seed.DROP_ROLE],
        )
        client.enable_engine("broker", "rabbitmq")
        client.broker.configure_connection(
            rabbitmq.management_url, rabbitmq.user, Sensitive(rabbitmq.password, "password")
        )
        client.broker.write_role(
            names["broker_role"],
            vhosts={names["vhost"]: {"configure": "", "write": "", "read": ".*"}},
        )
        client.enable_engine("pki", "pki", max_lease_ttl="87600h")
        client.pki.generate_root(
            f"{names['issuer']} CA", key_type="ec", issuer_name=names["issuer"], ttl="87600h"
        )
        client.pki.write_role(
            names["pki_role"],
            allowed_domains=[names["domain"]],
            allow_subdomains=True,
            key_type="ec",
        )


def _pointed_at(server: OpenBao, monkeypatch: pytest.MonkeyPatch) -> OpenBao:
    """``server``, with the kernel's environment pointing at it and nowhere else."""
    for name in ("VAULT_NAMESPACE", "BAO_ADDR", "BAO_TOKEN", ENV_ADDRESS, ENV_TOKEN):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VAULT_ADDR", server.address)
    monkeypatch.setenv("VAULT_TOKEN", server.token)
    return server


@pytest.fixture
def live_bao(audited: OpenBao, monkeypatch: pytest.MonkeyPatch) -> OpenBao:
    return _pointed_at(audited, monkeypatch)


# Engines the real OpenBao here does not serve: those the real server ships no plugin for
# (the sandbox's descriptors say which), and the directory engine, for want of a directory
# server in the tests. A runbook on the platform, or on one of these, runs on the stand-in.
NOT_ON_OPENBAO = {e.mount.rstrip("/") for e in ENGINES if e.catalog_name is None} | {"ad"}
OPENBAO_RUNBOOKS = [
    name
    for name in RUNBOOKS
    if "platform" not in services_of(name) and not engines_of(name) & NOT_ON_OPENBAO
]


def _live_history(folder: Path) -> Path:
    from toolkit import SecretsClient, history, report
    from toolkit.secrets.leases import lease_count_findings

    client = SecretsClient()
    for _ in range(2):
        counts = client.leases.lease_counts()
        header = report.header_of(client, runbook="05_lease_audit")
        frames = {"lease_counts": counts, "findings": lease_count_findings(counts)}
        history.append(folder, frames, header, target="openbao")
    client.close()
    return folder


def _live_run(name: str, tmp_path: Path, secret: str, **parameters: object) -> dict[str, object]:
    evidence = tmp_path / "evidence"
    if not name.startswith("04_"):  # the ceremony files no evidence
        parameters.setdefault("evidence_dir", str(evidence))
    if name.startswith("14_"):  # the trends read a history: two snapshots of this server
        parameters.setdefault("history_dir", str(_live_history(tmp_path / "history")))
    notebook = run_runbook(
        name, tmp_path, {"target": "live", **parameters}, [secret], timeout=CELL_TIMEOUT
    )
    if "evidence_dir" in parameters and parameters["evidence_dir"] == str(evidence):
        stem = name.removesuffix(".ipynb")
        header = json.loads((evidence / f"{stem}.header.json").read_text())
        assert header["runbook"] == stem and header["parameters"]["target"] == "live"
        assert secret not in json.dumps(header)
    return notebook


@pytest.mark.parametrize("name", OPENBAO_RUNBOOKS)
def test_a_runbook_on_the_real_openbao_sends_no_write_and_issues_no_credential(
    name: str, live_bao: OpenBao, tmp_path: Path
) -> None:
    start = len(live_bao.audit_records())
    _live_run(name, tmp_path, live_bao.token)
    tally = judge_audit(live_bao.audit_records()[start:])
    print(
        f"{name}: {tally.requests} audited requests, {tally.allowed_updates} "
        f"read-only updates, {len(tally.writes)} writes"
    )
    assert tally.requests > 0
    assert tally.writes == []


def test_with_apply_the_database_runbook_sends_its_plan_and_the_audit_log_sees_it(
    live_bao: OpenBao, tmp_path: Path
) -> None:
    start = len(live_bao.audit_records())
    _live_run(
        "09_database_credentials.ipynb",
        tmp_path,
        live_bao.token,
        apply=True,
        rotate_static="orders-batch",
    )
    writes = {(op, path) for op, path, _ in judge_audit(live_bao.audit_records()[start:]).writes}
    assert ("read", "database/creds/readonly") in writes
    assert ("update", "database/rotate-role/orders-batch") in writes
    assert ("update", "sys/leases/revoke") in writes
    assert not any("rotate-root" in path for _, path in writes)  # never without its parameter


# -- the sandbox as a stand-in, behind a recording nginx ---------------------------------------


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Nginx]:
    """A demo sandbox behind a plain-http nginx that logs every request; both APIs'
    environment variables point at nginx."""
    with Sandbox(token=f"tok-{secrets.token_hex(16)}") as sandbox:
        upstream = urlsplit(sandbox.address).netloc
        with launch(lambda: Nginx([upstream], tls=False)) as proxy:
            for name in ("VAULT_NAMESPACE", "BAO_ADDR", "BAO_TOKEN", ENV_ADDRESS, ENV_TOKEN):
                monkeypatch.delenv(name, raising=False)
            for name in ("VAULT_ADDR", "TFE_ADDRESS"):
                monkeypatch.setenv(name, proxy.address)
            for name in ("VAULT_TOKEN", "TFE_TOKEN"):
                monkeypatch.setenv(name, sandbox.token)
            proxy.sandbox_token = sandbox.token  # type: ignore[attr-defined]
            yield proxy


STAND_IN_RUNBOOKS = [name for name in RUNBOOKS if name not in OPENBAO_RUNBOOKS]


@pytest.mark.parametrize("name", STAND_IN_RUNBOOKS)
def test_a_runbook_on_the_stand_in_sends_no_write_and_issues_no_credential(
    name: str, recorded: Nginx, tmp_path: Path
) -> None:
    token = recorded.sandbox_token  # type: ignore[attr-defined]
    parameters: dict[str, object] = {"organization": "acme"} if name < "04" else {}
    if name.startswith("03_"):  # acme has two policy sets: which to change is named
        parameters["policy_set_name"] = "security-baseline"
    _live_run(name, tmp_path, token, **parameters)
    tally = judge_access_log(recorded.access_records())
    print(
        f"{name}: {tally.requests} proxied requests, {tally.allowed_updates} "
        f"read-only updates, {len(tally.writes)} writes"
    )
    assert tally.requests > 0
    assert tally.writes == []


def test_with_apply_the_agent_clean_up_removes_and_the_proxy_log_sees_it(
    recorded: Nginx, tmp_path: Path
) -> None:
    token = recorded.sandbox_token  # type: ignore[attr-defined]
    _live_run("01_agent_pool_health.ipynb", tmp_path, token, organization="acme", apply=True)
    writes = judge_access_log(recorded.access_records()).writes
    assert writes and {method for method, _, _ in writes} == {"DELETE"}


# -- a server whose names are not the demo's (issue 23) ----------------------------------------

# Every object a runbook default used to name, under another name.
OWN_NAMES = {
    "policy": "platform-ops",
    "scoped": "readers",
    "password_policy": "pw-32-lower",
    "connection": "warehouse",
    "database_role": "reporting",
    "broker_role": "reader",
    "vhost": "own",
    "pki_role": "intranet",
    "issuer": "own-root",
    "domain": "corp.test",
}


@pytest.fixture(scope="module")
def own_names(postgres: Postgres, rabbitmq: RabbitMQ) -> Iterator[OpenBao]:
    """A dev OpenBao with a file audit device whose policies, roles and sets have names of
    their own: none of the demo's."""
    with launch(lambda: OpenBao(audit=True)) as server:
        _seed_names(server, postgres, rabbitmq, OWN_NAMES)
        yield server


@pytest.fixture
def own_bao(own_names: OpenBao, monkeypatch: pytest.MonkeyPatch) -> OpenBao:
    return _pointed_at(own_names, monkeypatch)


@pytest.mark.parametrize("name", [n for n in OPENBAO_RUNBOOKS if not n.startswith("04_")])
def test_a_runbook_runs_live_on_a_server_whose_names_are_its_own(
    name: str, own_bao: OpenBao, tmp_path: Path
) -> None:
    start = len(own_bao.audit_records())
    notebook = json.dumps(_live_run(name, tmp_path, own_bao.token))
    assert judge_audit(own_bao.audit_records()[start:]).writes == []
    for demo in ("'operators'", "'strong-32'", "'readonly'", "'consumer'", "'web-server'"):
        assert f"={demo}" not in notebook  # no demo name was used
    if name.startswith("06_"):
        assert "password_policy='pw-32-lower'" in notebook
    header = json.loads(next((tmp_path / "evidence").glob("*.header.json")).read_text())
    own = {OWN_NAMES[k] for k in ("policy", "scoped", "password_policy", "database_role")}
    own |= {OWN_NAMES["broker_role"], OWN_NAMES["pki_role"]}
    chosen = {k: v for k, v in header["parameters"].items() if isinstance(v, str) and v in own}
    # password_policy is chosen too, but its name says password: the header leaves it out.
    expected = {
        "06_policy_review.ipynb": {"policy_name", "scoped_policy"},
        "09_database_credentials.ipynb": {"creds_role"},
        "11_certificates.ipynb": {"role"},
        "12_broker_roles.ipynb": {"creds_role"},
    }.get(name, set())
    assert set(chosen) == expected, header["parameters"]


def test_a_demo_name_the_real_server_lacks_is_one_line(own_bao: OpenBao, tmp_path: Path) -> None:
    import papermill

    with pytest.raises(papermill.PapermillExecutionError) as caught:
        _live_run("11_certificates.ipynb", tmp_path, own_bao.token, role="web-server")
    assert caught.value.ename == "InputError"
    assert "role = 'web-server': no role of that name on this server (it has: intranet)" in (
        caught.value.evalue
    )


# -- issue 23's mistakes on the real OpenBao: none may read as a clean audit -------------------

NO_SUDO = 'path "*" {\n  capabilities = ["create", "read", "update", "delete", "list"]\n}\n'


def _stopped(name: str, tmp_path: Path, secret: str, **parameters: object) -> str:
    """The one line a live run stopped on; a run that finishes fails the test."""
    import papermill

    with pytest.raises(papermill.PapermillExecutionError) as caught:
        _live_run(name, tmp_path, secret, **parameters)
    assert "\n" not in caught.value.evalue.strip()
    return f"{caught.value.ename}: {caught.value.evalue}"


def test_a_token_without_sudo_stops_the_lease_audit_on_openbao(
    own_bao: OpenBao, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SecretsClient(own_bao.address, own_bao.token) as client:
        client.policies.write("acl", "all-but-sudo", NO_SUDO)
        token = client.tokens.create(["all-but-sudo"], "1h")["client_token"]
    monkeypatch.setenv("VAULT_TOKEN", token.reveal())
    line = _stopped("05_lease_audit.ipynb", tmp_path, token.reveal())
    assert "403" in line and "sys/leases/lookup" in line


@pytest.mark.parametrize("allowed", [False, True])
def test_a_token_without_sudo_is_never_a_clean_token_audit_on_openbao(
    allowed: bool, own_bao: OpenBao, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Listing accessors needs sudo: the policy review's token view files that as a gap.
    with SecretsClient(own_bao.address, own_bao.token) as client:
        client.policies.write("acl", "all-but-sudo", NO_SUDO)
        token = client.tokens.create(["all-but-sudo"], "1h")["client_token"].reveal()
    monkeypatch.setenv("VAULT_TOKEN", token)
    if not allowed:
        line = _stopped("06_policy_review.ipynb", tmp_path, token)
        assert line.startswith("PartialCoverage") and "auth/token/accessors" in line
        return
    _live_run("06_policy_review.ipynb", tmp_path, token, allow_incomplete=True)
    header = json.loads((tmp_path / "evidence" / "06_policy_review.header.json").read_text())
    assert header["coverage"]["verdict"] == "incomplete"


def test_a_mount_that_does_not_exist_stops_the_certificate_audit_on_openbao(
    own_bao: OpenBao, tmp_path: Path
) -> None:
    line = _stopped("11_certificates.ipynb", tmp_path, own_bao.token, mount="pkix")
    assert "pkix" in line


def test_a_namespace_that_does_not_exist_stops_the_lease_audit_on_openbao(
    own_bao: OpenBao, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULT_NAMESPACE", "nope")
    line = _stopped("05_lease_audit.ipynb", tmp_path, own_bao.token)
    assert "namespace not found" in line or "nope" in line


def test_the_live_runbook_lists_are_derived_and_cover_every_runbook() -> None:
    assert sorted(OPENBAO_RUNBOOKS + STAND_IN_RUNBOOKS) == RUNBOOKS
    assert "09_database_credentials.ipynb" in OPENBAO_RUNBOOKS  # an engine OpenBao serves
    assert "10_key_distribution.ipynb" in STAND_IN_RUNBOOKS  # one it ships no plugin for
    assert "01_agent_pool_health.ipynb" in STAND_IN_RUNBOOKS  # the platform
