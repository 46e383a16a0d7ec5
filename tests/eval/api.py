"""The few REST calls the harness makes, each checked, so a refusal stops the run loudly.

The harness is a black-box client: everything it knows about the palace it learnt from these
responses. A non-2xx answer raises `ApiError` carrying the daemon's error body, because a
benchmark that silently skips a failed write or search would report a score for a different
dataset.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx


class ApiError(RuntimeError):
    """The daemon refused a request; the message has the method, path, status and body."""

    def __init__(self, response: httpx.Response) -> None:
        request = response.request
        super().__init__(
            f"{request.method} {request.url.path} -> {response.status_code}: {response.text[:2000]}"
        )
        self.status_code = response.status_code
        try:
            self.body: Any = response.json()
        except ValueError:
            self.body = response.text


def _checked(response: httpx.Response) -> Any:
    if response.status_code >= 300:
        raise ApiError(response)
    return response.json()


def segment(name: str) -> str:
    """A wing or room name as one URL path segment."""
    return quote(name, safe="")


def create_drawer(
    client: httpx.Client,
    wing: str,
    room: str,
    content: str,
    filing: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """File a drawer; `filing` adds the route's optional fields (name, source, valid_from)."""
    path = f"/api/wings/{segment(wing)}/rooms/{segment(room)}/drawers"
    return _checked(client.post(path, json={**(filing or {}), "content": content}))


def attach_embedding(
    client: httpx.Client, drawer_id: str, profile: str, vector: list[float]
) -> dict[str, Any]:
    body = {"profile": profile, "embedding": vector}
    return _checked(client.put(f"/api/drawers/{drawer_id}/embedding", json=body))


def mention(client: httpx.Client, drawer_id: str, entity: str, kind: str) -> dict[str, Any]:
    body = {"name": entity, "kind": kind}
    return _checked(client.post(f"/api/drawers/{drawer_id}/mentions", json=body))


def supersede(client: httpx.Client, drawer_id: str, content: str) -> dict[str, Any]:
    return _checked(client.post(f"/api/drawers/{drawer_id}/supersede", json={"content": content}))


def search(client: httpx.Client, body: dict[str, Any]) -> tuple[list[dict[str, Any]], float]:
    """POST /api/search; the hits and the request's wall time in milliseconds."""
    started = time.perf_counter()
    response = client.post("/api/search", json=body)
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    payload = _checked(response)
    return hits_of(payload), elapsed_ms


def hits_of(payload: Any) -> list[dict[str, Any]]:
    """The hit list of a search response: `{"results": [...]}` (a bare list is accepted too)."""
    if isinstance(payload, list):
        return payload
    if isinstance(payload, dict):
        for key in ("results", "hits"):
            if isinstance(payload.get(key), list):
                return payload[key]
    raise ValueError(f"a search response without a results list: {str(payload)[:500]}")


def jobs(client: httpx.Client, kind: str) -> list[dict[str, Any]]:
    return _checked(client.get("/api/jobs", params={"kind": kind, "limit": 200}))["jobs"]


def status(client: httpx.Client) -> dict[str, Any]:
    return _checked(client.get("/api/status"))
