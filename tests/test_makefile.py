"""The README's test command on a bare machine: the Debian packages come before any test
that needs them, and each suite that needs one says how to get it."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SLOW_FOLDERS
from tests.servers._common import SYSTEM_ROOT_ENV, ServerMissing, chromium_missing
from tests.servers.nginx import nginx_binary
from tests.servers.postgres import postgres_bin
from tests.servers.rabbitmq import rabbitmq_server_script
from tests.servers.tinyproxy import Tinyproxy

ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")


def _dry_run(target: str) -> list[str]:
    """What ``make TARGET`` runs on a machine that has run nothing yet (-B: as if no
    stamp were there), printed, not run."""
    assert MAKE, "make is not installed"
    done = subprocess.run(
        [MAKE, "-n", "-B", "-C", str(ROOT), target], capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def _first(lines: list[str], pattern: str) -> int:
    return next(i for i, line in enumerate(lines) if re.search(pattern, line))


def test_make_test_installs_the_debian_packages_before_the_first_test_runs() -> None:
    lines = _dry_run("test")
    install = _first(lines, r"apt-get install")
    first_test = _first(lines, r"-m pytest")
    assert install < first_test, lines[first_test]


def test_every_debian_package_is_installed_by_system_deps() -> None:
    makefile = (ROOT / "Makefile").read_text()
    (packages,) = re.findall(r"^SYSTEM_PACKAGES := (.+)$", makefile, re.M)
    assert {"tinyproxy", "nginx-light", "postgresql", "rabbitmq-server", "chromium"} <= set(
        packages.split()
    )


def test_the_fast_suite_leaves_out_exactly_the_slow_folders() -> None:
    (fast,) = [line for line in _dry_run("test-fast") if "-m pytest" in line]
    assert '-m "not slow"' in fast or "-m not slow" in fast
    ignored = {Path(p).name for p in re.findall(r"--ignore=(\S+)", fast)}
    assert ignored == set(SLOW_FOLDERS)


def test_make_lab_installs_only_what_the_lab_needs() -> None:
    lines = _dry_run("lab")
    installs = [line for line in lines if "pip install" in line and "-e" in line]
    assert installs and all('".[all]"' in line for line in installs), installs


LAUNCHERS: dict[str, Callable[[], object]] = {
    "nginx": nginx_binary,
    "postgresql": postgres_bin,
    "rabbitmq-server": rabbitmq_server_script,
    "tinyproxy": Tinyproxy,
}


@pytest.mark.parametrize("package", sorted(LAUNCHERS))
def test_a_missing_debian_package_says_to_run_make_system_deps(
    package: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SYSTEM_ROOT_ENV, str(tmp_path))
    with pytest.raises(ServerMissing) as missing:
        LAUNCHERS[package]()
    assert "make system-deps" in str(missing.value)


def test_a_missing_chromium_says_to_run_make_system_deps(tmp_path: Path) -> None:
    assert "make system-deps" in chromium_missing(tmp_path / "chromium")


def test_every_make_target_the_tree_cites_is_in_the_makefile() -> None:
    # A docstring or a page that says ``make test-fuzz`` must name a target that exists.
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    cited: dict[str, set[str]] = {}
    files = [ROOT / "README.md", ROOT / "Makefile", *(ROOT / "docs").glob("*.md")]
    for folder in ("toolkit", "widgets", "tests", "benchmarks", "binder"):
        files += (ROOT / folder).rglob("*.py")
    for path in files:
        for target in re.findall(r"`+make ([a-z][a-z-]*)", path.read_text(encoding="utf-8")):
            cited.setdefault(target, set()).add(str(path.relative_to(ROOT)))
    assert "test" in cited
    assert {t: sorted(p) for t, p in cited.items() if t not in targets} == {}


def _pictures_module() -> Any:
    from tests.browser import screenshots

    return screenshots


def test_the_readmes_pictures_are_the_browser_suites_screenshots_as_make_screenshots_copies() -> (
    None
):
    pictures = _pictures_module()
    shown = set(re.findall(r"\]\(docs/screenshots/([^)]+)\)", (ROOT / "README.md").read_text()))
    assert shown and shown == set(pictures.README_PICTURES)
    # No picture the README does not show, and none that no mapping refreshes.
    assert {p.name for p in (ROOT / "docs" / "screenshots").iterdir()} == shown
    # Each is a screenshot a browser test writes: a named scenario or a runbook's end state.
    browser = "".join(p.read_text() for p in (ROOT / "tests" / "browser").glob("test_*.py"))
    written = {f"{n}.png" for n in re.findall(r'screenshot\(page, "([^"]+)"\)', browser)}
    written |= {f"runbook-{p.stem}.png" for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    assert set(pictures.README_PICTURES.values()) <= written
    for test in pictures.TESTS:
        path, _, node = test.partition("::")
        assert (ROOT / path).is_file()
        assert not node or (ROOT / "notebooks" / node.split("[")[1].rstrip("]")).is_file()
    (command,) = [line for line in _dry_run("screenshots") if "tests.browser.screenshots" in line]
    assert "--run" in command


def test_make_screenshots_copies_every_picture_or_none(tmp_path: Path) -> None:
    pictures = _pictures_module()
    taken, docs = tmp_path / "artifacts", tmp_path / "docs"
    taken.mkdir()
    sources = sorted(pictures.README_PICTURES.values())
    for i, name in enumerate(sources[1:]):
        (taken / name).write_bytes(b"png %d" % i)
    with pytest.raises(FileNotFoundError, match=f"{sources[0]}.*make screenshots"):
        pictures.copy_pictures(taken, docs)
    assert not docs.exists()
    (taken / sources[0]).write_bytes(b"first")
    written = pictures.copy_pictures(taken, docs)
    assert sorted(p.name for p in written) == sorted(pictures.README_PICTURES)
    for picture, screenshot in pictures.README_PICTURES.items():
        assert (docs / picture).read_bytes() == (taken / screenshot).read_bytes()


# A measured figure: a time, a size or a ratio.
_FIGURE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*\s?(?:s|ms|µs|MB|MiB|GB|KB|x|×)(?!\w)")
# What the README may say in numbers outside its table: defaults and limits it sets.
_SETTING = re.compile(r"(?:default|`max_pause`,|limited to)\s+\d+\s?\w*")


def test_measured_figures_in_the_readme_are_in_its_benchmark_table_only() -> None:
    # Prose that repeats a measurement drifts from the benchmark (0.08 s here, 0.17 s there).
    prose = [
        line
        for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
        if not line.startswith("|") and not line.startswith("    ")
    ]
    stray = [(m, line[:80]) for line in prose for m in _FIGURE.findall(_SETTING.sub("", line))]
    assert stray == []


def test_make_test_runs_the_fuzz_suites_with_more_examples_than_the_fast_suite() -> None:
    # The fast suite draws a few examples an endpoint; the larger draw must still run.
    lines = "\n".join(_dry_run("test")).replace("\\\n", " ").splitlines()
    (fuzz,) = [line for line in lines if "FUZZ_EXAMPLES=" in line]
    drawn = int(re.search(r"FUZZ_EXAMPLES=(\d+)", fuzz).group(1))  # type: ignore[union-attr]
    fast = re.search(r'"FUZZ_EXAMPLES", "(\d+)"', (ROOT / "tests" / "test_fuzz.py").read_text())
    assert fast and drawn >= 10 * int(fast.group(1))
    assert "tests/test_fuzz.py" in fuzz


def test_make_mutation_runs_every_mutant_and_the_sample_a_seeded_draw() -> None:
    (every,) = [line for line in _dry_run("mutation") if "tests.mutation.run" in line]
    assert "--sample" not in every and every.startswith("nice -n 15 ")
    (sample,) = [line for line in _dry_run("mutation-sample") if "tests.mutation.run" in line]
    assert "--sample" in sample


def test_make_test_runs_the_mutation_sample_after_the_fast_tests() -> None:
    lines = _dry_run("test")
    sample = _first(lines, r"tests\.mutation\.run --sample")
    assert _first(lines, r"pytest .*-m \"not slow\"") < sample
    assert not any("tests.mutation.run" in line and "--sample" not in line for line in lines)
