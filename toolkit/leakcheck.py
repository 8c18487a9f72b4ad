"""Finding secrets in saved notebooks, before they are committed or shared.

A notebook is saved with its outputs and, in JupyterLab, its widget state: a
token printed by mistake, a share typed into a widget, or a private key shown
in an output stays in the file. :func:`scan_notebook` looks at everything a
notebook file holds (cell sources, outputs, attachments and metadata such as
``metadata.widgets``) for:

- PEM private keys and PGP private key blocks;
- service and batch tokens (``s.…``, ``b.…``, ``hvs.…``, ``hvb.…``, ``hvr.…``),
  platform tokens (``<14 characters>.atlasv1.…``), and every token the sandbox
  prints when it starts (asked of the sandbox's demo data, not copied here);
- unseal and recovery key shares (33 bytes as hex, either case, or base64);
- passwords inside URLs (``scheme://user:password@host``) that are not a
  placeholder (``{{password}}``, ``<password>``, ``***``, ``$PASSWORD``);
- fields named like secrets (``password``, ``client_token``, ``bindpass``,
  ``private_key``, ``secret_id``, ``current_password``, ...) holding a value
  that is not the toolkit's placeholder;
- any extra literal values the caller knows to be secret.

``python -m toolkit check-notebooks PATH...`` runs it on files or folders and
exits 1 when it finds anything (the repository's pre-commit hook uses it). A
finding names the file, where in it, and the kind of secret, never the value.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Leak", "scan_notebook", "scan_paths", "scan_text"]

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")),
    ("PGP private key", re.compile(r"-----BEGIN PGP PRIVATE KEY BLOCK-----")),
    ("service token", re.compile(r"(?<![\w.])(?:s|hvs|hvb|hvr)\.[A-Za-z0-9_-]{20,}")),
    ("batch token", re.compile(r"(?<![\w.])b\.[A-Za-z0-9_-]{20,}")),
    (
        "platform token",
        re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{16,}"),
    ),
    (
        "key share (hex)",
        re.compile(r"(?<![0-9a-fA-F])(?:[0-9a-f]{66}|[0-9A-F]{66})(?![0-9a-fA-F])"),
    ),
    (
        "key share (base64)",
        re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{43}[A-Za-z0-9+/=](?![A-Za-z0-9+/=])"),
    ),
)
_SECRET_FIELDS = re.compile(
    r"""["']?\b(password|current_password|last_password|client_token|bindpass|private_key|"""
    r"""secret_id|unseal_key|root_token|keys_base64)\b["']?\s*[:=]\s*["']([^"'\s<>]{4,})["']"""
)
# What the toolkit shows in place of a secret: never a finding.
_PLACEHOLDERS = re.compile(r"^(?:\*+|<[^>]*>|…|hidden|redacted|REDACTED)$")
# ``scheme://user:password@``; the password group stops at the first ``@`` or ``/``.
_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@'\"]*:([^\s/@'\"]+)@")
# Template and environment placeholders written where a URL's password goes.
_URL_PLACEHOLDERS = re.compile(
    r"^(?:\{\{[^}]*\}\}|\{[A-Za-z_]*\}|\$\{?[A-Za-z_]+\}?|%s|%\([a-z_]+\)s|<[^>]*>|\*+|x+|…)$",
    re.IGNORECASE,
)


@functools.cache
def _sandbox_tokens() -> re.Pattern[str]:
    """Every token the sandbox prints when it starts with its demo data, as one pattern.

    Asked of the sandbox itself (its demo state, built without serving), so a
    token added to the demo data is found without a change here.
    """
    from .sandbox import DEFAULT_TOKEN, Sandbox

    demo = Sandbox()
    tokens = {DEFAULT_TOKEN, demo.token, *(token for token, _ in demo.describe_tokens())}
    alternatives = "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])")


@dataclass(frozen=True)
class Leak:
    """One secret found: the file, where in it (``cells[3].outputs[0]``), and what kind."""

    path: str
    where: str
    kind: str

    def __str__(self) -> str:
        return f"{self.path}: {self.where}: {self.kind}"


def scan_text(text: str, extra: Sequence[str] = ()) -> list[str]:
    """The kinds of secret found in ``text`` (a value may count under several kinds)."""
    kinds: list[str] = []
    for kind, pattern in _PATTERNS:
        if kind == "key share (base64)":
            if any(_looks_like_share(m.group(0)) for m in pattern.finditer(text)):
                kinds.append(kind)
        elif pattern.search(text):
            kinds.append(kind)
    if _sandbox_tokens().search(text):
        kinds.append("sandbox token")
    for match in _URL_PASSWORD.finditer(text):
        if not _URL_PLACEHOLDERS.match(match.group(1)):
            kinds.append("password in a URL")
            break
    for match in _SECRET_FIELDS.finditer(text):
        if not _PLACEHOLDERS.match(match.group(2)):
            kinds.append(f"value of a {match.group(1)!r} field")
            break
    if any(value and value in text for value in extra):
        kinds.append("known secret value")
    return kinds


def _looks_like_share(candidate: str) -> bool:
    # Base64 of 33 random bytes: mixed case and digits; not a word, a path or a hash name.
    import base64
    import binascii

    try:
        raw = base64.b64decode(candidate, validate=True)
    except (binascii.Error, ValueError):
        return False
    mixed = any(c.islower() for c in candidate) and any(c.isupper() for c in candidate)
    return len(raw) == 33 and mixed and any(c.isdigit() for c in candidate)


def _walk(node: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, str):
        yield where, node
    elif isinstance(node, list):
        if node and all(isinstance(item, str) for item in node):
            yield where, "".join(node)  # sources and text outputs are lists of lines
        else:
            for index, item in enumerate(node):
                yield from _walk(item, f"{where}[{index}]")
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{where}.{key}" if where else str(key))


def scan_notebook(path: str | Path, extra: Sequence[str] = ()) -> list[Leak]:
    """Every secret in the notebook file at ``path``; a file that is not JSON is one finding."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        notebook = json.loads(text)
    except ValueError:
        return [Leak(str(path), "file", "not a notebook (invalid JSON)")]
    findings: list[Leak] = []
    for where, value in _walk(notebook, ""):
        for kind in scan_text(value, extra):
            findings.append(Leak(str(path), _short(where), kind))
    return findings


def _short(where: str) -> str:
    # cells[3].outputs[0].data.text/plain -> cells[3].outputs[0]
    match = re.match(r"^(cells\[\d+\](?:\.(?:outputs|attachments)\[\d+\]|\.source)?)", where)
    return match.group(1) if match else where.split(".")[0]


def scan_paths(paths: Iterable[str | Path], extra: Sequence[str] = ()) -> list[Leak]:
    """Scan notebooks given as files or folders (``*.ipynb`` below them, checkpoints skipped)."""
    findings: list[Leak] = []
    for raw in paths:
        path = Path(raw)
        files = (
            sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
            if path.is_dir()
            else [path]
        )
        for file in files:
            findings.extend(scan_notebook(file, extra))
    return sorted(set(findings), key=lambda f: (f.path, f.where, f.kind))


def main(argv: Sequence[str]) -> int:
    """``check-notebooks PATH...``: print each finding; exit 1 when there is any."""
    if not argv:
        print("usage: python -m toolkit check-notebooks PATH...  (files or folders)")
        return 2
    missing = [p for p in argv if not Path(p).exists()]
    if missing:
        print(f"error: no such file or folder: {', '.join(missing)}")
        return 2
    findings = scan_paths(argv)
    for finding in findings:
        print(finding)
    checked = sum(len(list(Path(p).rglob("*.ipynb"))) if Path(p).is_dir() else 1 for p in argv)
    print(f"{checked} notebook(s) checked, {len(findings)} secret(s) found")
    return 1 if findings else 0
