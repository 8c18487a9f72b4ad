"""The mutation runner (``make mutation``): properties and cached functions are mutated,
no cache outlives the start of a mutant's run, and the settings, the sample and the
list of equivalent mutants read as documented."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from tests.mutation import fresh_caches, run

SOURCE = """
import functools


class Box:
    def __init__(self, size):
        self.size = size

    @property
    def big(self):
        return self.size > 10


@functools.lru_cache(maxsize=8)
def doubled(n):
    return n * 2
"""


def _load(code: str) -> types.ModuleType:
    module = types.ModuleType("boxes")
    exec(compile(code, "boxes.py", "exec"), module.__dict__)
    return module


def test_a_property_and_a_cached_function_are_mutated_and_each_mutant_answers_for_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mutmut.mutation.file_mutation import mutate_file_contents

    run.extend_mutmut()
    mutated = mutate_file_contents("boxes.py", SOURCE)
    names = set(mutated.mutant_names)
    assert {n for n in names if "big" in n} and {n for n in names if "doubled" in n}
    monkeypatch.setenv("MUTANT_UNDER_TEST", "")
    module = _load(mutated.code)
    assert module.Box(11).big and not module.Box(10).big and module.doubled(4) == 8
    # ">" made ">=": the property answers with the mutant while it is active.
    (at_ten,) = [
        n for n in names if "big" in n and "self.size >= 10" in _mutant_source(mutated.code, n)
    ]
    monkeypatch.setenv("MUTANT_UNDER_TEST", f"boxes.{at_ten}")
    assert _load(mutated.code).Box(10).big
    (times_three,) = [
        n for n in names if "doubled" in n and "n / 2" in _mutant_source(mutated.code, n)
    ]
    monkeypatch.setenv("MUTANT_UNDER_TEST", f"boxes.{times_three}")
    assert _load(mutated.code).doubled(4) == 2


def _mutant_source(code: str, name: str) -> str:
    start = code.index(f"def {name}(")
    return code[start : code.index("\n\n", start)]


def test_other_decorators_are_still_left_alone() -> None:
    from mutmut.mutation.file_mutation import mutate_file_contents

    run.extend_mutmut()
    source = "import contextlib\n\n\n@contextlib.contextmanager\ndef held():\n    yield 1 + 1\n"
    assert list(mutate_file_contents("held.py", source).mutant_names) == []


def test_a_cache_filled_before_a_mutant_runs_is_emptied_when_its_tests_start() -> None:
    from toolkit._spec import acl, hcl, identity_templates

    identity_templates.could_match("kv/{{identity.entity.id}}/*")
    acl.parse_acl_policy('path "kv/*" { capabilities = ["read"] }')
    could_match = identity_templates.could_match
    assert could_match.cache_info().currsize and acl._rules_of_text.cache_info().currsize
    caches = set(fresh_caches.toolkit_caches())
    assert {could_match, acl._rules_of_text, hcl._hcl_parser} <= caches
    assert fresh_caches.clear_toolkit_caches() == len(caches)
    assert could_match.cache_info().currsize == 0
    assert acl._rules_of_text.cache_info().currsize == 0


def test_each_test_of_a_mutation_run_starts_with_the_toolkit_caches_empty() -> None:
    # So mutmut's stats see every test that calls a cached function, not only the first.
    from toolkit._spec import acl

    acl.parse_acl_policy('path "kv/*" { capabilities = ["read"] }')
    assert acl._rules_of_text.cache_info().currsize
    fresh_caches.pytest_runtest_setup(None)
    assert acl._rules_of_text.cache_info().currsize == 0


def test_every_listed_module_and_test_file_exists_and_the_score_is_ninety() -> None:
    chosen = run.settings()
    assert chosen.minimum == 90 and chosen.sample >= 10
    assert "toolkit/_spec/acl.py" in chosen.modules
    for module, tests in chosen.modules.items():
        assert (run.ROOT / module).is_file(), module
        assert tests and all((run.ROOT / t).is_file() for t in tests), module
    assert run.module_name("toolkit/_spec/acl.py") == "toolkit._spec.acl"


def test_a_module_is_added_with_one_line(tmp_path: Path) -> None:
    text = run.SETTINGS.read_text()
    text = text.replace("[modules]\n", '[modules]\n"toolkit/_time.py" = ["tests/test_time.py"]\n')
    (tmp_path / "modules.toml").write_text(text)
    chosen = run.settings(tmp_path / "modules.toml")
    assert chosen.modules["toolkit/_time.py"] == ["tests/test_time.py"]
    assert len(chosen.modules) == len(run.settings().modules) + 1


def test_the_sample_is_the_same_draw_for_the_same_mutants() -> None:
    names = [f"m.x_f__mutmut_{i}" for i in range(100)]
    drawn = run.sample(names, 10, 37)
    assert len(drawn) == 10 and drawn == sorted(drawn)
    assert drawn == run.sample(list(reversed(names)), 10, 37)
    assert drawn != run.sample(names, 10, 38)
    assert run.sample(names[:5], 10, 37) == sorted(names[:5])


def test_a_mutant_is_named_by_its_function() -> None:
    assert run.function_of("toolkit._spec.acl.xǁPathRuleǁmatches__mutmut_3") == "PathRule.matches"
    assert run.function_of("toolkit._spec.acl.x_priority__mutmut_12") == "priority"
    assert run.function_of("toolkit._coverage.x__fill__mutmut_1") == "_fill"


def test_equivalent_mutants_are_read_from_their_table_in_the_decisions() -> None:
    text = (
        "## Other\n| `a.py` | `f` | `x` | `y` | no |\n"
        f"{run.EQUIVALENTS_HEADING}\n\n| Module | Function | Line as written | Line as mutated | Why |\n"
        "|---|---|---|---|---|\n"
        "| `toolkit/x.py` | `C.m` | `a \\| b` | `a & b` | same bits |\n"
        "## Next\n| `toolkit/y.py` | `g` | `1` | `2` | not this section |\n"
    )
    assert run.equivalents(text) == {("toolkit/x.py", "C.m", "a | b", "a & b")}
    assert run.equivalents("no section") == set()
    listed = run.equivalents()
    assert all(module in run.settings().modules for module, *_ in listed)


def test_a_score_leaves_the_equivalent_out() -> None:
    score = run.Score("m.py", mutants=10, killed=8, equivalent=1, survivors=[])
    assert score.percent == pytest.approx(800 / 9)
    assert run.Score("m.py", 0, 0, 0, []).percent == 100.0
    assert "| `m.py` | 10 | 8 | 1 | 88.9% |" in run.table([score])
