"""The providers that turn text into vectors: local, command and http.

Every provider answers with L2-normalised float32 vectors of its profile's dimensions: a document
as an array of shape (windows, dimensions), a query as one vector. A provider that fails raises
`EmbedFailed` saying how (exit status and the start of stderr, or the HTTP status); nothing it
returned is kept.

`command` runs its argv without a shell, once per batch of `batch_size` texts, with JSON on stdin
(`{"model", "dimension", "texts"}`) and stdout (`{"embeddings": [[...], ...]}`); a timeout kills
it (and whatever it started). Its environment is the daemon's minus every `MEMCASTLE_*` variable.
`http` POSTs `{model, input, dimensions}` to `{url}/embeddings` in the OpenAI format, with the
profile's API key as a bearer token. Both are given the first `INPUT_CHARS` characters of a text.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from kernel.errors import EmbedFailed
from kernel.profiles import INPUT_CHARS, Profile
from kernel.providers import post_json, run_json

logger = logging.getLogger(__name__)


class Provider(Protocol):
    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def normalised(vectors: np.ndarray) -> np.ndarray | None:
    """Rows scaled to unit length, as float32; None when a row is all zeros or not finite.

    Scaled by each row's largest magnitude first, so that very large or very small numbers
    neither overflow nor vanish."""
    rows = np.asarray(vectors, dtype=np.float64)
    if rows.ndim != 2 or not np.all(np.isfinite(rows)):
        return None
    largest = np.max(np.abs(rows), axis=1, keepdims=True) if rows.shape[1] else None
    if largest is None or np.any(largest == 0):
        return None
    rows = rows / largest
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


class LocalProvider:
    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        from palace.embeddings import local

        return local.model().embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        from palace.embeddings import local

        return local.model().embed_query(text)


class BatchProvider:
    """A provider that embeds the start of each text, `batch_size` texts per call."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        found: list[np.ndarray] = []
        size = self.profile.batch_size
        for start in range(0, len(texts), size):
            batch = [text[:INPUT_CHARS] for text in texts[start : start + size]]
            found.extend(vector[None, :] for vector in self._checked(batch))
        return found

    def embed_query(self, text: str) -> np.ndarray:
        return self._checked([text[:INPUT_CHARS]])[0]

    def _checked(self, texts: list[str]) -> np.ndarray:
        answer = self._call(texts)
        what = self._what()
        if not isinstance(answer, list) or len(answer) != len(texts):
            count = len(answer) if isinstance(answer, list) else "no list of"
            raise EmbedFailed(f"{what} returned {count} embeddings for {len(texts)} texts")
        dimensions = self.profile.dimensions
        for index, vector in enumerate(answer):
            if not isinstance(vector, list) or len(vector) != dimensions:
                length = len(vector) if isinstance(vector, list) else "no list of"
                raise EmbedFailed(
                    f"{what} returned {length} numbers for text {index}; the profile "
                    f"{self.profile.name!r} has {dimensions} dimensions"
                )
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
                raise EmbedFailed(f"{what} returned something other than numbers for text {index}")
        vectors = normalised(np.array(answer, dtype=np.float64).reshape(len(texts), dimensions))
        if vectors is None:
            raise EmbedFailed(f"{what} returned an all-zero or non-finite vector")
        return vectors

    def _what(self) -> str:
        raise NotImplementedError

    def _call(self, texts: list[str]) -> Any:
        raise NotImplementedError


class CommandProvider(BatchProvider):
    def _what(self) -> str:
        return f"the embedding command of profile {self.profile.name!r}"

    def _call(self, texts: list[str]) -> Any:
        request = json.dumps(
            {"model": self.profile.model, "dimension": self.profile.dimensions, "texts": texts}
        ).encode()
        answer = run_json(
            self.profile.command,
            request,
            timeout=self.profile.timeout_secs,
            what=self._what(),
            failure=EmbedFailed,
        )
        if not isinstance(answer, dict) or "embeddings" not in answer:
            raise EmbedFailed(f'{self._what()} wrote no {{"embeddings": [...]}} object')
        return answer["embeddings"]


class HttpProvider(BatchProvider):
    def _what(self) -> str:
        return f"the embedding endpoint of profile {self.profile.name!r}"

    def _call(self, texts: list[str]) -> Any:
        body: dict[str, Any] = {"input": texts, "dimensions": self.profile.dimensions}
        if self.profile.model is not None:
            body["model"] = self.profile.model
        return post_json(
            f"{self.profile.url}/embeddings",
            body,
            api_key=self.profile.api_key,
            timeout=self.profile.timeout_secs,
            what=self._what(),
            failure=EmbedFailed,
            read=_embeddings,
            expected='{"data": [{"embedding": [...]}]} body',
        )


def _embeddings(answer: Any) -> list[Any]:
    """The vectors of an OpenAI-style answer, put back in input order by their `index`."""
    data = answer["data"]
    if not isinstance(data, list):
        raise TypeError("data is not a list")
    ordered = sorted(data, key=lambda item: item.get("index", 0))
    return [item["embedding"] for item in ordered]


def for_profile(profile: Profile) -> Provider:
    if profile.provider == "local":
        return LocalProvider()
    if profile.provider == "command":
        return CommandProvider(profile)
    if profile.provider == "http":
        return HttpProvider(profile)
    raise ValueError(f"profile {profile.name!r} has no provider that embeds")
