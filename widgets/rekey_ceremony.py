"""A form that walks key holders through a rekey ceremony, one share at a time.

    form = RekeyCeremonyForm(client)
    form            # start (or join) the ceremony, enter shares, hand out the new ones

The form is a face on :class:`toolkit.secrets.RekeyCeremony`: every button
re-reads the server's status (and re-reads it after an error too), so key
holders can work from different kernels and a nonce is never taken from a
stale screen. Shares are typed into a password field that is emptied the
moment the form reads it, before anything is sent. The new shares stay in the
ceremony object's memory; the form shows one at a time, to the key holder
whose turn it is, and blanks it when they say they have recorded it, when
``reveal_seconds`` pass (60 s by default), or when the kernel shuts down.
"""

from __future__ import annotations

import html
from typing import Any

from toolkit import InputError, Record, Sensitive, ToolkitError
from toolkit.secrets import RekeyCeremony, SecretsClient
from toolkit.secrets.pgp import PGPPublicKey, read_public_key

from ._common import REVEAL_SECONDS, Form, RevealTimeout

__all__ = ["RekeyCeremonyForm"]


class RekeyCeremonyForm(Form):
    """Start, join, carry through, cancel or restart a rekey; hand out the new shares."""

    title = "Rekey ceremony"

    def __init__(
        self,
        client: SecretsClient,
        ceremony: RekeyCeremony | None = None,
        *,
        target: str = "root",
        reveal_seconds: float = REVEAL_SECONDS,
    ) -> None:
        """``target="recovery"`` rekeys the recovery shares of a seal that stores the root
        key (auto-unseal); the form then asks for and hands out recovery shares."""
        super().__init__()
        import ipywidgets as w

        self.reveal_timeout = RevealTimeout(self.hide_share, reveal_seconds)
        self.client = client
        self.ceremony = ceremony or RekeyCeremony(client, target=target)
        self.last_status: Record | None = None
        self.pgp_keys: list[PGPPublicKey] = []
        # Which key holder's share is next to hand out (0-based), and how many there are.
        self._turn = 0

        # -- start form
        self.shares = w.BoundedIntText(value=5, min=1, max=255, description="Shares")
        self.threshold = w.BoundedIntText(value=3, min=1, max=255, description="Threshold")
        self.upload = w.FileUpload(
            accept="", multiple=True, description="PGP public keys", layout={"width": "auto"}
        )
        self.fingerprints = w.HTML(value="")
        self.clear_keys_button = self._button(
            self.clear_keys, description="Clear keys", icon="times"
        )
        self.backup = w.Checkbox(description="Keep a backup of the encrypted shares", indent=False)
        self.verify = w.Checkbox(
            value=True, description="Require verification of the new shares", indent=False
        )
        self.start_button = self._button(
            self.start, description="Start", button_style="primary", icon="play"
        )

        # -- status panel
        self.panel = w.HTML(value="")
        self.progress = w.IntProgress(value=0, min=0, max=1, description="Progress")
        self.refresh_button = self._button(self.refresh, description="Refresh", icon="refresh")
        self.cancel_button = self._button(
            self.cancel, description="Cancel", button_style="danger", icon="stop"
        )
        self.restart_button = self._button(
            self.restart, description="Restart", button_style="warning", icon="redo"
        )

        # -- share entry (current shares, then new ones while verifying)
        # continuous_update=False: the share reaches the kernel once, not a keystroke at a time.
        self.share = w.Password(
            description="Key share",
            placeholder="one key share, hex or base64",
            continuous_update=False,
        )
        self.submit_button = self._button(self.submit, description="Submit share", icon="key")

        # -- handing out the new shares
        self.reveal_button = self._button(
            self.reveal, description="Reveal share", icon="eye", disabled=True
        )
        self.share_view = w.HTML(value="")
        self.recorded_button = self._button(
            self.recorded, description="I have recorded it", icon="check", disabled=True
        )
        self.handout_note = w.HTML(value="")

        # -- after completion
        self.prove_button = self._button(
            self.prove, description="Prove the new shares unseal", icon="unlock", disabled=True
        )

        # -- at the end: live verification, the ceremony record, the checklist
        self.verify_live_button = self._button(
            self.verify_live, description="Check the server", icon="check-circle"
        )
        self.verification = w.HTML(value="")
        self.record_path = w.Text(
            description="Save the record to",
            placeholder="ceremony.json (optional; written 0600)",
            style={"description_width": "initial"},
            layout=w.Layout(width="auto"),
        )
        self.record_button = self._button(
            lambda: self.export_record(self.record_path.value or None),
            description="Export the ceremony record",
            icon="file",
        )
        self.record_view = w.HTML(value="")
        self.checklist_view = w.HTML(value="")

        self._on_change(self.read_keys, self.upload)

        self._layout(
            w.HTML("<b>Start</b>"),
            w.HBox([self.shares, self.threshold]),
            w.HBox([self.upload, self.clear_keys_button]),
            self.fingerprints,
            w.HBox([self.backup, self.verify]),
            self.start_button,
            w.HTML("<b>Status</b>"),
            self.panel,
            self.progress,
            w.HBox([self.refresh_button, self.cancel_button, self.restart_button]),
            w.HTML("<b>Key shares</b>"),
            w.HBox([self.share, self.submit_button]),
            w.HTML("<b>New shares</b>"),
            self.handout_note,
            w.HBox([self.reveal_button, self.recorded_button]),
            self.share_view,
            self.prove_button,
            w.HTML("<b>After the ceremony</b>"),
            w.HBox([self.verify_live_button, self.record_path, self.record_button]),
            self.verification,
            self.record_view,
            self.checklist_view,
        )
        self.refresh()

    # -- reading the server ----------------------------------------------------
    def refresh(self) -> Record | None:
        """Re-read the attempt (``RekeyCeremony.status``) and redraw the panel and buttons."""
        try:
            status = self.ceremony.status()
        except ToolkitError as exc:
            self.last_status = None
            self.panel.value = "<i>status unavailable</i>"
            self.show_error(exc)
            return None
        self.last_status = status
        self._draw(status)
        return status

    def _draw(self, status: Record) -> None:
        phase = str(status["phase"])
        required = status.get("required") or 0
        kind = str(status.get("share_kind") or "unseal")
        new_kind = str(status.get("new_share_kind") or "")
        rows = [
            ("phase", phase),
            ("progress", f"{status['progress']} of {required}" if required else "-"),
            ("nonce", status.get("nonce") or "-"),
            ("current seal", f"{self._seal_shape()} {kind} shares"),
        ]
        if kind == "recovery":
            rows.append(
                ("seal", "stores the root key (auto-unseal): key holders hold recovery shares")
            )
        if not new_kind:
            rows.append(("new shares", "none: the seal keeps the new root key"))
        elif status.get("t") and status.get("n"):
            rows.append(("new shares", f"{status['t']} of {status['n']} {new_kind}"))
        if status.get("verification_required"):
            rows.append(("verification", "required"))
        if status.get("pgp_fingerprints"):
            rows.append(("PGP keys", ", ".join(map(str, status["pgp_fingerprints"]))))
        if status.get("backup"):
            rows.append(("backup", "kept on the server"))
        self.panel.value = (
            "<table>"
            + "".join(
                f"<tr><th style='text-align:left;padding-right:1em'>{k}</th>"
                f"<td style='text-align:left'><code>{html.escape(str(v))}</code></td></tr>"
                for k, v in rows
            )
            + "</table>"
        )
        self.progress.max = max(int(required), 1)
        self.progress.value = min(int(status["progress"]), self.progress.max)
        collecting = phase in ("collecting", "verifying")
        self.submit_button.disabled = not collecting
        self.submit_button.description = (
            "Verify new share" if phase == "verifying" else "Submit share"
        )
        self.share.description = (
            "New share"
            if phase == "verifying"
            else ("Recovery share" if kind == "recovery" else "Key share")
        )
        self.start_button.disabled = collecting
        self.cancel_button.disabled = not collecting
        self._draw_handout()

    def _seal_shape(self) -> str:
        try:
            seal = self.client.seal.status()
        except ToolkitError:
            return "unknown"
        return f"{seal.get('t')} of {seal.get('n')}"

    def _new_shares(self) -> list[Sensitive] | None:
        try:
            return self.ceremony.new_shares
        except InputError:
            return None

    def _draw_handout(self) -> None:
        shares = self._new_shares()
        showing = bool(self.share_view.value)
        if shares is None:
            self.reveal_button.disabled = True
            self.reveal_button.description = "Reveal share"
            self.recorded_button.disabled = True
            self.handout_note.value = ""
            phase = self.ceremony.phase
            if phase == "verifying":
                self.handout_note.value = (
                    "The new shares were handed out in the kernel that gave the last "
                    "current share; enter them below to verify."
                )
        elif not shares:
            self.reveal_button.disabled = True
            self.recorded_button.disabled = True
            self.handout_note.value = (
                "The seal keeps the new root key: there is no share to hand out."
            )
        elif self._turn < len(shares):
            k = self._turn + 1
            self.reveal_button.description = f"Reveal share for keyholder {k}"
            self.reveal_button.disabled = showing
            self.recorded_button.disabled = not showing
            what = "PGP-encrypted share" if self._encrypted else "share"
            self.handout_note.value = html.escape(
                f"Keyholder {k} of {len(shares)}: make sure nobody else can see the "
                f"screen, reveal your {what}, record it, then confirm."
            )
        else:
            self.reveal_button.disabled = True
            self.reveal_button.description = "Reveal share"
            self.recorded_button.disabled = True
            self.handout_note.value = html.escape(
                f"All {len(shares)} new shares have been handed out."
            )
        done = self.ceremony.phase == "complete"
        self.prove_button.disabled = not (done and shares and not self._encrypted)
        self._draw_checklist()

    @property
    def _encrypted(self) -> bool:
        return bool(self.last_status and self.last_status.get("pgp_fingerprints"))

    # -- the start form --------------------------------------------------------
    def read_keys(self) -> list[PGPPublicKey]:
        """Read the uploaded public keys (in upload order) and show their fingerprints."""
        keys: list[PGPPublicKey] = []
        try:
            for entry in self.upload.value:
                keys.append(read_public_key(bytes(entry["content"]), str(entry["name"])))
        except ToolkitError as exc:
            self.pgp_keys = []
            self.fingerprints.value = ""
            self.show_error(exc)
            return []
        self.pgp_keys = keys
        self.fingerprints.value = "".join(
            f"<div>keyholder {i}: <code>{html.escape(key.label)}</code></div>"
            for i, key in enumerate(keys, 1)
        )
        if keys:
            self.show_note(f"{len(keys)} PGP key(s) read; share k goes to keyholder k.")
        return keys

    def clear_keys(self) -> None:
        """Forget the uploaded keys."""
        self.upload.value = ()
        self.pgp_keys = []
        self.fingerprints.value = ""

    def start(self) -> Record | None:
        """Start an attempt from the form. ``RekeyCeremony.start``."""
        keys = [k.key_base64 for k in self.pgp_keys] or None
        return self._act(
            lambda: self.ceremony.start(
                int(self.shares.value),
                int(self.threshold.value),
                pgp_keys=keys,
                backup=bool(self.backup.value),
                verify=bool(self.verify.value),
            ),
            "Started: key holders, enter your current shares.",
            new_attempt=True,
        )

    def cancel(self) -> Record | None:
        """Cancel the attempt; the current shares stay valid. ``RekeyCeremony.cancel``."""
        return self._act(self.ceremony.cancel, "Cancelled: the current shares stay valid.", True)

    def restart(self) -> Record | None:
        """Cancel and start again with the same parameters. ``RekeyCeremony.restart``."""
        return self._act(self.ceremony.restart, "Restarted: a new nonce, progress 0.", True)

    # -- shares ------------------------------------------------------------------
    def submit(self) -> Record | None:
        """Send the typed share: a current one, or a new one while verifying.

        The field is emptied before anything is checked or sent.
        """
        typed = Sensitive(self.share.value, "key share")
        self.share.value = ""
        verifying = self.ceremony.phase == "verifying"
        step = self.ceremony.verify_share if verifying else self.ceremony.submit_share
        return self._act(lambda: step(typed), "")

    def reveal(self) -> None:
        """Show the new share of the key holder whose turn it is (one at a time)."""
        shares = self._new_shares()
        if shares is None or self._turn >= len(shares):
            self.show_note("There is no new share to reveal.")
            return
        k = self._turn + 1
        if self._encrypted:
            text = self.ceremony.new_shares_base64[self._turn].reveal()
            what = "PGP-encrypted share (base64)"
        else:
            text = shares[self._turn].reveal()
            what = "share"
        self.share_view.value = (
            f"<div>Keyholder {k}, your {what}:</div>"
            f"<pre style='white-space:pre-wrap;word-break:break-all'>{html.escape(text)}</pre>"
        )
        self._draw_handout()
        self.reveal_timeout.start()

    def hide_share(self) -> None:
        """Blank the revealed share without passing the turn (its time ran out)."""
        self.reveal_timeout.cancel()
        self.share_view.value = ""
        self._draw_handout()

    def recorded(self) -> None:
        """Hide the revealed share and pass to the next key holder."""
        self.reveal_timeout.cancel()
        self.share_view.value = ""
        shares = self._new_shares()
        if shares is not None and self._turn < len(shares):
            self._turn += 1
        self._draw_handout()

    def prove(self) -> Record | None:
        """Seal the server and unseal it with the new shares. ``RekeyCeremony.prove_unseal``."""
        try:
            seal = self.ceremony.prove_unseal()
        except ToolkitError as exc:
            self.show_error(exc)
            self.refresh()
            return None
        self.refresh()
        self.show_ok(f"The new shares unseal the server ({seal.get('t')} of {seal.get('n')}).")
        return seal

    # -- after the ceremony ----------------------------------------------------------
    def verify_live(self) -> Record | None:
        """Check on the server that the rekey took effect. ``RekeyCeremony.verify_live``."""
        try:
            result = self.ceremony.verify_live()
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        shape = f"{result['seal_t']} of {result['seal_n']}"
        if result["ok"]:
            self.verification.value = html.escape(
                f"Verified: the rekey is complete and the seal reports the new {shape} shares."
            )
            self.show_ok("The server shows the new shares in force.")
        else:
            self.verification.value = "".join(
                f"<div>{html.escape(p)}</div>" for p in result["problems"]
            )
            self.show_note("The server does not show the new shares in force yet.")
        return result

    def export_record(self, path: str | None = None) -> Record | None:
        """Show the ceremony record (no share in it) and, given ``path``, save it 0600.

        ``RekeyCeremony.record`` / ``RekeyCeremony.save_record``.
        """
        record = self.ceremony.record()
        self.record_view.value = (
            "<pre style='white-space:pre-wrap'>"
            + html.escape(self.ceremony.record_json())
            + "</pre>"
        )
        if path:
            try:
                saved = self.ceremony.save_record(path)
            except OSError as exc:
                self.show_error(InputError(f"the record could not be saved: {exc.strerror}"))
                return record
            self.show_ok(f"Ceremony record saved to {saved} (readable by you only).")
        return record

    def _draw_checklist(self) -> None:
        """The post-ceremony checklist, shown once the ceremony is complete."""
        if self.ceremony.phase != "complete":
            self.checklist_view.value = ""
            return
        items = "".join(
            f"<li><b>{html.escape(i['item'])}</b>: {html.escape(i['why'])}. "
            f"<i>{html.escape(i['how'])}</i></li>"
            for i in self.ceremony.checklist()
        )
        self.checklist_view.value = (
            f"<div><b>Before you close this session</b></div><ol>{items}</ol>"
        )

    # -- one way to act ------------------------------------------------------------
    def _act(self, step: Any, done: str, new_attempt: bool = False) -> Record | None:
        if new_attempt:
            self.reveal_timeout.cancel()
            self.share_view.value = ""
            self._turn = 0
        try:
            step()
        except ToolkitError as exc:
            self.refresh()
            self.show_error(exc)
            return None
        status = self.refresh()
        if status is not None:
            self.show_ok(done or self._phase_message(status))
        return status

    def _phase_message(self, status: Record) -> str:
        phase = status["phase"]
        if phase == "collecting":
            return f"Share accepted: {status['progress']} of {status['required']}."
        if phase == "verifying":
            if self._new_shares() is not None and status["progress"] == 0 and self._turn == 0:
                return "The threshold is reached: hand out the new shares, then verify them."
            return f"New share accepted: {status['progress']} of {status['required']}."
        if phase == "complete":
            return "Complete: the new shares are in force."
        return "No rekey attempt is in progress."

    def __repr__(self) -> str:
        return f"<RekeyCeremonyForm {self.ceremony!r}>"
