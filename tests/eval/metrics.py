"""Ranking metrics over a de-duplicated list of dataset ids, and their means.

Every metric is computed per query, then averaged over queries (per configuration and per
category). Precision divides by k even when fewer hits came back, so a short page is not
rewarded for being short.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

CUTOFFS: tuple[int, ...] = (1, 3, 5, 10)
KINDS: tuple[str, ...] = ("recall", "precision", "hit", "all", "ndcg")


def metric_names(cutoffs: Sequence[int] = CUTOFFS) -> list[str]:
    """Every metric a query is scored on, sorted like the report's keys."""
    return sorted([f"{kind}@{k}" for kind in KINDS for k in cutoffs] + ["mrr"])


def dedupe(ranked: Iterable[str]) -> list[str]:
    """The first occurrence of each id, in order (an expanded hit may repeat a direct one)."""
    seen: set[str] = set()
    out: list[str] = []
    for doc in ranked:
        if doc not in seen:
            seen.add(doc)
            out.append(doc)
    return out


def order_ties(hits: Sequence[tuple[str, float]]) -> list[str]:
    """Dataset ids in response order, runs of equal scores re-ordered by dataset id.

    The daemon breaks ties by its own random drawer ids, which differ on every seeding; ordering
    them by dataset id makes the score of a tie the same on every run. Only adjacent equal scores
    are re-ordered, so an expanded tail is never moved ahead of the direct hits.
    """
    out: list[str] = []
    index = 0
    while index < len(hits):
        end = index + 1
        while end < len(hits) and hits[end][1] == hits[index][1]:
            end += 1
        out.extend(sorted(doc for doc, _ in hits[index:end]))
        index = end
    return out


def dcg(gains: Iterable[int]) -> float:
    """Discounted cumulative gain of grades in rank order: (2^g - 1) / log2(position + 2)."""
    return sum((2**grade - 1) / math.log2(position + 2) for position, grade in enumerate(gains))


def score_query(
    ranked: Sequence[str], grades: Mapping[str, int], cutoffs: Sequence[int] = CUTOFFS
) -> dict[str, float]:
    """Every metric of one query; `grades` holds the judged docs (grade > 0)."""
    ranked = dedupe(ranked)
    relevant = {doc for doc, grade in grades.items() if grade > 0}
    scores: dict[str, float] = {}
    for k in cutoffs:
        top = ranked[:k]
        found = sum(1 for doc in top if doc in relevant)
        ideal = dcg(sorted(grades.values(), reverse=True)[:k])
        scores[f"recall@{k}"] = found / len(relevant) if relevant else 0.0
        scores[f"precision@{k}"] = found / k
        scores[f"hit@{k}"] = 1.0 if found else 0.0
        scores[f"all@{k}"] = 1.0 if relevant and found == len(relevant) else 0.0
        scores[f"ndcg@{k}"] = dcg(grades.get(doc, 0) for doc in top) / ideal if ideal else 0.0
    first = next((rank for rank, doc in enumerate(ranked, 1) if doc in relevant), None)
    scores["mrr"] = 1.0 / first if first else 0.0
    return dict(sorted(scores.items()))


def mean(per_query: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each metric over queries (an empty list has no metrics)."""
    if not per_query:
        return {}
    keys = sorted(per_query[0])
    return {key: sum(q[key] for q in per_query) / len(per_query) for key in keys}


def nearest_rank(samples: Sequence[float], percentile: float) -> float:
    """The nearest-rank percentile: sorted[clamp(ceil(p/100 * n), 1, n) - 1]."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    n = len(ordered)
    # p * n first: p / 100 * n rounds up too far for some p (0.07 * 100 > 7).
    rank = min(max(math.ceil(percentile * n / 100), 1), n)
    return ordered[rank - 1]


def latency_summary(samples_ms: Sequence[float], wall_seconds: float) -> dict[str, float]:
    """Latency figures of one configuration: one client, sequential requests."""
    n = len(samples_ms)
    return {
        "samples": n,
        "mean_ms": sum(samples_ms) / n if n else 0.0,
        "p50_ms": nearest_rank(samples_ms, 50),
        "p95_ms": nearest_rank(samples_ms, 95),
        "p99_ms": nearest_rank(samples_ms, 99),
        "queries_per_second": n / wall_seconds if wall_seconds > 0 else 0.0,
    }
