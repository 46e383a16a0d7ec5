"""`kernel.providers.post_json`, the one OpenAI-compatible HTTP client of the embedding and
extraction providers, against a real local endpoint (each provider's own use of it is tested in
test_embeddings.py and test_graph_extraction_providers.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kernel.errors import MemCastleError
from kernel.providers import post_json
from tests.support.endpoint import Endpoint


class Failed(MemCastleError):
    status = 502
    code = "memcastle::test::failed"


def post(url: str, api_key: str | None = "sk-key", timeout: float = 5) -> Any:
    return post_json(
        f"{url}/echo",
        {"input": ["a"]},
        api_key=api_key,
        timeout=timeout,
        what="the test endpoint",
        failure=Failed,
        read=lambda answer: answer["echo"],
        expected='{"echo": ...} body',
    )


def test_the_answer_is_read_and_the_key_sent_as_a_bearer_token(endpoint: Endpoint) -> None:
    endpoint.replies = [(200, {"echo": [1.0]}), (200, {"echo": "two"})]
    assert post(endpoint.url) == [1.0]
    assert post(endpoint.url, api_key=None) == "two"
    first, second = endpoint.requests
    assert (first["path"], first["body"]) == ("/v1/echo", {"input": ["a"]})
    assert (first["authorization"], second["authorization"]) == ("Bearer sk-key", None)


@pytest.mark.parametrize(
    ("status", "reply", "message"),
    [
        (418, {"error": "sk-key"}, "the test endpoint answered HTTP 418 I'm a Teapot"),
        (200, "<html>", 'the test endpoint answered without an OpenAI-style {"echo": ...} body'),
        (200, [], 'the test endpoint answered without an OpenAI-style {"echo": ...} body'),
    ],
)
def test_an_error_status_or_an_unreadable_answer_fails(
    endpoint: Endpoint, status: int, reply: Any, message: str
) -> None:
    endpoint.replies = [(status, reply)]
    with pytest.raises(Failed) as failed:
        post(endpoint.url)
    assert failed.value.message == message


def test_an_unreachable_endpoint_fails() -> None:
    # Timing out is tested through the extraction provider (test_graph_extraction_providers.py).
    with pytest.raises(Failed, match=r"^the test endpoint could not be reached \(ConnectError\)$"):
        post("http://127.0.0.1:9")
