"""Fleet runs: one runbook, several real targets, each reported, none stopping the others."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import toolkit
from toolkit.__main__ import main
from toolkit.fleet import Target, parse_targets, resolve_token, run_fleet
from toolkit.sandbox import Sandbox

PROBE = Path(__file__).with_name("probe.ipynb")


@pytest.fixture
def silent_server() -> Iterator[str]:
    """An address that accepts connections and never answers (a hung gateway)."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def hold() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    listener.close()


def _refused_address() -> str:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _targets(sandbox: Sandbox, slow: str, down: str) -> str:
    return f"""
[defaults]
timeout = 60

[[target]]
name = "good-env"
kind = "secrets"
address = "{sandbox.address}"
token_env = "FLEET_TEST_GOOD"

[[target]]
name = "good-file"
kind = "secrets"
address = "{sandbox.address}"
token_file = "{{token_file}}"

[[target]]
name = "bad-token"
kind = "secrets"
address = "{sandbox.address}"
token_env = "FLEET_TEST_BAD"

[[target]]
name = "down"
kind = "secrets"
address = "{down}"
token_env = "FLEET_TEST_GOOD"

[[target]]
name = "slow"
kind = "secrets"
address = "{slow}"
token_env = "FLEET_TEST_GOOD"
timeout = 4
"""


@pytest.mark.parametrize("parallel", [3])
def test_a_fleet_reports_every_target_and_loses_none(
    demo_sandbox: Sandbox,
    silent_server: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    parallel: int,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(demo_sandbox.token + "\n")
    token_file.chmod(0o600)
    monkeypatch.setenv("FLEET_TEST_GOOD", demo_sandbox.token)
    monkeypatch.setenv("FLEET_TEST_BAD", "not-a-token-of-this-server")
    text = _targets(demo_sandbox, silent_server, _refused_address()).replace(
        "{token_file}", str(token_file)
    )
    targets = parse_targets(text)
    out = tmp_path / "run"
    run = run_fleet(PROBE, targets, out, parallel=parallel, show_progress=False)

    by_name = {r["name"]: r for r in run.results}
    assert [r["name"] for r in run.results] == [
        "good-env",
        "good-file",
        "bad-token",
        "down",
        "slow",
    ]
    assert by_name["good-env"]["status"] == by_name["good-file"]["status"] == "passed"
    assert by_name["good-env"]["summary"] == {"sealed": False, "policies": 1}
    assert by_name["bad-token"]["status"] == "failed"
    assert "TokenRefused" in by_name["bad-token"]["error"]  # refused, not a permission
    assert "ConnectError" in by_name["down"]["error"]
    assert "timed out" in by_name["slow"]["error"].lower() or "Timeout" in by_name["slow"]["error"]
    assert run.failed == ["bad-token", "down", "slow"] and not run.ok

    for name in ("good-env", "good-file"):
        assert (out / name / "probe.ipynb").is_file()
        assert (out / name / "evidence" / "evidence-policies.csv").read_text().splitlines() == [
            "policy",
            "root",
        ]
    index = (out / "index.html").read_text()
    assert index.count("class='failed'") == 3 and index.count("class='passed'") == 2
    # Failures first with their reason on the row; the notebook rendered, the evidence a folder.
    assert index.index("bad-token") < index.index("good-env")
    assert "TokenRefused" in index
    assert "good-env/probe.html" in index and "good-env/evidence/" in index
    assert "evidence-policies.csv" not in index
    assert "<html" in (out / "good-env" / "probe.html").read_text()[:2000].lower()
    saved = json.loads((out / "results.json").read_text())
    assert [r["status"] for r in saved["results"]] == [r["status"] for r in run.results]
    for path in out.rglob("*"):
        if path.is_file():
            assert demo_sandbox.token.encode() not in path.read_bytes(), path


def test_the_command_exits_non_zero_when_a_target_failed(
    demo_sandbox: Sandbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FLEET_TEST_GOOD", demo_sandbox.token)
    targets = tmp_path / "targets.toml"
    targets.write_text(
        f"""
[[target]]
name = "ok"
kind = "secrets"
address = "{demo_sandbox.address}"
token_env = "FLEET_TEST_GOOD"

[[target]]
name = "down"
kind = "secrets"
address = "{_refused_address()}"
token_env = "FLEET_TEST_GOOD"
"""
    )
    code = main(
        [
            "fleet",
            str(PROBE),
            "--targets",
            str(targets),
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 1
    assert "passed      ok" in printed and "failed      down" in printed
    assert "1 failed, 0 incomplete, 1 passed, 0 skipped" in printed
    only_ok = tmp_path / "ok.toml"
    only_ok.write_text(targets.read_text().split('[[target]]\nname = "down"')[0])
    assert (
        main(
            [
                "fleet",
                str(PROBE),
                "--targets",
                str(only_ok),
                "--out",
                str(tmp_path / "p"),
                "--no-progress",
            ]
        )
        == 0
    )


def test_a_second_run_into_the_same_folder_is_refused(
    demo_sandbox: Sandbox, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    target = Target("a", "secrets", demo_sandbox.address, token_env="X")
    with pytest.raises(toolkit.InputError, match="exists already"):
        run_fleet(PROBE, [target], tmp_path, show_progress=False)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('name="a"\nkind="secrets"\naddress="http://x"\ntoken="s.abc"', "looks like a secret"),
        (
            'name="a"\nkind="secrets"\naddress="http://x"\ntoken_env="T"\nparameters={password="x"}',
            "the parameter 'password' looks like a secret",
        ),
        ('name="a"\nkind="secrets"\naddress="http://x"', "exactly one of token_env or token_file"),
        ('name="a"\nkind="vault"\naddress="http://x"\ntoken_env="T"', "kind must be one of"),
        (
            'name="a"\nkind="secrets"\naddress="x.example.com"\ntoken_env="T"',
            "must start with http",
        ),
        ('name="a b"\nkind="secrets"\naddress="http://x"\ntoken_env="T"', "letters, digits"),
        (
            'name="a"\nkind="secrets"\naddress="http://x"\ntoken_env="T"\nparameters={target="sandbox"}',
            "sets the parameter 'target' itself",
        ),
        (
            'name="a"\nkind="secrets"\naddress="http://x"\ntoken_env="T"\ncolour="red"',
            "unknown key 'colour'",
        ),
        (
            'name="a"\nkind="secrets"\naddress="http://x"\ntoken_env="hvs.CAESIsecret"',
            "token_env must name an environment variable",
        ),
        (
            'name="a"\nkind="platform"\naddress="http://x"\ntoken_env="T"\n'
            'parameters={secret_env="hvs.CAESIsecret"}',
            "'secret_env' must name an environment variable",
        ),
    ],
)
def test_a_bad_targets_file_is_refused_with_what_is_wrong(body: str, message: str) -> None:
    with pytest.raises(toolkit.InputError, match=message) as caught:
        parse_targets("[[target]]\n" + body)
    assert "CAESIsecret" not in str(caught.value)  # a value given for a name is never echoed


def test_two_targets_of_one_name_are_refused() -> None:
    one = 'name="a"\nkind="secrets"\naddress="http://x"\ntoken_env="T"\n'
    with pytest.raises(toolkit.InputError, match="the name 'a' is used twice"):
        parse_targets(f"[[target]]\n{one}[[target]]\n{one}")


def test_defaults_apply_to_every_target_and_a_target_wins() -> None:
    text = """
[defaults]
timeout = 30
parameters = { soon_seconds = 60, organization_env = "ORG" }

[[target]]
name = "a"
kind = "platform"
address = "https://tfe.example.com/"
token_env = "TFE_A"
organization = "acme"
parameters = { soon_seconds = 120 }
"""
    (target,) = parse_targets(text)
    assert target.address == "https://tfe.example.com"
    assert target.timeout == 30.0
    assert target.parameters == {"soon_seconds": 120, "organization_env": "ORG"}


def test_a_token_file_open_to_others_is_refused_and_names_no_value(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("s.very-secret-value")
    path.chmod(0o644)
    target = Target("a", "secrets", "http://x", token_file=str(path))
    with pytest.raises(toolkit.ConfigurationError, match="open to group or others") as err:
        resolve_token(target)
    assert "very-secret" not in str(err.value)
    path.chmod(0o600)
    assert resolve_token(target).reveal() == "s.very-secret-value"


def test_a_missing_variable_is_named_not_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLEET_NOWHERE", raising=False)
    with pytest.raises(toolkit.ConfigurationError, match="FLEET_NOWHERE is not set here"):
        resolve_token(Target("a", "secrets", "http://x", token_env="FLEET_NOWHERE"))
    assert os.environ.get("FLEET_NOWHERE") is None


def test_a_target_s_kernel_talks_over_unix_sockets_not_tcp_ports(
    demo_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kernels started at once by several processes raced for the same free TCP
    # port, and a target failed because its kernel could not bind it.
    import nbformat

    from toolkit.fleet.execute import execute_target

    monkeypatch.setenv("FLEET_TEST_GOOD", demo_sandbox.token)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("target = 'sandbox'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "import json\n"
            "from ipykernel.connect import get_connection_info\n"
            "print('transport=' + json.loads(get_connection_info())['transport'])"
        ),
    ]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    target = Target(
        name="one", kind="secrets", address=demo_sandbox.address, token_env="FLEET_TEST_GOOD"
    )
    result = execute_target(nbformat.writes(notebook), "where.ipynb", target.as_dict(), {})
    assert result["status"] == "passed", result["error"]
    assert "transport=ipc" in result["notebook"]


# -- issue 23: four outcomes, kinds, parameters, the extra ------------------------------------

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _probe(tmp_path: Path, kind: str | None, cells: list[str], params: str) -> Path:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(params, metadata={"tags": ["parameters"]}),
        *(nbformat.v4.new_code_cell(c) for c in cells),
    ]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    if kind:
        notebook.metadata["toolkit"] = {"kind": kind}
    path = tmp_path / "gapped.ipynb"
    path.write_text(nbformat.writes(notebook))
    return path


# A runbook whose one view could not read a mount: the shape every audit runbook has.
GAPPED = [
    'from toolkit import runbook\nrun = runbook.check_parameters(globals(), "gapped")',
    "import os, pandas as pd, toolkit\n"
    "client = toolkit.SecretsClient(token=os.environ[token_env])\n"
    'cov = toolkit.Coverage("leases.leases_by_mount", asked=["database/"])\n'
    'cov.note_gap("sys/leases/lookup/database/", 403, "permission denied")\n'
    "leases = cov.attach(pd.DataFrame({'lease_id': ['a']}))",
    "run.seen(leases=leases)",
    'run.file(client, {"leases": leases})\nrun.summary(leases=len(leases))',
]
GAPPED_PARAMETERS = (
    'target = "sandbox"\ntoken_env = "VAULT_TOKEN"\nallow_incomplete = False\nevidence_dir = None'
)


def test_a_run_that_could_not_see_everything_is_incomplete_never_passed(
    demo_sandbox: Sandbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FLEET_TEST_GOOD", demo_sandbox.token)
    probe = _probe(tmp_path, "secrets", GAPPED, GAPPED_PARAMETERS)
    targets = tmp_path / "targets.toml"
    targets.write_text(
        f"""
[[target]]
name = "stopped"
kind = "secrets"
address = "{demo_sandbox.address}"
token_env = "FLEET_TEST_GOOD"

[[target]]
name = "allowed"
kind = "secrets"
address = "{demo_sandbox.address}"
token_env = "FLEET_TEST_GOOD"
parameters = {{ allow_incomplete = true }}

[[target]]
name = "tfe"
kind = "platform"
address = "{demo_sandbox.address}"
token_env = "FLEET_TEST_GOOD"
"""
    )
    out = tmp_path / "o"
    code = main(
        ["fleet", str(probe), "--targets", str(targets), "--out", str(out), "--no-progress"]
    )
    printed = capsys.readouterr().out
    assert code == 2, printed  # incomplete, none failed; the skipped one changes nothing
    saved = {r["name"]: r for r in json.loads((out / "results.json").read_text())["results"]}
    assert saved["stopped"]["status"] == "incomplete"
    assert "PartialCoverage" in saved["stopped"]["error"]
    assert "sys/leases/lookup/database/ (403 permission denied)" in saved["stopped"]["error"]
    assert saved["allowed"]["status"] == "incomplete"
    assert saved["allowed"]["summary"]["coverage"] == "incomplete"
    assert saved["tfe"]["status"] == "skipped"
    assert "a secrets runbook; this target is a platform server" in saved["tfe"]["error"]
    # The allowed run filed its evidence, marked, with the coverage frame and who ran it.
    evidence = out / "allowed" / "evidence"
    header = json.loads((evidence / "gapped.header.json").read_text())
    assert header["coverage"]["verdict"] == "incomplete"
    assert header["fleet_target"] == "allowed"
    assert header["token_source"] == "token_env FLEET_TEST_GOOD"
    assert header["runbook_sha256"] == hashlib.sha256(probe.read_bytes()).hexdigest()
    assert header["os_user"] and header["host"] and header["started_at"] and header["finished_at"]
    assert header["parameters"]["allow_incomplete"] is True
    assert header["parameters"]["token_env"] == "FLEET_TEST_GOOD"  # the file's, not the runner's
    assert (evidence / "gapped-coverage.csv").read_text().count("permission denied") == 1
    assert (evidence / "MANIFEST.json").is_file()
    index = (out / "index.html").read_text()
    assert index.index("class='incomplete'") < index.index("class='skipped'")


# The same runbook, its view's frame carrying no coverage record: nothing proves it whole.
UNPROVEN = [
    GAPPED[0],
    "import os, pandas as pd, toolkit\n"
    "client = toolkit.SecretsClient(token=os.environ[token_env])\n"
    "leases = pd.DataFrame({'lease_id': ['a']})",
    "run.seen(leases=leases)",
    GAPPED[3],
]


def test_a_run_whose_views_prove_nothing_whole_is_incomplete_not_passed(
    demo_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_TEST_GOOD", demo_sandbox.token)
    probe = _probe(tmp_path, "secrets", UNPROVEN, GAPPED_PARAMETERS)
    (target,) = parse_targets(
        f'[[target]]\nname="unproven"\nkind="secrets"\naddress="{demo_sandbox.address}"\n'
        'token_env="FLEET_TEST_GOOD"\nparameters = { allow_incomplete = true }\n'
    )
    # Allowed to finish (unallowed, run.seen stops it), it must still not read as passed.
    run = run_fleet(probe, [target], tmp_path / "o", show_progress=False)
    (saved,) = run.results
    assert saved["summary"]["coverage"] == "unproven"
    assert (saved["status"], run.exit_status) == ("incomplete", 2)
    assert "no coverage record" in saved["error"]


def test_a_misspelt_parameter_in_the_targets_file_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    target = parse_targets(
        '[[target]]\nname="a"\nkind="secrets"\naddress="http://127.0.0.1:9"\n'
        'token_env="T"\nparameters={soon_secnds=60}'
    )
    with pytest.raises(toolkit.InputError) as caught:
        run_fleet(NOTEBOOKS / "05_lease_audit.ipynb", target, tmp_path / "o", show_progress=False)
    assert "target a: unknown parameter 'soon_secnds' (did you mean 'soon_seconds'?)" in str(
        caught.value
    )
    assert not (tmp_path / "o").exists()


def test_without_papermill_the_fleet_says_so_once_before_anything_starts(
    demo_sandbox: Sandbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    class Hide:
        def find_spec(self, name: str, *args: object) -> None:
            if name == "papermill" or name.startswith("papermill."):
                raise ModuleNotFoundError(name)

    for name in [m for m in sys.modules if m == "papermill" or m.startswith("papermill.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [Hide(), *sys.meta_path])
    targets = tmp_path / "targets.toml"
    targets.write_text(
        f'[[target]]\nname="a"\nkind="secrets"\naddress="{demo_sandbox.address}"\ntoken_env="T"\n'
    )
    out = tmp_path / "o"
    assert main(["fleet", str(PROBE), "--targets", str(targets), "--out", str(out)]) == 3
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "papermill" in err and "[fleet]" in err
    assert not out.exists()


def test_the_targets_file_keys_are_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["fleet", "--help"])
    text = capsys.readouterr().out
    for key in ("token_env", "token_file", "namespace", "organization", "parameters", "[defaults]"):
        assert key in text


def lease_audit_in_a_mistyped_namespace(address: str, token_env: str, out: Path) -> str:
    """The lease audit run by the fleet on ``address`` in the namespace ``nope/``: it
    must fail or be incomplete, never pass; the one line it gives."""
    (target,) = parse_targets(
        f'[[target]]\nname="typo"\nkind="secrets"\naddress="{address}"\n'
        f'token_env="{token_env}"\nnamespace="nope/"\n'
    )
    run = run_fleet(NOTEBOOKS / "05_lease_audit.ipynb", [target], out, show_progress=False)
    (result,) = run.results
    assert result["status"] in ("failed", "incomplete"), result
    assert run.exit_status != 0 and "\n" not in result["error"]
    return str(result["error"])


def test_a_target_with_a_mistyped_namespace_is_never_passed(
    demo_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_TEST_GOOD", demo_sandbox.token)
    error = lease_audit_in_a_mistyped_namespace(
        demo_sandbox.address, "FLEET_TEST_GOOD", tmp_path / "o"
    )
    assert "namespace not found" in error or "nope" in error


def _readme_targets() -> str:
    """The targets file the README shows under "Auditing a fleet"."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("```toml\n# targets.toml", 1)[1].split("```", 1)[0]
    return "# targets.toml" + block


def test_the_readme_targets_file_skips_the_platform_target_before_checking_its_parameters(
    tmp_path: Path,
) -> None:
    targets = parse_targets(_readme_targets())
    assert [(t.name, t.kind, t.organization) for t in targets] == [
        ("prod-eu", "secrets", None),
        ("acme", "platform", "acme"),
    ]
    # The secrets lease audit declares no `organization`: the platform target is skipped,
    # not refused (it was "unknown parameter 'organization'", exit 3, nothing run).
    (platform,) = [t for t in targets if t.kind == "platform"]
    run = run_fleet(NOTEBOOKS / "05_lease_audit.ipynb", [platform], tmp_path / "o",
                    show_progress=False)  # fmt: skip
    (result,) = run.results
    assert result["status"] == "skipped" and run.exit_status == 0
    # A target of the runbook's own kind is still checked before anything starts.
    wrong = parse_targets(
        _readme_targets().replace(
            'name = "prod-eu"', 'name = "prod-eu"\nparameters = { soon_secnds = 1 }'
        )
    )
    with pytest.raises(toolkit.InputError, match="target prod-eu: unknown parameter 'soon_secnds'"):
        run_fleet(NOTEBOOKS / "05_lease_audit.ipynb", wrong, tmp_path / "p", show_progress=False)
    assert not (tmp_path / "p").exists()
