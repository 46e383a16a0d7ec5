"""How the daemon's ASGI application answers (memcastle_project/asgi.py): a whole body goes out
with its length, in one hop to the sync thread. The event stream, which keeps Django's async
path, is tested end to end in test_events.py."""

from __future__ import annotations

import httpx

from tests.support.daemon import Daemon


def test_a_json_answer_carries_its_length_and_is_not_chunked(daemon: Daemon) -> None:
    response = httpx.get(f"{daemon.base_url}/api/wings")
    assert response.status_code == 200
    assert response.headers["content-length"] == str(len(response.content))
    assert "transfer-encoding" not in response.headers


def test_an_error_answer_carries_its_length(daemon: Daemon) -> None:
    response = httpx.get(f"{daemon.base_url}/api/nowhere")
    assert response.status_code == 404
    assert response.json()["code"] == "memcastle::http::not_found"
    assert response.headers["content-length"] == str(len(response.content))


def test_head_gets_the_length_of_the_body_it_does_not_get(daemon: Daemon) -> None:
    body = httpx.get(f"{daemon.base_url}/api/health").content
    response = httpx.head(f"{daemon.base_url}/api/health")
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["content-length"] == str(len(body))
