"""What the systematic tests tried, summed over all workers and printed at the end of the run.

A test records ``record_property("tried:<suite>", n)`` (for example the requests
a fuzz test sent); the properties travel back from xdist workers with the
reports, and the summary prints one line per suite.
"""

from __future__ import annotations

from collections import Counter

import pytest

PREFIX = "tried:"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    tried: Counter[str] = Counter()
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for name, value in getattr(report, "user_properties", ()):
                if isinstance(name, str) and name.startswith(PREFIX):
                    tried[name[len(PREFIX) :]] += int(value)
    for suite, count in sorted(tried.items()):
        terminalreporter.write_line(f"{suite}: {count} tried")
