"""The end-to-end truth test (issues 33 and 38) run against the sandbox instead of
OpenBao: ``who_can``, ``can`` and ``explain`` agree with the sandbox's own
``sys/capabilities`` and requests on every answer, for principals logged in for real.

The world is the one tests/real/test_access_truth.py builds on OpenBao (the harness
in tests/_truth.py), with two parts left out, each a difference recorded in
docs/differences.md: the sandbox serves its login methods at fixed paths (``userpass/``,
``approle/``), so there is no second userpass mount and no user3 (entity 1's alias
there); and logins are the root namespace's, so every seed is built in the root
namespace. That the sandbox's answers are OpenBao's for the same world is held by
``test_the_sandbox_answers_as_openbao_does_in_the_same_world`` in tests/real.

About 20 s a seed of CPU (about 15,000 answers a seed): slow.
"""

from __future__ import annotations

import pytest

from tests._truth import FIXED_MOUNTS, build, draw
from toolkit.sandbox import Sandbox

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_answer_agrees_with_the_sandbox_for_real_logins(seed: int) -> None:
    with Sandbox(demo=False) as sandbox:
        world = build(sandbox.address, sandbox.token, draw(seed), mounts=FIXED_MOUNTS)
        found = world.disagreements()
    assert not found, f"seed {seed}: {len(found)} disagreement(s):\n" + "\n".join(found[:60])
    # The comparison covered what it is for: grants, refusals of a role, sudo requests.
    assert world.tally["answers"] > 10_000 and world.tally["granted"] > 100
    assert world.tally["roles refused"] and world.tally["sudo requests passed"]
