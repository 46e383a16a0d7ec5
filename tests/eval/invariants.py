"""Checks that hold whatever the scores: scope and time are filters, not preferences.

A hit outside the query's wing or room, or outside its temporal visibility, is a wrong answer
under any ranking, however good the metrics look. And a dataset on which semantic no longer beats
lexical on paraphrases (or expansion no longer reaches graph-linked drawers) cannot tell the
configurations apart any more: then the benchmark itself is broken, not the engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tests.eval.dataset import AsOf, Between, Current, Historical, visible
from tests.eval.harness import ConfigurationRun, Hit, QueryRun
from tests.eval.seeding import Seeded, parse_instant


def scope_violations(runs: Sequence[ConfigurationRun], seeded: Seeded) -> list[str]:
    """Every hit outside its query's wing or room."""
    found: list[str] = []
    for run in runs:
        for q in run.queries:
            for hit in q.hits:
                problem = _scope_problem(q, hit, seeded)
                if problem:
                    found.append(f"{run.name} {q.query.id}: {hit.dataset_id} {problem}")
    return found


def _scope_problem(q: QueryRun, hit: Hit, seeded: Seeded) -> str | None:
    query = q.query
    if query.wing is None and query.room is None:
        return None
    place = seeded.rooms.get(hit.room or "")
    if place is None:
        return f"is in an unknown room {hit.room!r}"
    wing, room = place
    if hit.wing is not None and seeded.wings.get(hit.wing) != wing:
        return f"names wing {hit.wing!r}, but its room is in {wing!r}"
    if query.wing is not None and wing != query.wing:
        return f"is in wing {wing!r}, not {query.wing!r}"
    if query.room is not None and room != query.room:
        return f"is in room {room!r}, not {query.room!r}"
    return None


def temporal_violations(runs: Sequence[ConfigurationRun], seeded: Seeded) -> list[str]:
    """Every hit that was not valid at the query's time, by the dataset's epochs and by the
    validity the daemon itself returned on the hit."""
    found: list[str] = []
    for run in runs:
        for q in run.queries:
            for hit in q.hits:
                where = f"{run.name} {q.query.id}: {hit.dataset_id}"
                lifetime = seeded.lifetimes.get(hit.dataset_id)
                if lifetime is None:
                    found.append(f"{where} is not a drawer the harness filed")
                elif not visible(lifetime, q.query.temporal):
                    found.append(f"{where} (epochs {lifetime}) is not valid then")
                problem = _validity_problem(q, hit, seeded.instants)
                if problem:
                    found.append(f"{where} {problem}")
    return found


def _validity_problem(q: QueryRun, hit: Hit, instants: Sequence[str]) -> str | None:
    """The hit's own [valid_from, valid_to) against the requested time."""
    if hit.valid_from is None:
        return "carries no valid_from"
    start = parse_instant(hit.valid_from)
    end = parse_instant(hit.valid_to) if hit.valid_to else None
    match q.query.temporal:
        case Current():
            ok = end is None
        case AsOf(epoch=k):
            at = parse_instant(instants[k])
            ok = start <= at and (end is None or end > at)
        case Between(start=a, end=b):
            since, until = parse_instant(instants[a]), parse_instant(instants[b])
            ok = start < until and (end is None or end > since)
        case Historical():
            ok = True
    return None if ok else f"is valid [{hit.valid_from}, {hit.valid_to}), outside the query's time"


def separation_failures(categories: Mapping[str, Mapping[str, Mapping[str, float]]]) -> list[str]:
    """The dataset must still tell the configurations apart.

    `categories` is configuration -> category -> mean metrics. Semantic must beat lexical on
    paraphrases (recall@5 and mrr); with graph queries, lexical+expand must beat lexical on
    recall@10. A check whose configurations or category did not run is skipped.
    """
    failures: list[str] = []
    lexical = categories.get("lexical", {})
    semantic = categories.get("semantic", {})
    if "paraphrase" in lexical and "paraphrase" in semantic:
        for metric in ("recall@5", "mrr"):
            lex, sem = lexical["paraphrase"][metric], semantic["paraphrase"][metric]
            if not sem > lex:
                failures.append(
                    f"semantic does not beat lexical on paraphrase {metric}: {sem:.3f} <= {lex:.3f}"
                )
    expand = categories.get("lexical+expand", {})
    if "graph" in lexical and "graph" in expand:
        lex, exp = lexical["graph"]["recall@10"], expand["graph"]["recall@10"]
        if not exp > lex:
            failures.append(
                f"expansion does not beat lexical on graph recall@10: {exp:.3f} <= {lex:.3f}"
            )
    return failures


FUSION_METRICS = ("hit@1", "hit@5", "hit@10", "all@10")


def fusion_shortfalls(
    report: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]],
    *,
    per_category: bool = True,
) -> list[str]:
    """Where hybrid ranks below its best single leg (issue 26): any@1, any@5, any@10 and
    all@10, over every query and (unless `per_category` is false) per category. Fusion that
    loses to one of its own legs is worse than choosing that leg; a report without the three
    rankings has nothing to check."""
    overall, categories = report["configurations"], report["categories"]
    if not {"lexical", "semantic", "hybrid"} <= set(overall):
        return []
    cells = [("(all)", {name: overall[name] for name in ("lexical", "semantic", "hybrid")})]
    for category in categories["hybrid"] if per_category else ():
        cells.append(
            (
                category,
                {name: categories[name][category] for name in ("lexical", "semantic", "hybrid")},
            )
        )
    return [
        f"hybrid {category} {metric}: {legs['hybrid'][metric]:.3f} < "
        f"{max(legs['lexical'][metric], legs['semantic'][metric]):.3f}"
        for category, legs in cells
        for metric in FUSION_METRICS
        if legs["hybrid"][metric] < max(legs["lexical"][metric], legs["semantic"][metric]) - 1e-9
    ]
