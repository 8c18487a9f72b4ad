"""Demo data of the directory (AD) engine at ``ad/``: deterministic, anchored to the clock's start.

A directory of service accounts (the bind account, three role accounts,
six library accounts and two spares), a configuration generating passwords
from the ``strong-32`` password policy, three roles, and three library sets:
``dba-oncall`` with one account lent to the library user's demo token,
``release-engineers`` with one lent to the operator's, and ``break-glass``
with check-in enforcement off and nothing lent. Lease ids and times are fixed:
check-outs were made before the clock's start and expire on a two-minute grid.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from ...backends import demo_at
from .state import ADConfig, ADEngine, ADRole

if TYPE_CHECKING:
    from ...host import EngineHost

__all__ = ["DEMO_ACCOUNTS", "DEMO_LIBRARY", "DEMO_ROLES", "load_demo"]

_HOUR = 3600
_DAY = 24 * _HOUR
_OU = "OU=Service Accounts,DC=corp,DC=example"
BIND_DN = f"CN=vault-ad,{_OU}"

# (account name, distinguished name): the directory the engine binds to.
DEMO_ACCOUNTS: tuple[tuple[str, str], ...] = (
    ("vault-ad", BIND_DN),
    *(
        (f"{name}@corp.example", f"CN={name},{_OU}")
        for name in (
            "svc-backup",
            "svc-reporting",
            "svc-webapp",
            "dba-admin-01",
            "dba-admin-02",
            "dba-admin-03",
            "release-01",
            "release-02",
            "breakglass-admin",
            "svc-spare-01",
            "svc-spare-02",
        )
    ),
)

# role: (account, ttl, last rotation this long before the clock's start, or None)
DEMO_ROLES: dict[str, tuple[str, int, int | None]] = {
    "backup": ("svc-backup@corp.example", _DAY, 3 * _HOUR),
    "reporting": ("svc-reporting@corp.example", 7 * _DAY, 2 * _DAY),
    "webapp": ("svc-webapp@corp.example", _HOUR, None),
}

# set: (accounts, ttl, max_ttl, check-in enforcement off)
DEMO_LIBRARY: dict[str, tuple[tuple[str, ...], int, int, bool]] = {
    "dba-oncall": (
        ("dba-admin-01@corp.example", "dba-admin-02@corp.example", "dba-admin-03@corp.example"),
        8 * _HOUR,
        _DAY,
        False,
    ),
    "release-engineers": (
        ("release-01@corp.example", "release-02@corp.example"),
        4 * _HOUR,
        12 * _HOUR,
        False,
    ),
    "break-glass": (("breakglass-admin@corp.example",), _HOUR, 2 * _HOUR, True),
}

# (set, account, borrowing demo token, minutes before the start, ttl in seconds, lease suffix)
_LENT: tuple[tuple[str, str, str, int, int, str], ...] = (
    (
        "dba-oncall",
        "dba-admin-01@corp.example",
        "demo-library-user-token",
        90,
        8 * _HOUR,
        "Qm4RtZ8wLk2Pd7Vx9HcN3sYb",
    ),
    (
        "release-engineers",
        "release-02@corp.example",
        "demo-operator-token",
        30,
        4 * _HOUR,
        "Hf6Tn1JqW8eRz3Ku5MaX0vGp",
    ),
)


@demo_at("ad", ADEngine)
def load_demo(service: EngineHost, engine: ADEngine) -> None:
    """Fill the directory engine at ``ad/`` with the demo set (tokens must exist already)."""
    start = service.clock.start.replace(microsecond=0)
    for name, dn in DEMO_ACCOUNTS:
        engine.add_account(name, dn, password_last_set=start - timedelta(days=120))
    engine.config = ADConfig(
        binddn=BIND_DN,
        bindpass="demo-bind-password",
        url="ldaps://dc1.corp.example,ldaps://dc2.corp.example",
        userdn=_OU,
        upndomain="corp.example",
        ttl=_DAY,
        max_ttl=30 * _DAY,
        password_policy="strong-32",
    )
    for role_name, (account, ttl, rotated_ago) in DEMO_ROLES.items():
        role = ADRole(role_name, account, ttl)
        if rotated_ago is not None:
            rotated = start - timedelta(seconds=rotated_ago)
            entry = engine.entries[_dn(account)]
            role.current_password = engine.generate_password()
            role.last_password = engine.generate_password()
            role.last_service_rotation = rotated
            entry.password, entry.password_last_set = role.current_password, rotated
        engine.roles[role_name] = role
    for set_name, (accounts, ttl, max_ttl, open_check_in) in DEMO_LIBRARY.items():
        engine.library.write_set(
            set_name,
            service_account_names=accounts,
            ttl=ttl,
            max_ttl=max_ttl,
            disable_check_in_enforcement=open_check_in,
        )
        for account in accounts:
            engine.entries[_dn(account)].password_last_set = start - timedelta(days=1)
    for set_name, account, token_id, minutes_ago, ttl, suffix in _LENT:
        token = service.tokens.get(token_id)
        if token is None:
            continue
        engine.library.lend(
            set_name,
            account,
            token,
            ttl=ttl,
            max_ttl=DEMO_LIBRARY[set_name][2],
            issue_time=start - timedelta(minutes=minutes_ago),
            suffix=suffix,
        )


def _dn(account: str) -> str:
    return f"CN={account.split('@')[0]},{_OU}".lower()
