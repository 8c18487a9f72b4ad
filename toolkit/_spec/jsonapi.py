"""The platform API's JSON:API conventions (spec 000, "JSON:API documents" and "Paging").

Its media type, and the page sizes of its lists: 20 records a page unless
``page[size]`` asks for more, at most 100. The client asks for the largest page
(fewer requests for the same records); the sandbox serves these sizes.
"""

from __future__ import annotations

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "MEDIA_TYPE"]

MEDIA_TYPE = "application/vnd.api+json"
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
