"""Where the vectors of a run come from, and how they travel with the requests.

Stand-in runs compute every vector in the harness and send it (`PUT /api/drawers/{id}/embedding`
and `query_embedding`), so the engine is measured apart from any model. Daemon-embedded runs
(the built-in `local` profile, or an HTTP provider for LongMemEval) send text only and let the
daemon embed both sides. Either way the report records which it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.eval import standin


@dataclass
class StandInVectors:
    """Harness-computed vectors for an `external` profile of the daemon."""

    concepts: Mapping[str, str]
    dimensions: int = standin.DIMENSIONS
    profile: str = "standin"
    _cache: dict[str, list[float]] = field(default_factory=dict, repr=False)

    attaches_documents = True
    embeds_in_daemon = False

    def vector(self, text: str) -> list[float]:
        cached = self._cache.get(text)
        if cached is None:
            cached = self._cache[text] = standin.embed(text, self.concepts, self.dimensions)
        return cached

    def query_fields(self, text: str) -> dict[str, Any]:
        return {"profile": self.profile, "query_embedding": self.vector(text)}

    def describe(self) -> dict[str, Any]:
        return {
            "source": "stand-in",
            "profile": self.profile,
            "provider": "external",
            "model": "stand-in (FNV-1a 32 slots, xorshift64 background, L2-normalised)",
            "dimensions": self.dimensions,
        }


@dataclass
class DaemonVectors:
    """The daemon embeds drawers itself (an embed job) and embeds each query's text."""

    profile: str
    provider: str
    model: str
    dimensions: int | None = None

    attaches_documents = False
    embeds_in_daemon = True

    def vector(self, text: str) -> list[float]:
        raise AssertionError("the daemon embeds; the harness computes no vector")

    def query_fields(self, text: str) -> dict[str, Any]:
        return {"profile": self.profile}

    def describe(self) -> dict[str, Any]:
        return {
            "source": "daemon",
            "profile": self.profile,
            "provider": self.provider,
            "model": self.model,
            "dimensions": self.dimensions,
        }


@dataclass
class NoVectors:
    """Nobody embeds anything: only lexical configurations can run."""

    profile: str = ""
    attaches_documents = False
    embeds_in_daemon = False

    def vector(self, text: str) -> list[float]:
        raise AssertionError("no vectors in a lexical-only run")

    def query_fields(self, text: str) -> dict[str, Any]:
        raise AssertionError("no vectors in a lexical-only run")

    def describe(self) -> dict[str, Any]:
        return {"source": "none", "profile": None, "provider": None, "model": None}


VectorSource = StandInVectors | DaemonVectors | NoVectors
