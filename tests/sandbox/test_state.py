"""``--state PATH``: the sandbox keeps its state in SQLite, and survives ``kill -9``.

The sandbox runs as a child process; a writer loops over writes to both APIs
while the process is killed with SIGKILL at a random moment, and every write
that was acknowledged must be there after a restart on the same file.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.sandbox._process import address_of, start

ROOT = "state-root"
JSONAPI = "application/vnd.api+json"


def _secrets(address: str, token: str = ROOT) -> httpx.Client:
    return httpx.Client(base_url=f"{address}/v1", headers={"X-Vault-Token": token}, timeout=10)


def _platform(address: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {ROOT}", "Content-Type": JSONAPI}
    return httpx.Client(base_url=f"{address}/api/v2", headers=headers, timeout=10)


def _policy_set_id(platform: httpx.Client) -> str:
    sets = platform.get("/organizations/acme/policy-sets").json()["data"]
    return str(sets[0]["id"])


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)


@pytest.mark.slow
def test_every_acknowledged_write_survives_kill_9(
    record_property: Callable[[str, object], None], tmp_path: Path
) -> None:
    state = tmp_path / "sandbox.db"
    proc, lines = start("--token", ROOT, "--state", str(state))
    address = address_of(lines)
    acknowledged_policies: dict[str, str] = {}
    acknowledged_parameters: dict[str, str] = {}
    stop = threading.Event()

    def write_loop() -> None:
        with _secrets(address) as secrets, _platform(address) as platform:
            policy_set = _policy_set_id(platform)
            n = 0
            while not stop.is_set():
                n += 1
                body = f'path "kv/app-{n}/*" {{ capabilities = ["read"] }}'
                try:
                    answer = secrets.put(f"/sys/policies/acl/app-{n}", json={"policy": body})
                    if answer.status_code == 204:
                        acknowledged_policies[f"app-{n}"] = body
                    created = platform.post(
                        f"/policy-sets/{policy_set}/parameters",
                        json={
                            "data": {
                                "type": "vars",
                                "attributes": {
                                    "key": f"k{n}",
                                    "value": f"v{n}",
                                    "category": "policy-set",
                                },
                            }
                        },
                    )
                    if created.status_code == 201:
                        acknowledged_parameters[created.json()["data"]["id"]] = f"k{n}"
                except httpx.TransportError:
                    return  # the server was killed mid-request: that write was not acknowledged

    writer = threading.Thread(target=write_loop)
    writer.start()
    time.sleep(1.0 + random.random())
    _kill(proc)
    stop.set()
    writer.join(10)
    record_property(
        "tried:acknowledged writes before kill -9",
        len(acknowledged_policies) + len(acknowledged_parameters),
    )
    assert acknowledged_policies and acknowledged_parameters

    proc, lines = start("--state", str(state))
    address = address_of(lines)
    try:
        assert any("State: resumed from" in line for line in lines)
        with _secrets(address) as secrets, _platform(address) as platform:
            stored = set(secrets.request("LIST", "/sys/policies/acl").json()["keys"])
            missing = set(acknowledged_policies) - stored
            assert not missing, f"acknowledged policies lost: {sorted(missing)[:5]}"
            name, body = random.choice(sorted(acknowledged_policies.items()))
            assert secrets.get(f"/sys/policies/acl/{name}").json()["data"]["policy"] == body
            policy_set = _policy_set_id(platform)
            params = platform.get(
                f"/policy-sets/{policy_set}/parameters", params={"page[size]": 100}
            ).json()
            total = params["meta"]["pagination"]["total-count"]
            seen: set[str] = set()
            for page in range(1, params["meta"]["pagination"]["total-pages"] + 1):
                answer = platform.get(
                    f"/policy-sets/{policy_set}/parameters",
                    params={"page[size]": 100, "page[number]": page},
                ).json()
                seen.update(item["id"] for item in answer["data"])
            assert len(seen) == total
            assert set(acknowledged_parameters) <= seen
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


@pytest.mark.slow
def test_a_rekey_in_progress_and_tokens_survive_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "sandbox.db"
    init_file = tmp_path / "init.json"
    proc, lines = start(
        "--token", ROOT, "--state", str(state), "--key-shares", "3", "--key-threshold", "2",
        "--init-file", str(init_file),
    )  # fmt: skip
    address = address_of(lines)
    shares = json.loads(init_file.read_text())["keys"]
    with _secrets(address) as api:
        started = api.put("/sys/rekey/init", json={"secret_shares": 3, "secret_threshold": 2})
        nonce = started.json()["nonce"]
        progress = api.put("/sys/rekey/update", json={"key": shares[0], "nonce": nonce}).json()
        assert progress["progress"] == 1
        made = api.post("/auth/token/create", json={"policies": ["default"], "ttl": "1h"})
        child = made.json()["auth"]["client_token"]
        clock_before = httpx.get(f"{address}/v1/sys/health").headers["date"]
    _kill(proc)

    proc, lines = start("--state", str(state))
    address = address_of(lines)
    try:
        assert not any("Initial unseal shares" in line for line in lines)
        with _secrets(address) as api:
            status = api.get("/sys/rekey/init").json()
            assert status["started"] and status["progress"] == 1 and status["nonce"] == nonce
            done = api.put("/sys/rekey/update", json={"key": shares[1], "nonce": nonce}).json()
            assert done["complete"] is True and len(done["keys"]) == 3
        with _secrets(address, child) as as_child:
            assert as_child.get("/auth/token/lookup-self").status_code == 200
        clock_after = httpx.get(f"{address}/v1/sys/health").headers["date"]
        assert _http_date(clock_after) >= _http_date(clock_before)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


@pytest.mark.slow
def test_a_checked_out_account_is_still_out_after_kill_9(tmp_path: Path) -> None:
    state = tmp_path / "sandbox.db"
    proc, lines = start("--token", ROOT, "--state", str(state))
    address = address_of(lines)
    with _secrets(address) as api:
        out = api.post("/ad/library/break-glass/check-out", json={"ttl": "1h"})
        assert out.status_code == 200, out.text
        account = out.json()["data"]["service_account_name"]
        lease_id = out.json()["lease_id"]
    _kill(proc)

    proc, lines = start("--state", str(state))
    address = address_of(lines)
    try:
        with _secrets(address) as api:
            status = api.get("/ad/library/break-glass/status").json()["data"]
            assert status[account]["available"] is False
            looked = api.put("/sys/leases/lookup", json={"lease_id": lease_id})
            assert looked.status_code == 200 and looked.json()["data"]["id"] == lease_id
            # And it can be checked in after the restart, by the same token.
            back = api.post(
                "/ad/library/break-glass/check-in", json={"service_account_names": [account]}
            )
            assert back.status_code == 200 and back.json()["data"]["check_ins"] == [account]
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


@pytest.mark.slow
def test_a_file_that_is_not_a_state_file_is_refused_clearly(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("these are not the droids\n" * 100)
    done = subprocess.run(
        [sys.executable, "-m", "toolkit", "sandbox", "--port", "0", "--state", str(bogus)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"cannot use --state {bogus}" in done.stderr
    assert "Traceback" not in done.stderr
    assert bogus.read_text().startswith("these are not")


def _http_date(value: str) -> float:
    from email.utils import parsedate_to_datetime

    return parsedate_to_datetime(value).timestamp()


def test_the_whole_demo_state_is_stored_and_resumed_in_process(tmp_path: Path) -> None:
    from toolkit.sandbox import Sandbox

    path = str(tmp_path / "demo.db")
    with Sandbox(state=path) as first:
        assert not first.resumed
        with _secrets(first.address, first.token) as api:
            assert (
                api.put("/sys/policies/acl/kept", json={"policy": 'path "a/*" {}'}).status_code
                == 204
            )
        engines = sorted(first.secrets.mounts.engines)
        leases = len(first.secrets.leases)
    with Sandbox(state=path) as second:
        assert second.resumed
        assert sorted(second.secrets.mounts.engines) == engines
        assert len(second.secrets.leases) <= leases  # some may have expired meanwhile, none added
        with _secrets(second.address, second.token) as api:
            assert api.get("/sys/policies/acl/kept").status_code == 200
            # Every engine mount answers after the restart, with its state object.
            for path in engines:
                mount = second.secrets.mounts.engines[path]
                assert (mount.backend is None) == (
                    mount.type in ("system", "cubbyhole", "identity")
                )


def test_a_state_an_older_toolkit_stored_is_refused_by_its_format_saying_what_to_do(
    tmp_path: Path,
) -> None:
    import sqlite3

    from toolkit import __version__
    from toolkit.sandbox import Sandbox
    from toolkit.sandbox._state import StateFile, StateFileError

    path = tmp_path / "older.db"
    Sandbox(state=str(path), demo=False).stop()
    with sqlite3.connect(path) as db:
        assert dict(db.execute("SELECT key, value FROM sandbox_meta"))["toolkit_version"] == (
            __version__
        )
        # What the toolkit stored before its stores were renamed: format 2, no version.
        db.execute("UPDATE sandbox_meta SET value = '2' WHERE key = 'format'")
        db.execute("DELETE FROM sandbox_meta WHERE key = 'toolkit_version'")
    stored = StateFile(str(path))
    try:
        with pytest.raises(StateFileError) as caught:
            stored.load()
    finally:
        stored.close()
    message = str(caught.value)
    assert "format 2 (an older toolkit), this sandbox reads 3" in message
    assert message.endswith("start with another --state file") and "\n" not in message
    # A name the sandbox no longer has, under the current format: the same advice.
    with sqlite3.connect(path) as db:
        db.execute("UPDATE sandbox_meta SET value = '3' WHERE key = 'format'")
        db.execute("INSERT INTO sandbox_meta VALUES ('toolkit_version', '0.0.9')")
        db.execute(
            "UPDATE sandbox_areas SET doc = ? WHERE name = 'clock'",
            (json.dumps({"$o": "toolkit.sandbox._clock:GoneClock", "#": 0, "a": {}}),),
        )
    stored = StateFile(str(path))
    try:
        with pytest.raises(StateFileError, match=r"stored by toolkit 0\.0\.9, this is .*another"):
            stored.load()
    finally:
        stored.close()


# -- the file is private, and read as data ---------------------------------------------------


def _refusal(state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolkit", "sandbox", "--port", "0", "--state", str(state)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_state_file_and_its_wal_and_shm_files_are_created_0600(tmp_path: Path) -> None:
    import os
    import stat

    from toolkit.sandbox import Sandbox

    old = os.umask(0o022)  # the usual umask: it would make 0644 files
    try:
        path = tmp_path / "private.db"
        with Sandbox(state=str(path), demo=False) as sb:
            with _secrets(sb.address, sb.token) as api:
                assert (
                    api.put("/sys/policies/acl/p", json={"policy": 'path "a/*" {}'}).status_code
                    == 204
                )
            made = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    finally:
        os.umask(old)
    assert set(made) >= {"private.db", "private.db-wal", "private.db-shm"}, made
    assert all(mode == 0o600 for mode in made.values()), {k: oct(v) for k, v in made.items()}


@pytest.mark.slow
def test_a_state_file_others_may_write_is_refused_naming_the_file_and_the_mode(
    tmp_path: Path,
) -> None:
    from toolkit.sandbox import Sandbox

    path = tmp_path / "shared.db"
    Sandbox(state=str(path), demo=False).stop()
    path.chmod(0o666)
    done = _refusal(path)
    assert done.returncode == 2
    assert f"cannot use --state {path}" in done.stderr
    assert "mode 0666" in done.stderr and "group and others may write" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_state_file_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    import os

    import pytest

    from toolkit.sandbox import Sandbox

    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    path = tmp_path / "theirs.db"
    Sandbox(state=str(path), demo=False).stop()
    os.chown(path, 12345, 12345)
    done = _refusal(path)
    assert done.returncode == 2
    assert "owned by uid 12345, not by this user" in done.stderr
    assert str(path) in done.stderr


_PLANTED = """
import os, pickle, sqlite3, sys

class Planted:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))

db = sqlite3.connect(sys.argv[1])
db.execute(sys.argv[3])
db.execute(sys.argv[4], (pickle.dumps(Planted()),))
db.commit()
"""


@pytest.mark.slow
def test_a_planted_pickle_in_the_old_state_table_runs_nothing_and_is_refused(
    tmp_path: Path,
) -> None:
    state, marker = tmp_path / "planted.db", tmp_path / "ran"
    subprocess.run(
        [
            sys.executable, "-c", _PLANTED, str(state), str(marker),
            "CREATE TABLE sandbox_state (id INTEGER PRIMARY KEY, format INTEGER,"
            " saved_at REAL, state BLOB)",
            "INSERT INTO sandbox_state VALUES (1, 1, 0, ?)",
        ],
        check=True,
    )  # fmt: skip
    state.chmod(0o600)
    done = _refusal(state)
    assert not marker.exists(), "loading the state file ran the planted code"
    assert done.returncode == 2
    assert "older sandbox as a pickle" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_planted_pickle_in_a_state_row_runs_nothing_and_is_refused(tmp_path: Path) -> None:
    from toolkit.sandbox import Sandbox

    state, marker = tmp_path / "planted.db", tmp_path / "ran"
    Sandbox(state=str(state), demo=False).stop()
    subprocess.run(
        [
            sys.executable, "-c", _PLANTED, str(state), str(marker),
            "SELECT 1", "UPDATE sandbox_areas SET doc = ? WHERE name = 'secrets'",
        ],
        check=True,
    )  # fmt: skip
    done = _refusal(state)
    assert not marker.exists(), "loading the state file ran the planted code"
    assert done.returncode == 2
    assert "the stored state cannot be read" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_stored_object_naming_code_outside_the_sandbox_is_refused(tmp_path: Path) -> None:
    import sqlite3

    from toolkit.sandbox import Sandbox

    state, marker = tmp_path / "forged.db", tmp_path / "ran"
    Sandbox(state=str(state), demo=False).stop()
    forged = {"$p": [{"$f": "os:system"}, [f"touch {marker}"], {}]}
    with sqlite3.connect(state) as db:
        db.execute(
            "UPDATE sandbox_areas SET doc = ? WHERE name = 'clock'",
            (json.dumps({"$o": "subprocess:Popen", "#": 0, "a": {"args": forged}}),),
        )
    done = _refusal(state)
    assert not marker.exists()
    assert done.returncode == 2
    assert "refusing 'subprocess:Popen'" in done.stderr and "Traceback" not in done.stderr


# -- a write stores what it changed ----------------------------------------------------------


@pytest.mark.slow  # it makes and stores twenty thousand leases
def test_a_token_create_stores_a_few_rows_whatever_the_number_of_leases(tmp_path: Path) -> None:
    from toolkit.sandbox import Sandbox

    with Sandbox(state=str(tmp_path / "many.db")) as sb:
        assert sb.state_file is not None
        with sb.secrets.lock:
            for n in range(20_000):
                sb.secrets.leases.create("database/creds/bulk", ttl=86_400, suffix=f"l{n:05d}")
        sb.persist()
        assert sb.state_file.last_rows >= 20_000  # the new leases, each its own row
        with _secrets(sb.address, sb.token) as api:
            made = api.post("/auth/token/create", json={"policies": ["default"], "ttl": "1h"})
            assert made.status_code == 200, made.text
            # The token, its lease and the clock: not the 23,000 leases held.
            assert sb.state_file.last_rows <= 4
            child = made.json()["auth"]["client_token"]
    with Sandbox(state=str(tmp_path / "many.db")) as again:
        assert len(again.secrets.leases) >= 20_000
        with _secrets(again.address, child) as as_child:
            assert as_child.get("/auth/token/lookup-self").status_code == 200


def test_a_state_file_held_by_one_sandbox_is_refused_to_another_and_freed_by_a_refusal(
    tmp_path: Path,
) -> None:
    import sqlite3

    from toolkit._durable import Locked
    from toolkit.sandbox import Sandbox
    from toolkit.sandbox._state import StateFile, StateFileError

    path = tmp_path / "held.db"
    with Sandbox(state=str(path), demo=False), pytest.raises(Locked, match="in use by process"):
        Sandbox(state=str(path), demo=False)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE sandbox_meta SET value = '2' WHERE key = 'format'")
    with pytest.raises(StateFileError, match="format 2"):
        Sandbox(state=str(path), demo=False)
    StateFile(str(path)).close()  # the refused sandbox let go of the file's lock
