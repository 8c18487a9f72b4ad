"""The fast policy reader gives exactly what python-hcl2's full transform gives.

``toolkit._spec.hcl`` parses with python-hcl2's grammar through a parser built without
position tracking (cached in the user's private cache folder), reads plain policies
straight from the tree, remembers rules by text, and reads JSON policies with orjson.
Each shortcut is compared here with the slow, obvious path: ``hcl2.parses_to_tree``,
``hcl_document`` (python-hcl2's transform and serialization) and ``json.loads``, on
generated policies and on every policy written in the repository's code, tests and runbooks.
"""

from __future__ import annotations

import ast
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hcl2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkit._spec import acl, hcl
from toolkit._spec.acl import parse_acl_policy
from toolkit._spec.hcl import PolicyParseError, hcl_document, parse_hcl

ROOT = Path(__file__).resolve().parents[1]


def _slow_rules(text: str, name: str) -> list[tuple[str, frozenset[str], str]] | str:
    """The rules through python-hcl2's full transform (or JSON's reader); "error" if none."""
    try:
        document = json.loads(text) if text.strip().startswith("{") else hcl_document(text)
        rules = acl.rules_of_document(document, name)
    except Exception:  # noqa: BLE001 - any refusal counts as one
        return "error"
    return [(r.pattern, r.capabilities, r.policy) for r in rules]


def _fast_rules(text: str, name: str) -> list[tuple[str, frozenset[str], str]] | str:
    try:
        rules = parse_acl_policy(text, name)
    except PolicyParseError:
        return "error"
    return [(r.pattern, r.capabilities, r.policy) for r in rules]


def _assert_same(text: str) -> None:
    assert _fast_rules(text, "p") == _slow_rules(text, "p"), text
    # Parsed a second time (from the text cache) under another name: same rules, that name.
    assert _fast_rules(text, "q") == _slow_rules(text, "q"), text
    if text.strip().startswith("{"):
        return
    try:
        slow_tree = hcl2.parses_to_tree(text)
    except Exception:  # noqa: BLE001 - the fast parser must refuse it as well
        with pytest.raises(Exception):  # noqa: B017
            hcl._hcl_parser().parse(text + "\n")
        return
    assert hcl._hcl_parser().parse(text + "\n") == slow_tree, text
    try:
        document = hcl_document(text)
    except Exception:  # noqa: BLE001
        with pytest.raises(PolicyParseError):
            parse_hcl(text)
        return
    assert parse_hcl(text) == document, text


# -- generated policies ------------------------------------------------------------------

_label_chars = st.sampled_from(list("abz09/-_.+*{} ") + ["{{identity.entity.id}}", "\\\\", '\\"'])
labels = st.lists(_label_chars, max_size=12).map("".join)
capability = st.sampled_from([*acl.CAPABILITIES, "READ", "Sudo", "bogus", ""])
strings = st.lists(capability, max_size=4)
gap = st.sampled_from(["", " ", "  ", "\n", "\n\n", "\t"])
comment = st.sampled_from(["", "# note\n", "// note\n", "/* note */", "/* a\nb */\n"])


@st.composite
def attributes(draw: st.DrawFn) -> str:
    kind = draw(
        st.sampled_from(
            ["capabilities", "capabilities", "policy", "ttl", "params", "unknown", "single"]
        )
    )
    if kind == "capabilities":
        items = [f'"{c}"' for c in draw(strings)]
        comma: bool = draw(st.booleans())
        trailing = "," if items and comma else ""
        return f"capabilities = [{draw(gap)}{', '.join(items)}{trailing}]"
    if kind == "single":
        return f'capabilities = "{draw(capability)}"'
    if kind == "policy":
        return f'policy = "{draw(st.sampled_from(["read", "write", "deny", "sudo", "Read", "x"]))}"'
    if kind == "ttl":
        return draw(st.sampled_from(['min_wrapping_ttl = "1h"', "max_wrapping_ttl = 300"]))
    if kind == "params":
        return draw(
            st.sampled_from(
                [
                    'allowed_parameters = { "ttl" = [] }',
                    'denied_parameters = { "*" = ["a", "b"] }',
                    'required_parameters = ["name"]',
                ]
            )
        )
    return 'colour = "blue"'


@st.composite
def hcl_policies(draw: st.DrawFn) -> str:
    parts = []
    if draw(st.integers(0, 5)) == 0:
        parts.append('name = "generated"\n')
    for _ in range(draw(st.integers(0, 4))):
        body = "\n".join(f"  {draw(attributes())}" for _ in range(draw(st.integers(0, 3))))
        parts.append(f'{draw(comment)}path "{draw(labels)}" {{{draw(gap)}\n{body}\n}}{draw(gap)}')
    return "\n".join(parts)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@st.composite
def json_policies(draw: st.DrawFn) -> str:
    paths = draw(
        st.dictionaries(
            labels,
            st.fixed_dictionaries({"capabilities": strings}, optional={"policy": json_values}),
            max_size=3,
        )
    )
    text = json.dumps({"path": paths}, indent=draw(st.sampled_from([None, 2])))
    # Now and then a number orjson does not read (beyond 64 bits) or a non-object document.
    return draw(st.sampled_from([text, text[:-1] + ', "n": 184467440737095516160}', "{[1]"]))


_fast = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_fast
@given(text=hcl_policies())
def test_generated_hcl_policies_read_as_python_hcl2_reads_them(text: str) -> None:
    _assert_same(text)


@_fast
@given(text=json_policies())
def test_generated_json_policies_read_as_json_reads_them(text: str) -> None:
    _assert_same(text)
    try:
        expected: Any = json.loads(text)
    except ValueError:
        expected = "error"
    try:
        got: Any = parse_hcl(text)
    except PolicyParseError:
        got = "error"
    assert got == (expected if isinstance(expected, dict) else "error")


def test_a_heredoc_reads_as_the_text_between_its_markers() -> None:
    # python-hcl2's reading, kept: the markers and the indentation of <<- are not the value.
    text = (
        'path "a" {\n  policy = <<EOT\nread\nEOT\n  note = <<-EOT\n    two\n    lines\n    EOT\n}\n'
    )
    assert parse_hcl(text) == {"path": [{"a": {"policy": "read", "note": "two\nlines"}}]}
    assert hcl_document("a = <<EOT\nline1\nline2\nEOT\n") == {"a": "line1\nline2"}


def test_a_json_policy_nested_too_deep_is_refused_saying_so() -> None:
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    with pytest.raises(PolicyParseError) as caught:
        parse_hcl(deep)
    assert str(caught.value) == (
        "failed to parse policy: the JSON document is nested too deep to read"
    )


def test_a_malformed_hcl_policy_is_refused_in_one_line_naming_where() -> None:
    with pytest.raises(PolicyParseError) as caught:
        parse_hcl('path "a" {\n  capabilities = ["read"]')
    message = str(caught.value)
    assert message.startswith("failed to parse policy: Unexpected token Token('$END', '')")
    assert "at line 2, column 26. Expected one of: * RBRACE" in message
    assert "\n" not in message


def test_an_hcl_policy_nested_too_deep_is_refused_saying_so() -> None:
    deep = 'b "x" {\n' * 3000 + "}\n" * 3000
    with pytest.raises(PolicyParseError) as caught:
        parse_hcl(deep)
    assert str(caught.value) == "failed to parse policy: nested too deep to read"


def test_an_expression_the_grammar_reads_but_too_deep_to_evaluate_is_refused_in_one_line() -> None:
    # Parentheses 2,000 deep parse (the grammar's parser keeps no stack of calls), but
    # python-hcl2's transform of the expression recurses: the reason is said, on one line.
    deep = "x = " + "(" * 2000 + "1" + ")" * 2000 + "\n"
    with pytest.raises(PolicyParseError) as caught:
        parse_hcl(deep)
    message = str(caught.value)
    assert message.startswith("failed to parse policy: maximum recursion depth exceeded")
    assert "\n" not in message and "None" not in message


# -- every policy the repository writes --------------------------------------------------

_POLICY = re.compile(r'(^|\n)\s*path\s+"|"path"\s*:')


def _repository_policies() -> list[str]:
    found: dict[str, None] = {}
    sources = [
        *sorted((ROOT / "toolkit").rglob("*.py")),
        *sorted((ROOT / "tests").rglob("*.py")),
        *sorted((ROOT / "benchmarks").rglob("*.py")),
    ]
    codes = [p.read_text(encoding="utf-8") for p in sources]
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        codes += [
            "".join(c["source"])
            for c in cells
            if c["cell_type"] == "code" and not "".join(c["source"]).lstrip().startswith(("%", "!"))
        ]
    for code in codes:
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _POLICY.search(node.value)
            ):
                found[node.value] = None
    return list(found)


REPOSITORY_POLICIES = _repository_policies()


def test_the_repository_writes_policies_to_compare() -> None:
    assert len(REPOSITORY_POLICIES) > 50
    assert any("sys/policies/*" in text for text in REPOSITORY_POLICIES)  # the demo's


def test_every_policy_in_the_repository_reads_as_python_hcl2_reads_it() -> None:
    for text in REPOSITORY_POLICIES:
        _assert_same(text)


# -- the cached parser -------------------------------------------------------------------


def test_the_parser_cache_folder_is_private_and_refused_when_others_can_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = hcl._cache_dir()
    assert folder == tmp_path / "operator-toolkit"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    cached = folder / "parser.lark"
    assert not hcl._owned_private_file(cached)  # not there yet
    cached.write_bytes(b"")
    cached.chmod(0o600)
    assert hcl._owned_private_file(cached)
    cached.chmod(0o620)
    assert not hcl._owned_private_file(cached)
    link = folder / "link.lark"
    link.symlink_to(cached)
    assert not hcl._owned_private_file(link)
    folder.chmod(0o770)
    assert hcl._cache_dir() is None
    folder.chmod(0o700)


def test_without_xdg_cache_home_the_parser_cache_folder_is_under_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert hcl._cache_dir() == tmp_path / ".cache" / "operator-toolkit"
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # empty: as if not set
    assert hcl._cache_dir() == tmp_path / ".cache" / "operator-toolkit"


def test_the_built_parser_is_saved_private_to_the_user_in_a_cache_folder_made_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No cache folder yet, nor its parents: they are made, and the parser saved there,
    # through a temporary file in that folder (the system's temporary folder is not used).
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "new" / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    hcl._hcl_parser.cache_clear()
    try:
        built = hcl._hcl_parser()
    finally:
        hcl._hcl_parser.cache_clear()
    # Built with python-hcl2's own post-lexer: an expression may go on after a newline.
    text = 'a = true\n  ? "x"\n  : "y"\nb = 1\n  + 2\n'
    assert built.parse(text + "\n") == hcl2.parses_to_tree(text)
    folder = tmp_path / "new" / "cache" / "operator-toolkit"
    saved = list(folder.iterdir())
    assert len(saved) == 1 and saved[0].match("hcl2-parser-*.lark")  # no temporary left
    info = saved[0].stat()
    assert info.st_uid == os.getuid()
    assert not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
    assert hcl._cache_dir() == folder


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cache folder of the test's own, with no parser kept in the process before or after."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    hcl._hcl_parser.cache_clear()
    yield tmp_path
    hcl._hcl_parser.cache_clear()


def test_a_parser_saved_under_another_python_hcl2_version_is_not_loaded(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hcl._hcl_parser()
    monkeypatch.setattr(hcl2, "__version__", "0.0.0-another")
    hcl._hcl_parser.cache_clear()
    hcl._hcl_parser()
    # One saved parser a version: the second was built and saved beside the first.
    assert len(list((cache_home / "operator-toolkit").glob("hcl2-parser-*.lark"))) == 2


def test_a_saved_parser_is_loaded_not_built_and_saved_again(cache_home: Path) -> None:
    hcl._hcl_parser()
    (saved,) = (cache_home / "operator-toolkit").iterdir()
    first = saved.stat().st_ino
    hcl._hcl_parser.cache_clear()
    assert hcl._hcl_parser().parse('a = "x"\n') is not None
    # A rebuilt parser would have replaced the file by a new one.
    assert saved.stat().st_ino == first


def test_without_a_private_cache_folder_python_hcl2s_own_parser_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hcl2.parser import parser

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    (shared / "operator-toolkit").mkdir(mode=0o777)
    (shared / "operator-toolkit").chmod(0o777)
    hcl._hcl_parser.cache_clear()
    monkeypatch.setattr(hcl, "_go_reader", False)  # python-hcl2 reads even a plain policy
    try:
        assert hcl._hcl_parser() is parser()
        assert parse_acl_policy('path "kv/+/x" { capabilities = ["read"] }', "p")[0].pattern == (
            "kv/+/x"
        )
        assert not list((shared / "operator-toolkit").iterdir())
    finally:
        hcl._hcl_parser.cache_clear()


# -- HashiCorp's HCL (pygohcl) for plain policies ------------------------------------------

PLAIN = 'path "b/*" {\n  capabilities = ["read", "list"]\n}\npath "a" {\n  capabilities = []\n}\n'
# (text, whether HCL reads it): HCL evaluates what python-hcl2 keeps as text, normalizes
# non-ASCII, nests two labels: those go to python-hcl2, and both readers agree on the rest.
GO_CASES = [
    (PLAIN, True),
    ('name = "n"\npath "x" {\n}\npath "x" {\n  capabilities = ["list",]\n}', True),
    (
        '# a "quoted" note\n/* path "z" {\n} */\npath "a#b//c/*" { // "x\n  capabilities = ["read"]\n}',
        True,
    ),
    ('path "{{identity.entity.id}}/*" {\n  capabilities = ["read"]\n}', True),
    # A label written once, its body empty or of two attributes.
    ('path "a" {\n}\npath "b" {\n  capabilities = ["read"]\n  policy = "read"\n}', True),
    ('path "a" {\n  capabilities = read\n}', False),
    ('path "a" {\n  capabilities = ["${x}"]\n}', False),
    ('path "a" {\n  capabilities = [upper("read")]\n}', False),
    ('path "a" {\n  capabilities = ["read", "list"][0]\n}', False),
    ('path "a" {\n  capabilities = true ? "read" : "list"\n}', False),
    ('path "cafe\u0301" {\n  capabilities = ["read"]\n}', False),
    ('path "a\\"b" {\n  capabilities = ["read"]\n}', False),
    ('path "a" {\n  capabilities = <<EOT\nread\nEOT\n}', False),
    ('path "a" {\n  max_wrapping_ttl = 300\n}', False),
    ('path "x" "y" {\n}', False),
    ('path = { "a" = { capabilities = ["read"] } }', False),
    ('path "a" {\n  capabilities = ["read"]', False),
]


@pytest.mark.parametrize(("text", "read_by_hcl"), GO_CASES)
def test_hcl_reads_plain_policies_and_python_hcl2_the_rest(text: str, read_by_hcl: bool) -> None:
    assert (hcl._go_document(text) is not None) is read_by_hcl
    _assert_same(text)


def test_blocks_read_by_hcl_keep_the_texts_order() -> None:
    # HCL gives the labels sorted; the rules come back as written.
    assert [r.pattern for r in parse_acl_policy(PLAIN + "\n", "p")] == ["b/*", "a"]
    assert hcl._go_document(PLAIN) == {
        "path": [{"b/*": {"capabilities": ["read", "list"]}}, {"a": {"capabilities": []}}]
    }


def test_the_benchmarks_policies_take_hcls_way() -> None:
    import random

    from benchmarks.access import _policy

    rng = random.Random(1)
    for _ in range(50):
        text = _policy(rng, rng.randint(2, 4))
        assert hcl._go_document(text) is not None, text


@pytest.mark.slow  # it forks a process
def test_a_forked_child_does_not_call_into_the_parents_go_runtime() -> None:
    assert hcl._go_loads() is not None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.write(write, b"python-hcl2" if hcl._go_loads() is None else b"hcl")
            parse_acl_policy('path "forked/x" {\n  capabilities = ["read"]\n}', "p")
        finally:
            os._exit(0)
    os.close(write)
    try:
        assert os.read(read, 20) == b"python-hcl2"
    finally:
        os.close(read)
        assert os.waitpid(pid, 0)[1] == 0


def test_without_pygohcl_python_hcl2_reads_every_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pygohcl", None)  # import fails, as where it is missing
    monkeypatch.setattr(hcl, "_go_reader", None)
    assert hcl._go_loads() is None and hcl._go_document(PLAIN) is None
    assert parse_hcl(PLAIN) == hcl_document(PLAIN)


def test_pygohcl_that_failed_to_load_is_not_tried_again_in_the_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    import pygohcl

    monkeypatch.setattr(hcl, "_go_reader", None)
    monkeypatch.setitem(sys.modules, "pygohcl", None)  # this import fails
    assert hcl._go_loads() is None
    monkeypatch.setitem(sys.modules, "pygohcl", pygohcl)  # loadable again: not retried
    assert hcl._go_loads() is None and hcl._go_document(PLAIN) is None


def test_hcls_runtime_loaded_by_another_process_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert hcl._go_loads() is not None
    # As in a forked child: the reader was loaded under another process id.
    monkeypatch.setattr(hcl, "_go_pid", os.getpid() + 1)
    assert hcl._go_loads() is None and hcl._go_document(PLAIN) is None
    assert parse_hcl(PLAIN) == hcl_document(PLAIN)


@pytest.mark.parametrize(
    "text",
    [
        "a" * 40_000,  # one endless word
        'path "x" { capabilities = ["read"] }\n' + "b" * 40_000,
        "a = " * 50_000,  # attributes that never get a value
        '"' * 100_001,
    ],
    ids=["word", "policy-then-word", "no-values", "quotes"],
)
def test_a_long_malformed_document_is_refused_in_linear_time(text: str) -> None:
    """A policy body is the caller's text: a reader whose time grows with its square
    holds the sandbox's one loop for as long as a caller likes (70 kB took 30 s)."""
    started = time.perf_counter()
    with pytest.raises(PolicyParseError):
        parse_hcl(text)
    assert time.perf_counter() - started < 2.0
