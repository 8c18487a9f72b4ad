"""Tables declared in words (toolkit/_frames.py ``Schema.of``): the same schema as one
``Col`` a column, refused at import when a word is wrong, and the one way the package
writes a table."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from toolkit._frames import DTYPES, Col, Schema

ROOT = Path(__file__).resolve().parents[1]


def test_a_table_in_words_is_the_same_schema_as_one_col_a_column():
    words = Schema.of("id name count:int seen_at:datetime active:bool tags:object", index="id")
    cols = Schema(
        (
            Col("id"),
            Col("name"),
            Col("count", "int"),
            Col("seen_at", "datetime"),
            Col("active", "bool"),
            Col("tags", "object"),
        ),
        "id",
    )
    assert words == cols


def test_words_may_run_over_lines_and_mix_with_computed_columns():
    statuses = ("idle", "busy")
    schema = Schema.of(
        """pool_id
        pool_name""",
        *(Col(s, "int") for s in statuses),
        "total:int",
        index="pool_id",
    )
    assert schema.names == ["pool_id", "pool_name", "idle", "busy", "total"]
    assert [c.dtype for c in schema.columns] == ["str", "str", "int", "int", "int"]


def test_every_dtype_name_is_a_word_a_table_may_use():
    schema = Schema.of(" ".join(f"c_{name}:{name}" for name in DTYPES))
    assert [c.dtype for c in schema.columns] == list(DTYPES)


@pytest.mark.parametrize(
    ("columns", "index", "says"),
    [
        (("id count:integer",), None, "schema column 'count' has dtype 'integer'; use one of str"),
        (("id count:",), None, "schema column 'count' has dtype ''; use one of str"),
        (("id", Col("n", "number")), None, "schema column 'n' has dtype 'number'"),
        (("id name", "name:int"), None, "a schema names column 'name' twice"),
        (("id ttl-seconds:int",), None, "schema word 'ttl-seconds:int' names no column"),
        (("id :int",), None, "schema word ':int' names no column"),
        (("id name",), "key", "a schema's index 'key' is none of its columns"),
    ],
)
def test_a_wrong_table_is_refused_with_one_line_naming_the_word(columns, index, says):
    with pytest.raises(ValueError) as caught:
        Schema.of(*columns, index=index)
    message = str(caught.value)
    assert message.startswith(says)
    assert "\n" not in message


def _col_calls_with_constant_arguments(tree: ast.AST) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Col"
        and node.args
        and all(isinstance(arg, ast.Constant) for arg in node.args)
    ]


def test_the_package_writes_its_tables_in_words_and_a_col_only_where_computed():
    found = {}
    for path in sorted([*ROOT.glob("toolkit/**/*.py"), *ROOT.glob("widgets/**/*.py")]):
        name = path.relative_to(ROOT).as_posix()
        if name == "toolkit/_frames.py":
            continue
        lines = _col_calls_with_constant_arguments(ast.parse(path.read_text()))
        if lines:
            found[name] = lines
    assert found == {}, "write these columns as words in Schema.of: " + repr(found)
