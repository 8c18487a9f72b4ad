"""The ACL evaluator's rules, each stated on its own: which pattern wins, how the
capabilities of a pattern add up, which paths a pattern answers, and how identity
templates are filled (toolkit/_spec/acl.py)."""

from __future__ import annotations

import math

import pytest

from toolkit._spec.acl import (
    ACL,
    PathRule,
    decide,
    merged_patterns,
    parse_acl_policy,
    priority,
    request_paths,
    rules_of_document,
    stages,
)
from toolkit._spec.identity_templates import (
    UNKNOWN_IDENTITY,
    Alias,
    ForbiddenSubstitution,
    Group,
    Identity,
    TemplateMatcher,
    could_match,
    render,
    without_templates,
)


def acl(text: str) -> ACL:
    return ACL(parse_acl_policy(text))


def rules(*stanzas: tuple[str, list[str], str]) -> list[PathRule]:
    return [PathRule(p, frozenset(caps), policy) for p, caps, policy in stanzas]


# -- which pattern wins ----------------------------------------------------------------


def test_a_glob_whose_first_wildcard_comes_later_beats_a_plus_pattern_without_a_star() -> None:
    # "secret/team/*" ends in "*" (which loses on its own) but its first wildcard is later.
    both = acl(
        'path "secret/team/*" { capabilities = ["read"] }\n'
        'path "secret/+/prod" { capabilities = ["deny"] }'
    )
    assert both.allows("secret/team/prod", "read")
    assert both.decide("secret/team/prod").pattern == "secret/team/*"
    assert not both.allows("secret/other/prod", "read")


def test_fewer_plus_segments_win_over_a_longer_pattern() -> None:
    # Same first wildcard, both globs: "a/+/b*" has one "+", "a/+/+/*" two and is longer.
    both = acl(
        'path "a/+/b*" { capabilities = ["read"] }\npath "a/+/+/*" { capabilities = ["deny"] }'
    )
    assert both.decide("a/x/b/y").pattern == "a/+/b*"
    assert both.allows("a/x/b/y", "read")
    assert priority("a/+/b*") > priority("a/+/+/*")


def test_the_winner_is_chosen_by_priority_not_by_the_patterns_spelling() -> None:
    # "a/+/b*" sorts after "a/+/b" as text, yet the pattern without a star wins.
    both = acl(
        'path "a/+/b" { capabilities = ["deny"] }\npath "a/+/b*" { capabilities = ["read"] }'
    )
    decision = both.decide("a/x/b")
    assert decision.pattern == "a/+/b"
    assert not decision.allows("read")
    assert not both.allows("a/x/b", "read")
    assert both.allows("a/x/bc", "read")


def test_among_equal_ranks_the_longer_pattern_and_then_the_later_spelling_wins() -> None:
    assert priority("a/bc*") > priority("a/b*")
    assert priority("a/+/cd") > priority("a/+/c")
    assert priority("a/+/d") > priority("a/+/c")
    assert priority("abc") > priority("a/+")
    assert priority("abc") > priority("abc*")


def test_the_losers_are_named_most_specific_first() -> None:
    decision = decide(
        rules(
            ("secret/*", ["read"], "wide"),
            ("secret/a/*", ["read"], "team"),
            ("secret/a/b", ["update"], "exact"),
            ("secret/+/b", ["list"], "plus"),
        ),
        "secret/a/b",
    )
    assert decision.pattern == "secret/a/b"
    assert decision.policies == ("exact",)
    assert decision.losers == (("team", "secret/a/*"), ("plus", "secret/+/b"), ("wide", "secret/*"))


def test_nothing_matching_decides_nothing_and_allows_nothing() -> None:
    decision = decide(rules(("secret/a", ["read"], "p")), "other/a")
    assert decision.pattern is None
    assert decision.capabilities == frozenset()
    assert not decision.allows("read")
    assert decision.policies == ()


# -- capabilities on the winning pattern ------------------------------------------------


def test_a_decision_grants_the_union_of_every_policy_on_the_winning_pattern() -> None:
    decision = decide(
        rules(("kv/a", ["read"], "one"), ("kv/a", ["update"], "two"), ("kv/*", ["list"], "w")),
        "/kv/a",
    )
    assert decision.path == "kv/a"
    assert decision.capabilities == {"read", "update"}
    assert decision.policies == ("one", "two")
    assert decision.allows("read") and decision.allows("update")
    assert not decision.allows("list")


def test_a_deny_in_any_policy_on_the_winning_pattern_leaves_only_deny() -> None:
    decision = decide(rules(("kv/a", ["read"], "one"), ("kv/a", ["deny"], "two")), "kv/a")
    assert decision.capabilities == {"deny"}
    assert not decision.allows("read")
    assert not decision.allows("deny")


def test_the_same_pattern_written_twice_in_one_policy_names_the_policy_once() -> None:
    decision = decide(rules(("kv/a", ["read"], "one"), ("kv/a", ["list"], "one")), "kv/a")
    assert decision.policies == ("one",)
    assert decision.capabilities == {"read", "list"}


def test_the_capabilities_answer_merges_policies_and_lets_a_deny_win() -> None:
    merged = ACL(rules(("kv/a", ["read"], "one"), ("kv/a", ["update"], "two")))
    assert merged.capabilities("kv/a") == ["read", "update"]
    assert merged.rule_for("kv/a") == PathRule("kv/a", frozenset({"read", "update"}))
    denied = ACL(rules(("kv/a", ["read"], "one"), ("kv/a", ["deny"], "two")))
    assert denied.capabilities("kv/a") == ["deny"]
    assert not denied.allows("kv/a", "read")
    assert ACL().capabilities("kv/a") == ["deny"]
    assert ACL(rules(("kv/a", [], "none"))).capabilities("kv/a") == ["deny"]
    assert ACL(root=True).capabilities("kv/a") == ["root"]


def test_a_capability_not_granted_is_refused_and_sudo_needs_sudo() -> None:
    rules_ = ACL(rules(("sys/x", ["read", "sudo"], "p"), ("sys/y", ["read"], "p")))
    assert rules_.allows("sys/x", "read")
    assert rules_.allows("sys/x", "read", sudo=True)
    assert not rules_.allows("sys/x", "update")
    assert rules_.allows("sys/y", "read")
    assert not rules_.allows("sys/y", "read", sudo=True)
    assert ACL(root=True).allows("anything", "delete", sudo=True)


def test_merged_patterns_list_each_pattern_once_most_specific_first() -> None:
    merged = merged_patterns(
        rules(("kv/*", ["read"], "a"), ("kv/x", ["read"], "a"), ("kv/x", ["deny"], "b"))
    )
    assert merged == [
        ("kv/x", frozenset({"deny"}), ("a", "b")),
        ("kv/*", frozenset({"read"}), ("a",)),
    ]


# -- which paths a pattern answers -------------------------------------------------------


def test_a_list_of_a_folder_without_slash_is_answered_by_a_plus_pattern_on_the_folder() -> None:
    # OpenBao 2.7's fourth stage: "+" answers a LIST of "secret/x" when nothing matches "secret/x/".
    plus = acl('path "secret/+" { capabilities = ["list"] }')
    assert plus.allows("secret/x", "list")
    assert plus.decide("secret/x", "list").pattern == "secret/+"
    assert plus.allows("secret/x/", "list")


def test_a_read_of_a_folder_does_not_match_the_exact_pattern_without_its_slash() -> None:
    exact = acl('path "kv/a" { capabilities = ["read", "list"] }')
    assert not exact.allows("kv/a/", "read")
    assert exact.decide("kv/a/").pattern is None
    assert exact.allows("kv/a/", "list")
    assert exact.allows("kv/a", "list")
    assert exact.allows("kv/a", "read")


def test_the_stages_of_a_request_in_the_servers_order() -> None:
    assert request_paths("kv/a", "read") == ("kv/a", "kv/a")
    assert request_paths("kv/a", "list") == ("kv/a/", "kv/a")
    assert request_paths("kv/a/", "list") == ("kv/a/", "kv/a")
    assert request_paths("kv/a/", "capabilities") == ("kv/a/", "kv/a")
    assert request_paths("kv/a", "capabilities") == ("kv/a", "kv/a")
    assert request_paths("kv/a/", "read") == ("kv/a/", "kv/a/")
    assert stages("/kv/a", "read") == [(True, "kv/a"), (False, "kv/a")]
    assert stages("kv/a", "list") == [
        (True, "kv/a/"),
        (True, "kv/a"),
        (False, "kv/a/"),
        (False, "kv/a"),
    ]


def test_an_exact_match_on_the_trimmed_path_comes_before_a_wildcard_on_the_folder() -> None:
    both = acl('path "kv/a" { capabilities = ["list"] }\npath "kv/*" { capabilities = ["deny"] }')
    assert both.allows("kv/a", "list")
    assert not both.allows("kv/a", "read") and not both.allows("kv/a/", "read")


def test_a_plus_pattern_ending_in_a_partial_glob_matches_what_starts_with_it() -> None:
    rule = PathRule("secret/+/db-*", frozenset({"read"}))
    assert rule.matches("secret/a/db-one")
    assert rule.matches("secret/a/db-one/x")
    assert rule.matches("secret/a/db-")
    assert not rule.matches("secret/a/web")
    assert not rule.matches("secret/a")
    assert not rule.matches("other/a/db-one")
    assert acl('path "secret/+/db-*" { capabilities = ["read"] }').allows("secret/b/db-2", "read")


def test_a_pattern_that_starts_with_a_wildcard_matches() -> None:
    assert PathRule("+/config", frozenset()).matches("team/config")
    assert not PathRule("+/config", frozenset()).matches("team/other")
    assert PathRule("*", frozenset()).matches("anything/at/all")
    assert PathRule("+", frozenset()).matches("one")
    assert not PathRule("+", frozenset()).matches("one/two")
    assert PathRule("+/*", frozenset()).matches("a/b/c")
    assert acl('path "+/config" { capabilities = ["read"] }').allows("team/config", "read")


def test_a_plus_pattern_without_a_glob_needs_exactly_its_segments() -> None:
    rule = PathRule("a/+/c", frozenset())
    assert rule.matches("a/b/c")
    assert not rule.matches("a/b/c/d")
    assert not rule.matches("a/b")
    assert not rule.matches("a/b/x")
    glob = PathRule("a/+/c/*", frozenset())
    assert glob.matches("a/b/c/d/e")
    assert not glob.matches("a/b")
    assert not glob.matches("a/b/x/d")


def test_a_pattern_says_what_kind_it_is_and_what_every_match_starts_with() -> None:
    assert PathRule("a/b", frozenset()).is_exact
    assert not PathRule("a/+", frozenset()).is_exact
    assert not PathRule("a/*", frozenset()).is_exact
    assert PathRule("a/*", frozenset()).is_glob
    assert not PathRule("a/+", frozenset()).is_glob
    assert PathRule("a/b/+/c*", frozenset()).fixed_prefix == "a/b/"
    assert PathRule("a/b*", frozenset()).fixed_prefix == "a/b"
    assert PathRule("a/b", frozenset()).fixed_prefix == "a/b"
    assert PathRule("a/{{identity.entity.id}}", frozenset()).templated
    assert not PathRule("a/b", frozenset()).templated


def test_a_token_reaches_a_mount_through_rules_at_under_or_reaching_into_it() -> None:
    assert acl('path "kv/a/b" { capabilities = ["read"] }').reaches("kv/")
    assert acl('path "k*" { capabilities = ["read"] }').reaches("kv/")
    assert acl('path "+/a" { capabilities = ["read"] }').reaches("kv/")
    assert not acl('path "kv" { capabilities = ["read"] }').reaches("kv/")
    assert not acl('path "kv/a" { capabilities = ["deny"] }').reaches("kv/")
    assert not ACL(rules(("kv/a", [], "p"))).reaches("kv/")
    assert not acl('path "other/*" { capabilities = ["read"] }').reaches("kv/")
    assert ACL(root=True).reaches("kv/")


# -- identity templates -----------------------------------------------------------------

ENTITY = Identity(
    "e-1",
    "alice",
    {"team": "blue", "site.eu": "paris"},
    (
        Alias("auth_a", "alias-1", "alice-a", {"region": "eu"}, {"cost": "c7"}),
        Alias("auth_b", "alias-2", ""),
    ),
    (Group("g-1", "ops", {"tier": "gold"}), Group("g-2", "")),
)


@pytest.mark.parametrize(
    ("template", "value"),
    [
        ("identity.entity.id", "e-1"),
        ("identity.entity.name", "alice"),
        (" identity.entity.metadata.team ", "blue"),
        ("identity.entity.metadata.missing", None),
        ("identity.entity.aliases.auth_a.id", "alias-1"),
        ("identity.entity.aliases.auth_a.name", "alice-a"),
        ("identity.entity.aliases.auth_b.name", None),
        ("identity.entity.aliases.auth_b.id", "alias-2"),
        ("identity.entity.aliases.auth_a.metadata.region", "eu"),
        ("identity.entity.aliases.auth_a.metadata.cost", None),
        ("identity.entity.aliases.auth_a.custom_metadata.cost", "c7"),
        ("identity.entity.aliases.auth_a.custom_metadata.region", None),
        ("identity.entity.aliases.auth_a.other", None),
        ("identity.entity.aliases.auth_z.id", None),
        ("identity.entity.other", None),
        # A metadata key is all that follows "metadata.", dots included.
        ("identity.entity.metadata.site.eu", "paris"),
        ("identity.entity.metadata.site", None),
        ("identity.entity.other.team", None),
        ("identity.entity.aliases.auth_a.other.region", None),
        ("identity.groups.ids.g-1.name", "ops"),
        ("identity.groups.ids.g-1.id", "g-1"),
        ("identity.groups.names.ops.id", "g-1"),
        ("identity.groups.names.ops.name", "ops"),
        ("identity.groups.ids.g-1.metadata.tier", "gold"),
        ("identity.groups.names.ops.metadata.tier", "gold"),
        ("identity.groups.ids.g-1.metadata.none", None),
        ("identity.groups.ids.g-2.name", None),
        ("identity.groups.ids.g-9.name", None),
        ("identity.groups.names.g-1.id", None),
        ("identity.groups.ids.g-1", None),
        ("identity.groups.ids.g-1.other", None),
        ("identity.groups.other.g-1.id", None),
        ("identity.groups.other.ops.id", None),
        ("identity.other.id", None),
    ],
)
def test_an_identity_template_is_filled_from_the_entity_and_its_groups(
    template: str, value: str | None
) -> None:
    filled = render("kv/{{" + template + "}}/x", ENTITY)
    assert filled == (None if value is None else f"kv/{value}/x")


def test_an_entity_without_a_name_fills_no_name_template() -> None:
    assert render("kv/{{identity.entity.name}}", Identity("e-2")) is None
    assert render("kv/{{identity.entity.id}}", Identity("e-2")) == "kv/e-2"


def test_a_token_without_an_entity_fills_no_template() -> None:
    assert render("kv/{{identity.entity.id}}", None) is None
    assert render("kv/{{identity.groups.names.ops.id}}", None) is None
    assert render("kv/plain", None) == "kv/plain"


def test_every_template_of_a_pattern_is_filled() -> None:
    filled = render("kv/{{identity.entity.name}}/{{identity.groups.ids.g-1.name}}/*", ENTITY)
    assert filled == "kv/alice/ops/*"


def test_a_filled_pattern_is_remembered_with_the_template_it_was_written_as() -> None:
    written = parse_acl_policy(
        'path "/kv/{{identity.entity.name}}/*" { capabilities = ["read"] }', "p"
    )
    tokens = ACL(written, identity=ENTITY)
    assert tokens.written_as == {("p", "kv/alice/*"): "kv/{{identity.entity.name}}/*"}
    assert tokens.allows("kv/alice/x", "read")
    assert not tokens.allows("kv/bob/x", "read")


def test_an_unknown_identity_says_which_templated_patterns_could_match() -> None:
    written = parse_acl_policy(
        'path "kv/{{identity.entity.name}}/+" { capabilities = ["read"] }\n'
        'path "kv/shared/*" { capabilities = ["list"] }',
        "p",
    )
    role = ACL(written, identity=UNKNOWN_IDENTITY)
    maybe = role.decide("kv/anyone/x")
    assert maybe.depends_on_identity
    assert maybe.maybe == (("p", "kv/{{identity.entity.name}}/+"),)
    plain = role.decide("other/x")
    assert not plain.depends_on_identity and plain.maybe == ()
    shared = role.decide("kv/shared/x", "list")
    assert shared.pattern == "kv/shared/*" and shared.capabilities == {"list"}


def test_what_a_templated_pattern_could_match_keeps_its_text_before_the_glob() -> None:
    glob = could_match("kv/{{identity.entity.id}}/*")
    assert glob.fullmatch("kv/e-1/any/thing")
    assert not could_match("kv/{{identity.entity.id}}/x*").fullmatch("kv/e-1/y")
    # A pattern may start with a template or a + segment.
    assert could_match("{{identity.entity.name}}/x").fullmatch("alice/x")
    assert could_match("+/{{identity.entity.name}}").fullmatch("kv/alice")
    assert not could_match("+/{{identity.entity.name}}").fullmatch("kv/a/alice")
    assert could_match("+/{{identity.entity.name}}").fullmatch("/alice")  # + may be empty
    assert not glob.fullmatch("kx/e-1/any")  # the text before the glob is all checked
    assert not glob.fullmatch("kv//any")  # a template fills one character at least


def test_a_template_filled_with_a_refused_character_is_refused_naming_it_and_the_pattern() -> None:
    pattern = "kv/{{identity.entity.metadata.team}}/x"
    for value, refused in (("a/b", "/"), ("a*", "*"), ("a+b", "+"), ("+*/", "/")):
        with pytest.raises(ForbiddenSubstitution) as caught:
            render(pattern, Identity("e-1", metadata={"team": value}))
        assert caught.value.value == refused and caught.value.pattern == pattern
        assert str(caught.value) == (
            f"template substitution contains forbidden value {refused!r} "
            f"({{{{identity.entity.metadata.team}}}} in {pattern!r})"
        )


def test_a_policy_that_allows_slashes_or_wildcards_fills_values_holding_them() -> None:
    pattern = "kv/{{identity.entity.metadata.team}}/x"
    slashes = Identity("e-1", metadata={"team": "a/b"})
    assert render(pattern, slashes, blocked="*+") == "kv/a/b/x"
    with pytest.raises(ForbiddenSubstitution):
        render(pattern, Identity("e-1", metadata={"team": "a*"}), blocked="*+")
    assert render(pattern, Identity("e-1", metadata={"team": "a*+/"}), blocked="") == "kv/a*+//x"


def test_what_a_template_could_be_filled_with_leaves_out_the_refused_characters() -> None:
    name = could_match("kv/{{identity.entity.name}}")
    assert name.fullmatch("kv/alice")
    for refused in ("kv/a/b", "kv/a*", "kv/a+b", "kv/+"):
        assert not name.fullmatch(refused), refused
    allowed = could_match("kv/{{identity.entity.name}}", "*+")
    assert allowed.fullmatch("kv/a/b") and not allowed.fullmatch("kv/a*")
    # A matcher made directly refuses the server's three characters and no other.
    for direct in (TemplateMatcher("kv/{{identity.entity.name}}"), could_match("kv/{{a}}")):
        assert direct.fullmatch("kv/XX") and direct.fullmatch("kv/X-_.x")
        assert not any(direct.fullmatch(f"kv/a{c}") for c in "/*+")


def test_a_pattern_without_its_templates_keeps_everything_else() -> None:
    assert without_templates("kv/{{identity.entity.id}}/x/{{ identity.groups.ids.g.name }}") == (
        "kv//x/"
    )
    assert without_templates("kv/plain/*") == "kv/plain/*"


def test_the_unknown_identity_shows_its_name() -> None:
    assert repr(UNKNOWN_IDENTITY) == "UNKNOWN_IDENTITY"


def test_a_plus_beside_a_template_is_a_literal_character_not_a_segment_wildcard() -> None:
    from toolkit._spec.identity_templates import could_match

    before = could_match("kv/+{{identity.entity.name}}")
    assert before.fullmatch("kv/+alice")
    assert not before.fullmatch("kv/alice") and not before.fullmatch("kv/x/alice")
    after = could_match("kv/{{identity.entity.name}}+")
    assert after.fullmatch("kv/alice+") and not after.fullmatch("kv/alice")
    whole = could_match("kv/+/{{identity.entity.name}}")
    assert whole.fullmatch("kv/any/alice") and whole.fullmatch("kv//alice")


def test_a_plus_followed_by_a_star_is_refused_naming_the_rule() -> None:
    from toolkit._spec.hcl import PolicyParseError

    with pytest.raises(
        PolicyParseError, match=r"invalid use of wildcards \('\+\*' is forbidden\)$"
    ):
        parse_acl_policy('path "kv/+*" { capabilities = ["read"] }', "p")


# -- reading policy text ---------------------------------------------------------------------

# Plain policies HCL (pygohcl) leaves to python-hcl2's grammar: non-ASCII, numbers.
TREE_READ = [
    'path "caf\u00e9/*" {\n  capabilities = ["read", "list"]\n}\n',
    'path "a" {\n  max_wrapping_ttl = 300\n  capabilities = []\n}\n# note\npath "b" {\n}\n',
    'name = "\u00e9"\npath "a" {\n  capabilities = [""]\n}\n',
    'path "\u00e9" {\n  capabilities = "read"\n  policy = ""\n}\n',
]
# What only python-hcl2's full transform reads: escapes, interpolations, heredocs, two
# labels, a repeated attribute, an object value, a negative or large number.
TRANSFORM_READ = [
    'path "\u00e9\\"x" {\n  capabilities = ["read"]\n}\n',
    'path "\u00e9" {\n  capabilities = ["${x}"]\n}\n',
    # Text before an interpolation, an escaped one or a directive: the string is not plain.
    'path "\u00e9" {\n  capabilities = ["read${x}"]\n}\n',
    'path "\u00e9" {\n  capabilities = ["read$${x}"]\n}\n',
    'path "read%{ if x }y%{ endif }" {\n}\n',
    'path "\u00e9" {\n  capabilities = <<EOT\nread\nEOT\n}\n',
    'path "\u00e9" "b" {\n}\n',
    'path "\u00e9" {\n  policy = "read"\n  policy = "write"\n}\n',
    'path "\u00e9" {\n  allowed_parameters = { "k" = ["v"] }\n}\n',
    'path "\u00e9" {\n  max_wrapping_ttl = -3\n}\n',
    'path "\u00e9" {\n  capabilities = [1]\n}\n',
    'path "\u00e9" {\n  capabilities = read\n}\n',
    "v = true\n",
]


def _tree_body(text: str) -> object:
    from toolkit._spec import hcl as module

    tree = module._hcl_parser().parse(text + "\n")
    return module._plain_body(tree.children[0])


@pytest.mark.parametrize("text", TREE_READ)
def test_a_plain_policy_is_read_from_its_parse_tree_as_python_hcl2_reads_it(text: str) -> None:
    from toolkit._spec.hcl import hcl_document, parse_hcl

    read = _tree_body(text)
    assert read is not None and read == hcl_document(text)
    assert parse_hcl(text) == hcl_document(text)


@pytest.mark.parametrize("text", TRANSFORM_READ)
def test_a_policy_that_is_not_plain_is_left_to_python_hcl2s_transform(text: str) -> None:
    from toolkit._spec.hcl import PolicyParseError, hcl_document, parse_hcl

    assert _tree_body(text) is None
    try:
        expected: object = hcl_document(text)
    except Exception:  # noqa: BLE001 - python-hcl2 refuses it: so does the reader
        with pytest.raises(PolicyParseError):
            parse_hcl(text)
        return
    assert parse_hcl(text) == expected


def test_a_json_policy_is_read_as_json_even_where_orjson_refuses_it() -> None:
    from toolkit._spec.hcl import PolicyParseError, parse_hcl

    assert parse_hcl(' {"path": {"a": {"capabilities": ["read"]}}} ') == {
        "path": {"a": {"capabilities": ["read"]}}
    }
    # orjson refuses NaN; the standard reader takes it.
    assert math.isnan(parse_hcl('{"n": NaN}')["n"])
    with pytest.raises(PolicyParseError, match="^failed to parse policy: "):
        parse_hcl("{nope")
    assert parse_hcl("") == {}


def test_blocks_are_read_in_both_forms_and_anything_else_is_refused() -> None:
    from toolkit._spec.hcl import PolicyParseError, blocks

    assert blocks({}, "path") == []
    assert blocks({"path": {"a": {"x": 1}, "b": [{"y": 2}, {"z": 3}]}}, "path") == [
        ("a", {"x": 1}),
        ("b", {"y": 2}),
        ("b", {"z": 3}),
    ]
    assert blocks({"path": [{"a": {"x": 1}}, {"b": {}}]}, "path") == [("a", {"x": 1}), ("b", {})]
    with pytest.raises(PolicyParseError, match="'path' must be a labelled block"):
        blocks({"path": ["a"]}, "path")
    with pytest.raises(PolicyParseError, match="path 'a' must be a block"):
        blocks({"path": {"a": "x"}}, "path")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('path "a" { capabilities = [1] }', "capabilities must be a list of strings"),
        ('{"path": {"a": {"capabilities": 3}}}', "capabilities must be a list of strings"),
        ('path "a" { policy = "fly" }', 'invalid policy "fly"'),
        ('{"path": {"a": {"policy": 3}}}', 'invalid policy "3"'),
        ('name = "x"\nother = 1', 'invalid key "other"'),
        ('path "a/*/b*" { capabilities = ["read"] }', '"\\*" is allowed only at the end'),
        ('path "a/**" { capabilities = ["read"] }', '"\\*" is allowed only at the end'),
        ('path "a/}}" { capabilities = ["read"] }', "unbalanced templating characters"),
    ],
)
def test_a_policy_stanza_with_a_wrong_value_is_refused_naming_it(text: str, says: str) -> None:
    from toolkit._spec.hcl import PolicyParseError

    with pytest.raises(PolicyParseError, match=says):
        parse_acl_policy(text)


def test_capabilities_are_read_in_any_case_and_the_legacy_word_adds_to_them() -> None:
    (rule,) = parse_acl_policy('path "/a" { capabilities = ["READ"]\n policy = "Deny" }', "p")
    assert rule.pattern == "a" and rule.capabilities == {"read", "deny"} and rule.policy == "p"
    (one,) = parse_acl_policy('path "a" { capabilities = "List" }')
    assert one.capabilities == {"list"}
    (templated,) = parse_acl_policy('path "a/{{identity.entity.id}}*" { capabilities = [] }')
    assert templated.pattern == "a/{{identity.entity.id}}*"


def test_merged_patterns_order_by_priority_not_by_spelling() -> None:
    # "kv/b*" sorts after "kv/a" as text, yet the exact pattern is the more specific one.
    merged = merged_patterns(rules(("kv/b*", ["read"], "a"), ("kv/a", ["list"], "b")))
    assert [pattern for pattern, _, _ in merged] == ["kv/a", "kv/b*"]


def test_a_rule_that_matches_at_two_stages_of_a_list_is_one_loser() -> None:
    # A LIST of "secret/x/" looks at "secret/x/" and at "secret/x": the glob matches both.
    decision = decide(
        rules(("secret/x/", ["list"], "a"), ("secret/*", ["read"], "b")), "secret/x/", "list"
    )
    assert decision.pattern == "secret/x/"
    assert decision.losers == (("b", "secret/*"),)


# -- a template filled with a forbidden value -------------------------------------------------

TEAM_HOME = 'path "kv/{{identity.entity.name}}/*" { capabilities = ["read"] }'
SHARED = (
    'path "kv/shared/*" { capabilities = ["read"] }\n'
    'path "kv/{{identity.entity.id}}/*" { capabilities = ["read"] }'
)


def test_a_forbidden_value_in_a_template_refuses_the_whole_acl_naming_the_policy() -> None:
    # OpenBao refuses the token's whole ACL (tests/sandbox/secrets/test_identity.py holds
    # the sandbox's answer): even the rules read before the refused one are dropped.
    written = parse_acl_policy(SHARED, "ok") + parse_acl_policy(TEAM_HOME, "team")
    refused = ACL(written, identity=Identity("e-1", "a/b"))
    assert refused.refused == (
        "policy 'team': template substitution contains forbidden value '/' "
        "({{identity.entity.name}} in 'kv/{{identity.entity.name}}/*')"
    )
    assert refused.refusal is not None
    policy, why = refused.refusal
    assert (policy, why.value, why.pattern) == ("team", "/", "kv/{{identity.entity.name}}/*")
    assert refused.sources == [] and refused.rules == {} and refused.written_as == {}
    assert refused.unresolved == []
    assert not refused.allows("kv/shared/x", "read")
    assert refused.capabilities("kv/e-1/x") == ["deny"]
    assert refused.decide("kv/shared/x").pattern is None


def test_a_token_whose_templates_fill_is_not_refused() -> None:
    written = parse_acl_policy(SHARED, "ok") + parse_acl_policy(TEAM_HOME, "team")
    filled = ACL(written, identity=Identity("e-1", "alice"))
    assert filled.refused == "" and filled.refusal is None
    assert filled.allows("kv/alice/x", "read") and filled.allows("kv/e-1/x", "read")
    assert ACL(written).refused == "" and ACL(written).refusal is None


def test_a_policy_allowing_slashes_in_templates_fills_a_value_holding_one() -> None:
    # allow_slashes_in_identity_templates on the policy: "/" is no longer refused there,
    # while every other policy keeps the server's default ("/", "*" and "+" refused).
    team = parse_acl_policy(TEAM_HOME, "team")
    slashes = ACL(team, identity=Identity("e-1", "a/b"), blocked={"team": "*+"})
    assert slashes.refused == ""
    assert slashes.allows("kv/a/b/x", "read")
    assert slashes.written_as == {("team", "kv/a/b/*"): "kv/{{identity.entity.name}}/*"}
    other = ACL(team, identity=Identity("e-1", "a/b"), blocked={"else": ""})
    assert other.refusal is not None and other.refusal[0] == "team"
    assert not other.allows("kv/a/b/x", "read")
    wildcard = ACL(team, identity=Identity("e-1", "a*"), blocked={"team": "*+"})
    assert wildcard.refusal is not None and wildcard.refusal[1].value == "*"


def test_an_unknown_identity_could_fill_a_slash_only_where_the_policy_allows_it() -> None:
    team = parse_acl_policy(
        'path "kv/{{identity.entity.name}}" { capabilities = ["read"] }', "team"
    )
    allowed = ACL(team, identity=UNKNOWN_IDENTITY, blocked={"team": ""})
    assert allowed.decide("kv/a/b").maybe == (("team", "kv/{{identity.entity.name}}"),)
    assert allowed.decide("kv/a").depends_on_identity
    default = ACL(team, identity=UNKNOWN_IDENTITY, blocked={"else": ""})
    assert not default.decide("kv/a/b").depends_on_identity
    assert default.decide("kv/a").maybe == (("team", "kv/{{identity.entity.name}}"),)


def test_a_denied_rule_does_not_hide_a_later_rule_that_reaches_the_mount() -> None:
    reaching = acl(
        'path "kv/x" { capabilities = ["deny"] }\npath "kv/a/b" { capabilities = ["read"] }'
    )
    assert reaching.reaches("kv/")
    empty_first = ACL(rules(("kv/x", [], "p"), ("kv/a/b", ["read"], "p")))
    assert empty_first.reaches("kv/")


def test_a_pattern_reaches_into_a_mount_from_the_text_before_its_first_plus() -> None:
    # "kv/+/x/+" may stand for "kv/y/x/z": it reaches "kv/y/" through its first "+".
    assert acl('path "kv/+/x/+" { capabilities = ["read"] }').reaches("kv/y/")
    assert not acl('path "kv/+/x/+" { capabilities = ["read"] }').reaches("db/")


def test_what_every_match_starts_with_ends_at_the_first_wildcard_even_at_the_start() -> None:
    assert PathRule("a/+/b/+", frozenset()).fixed_prefix == "a/"
    assert PathRule("a/+/b/*", frozenset()).fixed_prefix == "a/"
    assert PathRule("+/a", frozenset()).fixed_prefix == ""
    assert PathRule("*", frozenset()).fixed_prefix == ""


def test_an_exact_pattern_matches_only_the_path_itself() -> None:
    exact = PathRule("kv/a", frozenset())
    assert exact.matches("kv/a")
    assert not exact.matches("kv/ab") and not exact.matches("kv/a/") and not exact.matches("kv")


def test_a_partial_glob_after_a_plus_is_not_matched_across_a_slash() -> None:
    # The text before the "*" lies in one segment: "a/b" does not start with "aXX".
    rule = PathRule("kv/+/aXX*", frozenset())
    assert rule.matches("kv/x/aXXb/c")
    assert not rule.matches("kv/x/a/b")


def test_only_the_leading_slashes_of_a_path_are_dropped() -> None:
    decision = decide(rules(("Xa/b", ["read"], "p")), "//Xa/b")
    assert (decision.path, decision.pattern) == ("Xa/b", "Xa/b")
    nothing = decide(rules(("Xa/b", ["read"], "p")), "/Xa/c")
    assert nothing.path == "Xa/c" and nothing.pattern is None


def test_a_tokens_decision_on_a_list_looks_at_the_folder_with_its_slash() -> None:
    folder = ACL(rules(("kv/a/", ["list"], "p")))
    assert folder.decide("kv/a", "list").pattern == "kv/a/"
    assert folder.decide("kv/a").pattern is None


def test_an_unknown_identitys_list_may_match_a_templated_folder() -> None:
    written = parse_acl_policy(
        'path "kv/{{identity.entity.name}}/" { capabilities = ["list"] }', "p"
    )
    role = ACL(written, identity=UNKNOWN_IDENTITY)
    listed = role.decide("kv/anyone", "list")
    assert listed.path == "kv/anyone"
    assert listed.maybe == (("p", "kv/{{identity.entity.name}}/"),)
    assert not role.decide("kv/anyone").depends_on_identity


def test_the_losers_of_a_list_are_named_by_priority_not_by_spelling() -> None:
    # "kv/a/*" sorts after "kv/a" as text, yet the exact pattern is the more specific one.
    decision = decide(
        rules(
            ("kv/a/", ["list"], "folder"), ("kv/a", ["list"], "exact"), ("kv/a/*", ["read"], "g")
        ),
        "kv/a",
        "list",
    )
    assert decision.pattern == "kv/a/"
    assert decision.losers == (("exact", "kv/a"), ("g", "kv/a/*"))


def test_a_pattern_whose_first_wildcard_is_its_first_character_loses_to_a_later_one() -> None:
    # "+/abc/x" has its first wildcard at 0, "t*" at 1: the glob decides "team/abc/x".
    both = acl('path "+/abc/x" { capabilities = ["deny"] }\npath "t*" { capabilities = ["read"] }')
    assert both.decide("team/abc/x").pattern == "t*"
    assert both.allows("team/abc/x", "read")
    assert priority("t*") > priority("+/abc/x")


def test_the_first_of_several_plus_segments_is_the_first_wildcard() -> None:
    # Both first wildcards come at 2; "a/+/bb/c" has fewer "+" segments and wins.
    both = acl(
        'path "a/+/+/c" { capabilities = ["deny"] }\npath "a/+/bb/c" { capabilities = ["read"] }'
    )
    assert both.decide("a/x/bb/c").pattern == "a/+/bb/c"
    assert priority("a/+/bb/c") > priority("a/+/+/c")


def test_deny_is_never_a_capability_a_token_is_allowed() -> None:
    denied = ACL(rules(("kv/a", ["deny"], "p"), ("kv/b", ["read"], "p")))
    assert not denied.allows("kv/a", "deny")
    assert not denied.allows("kv/b", "deny")
    assert not denied.allows("kv/c", "deny")


def test_a_filled_pattern_keeps_its_folder_slash_and_drops_a_leading_one() -> None:
    folder = ACL(
        parse_acl_policy('path "kv/{{identity.entity.name}}/" { capabilities = ["list"] }', "p"),
        identity=ENTITY,
    )
    assert list(folder.rules) == ["kv/alice/"]
    assert folder.decide("kv/alice", "list").pattern == "kv/alice/"
    assert folder.decide("kv/alice", "list").policies == ("p",)
    assert folder.identity is ENTITY
    at_start = parse_acl_policy(
        'path "{{identity.entity.name}}/x" { capabilities = ["read"] }', "p"
    )
    slashed = ACL(at_start, identity=Identity("e-1", "/team"), blocked={"p": "*+"})
    assert list(slashed.rules) == ["team/x"]
    assert slashed.written_as == {("p", "team/x"): "{{identity.entity.name}}/x"}
    named = ACL(at_start, identity=Identity("e-1", "Xavier"))
    assert list(named.rules) == ["Xavier/x"] and named.allows("Xavier/x", "read")


def test_only_the_leading_slashes_of_a_written_pattern_are_dropped() -> None:
    (rule,) = parse_acl_policy('path "/Xkv/a/" { capabilities = ["read"] }')
    assert rule.pattern == "Xkv/a/"


def test_the_rules_of_a_document_note_the_policy_they_are_in_and_none_by_default() -> None:
    document = {"path": {"kv/a": {"capabilities": ["read"]}}}
    assert [(r.pattern, r.policy) for r in rules_of_document(document, "p")] == [("kv/a", "p")]
    assert [r.policy for r in rules_of_document(document)] == [""]
    assert [r.policy for r in parse_acl_policy('path "kv/a" { capabilities = ["read"] }')] == [""]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('path "kv/a" { color = "red" }', 'path "kv/a": invalid key "color"'),
        ('path "kv/a" { capabilities = 3 }', 'path "kv/a": capabilities must be a list of'),
        ('path "kv/a" { capabilities = ["fly"] }', 'path "kv/a": invalid capability "fly"'),
        ('path "kv/a" { policy = "fly" }', 'path "kv/a": invalid policy "fly"'),
    ],
)
def test_a_refused_path_stanza_is_named_by_its_path(text: str, says: str) -> None:
    from toolkit._spec.hcl import PolicyParseError

    with pytest.raises(PolicyParseError, match=f"^failed to parse policy: {says}"):
        parse_acl_policy(text)


def test_an_exact_pattern_ranks_as_if_a_wildcard_came_right_after_its_end() -> None:
    # It beats every pattern that can match its path ("abc*", and "abc/*" on a LIST of
    # "abc/"); a glob whose wildcard comes later never matches the same path.
    assert priority("abc") > priority("abc/*") > priority("abc*") > priority("ab*")
    assert priority("abcde*") > priority("abc")
    assert [
        p for p, _, _ in merged_patterns(rules(("abc", ["read"], "p"), ("abcde*", ["read"], "p")))
    ] == ["abcde*", "abc"]


def test_one_capability_may_be_written_as_a_string_instead_of_a_list() -> None:
    (rule,) = parse_acl_policy('path "kv/one-word/*" { capabilities = "Update" }', "one")
    assert rule.capabilities == {"update"}
    assert ACL([rule]).allows("kv/one-word/x", "update")


def test_the_legacy_policy_word_adds_to_the_capabilities_listed_beside_it() -> None:
    (rule,) = parse_acl_policy(
        'path "kv/legacy-and-list/*" {\n  capabilities = ["sudo"]\n  policy = "read"\n}', "old"
    )
    assert rule.capabilities == {"sudo", "read", "list"}
