"""Hypothesis settings shared by the tests that drive clients against servers."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def driving_servers(max_examples: int) -> settings:
    """``max_examples`` examples with no deadline (the network sets the pace), the
    module's servers and clients reused by every example."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
