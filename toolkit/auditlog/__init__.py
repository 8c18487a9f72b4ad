"""The secrets server's file audit log, read at speed with DuckDB's JSON reader.

    from toolkit import auditlog
    log = auditlog.open("/var/log/openbao/audit.log.zst")   # plain, .gz or .zst; or a list
    log.principals_frame()      # requests per principal
    log.last_use_frame()        # last use per token accessor, AppRole role, user, cert role
    log.denied_frame()          # the requests the server refused, kept apart
    usage = auditlog.unused_frame(log, client, days=90)     # joined with the live inventory

The file device writes one JSON object a line: a ``request`` entry when a
request arrives and a ``response`` entry when it is answered. DuckDB reads the
lines in parallel (compressed ones too) and keeps only the fields named here;
nothing is parsed line by line in Python. :meth:`AuditLog.usage_frame` is one pass that
groups every line by principal, mount, address and outcome; the summaries are
read from it, so a log of millions of lines is read once.

What the log cannot say, each view says:

- A token's accessor is HMAC'd by default: it is matched with the live inventory
  by hashing each live accessor through ``sys/audit-hash/<device>`` (``update``
  there; the device names from ``sys/audit``, ``sudo``, unless given). Without
  those, :func:`unused_frame` says so in its ``coverage`` instead of calling
  every token unused; the frame's coverage record names what was refused.
- An AppRole login logs its secret id only as an HMAC of the value, never with
  the secret id's accessor: a secret id's own use cannot be matched. The
  last-use view says so on every AppRole row.
- "Never used" means never since the log begins (:attr:`AuditLog.span`'s ``first_time``),
  and it is said only of a log read whole: every line an audit entry with a time, every
  compressed file whole to its end. Each line that is not, each time that does not
  parse and each compressed file cut short is a gap in every frame's coverage record
  (with the count), and the rows it could hide say so instead.
- Every frame says the period the log covers (``attrs["log"]``: its first and last
  time, lines, and what could not be read).
- A file with no audit entry at all (another program's log, an empty file) is refused,
  naming it; so is anything but a regular file (a device, a FIFO, a folder), before a
  byte is read from it.
"""

from __future__ import annotations

from .log import HMAC_PREFIX as HMAC_PREFIX
from .log import NOT_SEEN as NOT_SEEN
from .log import SECRET_ID_CAVEAT, AuditLog, open
from .log import LogSpan as LogSpan
from .unused import audit_devices as audit_devices
from .unused import audit_hashes, unused_frame

__all__ = [
    "AuditLog",
    "SECRET_ID_CAVEAT",
    "audit_hashes",
    "open",
    "unused_frame",
]
