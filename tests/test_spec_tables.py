"""The shared fact tables (toolkit/_spec/) read against the spec's own text.

The sandbox and the clients both import these tables, so a wrong row would make
the test double and the client agree on a mistake. These tests parse the rows out
of the spec documents and compare, so that the tables answer to the text.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolkit
from toolkit._spec import certificate_names, team_access
from toolkit._spec.headers import NAMESPACE_HEADERS, TOKEN_HEADERS

ROOT = Path(__file__).resolve().parents[1]


def _spec_dir() -> Path:
    """``shared/spec`` beside the clone (CI), or beside a folder of worktrees above it."""
    named = os.environ.get("TOOLKIT_SPEC_DIR")
    candidates = [Path(named)] if named else []
    candidates += [parent / "shared" / "spec" for parent in ROOT.parents]
    for candidate in candidates:
        if list(candidate.glob("000_*.txt")) and list(candidate.glob("001_*.txt")):
            return candidate
    message = (
        f"the spec documents (shared/spec/000_*.txt, 001_*.txt) are not beside the clone "
        f"at {ROOT}: looked in {', '.join(str(c) for c in candidates)}"
    )
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def _read(pattern: str) -> str:
    (path,) = _spec_dir().glob(pattern)
    return path.read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1 :]
    stop = re.search(rf"^#{{1,{len(level)}}} ", rest, flags=re.MULTILINE)
    return rest[: stop.start()] if stop else rest


def _rows(text: str) -> Iterator[list[str]]:
    """The cells of each table row in ``text``, header and rule rows left out."""
    for line in text.splitlines():
        if line.startswith("|") and not re.match(r"^\|[-| ]+\|$", line):
            yield [cell.strip() for cell in line.strip("|").split("|")]


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]*)`", cell)


def _value(word: str) -> Any:
    return {"true": True, "false": False}.get(word, word)


@pytest.fixture(scope="module")
def platform_spec() -> str:
    return _read("000_*.txt")


@pytest.fixture(scope="module")
def secrets_spec() -> str:
    return _read("001_*.txt")


@pytest.fixture(scope="module")
def team_access_fields(platform_spec: str) -> dict[str, list[str]]:
    """The team-access field table of spec 000 part 2: attribute -> [type, default, allowed]."""
    section = _section(platform_spec, "### Team access (type `team-workspaces`, id prefix `tws-`)")
    return {
        row[0].removeprefix("attributes."): row[1:]
        for row in _rows(section)
        if row[0].startswith("attributes.")
    }


def test_the_access_levels_are_the_specs_allowed_values_of_access(team_access_fields):
    assert tuple(_ticked(team_access_fields["access"][2])) == team_access.ACCESS_LEVELS


def test_the_custom_only_attributes_are_the_ones_rule_one_names(platform_spec):
    section = _section(platform_spec, "### Team access (type `team-workspaces`, id prefix `tws-`)")
    (rule,) = [line for line in section.splitlines() if "can be set only when" in line]
    named = _ticked(rule.split("can be set only when")[0])
    assert tuple(named) == team_access.PERMISSION_ATTRIBUTES


def test_each_permissions_allowed_values_and_default_are_the_field_tables(team_access_fields):
    for name in team_access.PERMISSION_ATTRIBUTES:
        kind, default, allowed = team_access_fields[name]
        assert team_access.CUSTOM_DEFAULTS[name] == _value(_ticked(default)[0]), name
        if kind == "boolean":
            assert team_access.PERMISSION_VALUES[name] == (False, True), name
        else:
            assert team_access.PERMISSION_VALUES[name] == tuple(_ticked(allowed)), name


def test_the_create_body_table_agrees_that_the_permissions_are_custom_only(platform_spec):
    post = platform_spec.split("**POST /team-workspaces**", 1)[1].split("**PATCH", 1)[0]
    custom_only = {
        row[0].removeprefix("data.attributes."): row
        for row in _rows(post)
        if row[0].startswith("data.attributes.") and "only with `custom`" in row[3]
    }
    assert tuple(custom_only) == team_access.PERMISSION_ATTRIBUTES
    for name, (_path, _kind, default, _notes) in custom_only.items():
        assert team_access.CUSTOM_DEFAULTS[name] == _value(_ticked(default)[0]), name


def test_the_implied_permissions_are_the_readmes_observed_table():
    readme = (_spec_dir() / "README.md").read_text(encoding="utf-8")
    header = re.search(r"non-custom access levels \(([^)]*)\)", readme)
    assert header is not None, "the README's implied-permissions line moved"
    assert tuple(p.strip() for p in header.group(1).split("/")) == team_access.PERMISSION_ATTRIBUTES
    implied = {
        level: [_value(v.strip()) for v in values.split("/")]
        for level, values in re.findall(r"^\s+(\w+): ([^;.\n]+)[;.]", readme, flags=re.M)
    }
    assert (
        set(implied)
        == set(team_access.IMPLIED_PERMISSIONS)
        == set(team_access.ACCESS_LEVELS) - {"custom"}
    )
    for level, values in implied.items():
        assert team_access.IMPLIED_PERMISSIONS[level] == dict(
            zip(team_access.PERMISSION_ATTRIBUTES, values, strict=True)
        ), level


def test_the_agent_statuses_and_the_removable_ones_are_the_specs(platform_spec):
    (listed,) = re.findall(r"^Agent `status` values: (.*)$", platform_spec, flags=re.M)
    assert tuple(_ticked(listed)) == team_access.AGENT_STATUSES
    transitions = {
        row[0]: row[-1] for row in _rows(platform_spec) if row[1:2] == ["DELETE /agents/:id"]
    }
    (removable,) = [state for state, outcome in transitions.items() if outcome.startswith("204")]
    assert set(team_access.REMOVABLE_AGENT_STATUSES) == set(_ticked(removable))


@pytest.fixture(scope="module")
def issue_parameters(secrets_spec: str) -> dict[str, list[str]]:
    """The "Parameters of issue" table of spec 001 section 4.10: name -> [type, rule]."""
    section = _section(secrets_spec, "### 4.10 Certificate engine (mount `/pki`)")
    table = section.split("Parameters of issue", 1)[1].split("Issue response", 1)[0]
    return {row[0]: row[1:] for row in _rows(table) if row[0] != "Parameter"}


def test_the_name_parameters_are_those_whose_rule_is_the_roles_policy(issue_parameters):
    governed = [
        name
        for name, (_kind, rule) in issue_parameters.items()
        if "role" in rule and ("allow" in rule or "policy" in rule)
    ]
    assert tuple(governed) == certificate_names.ISSUE_NAME_PARAMETERS


def test_the_only_other_san_type_is_the_one_the_spec_names(issue_parameters):
    rule = issue_parameters["other_sans"][1]
    assert (
        tuple(_ticked(rule.split("the only type is", 1)[1])[:1])
        == certificate_names.OTHER_SAN_TYPES
    )
    assert certificate_names.parse_other_san("1.2.3.4;UTF8:x") == ("1.2.3.4", "x")
    with pytest.raises(ValueError, match="only utf8"):
        certificate_names.parse_other_san("1.2.3.4;IA5:x")


def test_ip_sans_are_allowed_by_default_as_the_spec_says(issue_parameters):
    assert "(the default)" in issue_parameters["ip_sans"][1]
    assert certificate_names.ROLE_FLAG_DEFAULTS["allow_ip_sans"] is True
    role = {"allow_any_name": True}
    assert certificate_names.refusal(role, common_name="a", ip_sans=["10.0.0.1"]) == ""
    refused = certificate_names.refusal(
        {**role, "allow_ip_sans": False}, common_name="a", ip_sans=["10.0.0.1"]
    )
    assert "10.0.0.1" in refused


def test_the_common_name_is_required_unless_the_role_says_otherwise(issue_parameters):
    assert issue_parameters["common_name"][1].startswith("required")
    assert certificate_names.refusal({"allow_any_name": True}) == certificate_names.CN_REQUIRED
    assert certificate_names.refusal({"allow_any_name": True, "require_cn": False}) == ""


def test_one_name_outside_the_role_denies_the_whole_request(issue_parameters):
    assert "rejects the whole request" in issue_parameters["alt_names"][1]
    role = {"allowed_domains": ["example.com"], "allow_subdomains": True}
    names = ["a.example.com", "b.example.org", "c.example.com"]
    assert certificate_names.check_names(role, names) == "b.example.org"
    assert "b.example.org" in certificate_names.refusal(
        role, common_name="a.example.com", dns_names=names
    )


def test_every_name_field_the_spec_shows_on_a_role_is_one_the_policy_reads(secrets_spec):
    section = _section(secrets_spec, "### Certificate engine role (read)")
    shown = [f for f in _ticked(section) if f.startswith("allow")]
    assert shown, "the role's field list moved"
    assert set(shown) <= set(certificate_names.ROLE_NAME_FIELDS)
    booleans = _ticked(section.split("(booleans)", 1)[0])
    assert set(booleans) <= set(certificate_names.ROLE_FLAG_DEFAULTS)


class _ReadLog(dict):
    """A role that notes each field the policy asks it for."""

    def __init__(self, fields: dict[str, Any]) -> None:
        super().__init__(fields)
        self.asked: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)


def test_the_policy_reads_exactly_the_role_fields_it_declares():
    # A role that lets every check run to its end, and a request touching every kind of name.
    role = _ReadLog(
        {
            "allowed_domains": ["nomatch.test"],
            "cn_validations": ["hostname", "email"],
            "allowed_other_sans": ["1.2.3;UTF8:*"],
            "allowed_uri_sans": ["*"],
            "allowed_user_ids": ["*"],
            "allowed_serial_numbers": ["*"],
            "allow_subdomains": True,
            "allow_localhost": True,
        }
    )
    certificate_names.refusal(
        role,
        common_name="localhost",
        dns_names=["*.localhost"],
        emails=["x@localhost"],
        ip_sans=["10.0.0.1"],
        uri_sans=["spiffe://a"],
        other_sans=[("1.2.3", "v")],
        user_ids=["u"],
        subject_serial="s",
    )
    certificate_names.check_names(role, ["www.other.test"])
    certificate_names.refusal(role)  # no common name: is one required?
    assert role.asked == set(certificate_names.ROLE_NAME_FIELDS)


def _literals_and_names() -> Iterator[tuple[str, str, str]]:
    """(file, kind, value) for every string constant and every assigned top-level name."""
    root = Path(toolkit.__file__).parent.parent
    for folder in ("toolkit", "widgets"):
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            where = str(path.relative_to(root))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    yield where, "literal", node.value.lower()
            for node in tree.body:
                targets = node.targets if isinstance(node, ast.Assign) else []
                if isinstance(node, ast.AnnAssign):
                    targets = [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        yield where, "name", target.id
            for node in tree.body:
                if isinstance(node, ast.FunctionDef):
                    yield where, "function", node.name


def test_each_fact_of_the_two_apis_is_written_in_one_place() -> None:
    # The credential and namespace headers, the lease-id layout, the serial number's
    # text, the system's lease ttl and the names alias: one copy each, so the client
    # and the sandbox cannot drift apart.
    headers = {h.lower() for h in (*TOKEN_HEADERS, *NAMESPACE_HEADERS)}
    owners = {("literal", h): {"toolkit/_spec/headers.py"} for h in headers} | {
        ("name", "SYSTEM_MAX_TTL"): {"toolkit/sandbox/secrets/mounts.py"},
        ("name", "Names"): {"toolkit/secrets/_base.py"},
        ("name", "PURPOSES"): {"toolkit/_spec/keymgmt.py"},
        ("function", "split_lease_id"): {"toolkit/_spec/leases.py"},
        ("function", "format_serial"): {"toolkit/_x509.py"},
        ("name", "MAX_PAGE_SIZE"): {"toolkit/_spec/jsonapi.py"},
        ("name", "DEFAULT_PAGE_SIZE"): {"toolkit/_spec/jsonapi.py"},
        ("name", "MEDIA_TYPE"): {
            "toolkit/_spec/jsonapi.py",
            "toolkit/sandbox/platform/http/_base.py",
        },
        ("literal", "application/vnd.api+json"): {"toolkit/_spec/jsonapi.py"},
        ("name", "SERVER_VERSION"): {"toolkit/sandbox/secrets/seal.py"},
    }
    found: dict[tuple[str, str], set[str]] = {}
    for where, kind, value in _literals_and_names():
        if (kind, value) in owners:
            found.setdefault((kind, value), set()).add(where)
    assert found == owners
