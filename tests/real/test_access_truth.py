"""The end-to-end truth test (issue 33): ``who_can``, ``can`` and ``explain`` agree with
OpenBao on every answer, for principals logged in for real.

Each seed draws a world with hypothesis (tests/_truth.py): userpass users on two
mounts with entities, metadata, aliases and nested groups; AppRole roles with and
without an entity; token roles with allowed, disallowed and glob policies and entity
aliases, created by callers of known policies; random policies with globs, ``+``,
``deny``, ``sudo``, overlapping and templated patterns. Seeds 1 and 3 are built in a
namespace of their own, seed 2 in the root namespace. Any disagreement fails, listed.

The same worlds are built on the sandbox (tests/sandbox/secrets/test_access_truth.py);
``test_the_sandbox_answers_as_openbao_does_in_the_same_world`` holds the sandbox's own
answers there to OpenBao's, since the toolkit agreeing with the sandbox proves nothing
where both share a mistake (the sandbox enforces with the toolkit's evaluator).

``ACCESS_TRUTH_SEEDS`` (default ``1,2,3``) and ``ACCESS_TRUTH_SIZE`` (``small``, or
``large`` as ``make bench`` runs it) choose the draw.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from tests._truth import FIXED_MOUNTS, answer_differences, build, draw
from tests.servers.openbao import OpenBao
from toolkit.sandbox import Sandbox

pytestmark = pytest.mark.slow

SEEDS = [int(s) for s in os.environ.get("ACCESS_TRUTH_SEEDS", "1,2,3").split(",") if s.strip()]
SIZE = os.environ.get("ACCESS_TRUTH_SIZE", "small")


@pytest.fixture(scope="module")
def server() -> Iterator[OpenBao]:
    """An OpenBao of its own: the comparison loads the whole server's configuration."""
    from tests.real.conftest import launch

    with launch(OpenBao) as bao:
        yield bao


@pytest.mark.parametrize("seed", SEEDS)
def test_every_answer_agrees_with_openbao_for_real_logins(server: OpenBao, seed: int) -> None:
    namespace = None
    if seed % 2:
        namespace = f"truth-{seed}-{time.monotonic_ns() % 100000}/"
        with server.http() as http:
            reply = http.post(f"sys/namespaces/{namespace.rstrip('/')}")
            assert reply.status_code in (200, 204), reply.text
    plan = draw(seed, SIZE)
    world = build(server.address, server.token, plan, namespace=namespace)
    found = world.disagreements()
    assert not found, f"seed {seed}: {len(found)} disagreement(s):\n" + "\n".join(found[:60])


@pytest.mark.parametrize("seed", SEEDS)
def test_the_sandbox_answers_as_openbao_does_in_the_same_world(seed: int) -> None:
    """One plan built on a fresh OpenBao and on a sandbox, with the sandbox's fixed login
    mounts on both and in the root namespace (docs/differences.md): every login's
    ``sys/capabilities`` on every path, every sudo request and every role refused to a
    caller is the same answer."""
    from tests.real.conftest import launch

    plan = draw(seed, SIZE)
    with launch(OpenBao) as bao:
        with bao.http() as http:
            for kind in FIXED_MOUNTS.values():
                reply = http.post(f"sys/auth/{kind}", json={"type": kind})
                assert reply.status_code == 204, reply.text
        reference = build(bao.address, bao.token, plan, mounts=FIXED_MOUNTS)
        with Sandbox(demo=False) as sandbox:
            other = build(sandbox.address, sandbox.token, plan, mounts=FIXED_MOUNTS)
            found = answer_differences(reference, other)
    assert not found, f"seed {seed}: {len(found)} difference(s):\n" + "\n".join(found[:60])
