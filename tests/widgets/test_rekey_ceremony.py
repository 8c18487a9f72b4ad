"""RekeyCeremonyForm: whole ceremonies by clicks, and no share left anywhere afterwards."""

from __future__ import annotations

import base64
import json
import re
import stat
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pysequoia
import pytest

from toolkit import Sensitive
from toolkit.sandbox import Sandbox
from toolkit.secrets import RekeyCeremony, SecretsClient
from widgets import RekeyCeremonyForm
from widgets._common import output_text


@pytest.fixture
def old_shares(sandbox: Sandbox, tmp_path: Path) -> list[str]:
    """The fresh sandbox's current unseal shares (hex), as ``sys/init`` handed them out."""
    path = tmp_path / "init.json"
    sandbox.secrets.write_init_file(str(path))
    return list(json.loads(path.read_text())["keys"])


@pytest.fixture
def form(secrets_client: SecretsClient) -> RekeyCeremonyForm:
    return RekeyCeremonyForm(secrets_client)


def keypair(name: str) -> pysequoia.Cert:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pysequoia.Cert.generate(f"{name} <{name}@example.org>")


def upload_entry(name: str, content: bytes) -> dict[str, Any]:
    return {
        "name": name,
        "type": "application/pgp-keys",
        "size": len(content),
        "content": memoryview(content),
        "last_modified": datetime(2025, 1, 1, tzinfo=UTC),
    }


def decrypt(base64_message: str, cert: pysequoia.Cert) -> str:
    """A key holder's step: decrypt their PGP-encrypted share."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        secret_key = cert.secrets
        assert secret_key is not None
        message = base64.b64decode(base64_message)
        plain = pysequoia.decrypt(message, decryptor=secret_key.decryptor())
    assert plain.bytes is not None
    return plain.bytes.decode()


def start(form: RekeyCeremonyForm, *, verify: bool = True) -> None:
    """Start a 3-share, threshold-2 attempt from the form."""
    form.shares.value, form.threshold.value = 3, 2
    form.verify.value = verify
    form.start_button.click()


def enter(form: RekeyCeremonyForm, share: str) -> None:
    form.share.value = share
    form.submit_button.click()
    assert form.share.value == ""


def shown_share(form: RekeyCeremonyForm) -> str:
    """The text of the revealed share (what the key holder copies)."""
    found = re.search(r"<pre[^>]*>([^<]+)</pre>", form.share_view.value)
    assert found, "no share is shown"
    return found.group(1)


def hand_out(form: RekeyCeremonyForm) -> list[str]:
    """Each key holder in turn reveals, records, and confirms their share."""
    recorded = []
    total = len(form.ceremony.new_shares)
    for k in range(1, total + 1):
        assert form.reveal_button.description == f"Reveal share for keyholder {k}"
        assert form.share_view.value == ""
        form.reveal_button.click()
        assert form.reveal_button.disabled and not form.recorded_button.disabled
        recorded.append(shown_share(form))
        assert leaks(form, recorded[-1:]) != []  # the walk below does see a shown share
        form.recorded_button.click()
        assert form.share_view.value == ""
    assert form.reveal_button.disabled
    assert f"All {total} new shares" in form.handout_note.value
    return recorded


def widget_texts(widget: Any) -> Iterator[str]:
    """Every value, description and placeholder of a widget tree, and Output contents."""
    for attr in ("value", "description", "placeholder", "tooltip"):
        value = getattr(widget, attr, None)
        if isinstance(value, str):
            yield value
        elif isinstance(value, tuple | list):
            yield repr(value)
    if hasattr(widget, "outputs"):
        yield output_text(widget)
    for child in getattr(widget, "children", ()):
        yield from widget_texts(child)


def leaks(form: RekeyCeremonyForm, secrets: list[str]) -> list[str]:
    forms = {str(s).lower() for s in secrets}
    for share in secrets:
        try:
            forms.add(base64.b64encode(bytes.fromhex(share)).decode())
        except ValueError:
            forms.add(share)
    texts = [*widget_texts(form.widget), repr(form), repr(form.ceremony), form.status.value]
    texts.append(repr(form.last_status))
    return sorted(s for s in forms for t in texts if s in t.lower() or s in t)


def test_a_ceremony_with_verification_runs_end_to_end_by_clicks_and_leaves_no_share(
    form: RekeyCeremonyForm,
    sandbox: Sandbox,
    secrets_client: SecretsClient,
    old_shares: list[str],
) -> None:
    assert form.last_status is not None and form.last_status["phase"] == "idle"
    form.shares.value, form.threshold.value, form.verify.value = 3, 2, True
    form.start_button.click()
    assert form.ceremony.phase == "collecting"
    assert "3 of 2" not in form.panel.value and "2 of 3 unseal" in form.panel.value
    nonce = form.last_status["nonce"]
    assert nonce and nonce in form.panel.value

    enter(form, old_shares[0])
    assert (form.progress.value, form.progress.max) == (1, 3)
    enter(form, old_shares[1])
    enter(form, old_shares[2])
    assert form.ceremony.phase == "verifying"
    assert form.submit_button.description == "Verify new share"

    new = hand_out(form)
    assert len(new) == 3 and not set(new) & set(old_shares)

    enter(form, new[2])
    assert (form.progress.value, form.progress.max) == (1, 2)
    enter(form, new[0])
    assert form.ceremony.phase == "complete"
    assert "Complete" in form.status_text
    assert secrets_client.seal.status()["n"] == 3

    assert not form.prove_button.disabled
    form.prove_button.click()
    assert "unseal the server" in form.status_text
    assert secrets_client.seal.status()["sealed"] is False
    seal = sandbox.secrets.seal
    assert seal.rebuilds_root_key([bytes.fromhex(s) for s in new[:2]])
    assert not seal.rebuilds_root_key([bytes.fromhex(s) for s in old_shares[:3]])

    assert leaks(form, old_shares + new) == []


def test_a_pgp_ceremony_shows_fingerprints_and_hands_out_encrypted_shares_one_at_a_time(
    form: RekeyCeremonyForm, sandbox: Sandbox, old_shares: list[str]
) -> None:
    holders = [keypair(f"holder{i}") for i in range(3)]
    form.upload.value = tuple(
        upload_entry(f"holder{i}.asc", str(cert).encode()) for i, cert in enumerate(holders)
    )
    fingerprints = [c.fingerprint.lower() for c in holders]
    assert [fp in form.fingerprints.value for fp in fingerprints] == [True] * 3
    assert "holder0@example.org" in form.fingerprints.value

    form.shares.value, form.threshold.value = 3, 2
    form.backup.value = form.verify.value = True
    form.start_button.click()
    assert form.last_status is not None
    assert form.last_status["pgp_fingerprints"] == fingerprints
    for share in old_shares[:3]:
        enter(form, share)

    blobs = hand_out(form)
    new = [decrypt(blob, cert) for blob, cert in zip(blobs, holders, strict=True)]
    assert all(len(bytes.fromhex(s)) == 33 for s in new)
    enter(form, new[0])
    enter(form, new[1])
    assert form.ceremony.phase == "complete"
    assert sandbox.secrets.seal.rebuilds_root_key([bytes.fromhex(s) for s in new[1:]])
    # The form holds only encrypted shares: proving needs them decrypted, by hand.
    assert form.prove_button.disabled
    assert leaks(form, old_shares + new + blobs) == []


def test_a_private_key_upload_is_refused_and_no_fingerprint_is_kept(
    form: RekeyCeremonyForm,
) -> None:
    cert = keypair("careless")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        private = bytes(cert.secrets) if cert.secrets is not None else b""
    form.upload.value = (upload_entry("careless.key", private),)
    assert form.pgp_keys == [] and form.fingerprints.value == ""
    assert "private key" in form.status_text and "careless.key" in form.status_text


def test_a_malformed_share_is_refused_before_sending_and_the_field_is_emptied(
    form: RekeyCeremonyForm, old_shares: list[str]
) -> None:
    start(form)
    enter(form, "not-a-share")
    assert "neither hex nor base64" in form.status_text
    assert form.last_status is not None and form.last_status["progress"] == 0


def test_a_wrong_share_shows_the_servers_reason_and_the_status_is_reread(
    form: RekeyCeremonyForm, secrets_client: SecretsClient, old_shares: list[str]
) -> None:
    start(form)
    # Another operator restarts the attempt meanwhile: the panel still shows the old nonce.
    stale = form.last_status["nonce"] if form.last_status else None
    secrets_client.rekey.cancel()
    fresh = secrets_client.rekey.init(3, 2)["nonce"]
    assert fresh != stale and stale in form.panel.value

    enter(form, old_shares[0])
    assert form.last_status is not None
    assert form.last_status["nonce"] == fresh and form.last_status["progress"] == 1
    assert fresh in form.panel.value


def test_another_kernel_joins_the_ceremony_from_the_servers_status(
    form: RekeyCeremonyForm, secrets_client: SecretsClient, old_shares: list[str]
) -> None:
    start(form)
    enter(form, old_shares[0])

    other = RekeyCeremonyForm(secrets_client)
    assert other.last_status is not None
    assert (other.last_status["phase"], other.last_status["progress"]) == ("collecting", 1)
    assert other.progress.value == 1
    enter(other, old_shares[1])
    enter(other, old_shares[2])
    assert other.ceremony.phase == "verifying"
    assert other.reveal_button.description == "Reveal share for keyholder 1"

    # The first kernel sees the phase change but never holds the new shares.
    form.refresh_button.click()
    assert form.last_status is not None and form.last_status["phase"] == "verifying"
    assert form.reveal_button.disabled and "handed out in the kernel" in form.handout_note.value
    new = hand_out(other)
    enter(form, new[0])
    enter(form, new[1])
    assert form.last_status is not None and form.last_status["phase"] == "complete"
    other_view = other.refresh()
    assert other_view is not None and other_view["phase"] == "idle"
    assert secrets_client.seal.status()["n"] == 3


def test_cancel_and_restart_reset_the_attempt(
    form: RekeyCeremonyForm, secrets_client: SecretsClient, old_shares: list[str]
) -> None:
    start(form)
    enter(form, old_shares[0])
    first = form.last_status["nonce"] if form.last_status else None

    form.restart_button.click()
    assert form.last_status is not None
    assert form.last_status["progress"] == 0 and form.last_status["nonce"] != first
    assert "Restarted" in form.status_text

    form.cancel_button.click()
    assert form.ceremony.phase == "idle"
    assert secrets_client.rekey.status()["started"] is False
    assert form.cancel_button.disabled and not form.start_button.disabled


def test_a_refused_start_shows_the_reason(form: RekeyCeremonyForm) -> None:
    form.shares.value, form.threshold.value = 3, 2
    form.backup.value = True  # backup needs PGP keys
    form.start_button.click()
    assert "backup needs pgp_keys" in form.status_text
    assert form.ceremony.phase == "idle"


def test_the_widget_can_drive_a_ceremony_object_it_is_given(
    secrets_client: SecretsClient, old_shares: list[str]
) -> None:
    ceremony = RekeyCeremony(secrets_client)
    ceremony.start(3, 2)
    form = RekeyCeremonyForm(secrets_client, ceremony)
    for share in old_shares[:3]:
        enter(form, share)
    assert ceremony.phase == "complete"
    shares = ceremony.new_shares
    assert all(isinstance(s, Sensitive) for s in shares)
    assert repr(form).startswith("<RekeyCeremonyForm <RekeyCeremony complete")


# -- a seal with stored shares (auto-unseal) ----------------------------------------------


@pytest.fixture
def recovery_sandbox(tmp_path: Path) -> Iterator[tuple[SecretsClient, list[str]]]:
    path = tmp_path / "init.json"
    with (
        Sandbox(demo=False, init_file=str(path), recovery_seal=True) as sb,
        SecretsClient(sb.address, sb.token) as client,
    ):
        yield client, list(json.loads(path.read_text())["recovery_keys"])


def test_a_recovery_ceremony_asks_for_and_hands_out_recovery_shares(
    recovery_sandbox: tuple[SecretsClient, list[str]],
) -> None:
    client, recovery = recovery_sandbox
    form = RekeyCeremonyForm(client, target="recovery")
    assert "3 of 5 recovery shares" in form.panel.value
    assert "auto-unseal" in form.panel.value
    start(form)
    assert "2 of 3 recovery" in form.panel.value
    assert form.share.description == "Recovery share"
    for share in recovery[:3]:
        enter(form, share)
    new = hand_out(form)
    for share in new[:2]:
        enter(form, share)
    assert form.ceremony.phase == "complete"
    form.prove_button.click()
    assert client.seal.status()["sealed"] is False
    assert leaks(form, recovery + new) == []


def test_a_root_ceremony_on_a_recovery_seal_says_no_share_is_handed_out(
    recovery_sandbox: tuple[SecretsClient, list[str]],
) -> None:
    client, recovery = recovery_sandbox
    form = RekeyCeremonyForm(client)
    start(form, verify=False)
    assert "none: the seal keeps the new root key" in form.panel.value
    assert form.share.description == "Recovery share"
    for share in recovery[:3]:
        enter(form, share)
    assert form.ceremony.phase == "complete"
    assert "no share to hand out" in form.handout_note.value
    assert form.reveal_button.disabled and form.prove_button.disabled
    assert leaks(form, recovery) == []


def test_after_the_ceremony_the_form_verifies_exports_the_record_and_shows_the_checklist(
    form: RekeyCeremonyForm, old_shares: list[str], tmp_path: Path
) -> None:
    start(form, verify=False)
    form.verify_live_button.click()
    assert "not complete" in form.verification.value and "3 of 5" in form.verification.value
    assert form.checklist_view.value == ""

    for share in old_shares[:3]:
        enter(form, share)
    assert form.ceremony.phase == "complete"
    assert "Retire the old shares" in form.checklist_view.value
    assert "Delete the backup" not in form.checklist_view.value  # none was kept

    form.verify_live_button.click()
    assert "Verified" in form.verification.value and "2 of 3" in form.verification.value

    target = tmp_path / "record.json"
    form.record_path.value = str(target)
    form.record_button.click()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    saved = json.loads(target.read_text())
    assert [s["event"] for s in saved["steps"]] == ["started"] + ["current share entered"] * 3
    assert saved["nonces"][0] in form.record_view.value
    assert "readable by you only" in form.status_text
    new = hand_out(form)
    assert leaks(form, old_shares + new) == []
    assert not any(share in target.read_text() for share in old_shares + new)
