"""Run every configuration's queries against a seeded daemon, score them, and time them.

A configuration is a ranking (plus `expand` for `lexical+expand`); scope and time are not
configurations but filters carried by each query, so they are measured as categories under every
ranking. The first pass over a configuration's queries is both the warm-up and the scored pass;
the timed repetitions that follow are never scored, because the ranking is deterministic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from tests.eval import api
from tests.eval.dataset import (
    CONFIGURATIONS,
    AsOf,
    Between,
    Current,
    Dataset,
    Historical,
    Query,
    Temporal,
)
from tests.eval.metrics import CUTOFFS, latency_summary, mean, order_ties, score_query
from tests.eval.seeding import Seeded
from tests.eval.vectors import VectorSource

LIMIT = 10
RANKINGS: dict[str, tuple[str, bool]] = {
    "lexical": ("lexical", False),
    "semantic": ("semantic", False),
    "hybrid": ("hybrid", False),
    "lexical+expand": ("lexical", True),
}
"""Configuration name -> (ranking, expand)."""


@dataclass(frozen=True)
class Hit:
    """One search hit, translated back to the dataset."""

    drawer_id: str
    dataset_id: str
    score: float
    wing: str | None
    room: str | None
    valid_from: str | None
    valid_to: str | None
    expanded: bool

    @classmethod
    def of(cls, raw: dict[str, Any], seeded: Seeded) -> Hit:
        drawer_id = str(raw["id"])
        return cls(
            drawer_id=drawer_id,
            # A drawer the harness did not file can never be relevant; keep it visible as such.
            dataset_id=seeded.dataset_ids.get(drawer_id, f"?{drawer_id}"),
            score=float(raw.get("score") or 0.0),
            wing=raw.get("wing"),
            room=raw.get("room"),
            valid_from=raw.get("valid_from"),
            valid_to=raw.get("valid_to"),
            expanded="via" in raw,
        )


@dataclass
class QueryRun:
    query: Query
    configuration: str
    hits: list[Hit]
    ranked: list[str]
    metrics: dict[str, float]


@dataclass
class ConfigurationRun:
    name: str
    queries: list[QueryRun]
    latency: dict[str, float] | None = None

    def mean(self) -> dict[str, float]:
        return mean([q.metrics for q in self.queries])

    def by_category(self) -> dict[str, dict[str, float]]:
        categories = sorted({q.query.category for q in self.queries})
        return {
            c: mean([q.metrics for q in self.queries if q.query.category == c]) for c in categories
        }


def temporal_filter(temporal: Temporal, instants: Sequence[str]) -> str | dict[str, Any]:
    """The epoch-relative choice of the dataset as the daemon's `filter.temporal`."""
    match temporal:
        case Current():
            return "current"
        case Historical():
            return "all"
        case AsOf(epoch=k):
            return {"as_of": instants[k]}
        case Between(start=a, end=b):
            return {"between": {"from": instants[a], "until": instants[b]}}
    raise AssertionError(f"unknown temporal choice {temporal!r}")


def request_body(
    query: Query,
    configuration: str,
    instants: Sequence[str],
    vectors: VectorSource,
    limit: int = LIMIT,
) -> dict[str, Any]:
    """The POST /api/search body of one query under one configuration.

    Lexical runs send no vector and no profile: a lexical ranking must not need either.
    """
    ranking, expand = RANKINGS[configuration]
    scope: dict[str, Any] = {"temporal": temporal_filter(query.temporal, instants)}
    if query.wing is not None:
        scope["wing"] = query.wing
    if query.room is not None:
        scope["room"] = query.room
    body: dict[str, Any] = {"text": query.text, "ranking": ranking, "limit": limit, "filter": scope}
    if expand:
        body["expand"] = True
    if ranking != "lexical":
        body.update(vectors.query_fields(query.text))
    return body


def configurations_of(dataset: Dataset) -> list[str]:
    """The configurations some query of the dataset runs, in report order."""
    wanted = {run for q in dataset.queries for run in q.runs}
    return [c for c in CONFIGURATIONS if c in wanted]


def evaluate(
    client: httpx.Client,
    dataset: Dataset,
    seeded: Seeded,
    vectors: VectorSource,
    *,
    repetitions: int = 0,
    limit: int = LIMIT,
    cutoffs: Sequence[int] = CUTOFFS,
    configurations: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[ConfigurationRun]:
    """Score every configuration once, then time `repetitions` more passes of each."""
    say = progress or (lambda _message: None)
    runs: list[ConfigurationRun] = []
    for name in configurations or configurations_of(dataset):
        queries = [q for q in dataset.queries if name in q.runs]
        bodies = [request_body(q, name, seeded.instants, vectors, limit) for q in queries]
        scored: list[QueryRun] = []
        for query, body in zip(queries, bodies, strict=True):
            raw, _elapsed = api.search(client, body)
            hits = [Hit.of(h, seeded) for h in raw]
            ranked = order_ties([(h.dataset_id, h.score) for h in hits])
            metrics = score_query(ranked, query.grades(), cutoffs)
            scored.append(QueryRun(query, name, hits, ranked, metrics))
        run = ConfigurationRun(name, scored)
        if repetitions > 0:
            run.latency = time_passes(client, bodies, repetitions)
        runs.append(run)
        say(f"{name}: {len(queries)} queries, mrr {run.mean().get('mrr', 0.0):.3f}")
    return runs


def time_passes(
    client: httpx.Client, bodies: Sequence[dict[str, Any]], repetitions: int
) -> dict[str, float]:
    """`repetitions` sequential passes over every body, one client: per-request latency."""
    samples: list[float] = []
    started = time.perf_counter()
    for _ in range(repetitions):
        for body in bodies:
            _hits, elapsed_ms = api.search(client, body)
            samples.append(elapsed_ms)
    return latency_summary(samples, time.perf_counter() - started)
