"""Command line: ``python -m toolkit sandbox [options]`` (also ``toolkit-sandbox``),
``python -m toolkit runbooks DIR``, ``python -m toolkit check-notebooks PATH...``."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence


def _sandbox_parser(prog: str = "toolkit sandbox") -> argparse.ArgumentParser:
    from .sandbox import DEFAULT_TOKEN

    p = argparse.ArgumentParser(
        prog=prog,
        description="Serve the platform API (/api/v2) and the secrets server API (/v1) "
        "from one local address, with a demo data set unless --empty.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8200, help="port (default 8200; 0 picks a free one)")
    p.add_argument(
        "--token",
        default=DEFAULT_TOKEN,
        help=f"owner/organization token on every organization and the secrets root token "
        f"(default {DEFAULT_TOKEN!r})",
    )
    p.add_argument("--empty", action="store_true", help="start without the demo data set")
    p.add_argument(
        "--demo-scale",
        metavar="KIND=COUNT,...",
        default="",
        help="add generated records at scale to the demo data: leases, tokens, certificates, "
        "policies, agents; counts take k or M (e.g. leases=1M,tokens=100k,certificates=200k)",
    )
    p.add_argument(
        "--pool-limit", type=int, default=1, help="agent pools allowed per organization (default 1)"
    )
    p.add_argument("--key-shares", type=int, default=5, help="unseal key shares (default 5)")
    p.add_argument("--key-threshold", type=int, default=3, help="unseal threshold (default 3)")
    p.add_argument(
        "--recovery-seal",
        action="store_true",
        help='an auto-unseal seal that stores the root key (as OpenBao\'s seal "static"): '
        "the --key-shares are recovery shares, and rekeying the root key hands out none",
    )
    p.add_argument(
        "--init-file",
        metavar="PATH",
        help="write the initial unseal shares and root token as JSON (sys/init shape)",
    )
    p.add_argument(
        "--rate-limit",
        type=float,
        default=None,
        metavar="PER_SECOND",
        help="simulate the platform's per-token rate limit (the public service allows 30)",
    )
    p.add_argument(
        "--state",
        metavar="PATH",
        help="keep the state in this SQLite file: every acknowledged write survives a "
        "restart, and an existing file is resumed instead of loading the demo data",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="accept requests whose Host is NAME (or NAME:PORT) besides localhost, 127.0.0.1 "
        "and [::1]; repeatable (for a proxy in front of the sandbox)",
    )
    p.add_argument(
        "--admin-namespace",
        metavar="PATH",
        default=None,
        help="the administrative namespace (e.g. admin/), where restricted endpoints answer "
        "as in the root namespace; created at start when missing (default: none)",
    )
    p.add_argument(
        "--audit-file",
        metavar="FILE",
        default=None,
        help="log every secrets-server request and answer to FILE, as OpenBao's file audit "
        "device does (served as the audit device file/; default: no audit device)",
    )
    p.add_argument(
        "--hide-tokens",
        action="store_true",
        help="do not list the accepted tokens at start (for output that goes to a log)",
    )
    return p


def sandbox_main(argv: Sequence[str] | None = None) -> int:
    from .extras import MissingExtra

    try:
        parser = _sandbox_parser()
    except MissingExtra as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.key_threshold > args.key_shares or args.key_threshold < 1:
        print("error: --key-threshold must be between 1 and --key-shares", file=sys.stderr)
        return 2
    if args.pool_limit < 1:
        print("error: --pool-limit must be at least 1", file=sys.stderr)
        return 2
    import sqlite3

    from .sandbox import Sandbox, SandboxOptions
    from .sandbox.scale import ScaleError, parse_scale

    try:
        scale = parse_scale(args.demo_scale) if args.demo_scale else {}
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    try:
        sandbox = Sandbox(
            SandboxOptions(
                token=args.token,
                demo=not args.empty,
                pool_limit=args.pool_limit,
                key_shares=args.key_shares,
                key_threshold=args.key_threshold,
                recovery_seal=args.recovery_seal,
                init_file=args.init_file,
                rate_limit=args.rate_limit,
                state=args.state,
                allow_hosts=list(args.allow_host),
                admin_namespace=args.admin_namespace,
                audit_file=args.audit_file,
                demo_scale=scale,
            )
        )
    except ScaleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (sqlite3.Error, ValueError, OSError) as exc:
        print(f"error: cannot use --state {args.state}: {exc}", file=sys.stderr)
        return 2
    try:
        sandbox.start(args.host, args.port)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    address = sandbox.address
    print(f"Sandbox serving on {address}")
    print(f"  platform API:       {address}/api/v2   (TFE_ADDRESS={address})")
    print(f"  secrets server API: {address}/v1       (VAULT_ADDR={address})")
    if args.hide_tokens:
        print("Tokens accepted: not shown (--hide-tokens)")
    else:
        print("Tokens accepted:")
        print(f"  {sandbox.token}  owner of every organization; secrets root token")
        for token, what in sandbox.describe_tokens():
            if token != sandbox.token:
                print(f"  {token}  {what}")
    if args.state:
        how = "resumed from" if sandbox.resumed else "new, kept in"
        print(f"State: {how} {args.state}")
        if sandbox.resumed and args.token != sandbox.token:
            print("  (--token is ignored: the stored state keeps its own root token)")
    if args.init_file and not sandbox.resumed:
        shares = "recovery" if args.recovery_seal else "unseal"
        print(f"Initial {shares} shares and root token written to {args.init_file}")
    # Both signals stop it cleanly, from the moment the banner says they may be sent.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print("Press Ctrl-C to stop.", flush=True)
    while not stop.wait(0.5):
        pass
    sandbox.stop()
    return 0


_TARGETS_HELP = """\
the targets file (TOML): one [[target]] table per server, and an optional [defaults]:

  [defaults]                      for every target (a target's own values win)
  timeout = 300                   seconds a runbook cell may take
  parameters = { soon_seconds = 7200 }

  [[target]]
  name = "prod-eu"                required: letters, digits, '.', '_', '-'
  kind = "secrets"                required: "secrets" or "platform"; a runbook of the
                                  other kind (its metadata) skips the target
  address = "https://bao.eu.example.com:8200"          required
  token_env = "PROD_EU_VAULT_TOKEN"   the variable holding the token, or:
  token_file = "~/.config/toolkit/prod-eu.token"       (mode 600, yours)
  ca_file = "/etc/ssl/bao-ca.pem"      optional
  namespace = "team-a/"                optional (secrets)
  organization = "acme"                optional (platform)
  timeout = 300                        optional
  parameters = { allow_incomplete = true }   the runbook's own parameters; one it
                                  does not declare is refused before anything starts

Never a secret in the file: credentials are named (token_env, token_file), never given.
Outcomes: passed, incomplete, failed, skipped. Exit status: 1 when any target failed,
else 2 when any is incomplete, else 0; 3 when nothing ran (a bad targets file, a
parameter the runbook does not declare, a missing extra)."""


# The fleet's exit status when nothing ran (a bad targets file, a missing extra): not 2,
# which says a run was incomplete.
NOTHING_RAN = 3


def _fleet_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="toolkit fleet",
        description="Run one runbook against every target of a targets file with papermill, "
        "and write each executed notebook, its evidence and an HTML index into --out.",
        epilog=_TARGETS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("runbook", help="the runbook notebook (a path)")
    p.add_argument(
        "--targets", required=True, metavar="FILE", help="the targets file (TOML; keys below)"
    )
    p.add_argument(
        "--parallel", type=int, default=1, metavar="N", help="runs at a time (default 1)"
    )
    p.add_argument("--out", default="fleet-run", metavar="DIR", help="where results go")
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="hand the runs to an existing Dask cluster (a tls:// scheduler is recommended)",
    )
    p.add_argument(
        "--history",
        metavar="DIR",
        help="append every target's frames to this history, shared across runs "
        "(default: DIR/history under --out)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def fleet_main(argv: Sequence[str] | None = None) -> int:
    args = _fleet_parser().parse_args(argv)
    from ._errors import ToolkitError
    from .extras import MissingExtra
    from .fleet import load_targets, run_fleet

    try:
        targets = load_targets(args.targets)
        run = run_fleet(
            args.runbook,
            targets,
            args.out,
            parallel=args.parallel,
            dask=args.dask,
            show_progress=not args.no_progress,
            history=args.history,
        )
    except (ToolkitError, MissingExtra) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return NOTHING_RAN
    for result in run.results:
        line = f"{result['status']:10}  {result['name']}  ({result['seconds']:.1f} s)"
        if result.get("error"):
            line += f"  {result['error']}"
        print(line)
    print(run.counts())
    for note in run.notes:
        print(f"note: {note}")
    print(f"index: {run.out / 'index.html'}")
    return run.exit_status


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m toolkit sandbox [options]   (see 'sandbox --help')")
        print("       python -m toolkit runbooks DIR [--force]     (copy the runbooks into DIR)")
        print("       python -m toolkit check-notebooks PATH...   (find secrets in notebooks)")
        print("       python -m toolkit fleet RUNBOOK --targets FILE   (see 'fleet --help')")
        print("       python -m toolkit evidence verify DIR   (check the evidence's digests)")
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "sandbox":
        return sandbox_main(rest)
    if command == "check-notebooks":
        from .leakcheck import main as check_main

        return check_main(rest)
    if command == "fleet":
        return fleet_main(rest)
    if command == "runbooks":
        return runbooks_main(rest)
    if command == "evidence":
        return evidence_main(rest)
    print(
        f"unknown command {command!r}; the commands are 'sandbox', 'runbooks', "
        "'check-notebooks', 'fleet' and 'evidence'",
        file=sys.stderr,
    )
    return 2


def runbooks_main(argv: Sequence[str]) -> int:
    """``python -m toolkit runbooks DIR [--force]``: copy the shipped runbooks into DIR."""
    from pathlib import Path

    from ._shipped import copy_runbooks

    p = argparse.ArgumentParser(
        prog="toolkit runbooks",
        description="Copy the runbooks that ship with the toolkit into DIR (created if missing).",
    )
    p.add_argument("directory", metavar="DIR", help="the folder to copy them into")
    p.add_argument("--force", action="store_true", help="overwrite runbooks already in DIR")
    args = p.parse_args(argv)
    try:
        written = copy_runbooks(Path(args.directory), force=args.force)
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Copied {len(written)} runbooks to {args.directory}:")
    for path in written:
        print(f"  {path.name}")
    print(f"Open them with: jupyter lab {args.directory}")
    return 0


def evidence_main(argv: Sequence[str]) -> int:
    """``python -m toolkit evidence verify DIR``: every digest of the manifest checked.

    Exit 0 when every file matches, 1 naming each changed, missing or extra file,
    2 when DIR is not evidence.
    """
    p = argparse.ArgumentParser(
        prog="toolkit evidence",
        description="Check filed evidence against its MANIFEST.json.",
    )
    verbs = p.add_subparsers(dest="verb", required=True)
    check = verbs.add_parser(
        "verify",
        help="recompute every file's SHA-256 and name each changed, missing or extra file",
    )
    check.add_argument("directory", metavar="DIR", help="the folder report.save filed into")
    args = p.parse_args(argv)
    from ._errors import InputError
    from .report import verify

    try:
        problems = verify(args.directory)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in problems:
        print(line)
    if problems:
        print(f"{args.directory}: {len(problems)} file(s) do not match the manifest")
        return 1
    print(f"{args.directory}: every file matches the manifest")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
