"""Search and recall: the one service every interface calls (search.md section 1).

It checks the memory mode, resolves the scope, gets a query vector when the ranking wants one,
runs the legs on the derived indexes and returns the stored drawers verbatim with their score,
re-scored by the source preferences when a policy is set (`palace.search.preferences`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from kernel.clock import utc_now
from kernel.context import RequestContext
from kernel.errors import InputInvalid, MemCastleError
from palace.hierarchy import HierarchyService
from palace.search import expansion, fusion, lexical, speakers
from palace.search.indexes import SearchIndexes
from palace.search.preferences import Preferences, candidate_pool
from palace.search.query import SearchQuery
from palace.search.scope import Scope
from palace.search.shapes import SearchResults
from palace.shapes import drawer_values

if TYPE_CHECKING:
    from graph.reads import GraphReads
    from kernel.profiles import Profile
    from palace.embeddings.service import EmbeddingService

logger = logging.getLogger(__name__)


class SemanticUnavailable(MemCastleError):
    status = 400
    code = "memcastle::search::semantic_unavailable"
    help = (
        "send a query_embedding with its profile, configure an embedding profile that can embed "
        "text, or search with ranking=lexical (auto falls back by itself)"
    )


class SearchService:
    def __init__(
        self,
        hierarchy: HierarchyService,
        indexes: SearchIndexes,
        embeddings: EmbeddingService,
        graph: GraphReads,
        clock: Callable[[], Any] = utc_now,
        preferences: Preferences | None = None,
    ) -> None:
        self.hierarchy = hierarchy
        self.indexes = indexes
        self.embeddings = embeddings
        self.graph = graph
        self.clock = clock
        # Only a policy that changes some level re-scores (search.md 5): without one, search
        # takes exactly the path it took before preferences existed.
        self.preferences = preferences if preferences is not None and preferences.active else None

    def search(self, ctx: RequestContext, query: SearchQuery, *, recall: bool = False) -> dict:
        ctx.require_read("recall" if recall else "search")
        wing, rooms = self.hierarchy.resolve_place(query.wing, query.room)
        now = self.clock()
        scope = Scope(
            wing=wing,
            rooms=rooms,
            tags=query.tags,
            source_kind=query.source_kind,
            window=query.period.bounds_ns(now),
        )
        self.indexes.refresh()
        profile, vector = self._query_vector(query, scope)
        ranking = query.ranking
        if ranking == "auto":
            ranking = "hybrid" if vector is not None else "lexical"
        if ranking in ("semantic", "hybrid") and vector is None:
            raise SemanticUnavailable(
                f"ranking {ranking!r} needs a query vector and none could be had: "
                + self._why_no_vector(query)
            )
        with self.indexes.lock:
            ranked = self._rank(ranking, query.text, scope, profile, vector, self._pool(query))
        hits = self._preferred(self._hits(ranked), query.limit, now)
        if query.expand and hits:
            # Related drawers follow the direct hits, which stay as they are (search.md 4).
            hits += self._related(scope, hits, query, now)
        return SearchResults.render(
            {
                "query": query.text,
                "ranking": ranking,
                "profile": profile.name if vector is not None and profile is not None else None,
                "temporal": query.period.view(),
                "results": hits,
            }
        )

    # The query vector --------------------------------------------------------------------

    def _query_vector(
        self, query: SearchQuery, scope: Scope
    ) -> tuple[Profile | None, np.ndarray | None]:
        """The profile and the vector of the query, or None where it has none. A caller's
        vector needs an explicit profile; text is embedded only when the ranking may use it,
        without the names of the speakers of most of the scope's conversations (`speakers`)."""
        if query.query_embedding is not None:
            if query.profile is None:
                raise InputInvalid(
                    "profile",
                    "is required with query_embedding: name the configured embedding profile "
                    "the vector belongs to",
                )
            profile = self.embeddings.profile(query.profile)
            return profile, self.embeddings.check_vector(
                profile, query.query_embedding, "query_embedding"
            )
        if query.profile is not None:
            profile = self.embeddings.profile(query.profile)
        elif self.embeddings.default is not None:
            profile = self.embeddings.default
        else:
            return None, None
        if query.ranking == "lexical" or not profile.can_embed:
            return profile, None
        try:
            return profile, self.embeddings.embed_query(profile, self._asked(query.text, scope))
        except MemCastleError as exc:
            if query.ranking != "auto":
                raise SemanticUnavailable(
                    f"the embedding profile {profile.name!r} could not embed the query: "
                    f"{exc.message}"
                ) from None
            logger.warning(
                "search: profile %r could not embed the query, answering lexically: %s",
                profile.name,
                exc.message,
            )
            return profile, None

    def _asked(self, text: str, scope: Scope) -> str:
        """What the semantic leg embeds of the question: `text` without the names that speak
        throughout the scope's conversations, which cannot tell them apart."""
        with self.indexes.lock:
            names = self.indexes.catalog.speakers_throughout(scope.wing, speakers.THROUGHOUT)
        return speakers.without(text, names)

    def _why_no_vector(self, query: SearchQuery) -> str:
        if query.profile is None and self.embeddings.default is None:
            return "no default embedding profile is configured"
        name = query.profile or (self.embeddings.default.name if self.embeddings.default else "")
        return f"profile {name!r} only takes vectors sent with the query (query_embedding)"

    # Ranking -----------------------------------------------------------------------------

    def _rank(
        self,
        ranking: str,
        text: str,
        scope: Scope,
        profile: Profile | None,
        vector: np.ndarray | None,
        limit: int,
    ) -> list[tuple[str, float, dict[str, float]]]:
        """(drawer id, score, signals), best first, equal scores by id, at most `limit`."""
        if ranking == "lexical":
            return [(i, s, {"lexical": s}) for i, s in self._lexical(text, scope, limit)]
        assert profile is not None and vector is not None
        if ranking == "semantic":
            return [
                (i, s, {"semantic": s}) for i, s in self._semantic(profile, vector, scope, limit)
            ]
        pool = fusion.pool(limit)
        words = lexical.terms(text)
        lexical_hits = self._lexical_leg(words, scope, pool, every_word=False)
        semantic_hits = self._semantic(profile, vector, scope, pool)
        assert self.indexes.lexical is not None
        mass = self.indexes.lexical.mass(words)
        catalog = self.indexes.catalog
        chatter = catalog.chatter_among(drawer_id for drawer_id, _ in lexical_hits + semantic_hits)
        dialogues = catalog.dialogues_among(drawer_id for drawer_id, _ in lexical_hits[:1])
        return fusion.fuse(lexical_hits, semantic_hits, mass, chatter, dialogues)[:limit]

    def _lexical(self, text: str, scope: Scope, limit: int) -> list[tuple[str, float]]:
        """Every word first; any word only when nothing matched and there are several."""
        words = lexical.terms(text)
        hits = self._lexical_leg(words, scope, limit, every_word=True)
        if not hits and len(words) >= 2:
            hits = self._lexical_leg(words, scope, limit, every_word=False)
        return hits

    def _lexical_leg(
        self, words: list[str], scope: Scope, limit: int, *, every_word: bool
    ) -> list[tuple[str, float]]:
        assert self.indexes.lexical is not None
        return self.indexes.lexical.search(words, scope, limit, every_word=every_word)

    def _semantic(
        self, profile: Profile, vector: np.ndarray, scope: Scope, limit: int
    ) -> list[tuple[str, float]]:
        index = self.indexes.vectors.get(profile.name)
        if index is None:
            return []
        in_scope = self.indexes.catalog.mask(scope)
        ids = self.indexes.catalog.ids
        hits = [(ids[row], score) for row, score in index.search(vector, in_scope, limit)]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:limit]

    def _related(
        self, scope: Scope, direct: list[dict[str, Any]], query: SearchQuery, now: dt.datetime
    ) -> list[dict[str, Any]]:
        """The hits expansion appends after `direct`: each the stored drawer verbatim with
        `score` and `signals.graph` (its graph signal) and `via` (the connecting entities'
        names). The preferences re-score them as a page of their own."""
        with self.indexes.lock:
            in_scope = expansion.in_catalog(self.indexes.catalog, scope)
        related = expansion.expand(
            self.graph, [hit["id"] for hit in direct], in_scope, scope.window, self._pool(query)
        )
        via = {item.drawer_id: list(item.via) for item in related}
        hits = self._hits([(item.drawer_id, item.graph, {"graph": item.graph}) for item in related])
        return self._preferred([{**hit, "via": via[hit["id"]]} for hit in hits], query.limit, now)

    # Source preferences ------------------------------------------------------------------

    def _pool(self, query: SearchQuery) -> int:
        """How many candidates to rank: the page itself, or the wider pool the preferences
        re-score (search.md 5)."""
        return query.limit if self.preferences is None else candidate_pool(query.limit)

    def _preferred(
        self, hits: list[dict[str, Any]], limit: int, now: dt.datetime
    ) -> list[dict[str, Any]]:
        """The best `limit` of a page of hits: as ranked, or re-scored by the preferences."""
        if self.preferences is None:
            return hits[:limit]
        return self.preferences.rerank(hits, now)[:limit]

    def _hits(self, ranked: list[tuple[str, float, dict[str, float]]]) -> list[dict[str, Any]]:
        drawers = self.hierarchy.drawers_by_ids(drawer_id for drawer_id, _, _ in ranked)
        hits = []
        for drawer_id, score, signals in ranked:
            drawer = drawers.get(drawer_id)
            if drawer is None:
                continue  # deleted since the index was read
            hit = {**drawer_values(drawer), "score": score}
            if signals:
                hit["signals"] = signals
            hits.append(hit)
        return hits
