"""The README's pictures, refreshed from the browser suite's own screenshots (`make screenshots`).

The browser tests write each scenario's end state to ``artifacts/screenshots/<name>.png``
(``tests/browser/_page.py``); the README shows four of them from ``docs/screenshots/``.
:data:`README_PICTURES` says which is which, so the README shows the product as the
browser suite last saw it, never a picture taken by hand.

``python -m tests.browser.screenshots`` copies them (each must be there: run the browser
tests first); ``--run`` runs the browser tests that take them first.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
PICTURES = ROOT / "docs" / "screenshots"

# The README's picture (in docs/screenshots/) -> the browser suite's screenshot it is.
README_PICTURES = {
    "ceremony-voila.png": "ceremony-voila-complete.png",
    "lease-audit.png": "runbook-05_lease_audit.png",
    "team-access-audit.png": "runbook-02_team_access_audit.png",
    "agent-pool-health.png": "runbook-01_agent_pool_health.png",
}
# The browser tests that take them.
TESTS = [
    "tests/browser/test_voila.py",
    "tests/browser/test_runbooks.py::test_a_runbook_runs_in_jupyterlab_without_errors_and_its_widgets_render[05_lease_audit.ipynb]",
    "tests/browser/test_runbooks.py::test_a_runbook_runs_in_jupyterlab_without_errors_and_its_widgets_render[02_team_access_audit.ipynb]",
    "tests/browser/test_runbooks.py::test_a_runbook_runs_in_jupyterlab_without_errors_and_its_widgets_render[01_agent_pool_health.ipynb]",
]


def copy_pictures(screenshots: Path = SCREENSHOTS, pictures: Path = PICTURES) -> list[Path]:
    """Copy each README picture from ``screenshots`` into ``pictures``; the paths written.

    Nothing is copied unless every screenshot is there (a README half old, half new
    would show two versions of the product side by side).
    """
    missing = sorted(s for s in README_PICTURES.values() if not (screenshots / s).is_file())
    if missing:
        raise FileNotFoundError(
            f"no browser screenshot {', '.join(missing)} in {screenshots}: "
            "run `make screenshots` (or `make test-browser`) first"
        )
    pictures.mkdir(parents=True, exist_ok=True)
    written = []
    for picture, screenshot in README_PICTURES.items():
        written.append(Path(shutil.copyfile(screenshots / screenshot, pictures / picture)))
    return written


def main(argv: list[str]) -> int:
    if "--run" in argv:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *TESTS])
        if done.returncode:
            return done.returncode
    try:
        written = copy_pictures()
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
