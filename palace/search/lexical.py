"""The lexical leg: BM25 over drawer text in a tantivy index on disk, derived from the store.

SurrealDB's own full-text index took 76-82 ms for one word over 100,000 drawers, tantivy 0.02 ms
(docs/benchmarks.md, "Search"). The index carries the scope fields (wing, room, tags, source
kind, validity) so that scope and time filter inside the query, before ranking and limit.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import tantivy
from tantivy import Document, FieldType, Filter, Index, Occur, Query, TextAnalyzerBuilder, Tokenizer

from palace.search.scope import Scope

# Bump when the schema or the analysis changes: an index of another version is rebuilt.
SCHEMA_VERSION = 1
WRITER_HEAP = 64_000_000

# The analysis of `en_stem`, applied to the query ourselves so every word becomes one term:
# split on non-alphanumerics, drop tokens over 40 bytes, lowercase, English Snowball stemming.
# No stop words and no synonyms (search.md section 3).
_ANALYZER = (
    TextAnalyzerBuilder(Tokenizer.simple())
    .filter(Filter.remove_long(40))
    .filter(Filter.lowercase())
    .filter(Filter.stemmer("english"))
    .build()
)


def terms(text: str) -> list[str]:
    """The distinct index terms of a query, in order."""
    return list(dict.fromkeys(_ANALYZER.analyze(text)))


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("body", stored=False, tokenizer_name="en_stem", index_option="freq")
    for field in ("wing", "room", "tags", "source_kind"):
        builder.add_text_field(field, stored=False, tokenizer_name="raw", index_option="basic")
    builder.add_integer_field("valid_from", indexed=False, fast=True)
    builder.add_integer_field("valid_to", indexed=False, fast=True)
    return builder.build()


class LexicalIndex:
    """One tantivy index in `path`, written by this process only (tantivy locks the directory)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.schema = _schema()
        path.mkdir(parents=True, exist_ok=True)
        self.index = Index(self.schema, path=str(path), reuse=True)
        self.writer = self.index.writer(heap_size=WRITER_HEAP, num_threads=1)
        # Files of a commit a killed process did not finish are not the index's: gone before
        # a commit of ours wants their names.
        self.writer.garbage_collect_files()
        self.searcher = self.index.searcher()
        self._pending = False

    @classmethod
    def fresh(cls, path: Path) -> LexicalIndex:
        """An empty index in `path`, whatever was there."""
        shutil.rmtree(path, ignore_errors=True)
        return cls(path)

    def put(self, drawer: dict[str, Any]) -> None:
        """Index a drawer, replacing any earlier version of it."""
        self.writer.delete_documents_by_term("id", drawer["id"])
        document = Document(
            id=drawer["id"],
            body=drawer.get("content") or "",
            wing=drawer["wing"],
            room=drawer["room"],
            source_kind=drawer["source_kind"] or "",
            valid_from=drawer["valid_from"],
            valid_to=drawer["valid_to"],
        )
        for tag in drawer["tags"]:
            document.add_text("tags", tag)
        self.writer.add_document(document)
        self._pending = True

    def remove(self, drawer_id: str) -> None:
        self.writer.delete_documents_by_term("id", drawer_id)
        self._pending = True

    def commit(self) -> bool:
        """Make the changes durable and visible; False when there was nothing to commit."""
        if not self._pending:
            return False
        self.writer.commit()
        self.index.reload()
        self.searcher = self.index.searcher()
        self._pending = False
        return True

    @property
    def size(self) -> int:
        return self.searcher.num_docs

    def search(
        self, words: list[str], scope: Scope, limit: int, *, every_word: bool
    ) -> list[tuple[str, float]]:
        """The best `limit` drawers in scope for the query terms, as (id, BM25 score); equal
        scores are ordered by drawer id."""
        if not words or limit <= 0:
            return []
        occur = Occur.Must if every_word else Occur.Should
        text = Query.boolean_query([(occur, self._term("body", word)) for word in words])
        query = self._scoped(text, scope)
        # Ties at the cut are broken by id, so ask for more than `limit` and order ourselves.
        hits = self.searcher.search(query, limit + 32, count=False).hits
        found = [(self.searcher.doc(address)["id"][0], float(score)) for score, address in hits]
        found.sort(key=lambda hit: (-hit[1], hit[0]))
        if len(hits) == limit + 32 and found[limit - 1][1] == found[-1][1]:
            return self._all_tied(query, found, limit)
        return found[:limit]

    def mass(self, words: list[str]) -> float:
        """The query's lexical mass: the sum of its terms' BM25 IDF (tantivy's formula), about
        what a drawer of average length holding each term once scores. A term no drawer holds
        adds nothing, as it adds nothing to a score. Hybrid fusion weighs the lexical leg by
        how much of it the first hit reaches (`palace.search.fusion`)."""
        total = self.searcher.num_docs
        mass = 0.0
        for word in words:
            held = self.searcher.doc_freq("body", word)
            if held:
                mass += math.log(1.0 + (total - held + 0.5) / (held + 0.5))
        return mass

    def _all_tied(
        self, query: Query, found: list[tuple[str, float]], limit: int
    ) -> list[tuple[str, float]]:
        # A long run of equal scores reaches past what was fetched (every drawer holding one
        # word, equally long): fetch the whole run, so the cut is by id.
        wanted = len(found)
        while True:
            wanted *= 4
            hits = self.searcher.search(query, wanted, count=False).hits
            found = [(self.searcher.doc(a)["id"][0], float(s)) for s, a in hits]
            found.sort(key=lambda hit: (-hit[1], hit[0]))
            if len(hits) < wanted or found[limit - 1][1] != found[-1][1]:
                return found[:limit]

    def _term(self, field: str, value: str) -> Query:
        return Query.term_query(self.schema, field, value)

    def _scoped(self, text: Query, scope: Scope) -> Query:
        filters: list[tuple[Occur, Query]] = []
        if scope.wing is not None:
            filters.append((Occur.Must, self._term("wing", scope.wing)))
        if scope.rooms is not None:
            filters.append((Occur.Must, Query.term_set_query(self.schema, "room", scope.rooms)))
        for tag in scope.tags:
            filters.append((Occur.Must, self._term("tags", tag)))
        if scope.source_kind is not None:
            filters.append((Occur.Must, self._term("source_kind", scope.source_kind)))
        if scope.window is not None:
            start, end = scope.window
            # Valid at some instant of [start, end): valid_from < end and valid_to > start.
            filters.append((Occur.Must, self._range("valid_from", None, end - 1)))
            filters.append((Occur.Must, self._range("valid_to", start + 1, None)))
        if not filters:
            return text
        # The filters score nothing, so scoping leaves BM25 values as they are.
        return Query.boolean_query(
            [
                (Occur.Must, text),
                (Occur.Must, Query.const_score_query(Query.boolean_query(filters), 0.0)),
            ]
        )

    def _range(self, field: str, low: int | None, high: int | None) -> Query:
        """`low <= field <= high`, by the field's fast column (the inverted index was 300 times
        slower for ranges here)."""
        return Query.range_query(self.schema, field, FieldType.Integer, low, high, True, True)

    def close(self) -> None:
        self.writer.wait_merging_threads()
