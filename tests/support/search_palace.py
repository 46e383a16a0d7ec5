"""A palace on disk with its search indexes and services, all in this process, for the search
tests that need the real store and real indexes but not HTTP.

The clock is the tests' own, so validity instants (creation, supersession, "now") are exact and
distinct; instants are kept off whole seconds as the daemon's are (`kernel.clock`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graph.reads import GraphReads
from graph.repositories.reads import GraphReadRepository
from kernel.config import EmbeddingsConfig
from kernel.context import RequestContext
from kernel.profiles import Profile, parse_profile
from kernel.store import Store
from palace.embeddings.repository import EmbeddingRepository
from palace.embeddings.service import EmbeddingService
from palace.filing import Filing
from palace.search.indexes import SearchIndexes
from palace.search.query import SearchQuery, from_body, from_options
from palace.search.repository import SearchRepository
from palace.search.service import SearchService
from tests.support.clock import Clock
from tests.support.palace_services import build

STANDIN = "standin"
DIMENSIONS = 8
CTX = RequestContext.build()


def external_profile(name: str = STANDIN, dimensions: int = DIMENSIONS) -> Profile:
    """A profile whose vectors come only from callers, as the tests' TOML configures it."""
    return parse_profile(
        name, {"provider": "external", "model": "stand-in", "dimensions": dimensions}
    )


def instant(days: float, *, micros: int = 1) -> dt.datetime:
    """A day of 2025 counted from its start, `micros` past it so never on a whole second."""
    start = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    return start + dt.timedelta(days=days, microseconds=micros)


class SearchPalace:
    """A surrealkv palace under `root` with the search indexes in `root/search`."""

    def __init__(
        self,
        root: Path,
        clock: Clock,
        profiles: Sequence[Profile] = (),
        indexed_profiles: Mapping[str, int] | None = None,
    ) -> None:
        self.root = root
        self.clock = clock
        self.profiles = list(profiles) or [external_profile()]
        self.indexed_profiles = (
            dict(indexed_profiles)
            if indexed_profiles is not None
            else {profile.name: profile.dimensions for profile in self.profiles}
        )
        self.store = Store(f"surrealkv://{root / 'db'}")
        self.store.open()
        self.store.migrate()
        palace = build(self.store, clock=clock)
        self.hierarchy, self.filing, self.revisions = (
            palace.hierarchy,
            palace.filing,
            palace.revisions,
        )
        self.embeddings = EmbeddingService(
            EmbeddingRepository(self.store),
            EmbeddingsConfig(
                default_profile=None, profiles={profile.name: profile for profile in self.profiles}
            ),
            clock=clock,
        )
        self.graph = GraphReads(GraphReadRepository(self.store))
        self.indexes = self._open_indexes()
        self.service = SearchService(
            self.hierarchy, self.indexes, self.embeddings, self.graph, clock=clock
        )

    @property
    def directory(self) -> Path:
        return self.root / "search"

    def _open_indexes(self) -> SearchIndexes:
        indexes = SearchIndexes(SearchRepository(self.store), self.directory, self.indexed_profiles)
        indexes.open()
        return indexes

    def close_indexes(self) -> None:
        self.indexes.close()

    def reopen_indexes(self, indexed_profiles: Mapping[str, int] | None = None) -> None:
        """Open the indexes again from what is on disk (after `close_indexes`, or after a
        simulated crash that never closed them)."""
        if indexed_profiles is not None:
            self.indexed_profiles = dict(indexed_profiles)
        self.indexes = self._open_indexes()
        self.service = SearchService(
            self.hierarchy, self.indexes, self.embeddings, self.graph, clock=self.clock
        )

    def close(self) -> None:
        self.indexes.close()
        self.store.close()

    # Writing.

    def file(
        self,
        wing: str,
        room: str,
        content: str,
        *,
        tags: Sequence[str] = (),
        kind: str = "manual",
        valid_from: dt.datetime | None = None,
        drawer_id: str | None = None,
        uri: str | None = None,
    ) -> dict[str, Any]:
        """File a drawer, an exact copy too (the tests decide what is alike); with a `uri`,
        a turn of that conversation."""
        drawer, _ = self.filing.file(
            CTX,
            wing,
            room,
            Filing(
                content=content,
                tags=list(tags),
                source={"kind": kind} if uri is None else {"kind": kind, "uri": uri},
                valid_from=valid_from,
                drawer_id=drawer_id,
                keep_copy=True,
            ),
        )
        return drawer

    def file_many(self, entries: Sequence[tuple[str, str, Filing]]) -> list[dict[str, Any]]:
        filed = self.filing.file_batch(CTX, list(entries))
        assert all(entry.error is None and entry.drawer is not None for entry in filed)
        return [entry.drawer for entry in filed if entry.drawer is not None]

    def supersede(
        self, drawer_id: str, content: str | None, at: dt.datetime
    ) -> dict[str, Any] | None:
        """Close the drawer at `at` and, with content, file its replacement from `at`;
        returns the replacement."""
        self.clock.set(at)
        answer = self.revisions.supersede(
            CTX, drawer_id, {} if content is None else {"content": content}
        )
        return answer["replacement"]

    def attach(self, drawer_id: str, vector: Sequence[float], profile: str = STANDIN) -> None:
        self.embeddings.attach(CTX, drawer_id, {"profile": profile, "embedding": list(vector)})

    def attach_windows(
        self, drawer_id: str, windows: Sequence[Sequence[float]], profile: str = STANDIN
    ) -> None:
        """Several vectors for one drawer, as the windows of a long text are stored."""
        chosen = self.embeddings.profile(profile)
        block = np.asarray(windows, dtype=np.float32)
        block = block / np.linalg.norm(block, axis=1, keepdims=True)
        self.embeddings.store_vectors(chosen, {drawer_id: block})

    # Searching.

    def search(self, recall: bool = False, **options: Any) -> dict[str, Any]:
        """Search with flat options (`q` and the rest, as a query string has them)."""
        return self.run(from_options(options, recall=recall), recall=recall)

    def search_body(self, body: Mapping[str, Any], recall: bool = False) -> dict[str, Any]:
        return self.run(from_body(body, recall=recall), recall=recall)

    def run(self, query: SearchQuery, recall: bool = False) -> dict[str, Any]:
        return self.service.search(CTX, query, recall=recall)

    def ids(self, **options: Any) -> list[str]:
        return [hit["id"] for hit in self.search(**options)["results"]]


def ranked(answer: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(id, score) of each hit, in order."""
    return [(hit["id"], hit["score"]) for hit in answer["results"]]
