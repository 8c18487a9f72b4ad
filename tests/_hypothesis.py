"""Hypothesis settings shared by the tests that drive clients against servers."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings


def driving_servers(max_examples: int) -> settings:
    """``max_examples`` examples with no deadline (the network sets the pace), the
    module's servers and clients reused by every example."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        # In CI the examples are the same every run, FUZZ_EXAMPLES of them under
        # `make test-fuzz` (a failure there is the code's, not the draw's); elsewhere
        # each run draws afresh, and FUZZ_EXAMPLES draws more.
        derandomize=bool(os.environ.get("CI")),
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
