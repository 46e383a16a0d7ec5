"""The lexical leg: BM25 over drawer text in a tantivy index on disk, derived from the store.

SurrealDB's own full-text index took 76-82 ms for one word over 100,000 drawers, tantivy 0.02 ms
(docs/benchmarks.md, "Search"). The index carries the scope fields (wing, room, tags, source
kind, validity) so that scope and time filter inside the query, before ranking and limit.

A drawer that is a turn of a conversation (`palace.search.turns`) is indexed with the turn
before it. When that turn asks (it ends with a question mark), it is the question this one
answers: it goes to the `prompt` field, where a query word counts as much as in the drawer's own
text, so "which hotel did you book in Lisbon?" finds "the Avenida Palace" that answered it; and
the question's own text, once a turn follows it, counts `ASKED_WEIGHT` of its worth, so the
answer comes first. Any other turn before goes to `context`, where a word counts
`CONTEXT_WEIGHT`. Each query word scores by the best of the fields that hold it (a disjunction
max): a neighbour of a matching turn scores less than the turn itself, and a page is not
crowded with neighbours (docs/retrieval.md, "Turns in their context").

Every drawer is also indexed with the month and year its validity starts in ("May 2026", in
the `dated` field, `DATED_WEIGHT`), so that "what did Caroline say in May" prefers what was said
in May (docs/retrieval.md, "Dates and stop words").
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tantivy
from tantivy import Document, FieldType, Filter, Index, Occur, Query, TextAnalyzerBuilder, Tokenizer

from palace.search.scope import Scope

# Bump when the schema or the analysis changes: an index of another version is rebuilt.
SCHEMA_VERSION = 2
WRITER_HEAP = 64_000_000
# What a query word counts in the turn before a drawer when that turn does not ask, and in the
# text of a question that was answered, against the drawer's own text; the fields a word is not
# best in add `CONTEXT_TIE` of their score. Measured on the conversational benchmark's turns:
# docs/retrieval.md, "Turns in their context".
CONTEXT_WEIGHT = 0.3
ASKED_WEIGHT = 0.5
CONTEXT_TIE = 0.1
# What a query word naming a month or a year counts when it is the month or the year a drawer's
# validity starts in: a date is a property of the drawer, not its words, and "may" is a verb too.
DATED_WEIGHT = 0.5
# In the schema's order.
_WEIGHTS = (
    ("body", 1.0),
    ("asked", ASKED_WEIGHT),
    ("prompt", 1.0),
    ("context", CONTEXT_WEIGHT),
    ("dated", DATED_WEIGHT),
)
_TEXT_FIELDS = tuple(field for field, _ in _WEIGHTS)
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

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


def dated(valid_from_ns: int) -> str:
    """The month and year of an instant in nanoseconds, as words: "May 2026"."""
    moment = _EPOCH + dt.timedelta(microseconds=valid_from_ns // 1000)
    return f"{_MONTHS[moment.month - 1]} {moment.year}"


def asks(text: str) -> bool:
    """Whether a turn is a question (the one the turn after it answers)."""
    return text.rstrip().endswith(("?", "\uff1f"))


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    for field in _TEXT_FIELDS:
        builder.add_text_field(field, stored=False, tokenizer_name="en_stem", index_option="freq")
    # The turn before this one: when either is deleted, the other is found by this field and
    # indexed again.
    builder.add_text_field("follows", stored=True, tokenizer_name="raw", index_option="basic")
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

    def put(
        self,
        drawer: Mapping[str, Any],
        before: Mapping[str, Any] | None = None,
        *,
        answered: bool = False,
    ) -> None:
        """Index a drawer, replacing any earlier version of it (its indexed fields,
        `palace.search.indexes`). For a turn of a conversation, `before` is the turn before it,
        and `answered` says that a turn follows it."""
        self.writer.delete_documents_by_term("id", drawer["id"])
        own = drawer.get("content") or ""
        told = before["content"] if before else ""
        document = Document(
            id=drawer["id"],
            **{"asked" if answered and asks(own) else "body": own},
            **{"prompt" if asks(told) else "context": told},
            dated=dated(drawer["valid_from"]),
            wing=drawer["wing"],
            room=drawer["room"],
            source_kind=drawer["source_kind"] or "",
            valid_from=drawer["valid_from"],
            valid_to=drawer["valid_to"],
        )
        for tag in drawer["tags"]:
            document.add_text("tags", tag)
        if before is not None:
            document.add_text("follows", before["id"])
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

    def preceding(self, drawer_id: str) -> str | None:
        """The turn the drawer was indexed after (committed), if any."""
        hits = self.searcher.search(self._term("id", drawer_id), 1, count=False).hits
        if not hits:
            return None
        follows = self.searcher.doc(hits[0][1]).get_all("follows")
        return str(follows[0]) if follows else None

    def followers(self, drawer_ids: list[str]) -> list[str]:
        """The drawers indexed with one of `drawer_ids` as the turn before them (committed)."""
        if not drawer_ids:
            return []
        query = Query.term_set_query(self.schema, "follows", drawer_ids)
        # A drawer is the turn before one other, so this is one page unless entries of an
        # earlier order of the conversation are still being replaced.
        wanted = 2 * len(drawer_ids) + 16
        while True:
            hits = self.searcher.search(query, wanted, count=False).hits
            if len(hits) < wanted:
                return [self.searcher.doc(address)["id"][0] for _, address in hits]
            wanted *= 4

    def search(
        self, words: list[str], scope: Scope, limit: int, *, every_word: bool
    ) -> list[tuple[str, float]]:
        """The best `limit` drawers in scope for the query terms, as (id, BM25 score); equal
        scores are ordered by drawer id."""
        if not words or limit <= 0:
            return []
        occur = Occur.Must if every_word else Occur.Should
        text = Query.boolean_query([(occur, self._word(word)) for word in words])
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

    def _word(self, word: str) -> Query:
        """A query word: in the drawer's own text or the question it answers, or at a discount
        in an answered question's text, the turn before it or its month. Only the fields that
        hold the word take part: a palace without conversations asks about what it asked
        before (at 100,000 drawers in process, 0.24 ms a query against 0.18 for the drawer's
        text alone; 0.62 when a third of the drawers are turns)."""
        weighted = [
            (field, weight)
            for field, weight in _WEIGHTS
            if field == "body" or self.searcher.doc_freq(field, word)
        ]
        if len(weighted) == 1:
            return self._term("body", word)
        fields = [
            self._term(field, word)
            if weight == 1
            else Query.boost_query(self._term(field, word), weight)
            for field, weight in weighted
        ]
        return Query.disjunction_max_query(fields, CONTEXT_TIE)

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
