"""What both service clients share: building the HTTP layer from settings, and closing it."""

from __future__ import annotations

from typing import Any, Self

from ._config import Settings
from ._http import HTTPLayer, RetryPolicy
from ._http.redirects import NO_REDIRECTS, RedirectRule
from ._masking import Sensitive

__all__ = ["ServiceClient"]


class ServiceClient:
    """A connection to one service; subclasses add one attribute per API area."""

    def __init__(
        self,
        settings: Settings,
        api_prefix: str,
        headers: dict[str, str | Sensitive],
        *,
        timeout: float,
        fan_out_timeout: float,
        max_concurrency: int,
        retry: RetryPolicy | None,
        connector: Any,
        redirects: RedirectRule = NO_REDIRECTS,
        token_headers: tuple[str, ...] = (),
    ) -> None:
        self.address = settings.address.rstrip("/")
        self.http = HTTPLayer(
            settings.address,
            api_prefix,
            headers=headers,
            timeout=timeout,
            fan_out_timeout=fan_out_timeout,
            verify=settings.verify,
            ca_file=settings.ca_file,
            client_cert=settings.client_cert,
            client_key=settings.client_key,
            server_name=settings.server_name,
            retry=retry,
            max_concurrency=max_concurrency,
            redirects=redirects,
            token_headers=token_headers,
            connector=connector,
        )

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.address}>"
