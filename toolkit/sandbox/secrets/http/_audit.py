"""The entries an exchange writes to the audit devices, in OpenBao's file format.

One ``request`` entry and one ``response`` entry an exchange, sharing the request's
id: the caller's token (hashed) and what it carries, the operation, the path and its
mount, the address, the answer's data (values hashed), the error. A login's response
entry names the issued token in ``auth``, as OpenBao's does, so that the audit-log
reader sees the login.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

if TYPE_CHECKING:
    from ..audit import AuditDevice
    from ..models import SecretsService
    from ..mounts import Mount
    from ..tokens import Token

__all__ = ["log_exchange"]


def _operation(method: str, is_list: bool, capability: str) -> str:
    """The logged operation: a write the ACL check resolved to ``create`` or ``update``
    is logged as resolved, as OpenBao logs it."""
    if is_list:
        return "list"
    if method in ("POST", "PUT") and capability in ("create", "update"):
        return capability
    return {"GET": "read", "HEAD": "read", "DELETE": "delete", "PATCH": "patch"}.get(
        method, "update"
    )


def _policy_results(seen: dict[str, Any], namespace_id: str) -> dict[str, Any]:
    """``policy_results`` as OpenBao logs it: ``allowed``, and on an allowed request the
    policies of the deciding pattern that grant the capability."""
    granting = seen.get("granting")
    if granting is None:
        return {"allowed": False}
    return {
        "allowed": True,
        "granting_policies": [
            {"name": name, "namespace_id": namespace_id, "type": "acl"} for name in granting
        ],
    }


def _mount_of(service: SecretsService, path: str, mount: Mount | None) -> tuple[str, str, str]:
    """(mount point, mount type, accessor) of a request path."""
    if mount is not None:
        return mount.path, mount.type, mount.accessor
    head, _, rest = path.partition("/")
    if head == "auth":
        found = service.mounts.auth.get(rest.split("/", 1)[0] + "/")
        if found is not None:
            return f"auth/{found.path}", found.type, found.accessor
    if head in ("sys", "identity", "cubbyhole"):
        kind = {"sys": "system"}.get(head, head)
        return f"{head}/", kind, ""
    found = service.mounts.match(path)
    return (found.path, found.type, found.accessor) if found is not None else ("", "", "")


def _token_auth(device: AuditDevice, service: SecretsService, token: Token) -> dict[str, Any]:
    identity = service.identity.policies_of(token.entity_id) if token.entity_id else []
    # As OpenBao: identity policies, metadata and the entity only when there are any.
    return {
        "client_token": device.hash(token.id),
        "accessor": device.hash(token.accessor) if token.accessor else "",
        "display_name": token.display_name,
        "policies": sorted({*token.policies, *identity}),
        "token_policies": list(token.policies),
        **({"identity_policies": identity} if identity else {}),
        **({"metadata": dict(token.meta)} if token.meta else {}),
        **({"entity_id": token.entity_id} if token.entity_id else {}),
        "token_type": token.type,
        "token_ttl": token.ttl,
        "token_issue_time": token.creation_time.isoformat(),
    }


def _issued_auth(device: AuditDevice, auth: dict[str, Any]) -> dict[str, Any]:
    """A login answer's ``auth`` as the log shows it: the token and accessor hashed."""
    return {
        "client_token": device.hash(str(auth.get("client_token", ""))),
        "accessor": device.hash(str(auth.get("accessor", ""))) if auth.get("accessor") else "",
        "display_name": auth.get("display_name", ""),
        "policies": auth.get("policies"),
        "token_policies": auth.get("token_policies"),
        "metadata": auth.get("metadata"),
        "entity_id": auth.get("entity_id", ""),
        "token_type": auth.get("token_type", ""),
        "token_ttl": auth.get("lease_duration", 0),
    }


def _answer_of(response: Response) -> Any:
    body = getattr(response, "body", b"")
    if not body or "json" not in (response.media_type or ""):
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def log_exchange(
    service: SecretsService,
    request: Request,
    seen: dict[str, Any],
    response: Response,
    mount: Mount | None,
) -> None:
    """Write the exchange's request and response entries to every audit device."""
    path = str(seen.get("path", ""))
    token: Token | None = seen.get("token")
    answer = _answer_of(response)
    errors = answer.get("errors") if isinstance(answer, dict) else None
    error = "; ".join(str(e) for e in errors) if errors else ""
    mount_point, mount_type, accessor = _mount_of(service, path, mount)
    namespace = str(seen.get("namespace", ""))
    child = service.namespaces.get(namespace) if namespace else None
    namespace_id = child.id if child is not None else "root"
    request_id = str(uuid.uuid4())
    client = request.client
    issued = answer.get("auth") if isinstance(answer, dict) else None
    login = token is None and isinstance(issued, dict) and response.status_code < 400

    def entry(device: AuditDevice, kind: str) -> dict[str, Any]:
        auth: dict[str, Any] = {}
        if token is not None:
            auth = _token_auth(device, service, token)
            auth["policy_results"] = _policy_results(seen, namespace_id)
        if kind == "response" and login:
            auth = _issued_auth(device, issued)  # type: ignore[arg-type]
        document: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "type": kind,
            "auth": auth,
            "request": {
                "id": request_id,
                "operation": _operation(
                    request.method.upper(), bool(seen.get("list")), str(seen.get("capability"))
                ),
                "mount_point": mount_point,
                "mount_type": mount_type,
                "mount_accessor": accessor,
                "client_token": device.hash(token.id) if token is not None else "",
                "client_token_accessor": (
                    device.hash(token.accessor) if token is not None and token.accessor else ""
                ),
                "namespace": {"id": namespace_id, **({"path": namespace} if namespace else {})},
                "path": path,
                "data": device.hash_values(seen.get("body")) or None,
                "remote_address": client.host if client is not None else "",
                "remote_port": client.port if client is not None else 0,
            },
            **({"error": error} if error else {}),
        }
        if kind == "response":
            data = answer.get("data") if isinstance(answer, dict) else None
            document["response"] = {
                "mount_point": mount_point,
                "mount_type": mount_type,
                "mount_accessor": accessor,
                "data": device.hash_values(data) if data is not None else None,
                **({"auth": _issued_auth(device, issued)} if login else {}),  # type: ignore[arg-type]
            }
        return document

    service.audit.log(lambda device: entry(device, "request"))
    service.audit.log(lambda device: entry(device, "response"))
