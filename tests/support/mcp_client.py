"""The SDK's own MCP client against a real daemon, for end-to-end tests."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def connect(base_url: str, **headers: str) -> AsyncIterator[Client]:
    """An initialized MCP session on the /mcp of the daemon at `base_url` (closed with a
    DELETE on exit)."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client,
    ):
        yield client


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> Any:
    """A tool's answer, parsed; a failure raises `ToolFailed` with the error body."""
    result = await client.call_tool(name, arguments or {})
    assert len(result.content) == 1 and result.content[0].type == "text"
    text = result.content[0].text
    body = json.loads(text)
    assert text == json.dumps(body, indent=2, ensure_ascii=False), "pretty-printed JSON"
    if result.is_error:
        raise ToolFailed(body)
    return body


class ToolFailed(Exception):
    def __init__(self, body: dict[str, str]) -> None:
        super().__init__(body)
        self.body = body
        assert set(body) == {"error", "code", "help"}, body

    @property
    def code(self) -> str:
        return self.body["code"]


async def failure(client: Client, name: str, arguments: dict[str, Any] | None = None) -> ToolFailed:
    """The error body of a call that must fail."""
    try:
        answer = await call(client, name, arguments)
    except ToolFailed as failed:
        return failed
    raise AssertionError(f"{name} succeeded: {answer}")


async def wait_for_job(
    client: Client, job_id: str, done: Callable[[dict[str, Any]], bool], timeout: float = 60
) -> dict[str, Any]:
    """Poll `memcastle_job_get` until `done(job)`, failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        job = await call(client, "memcastle_job_get", {"job_id": job_id})
        if done(job):
            return job
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} is still {job['status']}")
        await anyio.sleep(0.05)


def finished(job: dict[str, Any]) -> bool:
    return job["status"] in ("completed", "failed", "cancelled")
