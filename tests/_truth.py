"""The end-to-end truth harness: a world of principals built on a secrets server, every
principal logged in for real, and each answer of ``bao.access`` held to what the server
itself says for that principal's token.

    plan = draw(seed=1, size="small")              # hypothesis, from the seed
    world = build(address, root_token, plan, namespace="truth-1/")
    assert world.disagreements() == []

Reusable against any server at ``address`` that serves the API of OpenBao (the
sandbox too, once it serves identity and token roles): plain HTTP over httpx, the
namespace in ``X-Vault-Namespace``. What is compared, for each login:

- ``sys/capabilities`` with the token, on every drawn path, against ``who_can`` (the
  principal named or not, never "depends on ...") and ``explain`` (rank 1 allows or
  says "denied") for every capability; an error answer (the server refusing the
  token's ACL, e.g. a forbidden template value) means the token holds nothing, and the
  toolkit must say "holds nothing" in ``can``;
- on paths that need ``sudo``, the request itself, sent with the token: 403 is "not
  allowed", anything else is "allowed";
- token roles whose tokens depend on their caller, created by callers of known
  policies, against what the toolkit says for that caller; a caller the role refuses
  (it holds a disallowed policy) against the toolkit's "refused".
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from toolkit._spec.sudo import needs_sudo
from toolkit.secrets import SecretsClient

CAPS = ("create", "read", "update", "patch", "delete", "list", "sudo")
POLICY_CAPS = [*CAPS, "deny"]
SEGMENTS = ["a", "b", "ab", "x-1"]
# Metadata values: some hold a character OpenBao refuses in a template's value.
TEAMS = ["blue", "green", "a/b", "x*y", "p+q"]
# {UP1}, {UP2}, {APPROLE}: mount accessors; {GCID}, {GPID}: group ids; known once built.
TEMPLATES = [
    "{{identity.entity.id}}",
    "{{identity.entity.name}}",
    "{{identity.entity.metadata.team}}",
    "{{identity.entity.metadata.region}}",
    "{{identity.entity.metadata.nope}}",
    "{{identity.entity.aliases.<UP1>.name}}",
    "{{identity.entity.aliases.<UP2>.name}}",
    "{{identity.entity.aliases.<APPROLE>.name}}",
    "{{identity.entity.aliases.<UP1>.id}}",
    "{{identity.groups.names.<GC>.id}}",
    "{{identity.groups.names.<GP>.metadata.tier}}",
    "{{identity.groups.ids.<GCID>.name}}",
    "{{identity.groups.ids.<GPID>.name}}",
]
# Patterns on paths that need sudo, so that rules there are drawn too.
SUDO_PATTERNS = [
    "auth/token/accessors",
    "auth/token/accessors*",
    "auth/token/*",
    "sys/leases/lookup/*",
    "sys/leases/+/+/*",
    "sys/auth/+/tune",
    "sys/*",
]
# Paths where the ``default`` policy shows (whether a token holds it), and where the
# sandbox's and OpenBao's ``default`` differed (``sys/renew``, ``sys/wrapping``, entity reads).
DEFAULT_PATHS = [
    "auth/token/lookup-self",
    "sys/capabilities-self",
    "cubbyhole/x",
    "sys/tools/hash",
    "sys/renew",
    "sys/wrapping/wrap",
    "identity/entity/id/<E1ID>",
    "identity/entity/name/<E2NAME>",
]
# (capability, path): requests on sudo paths, sent with each token.
SUDO_ASKS = [
    ("list", "auth/token/accessors"),
    ("list", "sys/leases/lookup/x"),
    ("read", "sys/auth/<UP1MOUNT>/tune"),
]
# The roles whose tokens hold their caller's policies (no allowed list).
CALLER_ROLES = ("role_disallowed", "role_disallowed_default", "role_open", "role_open_no_default")
SIZES = {"small": (6, 4, 14), "large": (14, 6, 40)}  # policies, rules a policy, paths
# Who holds which policies: the slots the drawn policies are handed to.
SLOTS = (
    "user1",
    "user2",
    "user3",
    "user4",
    "entity1",
    "entity2",
    "entity3",
    "entity4",
    "group_child",
    "group_parent",
    "group_other",
    "approle1",
    "approle2",
    "role_allowed",
    "role_glob",
    "caller1",
    "caller2",
)


@dataclass
class Plan:
    """A world drawn from a seed: policies, who holds them, the paths to ask."""

    seed: int
    policies: dict[str, list[tuple[str, list[str]]]]
    holders: dict[str, list[str]]
    teams: tuple[str, str, str]
    role_settings: dict[str, Any]
    paths: list[str]


def _segment() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(SEGMENTS),
        st.just("+"),
        st.sampled_from(TEMPLATES),
        st.builds(lambda s, t: s + "-" + t, st.sampled_from(SEGMENTS), st.sampled_from(TEMPLATES)),
    )


def _pattern() -> st.SearchStrategy[str]:
    def join(parts: list[str], tail: str) -> str:
        return "/".join(parts) + {"": "", "glob": "*", "slash-glob": "/*"}[tail]

    drawn = st.builds(
        join,
        st.lists(_segment(), min_size=1, max_size=4),
        st.sampled_from(["", "glob", "slash-glob"]),
    ).filter(lambda p: "+*" not in p)
    return st.one_of(drawn, drawn, drawn, st.sampled_from(SUDO_PATTERNS))


@st.composite
def _plans(draw: Any, seed: int, size: str) -> Plan:
    count, rules, npaths = SIZES[size]
    names = [f"p{i}" for i in range(count)]
    policies = {
        name: draw(
            st.lists(
                st.tuples(
                    _pattern(), st.lists(st.sampled_from(POLICY_CAPS), min_size=1, max_size=4)
                ),
                min_size=1,
                max_size=rules,
            )
        )
        for name in names
    }
    holders = {
        slot: draw(st.lists(st.sampled_from(names), max_size=3, unique=True)) for slot in SLOTS
    }
    teams = (
        draw(st.sampled_from(TEAMS)),
        draw(st.sampled_from(TEAMS)),
        draw(st.sampled_from(TEAMS)),
    )
    role_settings = {
        "disallowed": draw(st.sampled_from(names)),
    }
    values = ["<E1NAME>", "<E2NAME>", "<E1ID>", "blue", "green", "eu", "user1", "user3", "<GCID>"]
    values += ["<GC>", "<GPID>", "<APPROLE1ID>", "<ALIAS1ID>"]
    part = st.one_of(st.sampled_from(SEGMENTS), st.sampled_from(values))
    joined = st.builds(
        lambda parts, mid, slash: "/".join(parts) + mid + ("/" if slash else ""),
        st.lists(part, min_size=1, max_size=5),
        st.sampled_from(["", "-1", "-blue"]),
        st.booleans(),
    )
    paths = draw(st.lists(joined, min_size=npaths, max_size=npaths, unique=True))
    return Plan(seed, policies, holders, teams, role_settings, paths)


def draw(seed: int, size: str = "small") -> Plan:
    """The plan hypothesis draws from ``seed`` (the same plan every time)."""
    found: list[Plan] = []

    @settings(
        max_examples=1,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @hypothesis_seed(seed)
    @given(st.data())
    def one(data: st.DataObject) -> None:
        found.append(data.draw(_plans(seed, size)))

    one()
    return found[-1]


@dataclass
class Login:
    """A token the server issued, and the principal the toolkit should answer for."""

    principal: str
    token: str
    caller: tuple[str, ...] | None = None  # the caller's policies, for a token role
    label: str = ""


@dataclass
class World:
    address: str
    root: str
    namespace: str | None
    plan: Plan
    values: dict[str, str]
    logins: list[Login] = field(default_factory=list)
    # Paths made from the drawn patterns, their templates filled with the world's values.
    derived: list[str] = field(default_factory=list)
    refused: list[tuple[str, tuple[str, ...], str]] = field(default_factory=list)
    # What the comparison covered: answers compared, granted by the server, tokens whose
    # ACL the server refused, sudo requests sent and passed.
    tally: dict[str, int] = field(default_factory=dict)
    _paths: list[str] | None = None

    def http(self, token: str | None = None) -> httpx.Client:
        headers = {"X-Vault-Token": token or self.root}
        if self.namespace:
            headers["X-Vault-Namespace"] = self.namespace
        return httpx.Client(base_url=f"{self.address}/v1", headers=headers, timeout=30)

    def fill(self, text: str) -> str:
        for key, value in self.values.items():
            text = text.replace(key, value)
        return text

    @property
    def paths(self) -> list[str]:
        if self._paths is None:
            found = [self.fill(p) for p in [*self.plan.paths, *DEFAULT_PATHS]] + self.derived
            self._paths = [p for p in dict.fromkeys(found) if not needs_sudo(p)]
        return self._paths

    @property
    def sudo_asks(self) -> list[tuple[str, str]]:
        return [(c, self.fill(p)) for c, p in SUDO_ASKS]

    def disagreements(self) -> list[str]:
        """Every answer of the toolkit that differs from the server's, one line each."""
        return list(_compare(self))


def _ok(reply: httpx.Response) -> dict[str, Any]:
    assert reply.status_code in (200, 204), f"{reply.request.url}: {reply.status_code} {reply.text}"
    return reply.json() if reply.content else {}


def _policy_text(world: World, rules: list[tuple[str, list[str]]]) -> str:
    return "\n".join(
        f'path "{world.fill(pattern)}" {{ capabilities = {list(dict.fromkeys(caps))!r} }}'.replace(
            "'", '"'
        )
        for pattern, caps in rules
    )


# Where a server cannot mount login methods anywhere (the sandbox serves each at its
# fixed path): the mounts used instead, and no second userpass mount (user3 is left out).
FIXED_MOUNTS = {"up1": "userpass", "approle": "approle"}


def build(
    address: str,
    root: str,
    plan: Plan,
    namespace: str | None = None,
    mounts: dict[str, str] | None = None,
) -> World:
    """Configure ``plan`` on the server (in ``namespace`` when given) and log every
    principal in; the world holds the tokens and what each should be compared with.

    ``mounts`` (e.g. :data:`FIXED_MOUNTS`) names login mounts that already exist, by
    their part in the world (``up1``, ``up2``, ``approle``), instead of enabling three
    of them; without ``up2``, user3 (entity 1's alias on a second userpass mount) is
    not built and that mount's templates resolve to no alias."""
    tag = uuid.uuid4().hex[:6]
    world = World(address, root, namespace, plan, {})
    v = world.values
    with world.http() as http:
        where: dict[str, str] = {}
        for mount, kind in (("up1", "userpass"), ("up2", "userpass"), ("approle", "approle")):
            if mounts is None:
                where[mount] = f"{mount}-{tag}"
                _ok(http.post(f"sys/auth/{where[mount]}", json={"type": kind}))
            elif mount in mounts:
                where[mount] = mounts[mount]
        auth = _ok(http.get("sys/auth"))["data"]
        v["<UP1MOUNT>"] = where["up1"]
        v["<UP1>"] = auth[f"{where['up1']}/"]["accessor"]
        # A mount that is not there: an accessor no alias has.
        v["<UP2>"] = auth[f"{where['up2']}/"]["accessor"] if "up2" in where else "auth_none"
        v["<APPROLE>"] = auth[f"{where['approle']}/"]["accessor"]
        token_accessor = auth["token/"]["accessor"]
        v["<GC>"], v["<GP>"] = f"gc-{tag}", f"gp-{tag}"
        # Names first (templates and paths use them), then the policies that name them.
        entities = {}
        for i, (name, team) in enumerate(zip(("e1", "e2", "e3"), plan.teams, strict=True), start=1):
            body = {"name": f"{name}-{tag}", "metadata": {"team": team, "region": "eu"}}
            entities[i] = _ok(http.post("identity/entity", json=body))["data"]["id"]
        entities[4] = _ok(http.post("identity/entity", json={"name": f"e4-{tag}"}))["data"]["id"]
        v["<E1NAME>"], v["<E2NAME>"], v["<E1ID>"] = f"e1-{tag}", f"e2-{tag}", entities[1]
        fills: dict[str, list[str]] = {
            "{{identity.entity.id}}": [entities[i] for i in (1, 2, 3, 4)],
            "{{identity.entity.name}}": [f"e{i}-{tag}" for i in (1, 2, 3, 4)],
            "{{identity.entity.metadata.team}}": list(plan.teams),
            "{{identity.entity.metadata.region}}": ["eu"],
            "{{identity.entity.metadata.nope}}": ["nope"],
            "{{identity.entity.aliases.<UP1>.name}}": ["user1", "user2", "user4"],
            "{{identity.entity.aliases.<UP2>.name}}": ["user3"],
        }
        gp = _ok(
            http.post("identity/group", json={"name": v["<GP>"], "metadata": {"tier": "gold"}})
        )
        v["<GPID>"] = gp["data"]["id"]
        gc = _ok(
            http.post(
                "identity/group", json={"name": v["<GC>"], "member_entity_ids": [entities[1]]}
            )
        )
        v["<GCID>"] = gc["data"]["id"]
        go = _ok(
            http.post(
                "identity/group",
                json={"name": f"go-{tag}", "member_entity_ids": [entities[2], entities[3]]},
            )
        )
        for name, rules in plan.policies.items():
            _ok(http.put(f"sys/policies/acl/{name}", json={"policy": _policy_text(world, rules)}))
        _ok(
            http.put(
                "sys/policies/acl/caller-base",
                json={"policy": 'path "auth/token/create/*" { capabilities = ["update"] }'},
            )
        )
        held = {slot: list(names) for slot, names in plan.holders.items()}
        # Every world has holders of the sudo paths' capabilities with and without sudo.
        for name, extra in (("sudo-less", []), ("sudo-full", ["sudo"])):
            rules = [
                ("auth/token/accessors", ["list", *extra]),
                ("sys/leases/lookup/*", ["list", *extra]),
                ("sys/auth/+/tune", ["read", *extra]),
            ]
            _ok(http.put(f"sys/policies/acl/{name}", json={"policy": _policy_text(world, rules)}))
        held["user4"].append("sudo-less")
        held["approle2"].append("sudo-full")
        held["role_allowed"] = [*(held["role_allowed"] or ["p0"]), "sudo-less"]
        held["caller2"].append("sudo-full")
        _ok(
            http.post(
                f"identity/group/id/{v['<GPID>']}",
                json={
                    "member_group_ids": [v["<GCID>"]],
                    "policies": held["group_parent"],
                    "metadata": {"tier": "gold"},
                },
            )
        )
        _ok(
            http.post(
                f"identity/group/id/{v['<GCID>']}",
                json={"policies": held["group_child"], "member_entity_ids": [entities[1]]},
            )
        )
        _ok(
            http.post(
                f"identity/group/id/{go['data']['id']}",
                json={
                    "policies": held["group_other"],
                    "member_entity_ids": [entities[2], entities[3]],
                },
            )
        )
        for i in (1, 2, 3, 4):
            _ok(
                http.post(
                    f"identity/entity/id/{entities[i]}", json={"policies": held[f"entity{i}"]}
                )
            )
        # userpass: user1 (up1) and user3 (up2) are aliases of entity 1, user2 of entity 2;
        # user4 has no entity until it logs in.
        users = {
            "user1": ("up1", 1),
            "user2": ("up1", 2),
            "user3": ("up2", 1),
            "user4": ("up1", None),
        }
        users = {user: (m, e) for user, (m, e) in users.items() if m in where}
        for user, (mount, entity) in users.items():
            _ok(
                http.post(
                    f"auth/{where[mount]}/users/{user}",
                    json={"password": "pw-" + tag, "token_policies": held[user]},
                )
            )
            if entity is not None:
                alias = _ok(
                    http.post(
                        "identity/entity-alias",
                        json={
                            "name": user,
                            "canonical_id": entities[entity],
                            "mount_accessor": v[f"<{mount.upper()}>"],
                        },
                    )
                )
                if user == "user1":
                    v["<ALIAS1ID>"] = alias["data"]["id"]
                    fills["{{identity.entity.aliases.<UP1>.id}}"] = [alias["data"]["id"]]
        # AppRole: approle1's role id is an alias of entity 3; approle2 has none yet.
        for role in ("approle1", "approle2", "approle3"):
            policies = held["approle2" if role == "approle3" else role]
            _ok(
                http.post(f"auth/{where['approle']}/role/{role}", json={"token_policies": policies})
            )
        role_id = _ok(http.get(f"auth/{where['approle']}/role/approle1/role-id"))["data"]["role_id"]
        v["<APPROLE1ID>"] = role_id
        fills["{{identity.entity.aliases.<APPROLE>.name}}"] = [role_id]
        fills["{{identity.groups.names.<GC>.id}}"] = [v["<GCID>"]]
        fills["{{identity.groups.names.<GP>.metadata.tier}}"] = ["gold"]
        fills["{{identity.groups.ids.<GCID>.name}}"] = [v["<GC>"]]
        fills["{{identity.groups.ids.<GPID>.name}}"] = [v["<GP>"]]
        world.derived = _derived_paths(plan, fills)
        _ok(
            http.post(
                "identity/entity-alias",
                json={
                    "name": role_id,
                    "canonical_id": entities[3],
                    "mount_accessor": v["<APPROLE>"],
                },
            )
        )
        # Token roles.
        rs = plan.role_settings
        allowed = held["role_allowed"] or ["p0"]
        roles: dict[str, dict[str, Any]] = {
            f"role_allowed{int(no_default)}{int(no)}": {
                "allowed_policies": allowed,
                "token_no_default_policy": no_default,
                "disallowed_policies": ["default"] if no else [],
            }
            for no_default in (False, True)
            for no in (False, True)
        }
        roles["role_glob"] = {"allowed_policies_glob": ["p1*"]}
        roles["role_glob_list"] = {
            "allowed_policies_glob": ["p1*"],
            "allowed_policies": held["role_glob"] or ["p2"],
        }
        roles["role_disallowed"] = {"disallowed_policies": [rs["disallowed"]]}
        roles["role_disallowed_default"] = {"disallowed_policies": ["default"]}
        roles["role_open"] = {}
        roles["role_open_no_default"] = {"token_no_default_policy": True}
        roles["role_orphan"] = {"allowed_policies": allowed, "orphan": True}
        roles["role_alias"] = {
            "allowed_policies": allowed,
            "allowed_entity_aliases": [f"svc-{tag}", "bot-*"],
        }
        for role, body in roles.items():
            _ok(http.post(f"auth/token/roles/{role}-{tag}", json=body))
        _ok(
            http.post(
                "identity/entity-alias",
                json={
                    "name": f"svc-{tag}",
                    "canonical_id": entities[4],
                    "mount_accessor": token_accessor,
                },
            )
        )
        # Logins.
        for user, (mount, _) in users.items():
            token = _ok(
                http.post(f"auth/{where[mount]}/login/{user}", json={"password": "pw-" + tag})
            )
            world.logins.append(
                Login(f"auth/{where[mount]}/users/{user}", token["auth"]["client_token"])
            )
        for role in ("approle1", "approle2"):
            rid = _ok(http.get(f"auth/{where['approle']}/role/{role}/role-id"))["data"]["role_id"]
            sid = _ok(http.post(f"auth/{where['approle']}/role/{role}/secret-id"))["data"][
                "secret_id"
            ]
            login = _ok(
                http.post(f"auth/{where['approle']}/login", json={"role_id": rid, "secret_id": sid})
            )
            world.logins.append(
                Login(f"auth/{where['approle']}/role/{role}", login["auth"]["client_token"])
            )
        callers = [
            ("root", root, ("root",)),
            *(
                (slot, None, tuple(sorted({"caller-base", *held[slot]})))
                for slot in ("caller1", "caller2")
            ),
            ("caller-disallowed", None, tuple(sorted({"caller-base", rs["disallowed"]}))),
            ("caller-default", None, tuple(sorted({"caller-base", "default", *held["caller1"]}))),
        ]
        for label, token, policies in callers:
            if token is None:
                made = _ok(
                    http.post(
                        "auth/token/create",
                        json={
                            "policies": list(policies),
                            "no_default_policy": "default" not in policies,
                        },
                    )
                )
                token = made["auth"]["client_token"]
                # The caller's policies as the server holds them, not as asked.
                looked = _ok(http.post("auth/token/lookup", json={"token": token}))["data"]
                policies = tuple(sorted(looked["policies"]))
            with world.http(token) as as_caller:
                for role in roles:
                    if role == "role_alias" and label != "root":
                        continue
                    if role in CALLER_ROLES and label == "root":
                        continue  # a root caller makes root tokens: nothing to learn
                    reply = as_caller.post(f"auth/token/create/{role}-{tag}", json={})
                    where = f"auth/token/roles/{role}-{tag}"
                    if reply.status_code != 200:
                        world.refused.append((where, policies, reply.text))
                        continue
                    made_token = reply.json()["auth"]["client_token"]
                    world.logins.append(Login(where, made_token, policies, label))
                if label == "root":
                    reply = as_caller.post(
                        f"auth/token/create/role_alias-{tag}", json={"entity_alias": f"svc-{tag}"}
                    )
                    world.logins.append(
                        Login(
                            f"auth/token/roles/role_alias-{tag}/entity_alias/svc-{tag}",
                            _ok(reply)["auth"]["client_token"],
                            policies,
                            label,
                        )
                    )
    return world


def _derived_paths(plan: Plan, fills: dict[str, list[str]]) -> list[str]:
    """A few paths for each drawn pattern: its templates filled with values of the world's
    entities (some of them another entity's), ``+`` with a segment, a glob with a rest,
    and each once more with a trailing slash (LIST)."""
    pick = random.Random(plan.seed)
    found: list[str] = []
    for rules in plan.policies.values():
        for pattern, _ in rules:
            for _ in range(2):
                path = pattern
                for template, values in fills.items():
                    while template in path:
                        path = path.replace(template, pick.choice(values), 1)
                path = "/".join(pick.choice(SEGMENTS) if s == "+" else s for s in path.split("/"))
                if path.endswith("*"):
                    path = path[:-1] + pick.choice(["", "x", "/y/z", "-1"])
                path = path.lstrip("/")
                if path and "{{" not in path:
                    found.append(path + ("/" if pick.random() < 0.3 else ""))
    return found


def _server_view(world: World, login: Login) -> tuple[dict[str, set[str]] | None, dict[str, bool]]:
    """The server's answers for ``login``: capabilities by path (None when it refuses the
    token's ACL) and, for each sudo request, whether it was let through."""
    with world.http() as http:
        reply = http.post("sys/capabilities", json={"token": login.token, "paths": world.paths})
    caps: dict[str, set[str]] | None = None
    if reply.status_code == 200:
        data = reply.json()["data"]
        caps = {p: set(data[p]) for p in world.paths}
    sent: dict[str, bool] = {}
    with world.http(login.token) as http:
        for capability, path in world.sudo_asks:
            method = "LIST" if capability == "list" else "GET"
            sent[path] = http.request(method, path).status_code != 403
    return caps, sent


def _count(world: World, what: str, by: int | bool = 1) -> None:
    world.tally[what] = world.tally.get(what, 0) + int(by)


def _compare(world: World) -> Iterator[str]:
    client = SecretsClient(world.address, world.root, namespace=world.namespace)
    with client:
        model = client.access.load()
        frames: dict[tuple[str, str, tuple[str, ...] | None], Any] = {}

        def who(capability: str, path: str, caller: tuple[str, ...] | None) -> Any:
            key = (capability, path, caller)
            if key not in frames:
                frames[key] = model.who_can(
                    capability, path, caller=list(caller) if caller else None
                )
            return frames[key]

        _count(world, "roles refused", len(world.refused))
        # approle3 never logs in: no entity yet, and the toolkit says so.
        never = [p for p in model.principals if p.principal.endswith("/role/approle3")]
        if not never or "never logged in, no entity yet" not in never[0].depends_on:
            yield f"approle3 (never logged in): the toolkit says {never[0].depends_on if never else 'nothing'!r}"
        ident = [p for p in model.principals if p.principal.endswith("/role/approle1")]
        if not ident or ident[0].identity is None or not hasattr(ident[0].identity, "entity_id"):
            yield "approle1: its entity (the role id's alias) is not known to the toolkit"
        for where, policies, text in world.refused:
            principal = model.principal(where, caller=list(policies))
            if not principal.depends_on.startswith("refused"):
                yield f"{where} called by {policies}: the server refused ({text.strip()}), the toolkit did not"
        for login in world.logins:
            caps, sent = _server_view(world, login)
            _count(world, "logins")
            _count(world, "acl refused", caps is None)
            _count(world, "sudo requests passed", sum(sent.values()) if caps is not None else 0)
            caller = login.caller
            name = f"{login.principal}" + (f" (caller {login.label})" if login.label else "")
            try:
                listed = model.can(login.principal, caller=list(caller) if caller else None)
            except Exception as exc:  # noqa: BLE001 - every failure is a disagreement
                yield f"{name}: can() raised {exc}"
                continue
            nothing = bool(len(listed)) and str(listed["status"].iloc[0]).startswith(
                "holds nothing"
            )
            if caps is None and not nothing:
                yield f"{name}: the server refuses the token's ACL; can() says {listed['status'].tolist()}"
            if caps is not None and nothing:
                yield f"{name}: the server answers; can() says {listed['status'].iloc[0]}"
            for path in world.paths:
                assert not needs_sudo(path), path
                held = caps.get(path, set()) if caps is not None else set()
                for capability in CAPS:
                    server = "root" in held or capability in held
                    _count(world, "answers")
                    _count(world, "granted", server)
                    frame = who(capability, path, caller)
                    if login.principal in frame.index:
                        status = frame.loc[login.principal, "status"]
                        toolkit = status == "granted"
                        if status != "granted":
                            yield f"{name}: who_can({capability!r}, {path!r}) says {status!r}"
                            continue
                    else:
                        toolkit = False
                    if toolkit != server:
                        yield f"{name}: who_can({capability!r}, {path!r}) {toolkit}, server {server} ({sorted(held)})"
                    # explain for every grant and one refusal a path (a frame an answer
                    # costs milliseconds; the refusals rotate through the capabilities).
                    turn = CAPS[(world.paths.index(path) + len(name)) % len(CAPS)]
                    if not server and capability != turn:
                        continue
                    _count(world, "explained")
                    outcome = str(
                        model.explain(
                            login.principal,
                            path,
                            capability,
                            caller=list(caller) if caller else None,
                        )["outcome"].iloc[0]
                    )
                    explained = outcome.startswith("decides") and "denied" not in outcome
                    if explained != server:
                        yield f"{name}: explain({path!r}, {capability!r}) says {outcome!r}, server {server}"
            for capability, path in world.sudo_asks if caps is not None else ():
                frame = who(capability, path, caller)
                toolkit = (
                    login.principal in frame.index
                    and frame.loc[login.principal, "status"] == "granted"
                )
                if toolkit != sent[path]:
                    yield f"{name}: who_can({capability!r}, {path!r}) {toolkit}, the request {'passed' if sent[path] else 'was refused'}"


def server_answers(world: World) -> list[tuple[str, Any]]:
    """What the server itself answers in ``world``, in an order another world built from
    the same plan shares: for each login, its capabilities on each path by index (None
    when the server refuses the token's ACL) and the outcome of each sudo request; then
    the token roles the server refused to each caller. Names carry no tag or id."""
    tag = world.values["<GC>"].removeprefix("gc-")
    found: list[tuple[str, Any]] = []
    for login in world.logins:
        caps, sent = _server_view(world, login)
        name = f"{login.principal.replace(tag, 'TAG')} (caller {login.label or '-'})"
        if caps is None:
            found.append((name, "the server refuses the token's ACL"))
            continue
        found += [(f"{name} on path #{i}", sorted(caps[p])) for i, p in enumerate(world.paths)]
        found += [(f"{name} sends {c} {p}", sent[world.fill(p)]) for c, p in SUDO_ASKS]
    found += [(f"{w.replace(tag, 'TAG')} refuses {p}", True) for w, p, _ in world.refused]
    return found


def answer_differences(reference: World, other: World) -> list[str]:
    """Every server answer on which ``other`` differs from ``reference`` (both built from
    one plan, e.g. on OpenBao and on the sandbox), one line each."""
    ours, theirs = server_answers(reference), server_answers(other)
    if [k for k, _ in ours] != [k for k, _ in theirs]:
        left, right = {k for k, _ in ours}, {k for k, _ in theirs}
        return [f"only on the reference: {k}" for k in sorted(left - right)] + [
            f"only on the other: {k}" for k in sorted(right - left)
        ]
    return [
        f"{key}: {a} on the reference, {b} on the other"
        + (f" ({reference.paths[int(key.rsplit('#', 1)[1])]})" if "#" in key else "")
        for (key, a), (_, b) in zip(ours, theirs, strict=True)
        if a != b
    ]
