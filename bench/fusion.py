"""Fusion methods for the hybrid ranking, compared offline on the retrieval benchmarks.

Trying a fusion method through the harness costs a daemon, a seeding and, for the conversational
benchmark, minutes per run. This collects each leg's ranked candidates once per benchmark and
profile, through the daemon's search API (`ranking=semantic` and `ranking=hybrid`, whose
`signals` carry the any-word lexical leg's scores, with a limit that holds every drawer a
question's scope can reach), then replays fusion methods over them in Python and scores each as
the harness does: the same pool, limit, tie order and metrics. Trying ten methods costs one
collection. `chosen` is the daemon's own `palace.search.fusion`; the others are the methods
docs/retrieval.md ("Fusion") compares it with. A query's lexical mass is computed here from the
dataset's texts, where the daemon reads it from its index: the replay of `chosen` gave the
harness's figures to the last digit.

    .venv/bin/python -m bench.fusion collect --out /tmp/fusion        # both profiles, 3 datasets
    .venv/bin/python -m bench.fusion compare --data /tmp/fusion       # the table of methods
    .venv/bin/python -m bench.fusion oracle --data /tmp/fusion        # one share per question
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Container, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from palace.search import fusion, lexical
from palace.search.chatter import is_chatter
from palace.search.speakers import voices
from tests.eval import api, conversations, daemons
from tests.eval.dataset import Dataset, load_dataset
from tests.eval.harness import LIMIT, request_body
from tests.eval.metrics import mean, order_ties, score_query
from tests.eval.run import config_for, vectors_for
from tests.eval.seeding import seed

COLLECT_LIMIT = 200
"""The API's largest page: more than any scope of the benchmarks holds, so each leg is whole."""
METRICS = ("hit@1", "hit@5", "hit@10", "all@10")
BENCHMARKS: dict[str, tuple[Callable[[int], Dataset], int]] = {
    "judged": (lambda _seed: load_dataset(), LIMIT),
    "session": (lambda seed: conversations.dataset("session", seed), conversations.LIMIT),
    "turn": (lambda seed: conversations.dataset("turn", seed), conversations.LIMIT),
}
"""Each benchmark's dataset, by the conversational generator's seed (the judged set has none)."""

Leg = list[tuple[str, float]]
"""(daemon drawer id, leg score), best first, equal scores by id: the daemon's order."""


# -- collection ---------------------------------------------------------------------------------


def collect(benchmark: str, profile: str, seed_of: int = conversations.SEED) -> dict[str, Any]:
    """Seed one benchmark on a daemon of its own and record each query's legs; `seed_of` the
    conversations is the generator's seed (another than the committed one is a fresh draw)."""
    make, limit = BENCHMARKS[benchmark]
    dataset = make(seed_of)
    vectors = vectors_for(profile, dataset)
    with tempfile.TemporaryDirectory(prefix="memcastle-fusion-") as scratch:
        default = "" if profile == "standin" else profile
        daemon = daemons.start_daemon(Path(scratch), config_for(profile), default)
        try:
            with daemon.client() as client:
                seeded = seed(client, dataset, vectors)
                if vectors.embeds_in_daemon:
                    daemons.wait_for_embeddings(client, seeded, vectors.profile)
                queries = [_legs(client, q, seeded, vectors) for q in dataset.queries]
        finally:
            daemon.stop()
    return {
        "benchmark": benchmark,
        "profile": profile,
        "seed": seed_of,
        "limit": limit,
        "queries": queries,
    }


def _legs(client: Any, query: Any, seeded: Any, vectors: Any) -> dict[str, Any]:
    def ask(configuration: str, limit: int) -> list[dict[str, Any]]:
        body = request_body(query, configuration, seeded.instants, vectors, limit)
        return api.search(client, body)[0]

    hybrid = ask("hybrid", COLLECT_LIMIT)
    lexical_any = [(h["id"], h["signals"]["lexical"]) for h in hybrid if "lexical" in h["signals"]]
    return {
        "id": query.id,
        "category": query.category,
        "grades": query.grades(),
        "names": {h["id"]: seeded.dataset_ids.get(h["id"], "?") for h in hybrid},
        "lexical": [(h["id"], h["score"]) for h in ask("lexical", COLLECT_LIMIT)],
        "lexical_any": sorted(lexical_any, key=lambda hit: (-hit[1], hit[0])),
        "semantic": [(h["id"], h["score"]) for h in ask("semantic", COLLECT_LIMIT)],
    }


# -- fusion methods -----------------------------------------------------------------------------


class Shapes(NamedTuple):
    """The drawers of a benchmark that are chatter and those that are dialogues, as the daemon's
    catalog would say (`palace.search.chatter`, `palace.search.speakers`)."""

    chatter: Container[str] = ()
    dialogues: Container[str] = ()


NO_SHAPES = Shapes()
Method = Callable[[Leg, Leg, float, Shapes], dict[str, float]]
"""(any-word lexical leg, semantic leg, the query's lexical mass, the drawers' shapes) -> fused
scores."""


def rrf(k: float = 60.0, lexical: float = 1.0, semantic: float = 1.0) -> Method:
    def fuse(lex: Leg, sem: Leg, mass: float = 0.0, shapes: Shapes = NO_SHAPES) -> dict[str, float]:
        fused: dict[str, float] = {}
        for weight, leg in ((lexical, lex), (semantic, sem)):
            for rank, (drawer, _score) in enumerate(leg, start=1):
                fused[drawer] = fused.get(drawer, 0.0) + weight / (k + rank)
        return fused

    return fuse


def _minmax(leg: Leg) -> dict[str, float]:
    if not leg:
        return {}
    high, low = leg[0][1], leg[-1][1]
    span = high - low
    return {d: (s - low) / span if span > 0 else 1.0 for d, s in leg}


def _zscore(leg: Leg) -> dict[str, float]:
    if not leg:
        return {}
    scores = [s for _, s in leg]
    mu = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mu) ** 2 for s in scores) / len(scores)) or 1.0
    return {d: (s - mu) / sd for d, s in leg}


def _max_norm(leg: Leg) -> dict[str, float]:
    if not leg or leg[0][1] <= 0:
        return {d: 0.0 for d, _ in leg}
    return {d: s / leg[0][1] for d, s in leg}


def combined(normalise: Callable[[Leg], dict[str, float]], lexical: float = 0.5) -> Method:
    """A weighted sum of each leg's normalised scores; a leg that missed a drawer adds its floor."""

    def fuse(lex: Leg, sem: Leg, mass: float = 0.0, shapes: Shapes = NO_SHAPES) -> dict[str, float]:
        nl, ns = normalise(lex), normalise(sem)
        floor_l = min(nl.values(), default=0.0)
        floor_s = min(ns.values(), default=0.0)
        return {
            d: lexical * nl.get(d, floor_l) + (1 - lexical) * ns.get(d, floor_s) for d in {*nl, *ns}
        }

    return fuse


def _peak(leg: Leg, depth: int) -> float:
    """How much the leg's first score stands out from the next `depth`: (s1 - mean) / s1."""
    if len(leg) < 2 or leg[0][1] <= 0:
        return 0.0
    rest = [s for _, s in leg[1 : depth + 1]]
    return max(0.0, (leg[0][1] - sum(rest) / len(rest)) / leg[0][1])


def peaked(
    normalise: Callable[[Leg], dict[str, float]], depth: int = 5, base: float = 0.5
) -> Method:
    """A normalised sum whose leg weights follow how peaked each leg's top scores are."""

    def fuse(lex: Leg, sem: Leg, mass: float = 0.0, shapes: Shapes = NO_SHAPES) -> dict[str, float]:
        pl, ps = _peak(lex, depth), _peak(sem, depth)
        weight = base if pl + ps == 0 else pl / (pl + ps)
        return combined(normalise, weight)(lex, sem, mass)

    return fuse


def peaked_rrf(k: float = 60.0, depth: int = 5) -> Method:
    """Reciprocal rank with each leg weighted by how peaked its top scores are."""

    def fuse(lex: Leg, sem: Leg, mass: float = 0.0, shapes: Shapes = NO_SHAPES) -> dict[str, float]:
        pl, ps = _peak(lex, depth), _peak(sem, depth)
        total = pl + ps
        wl, ws = (0.5, 0.5) if total == 0 else (pl / total, ps / total)
        return rrf(k, wl, ws)(lex, sem, mass)

    return fuse


def relative_sum(lexical: float = 1.0, semantic: float = 1.0, power: float = 1.0) -> Method:
    """Each leg's score divided by its best, raised to `power`, summed with weights: a leg's
    own confidence (how close a drawer is to its first) survives, unlike in rank fusion."""

    def fuse(lex: Leg, sem: Leg, mass: float = 0.0, shapes: Shapes = NO_SHAPES) -> dict[str, float]:
        nl, ns = _max_norm(lex), _max_norm(sem)
        return {
            d: lexical * nl.get(d, 0.0) ** power + semantic * ns.get(d, 0.0) ** power
            for d in {*nl, *ns}
        }

    return fuse


def coverage(lexical: float = 0.5, cap: float = 1.0) -> Method:
    """BM25 over the query's lexical mass (the sum of its terms' IDF: about what a drawer holding
    each term once scores), so a match on function words weighs little; plus the cosine."""

    def fuse(lex: Leg, sem: Leg, mass: float = 0.0, shapes: Shapes = NO_SHAPES) -> dict[str, float]:
        nl = {d: min(cap, s / mass) if mass > 0 else 0.0 for d, s in lex}
        ns = dict(sem)
        floor = min(ns.values(), default=0.0)
        return {d: lexical * nl.get(d, 0.0) + (1 - lexical) * ns.get(d, floor) for d in {*nl, *ns}}

    return fuse


def split(
    lexical: Callable[[Leg], dict[str, float]],
    semantic: Callable[[Leg], dict[str, float]],
    low: float,
    high: float,
) -> Method:
    """Each leg normalised its own way, the lexical share from `low` to `high` with the lexical
    leg's coverage (the daemon's family: `chosen` is one of it)."""

    def fuse(lex: Leg, sem: Leg, mass: float = 0.0, shapes: Shapes = NO_SHAPES) -> dict[str, float]:
        share = low if not lex or mass <= 0 else low + (high - low) * min(1.0, lex[0][1] / mass)
        nl, ns = lexical(lex), semantic(sem)
        floor = min(ns.values(), default=0.0)
        return {d: share * nl.get(d, 0.0) + (1 - share) * ns.get(d, floor) for d in {*nl, *ns}}

    return fuse


def chosen(lex: Leg, sem: Leg, mass: float = 0.0, shapes: Shapes = NO_SHAPES) -> dict[str, float]:
    """The daemon's own fusion (`palace.search.fusion`)."""
    fused = fusion.fuse(lex, sem, mass, shapes.chatter, shapes.dialogues)
    return {drawer: score for drawer, score, _ in fused}


def unweighed(
    lex: Leg, sem: Leg, mass: float = 0.0, shapes: Shapes = NO_SHAPES
) -> dict[str, float]:
    """The daemon's fusion without weighing chatter down (before "Chatter")."""
    return chosen(lex, sem, mass, Shapes(dialogues=shapes.dialogues))


def dialogues_alike(
    lex: Leg, sem: Leg, mass: float = 0.0, shapes: Shapes = NO_SHAPES
) -> dict[str, float]:
    """The daemon's fusion with a dialogue's lexical match counted in full (before "Dialogues")."""
    return chosen(lex, sem, mass, Shapes(chatter=shapes.chatter))


def with_constants(**constants: float) -> Method:
    """The daemon's fusion with other values of its constants (`palace.search.fusion` reads
    them at each call)."""

    def fuse(lex: Leg, sem: Leg, mass: float = 0.0, shapes: Shapes = NO_SHAPES) -> dict[str, float]:
        kept = {name: getattr(fusion, name) for name in constants}
        for name, value in constants.items():
            setattr(fusion, name, value)
        try:
            return chosen(lex, sem, mass, shapes)
        finally:
            for name, value in kept.items():
                setattr(fusion, name, value)

    return fuse


def dialogue_share(share: float) -> Method:
    """The daemon's fusion with another `DIALOGUE_SHARE`."""
    return with_constants(DIALOGUE_SHARE=share)


def fixed_share(share: float) -> Method:
    """The daemon's fusion with the lexical share fixed: coverage and dialogues do not move it."""
    return with_constants(LEXICAL_LOW=share, LEXICAL_HIGH=share, DIALOGUE_SHARE=1.0)


def methods() -> dict[str, Method]:
    found: dict[str, Method] = {
        "rrf k60": rrf(),
        "chosen": chosen,
        "unweighed": unweighed,
        "chosen, dialogues alike": dialogues_alike,
    }
    for share in (0.2, 0.3, 0.4, 0.6, 0.7, 0.85):
        found[f"chosen, dialogue share {share}"] = dialogue_share(share)
    shares = ((0.2, 0.6), (0.2, 0.3), (0.2, 0.4), (0.3, 0.3), (0.1, 0.4))
    shares += ((0.1, 0.2), (0.1, 0.3), (0.15, 0.25), (0.05, 0.2), (0.1, 0.1), (0.15, 0.3))
    for low, high in shares:
        found[f"minmax + z lex{low}-{high}"] = split(_minmax, _zscore, low, high)
        found[f"minmax + max lex{low}-{high}"] = split(_minmax, _max_norm, low, high)
    for k in (1, 5, 10, 20):
        found[f"rrf k{k}"] = rrf(k)
    for w in (0.3, 0.5, 0.7):
        found[f"wrrf k60 lex{w}"] = rrf(60, w, 1 - w)
    for k in (5, 10):
        for w in (0.3, 0.4):
            found[f"wrrf k{k} lex{w}"] = rrf(k, w, 1 - w)
    for name, norm in (("minmax", _minmax), ("z", _zscore), ("max", _max_norm)):
        for w in (0.2, 0.3, 0.4, 0.5, 0.6):
            found[f"{name} lex{w}"] = combined(norm, w)
        for depth in (3, 5, 10):
            found[f"peaked {name} d{depth}"] = peaked(norm, depth)
    for depth in (3, 5, 10):
        found[f"peaked rrf k10 d{depth}"] = peaked_rrf(10, depth)
        found[f"peaked rrf k60 d{depth}"] = peaked_rrf(60, depth)
    for w in (0.3, 0.5, 0.7):
        for p in (1.0, 2.0, 4.0):
            found[f"relsum lex{w} p{p}"] = relative_sum(w, 1 - w, p)
    for w in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6):
        for cap in (0.5, 1.0, 2.0):
            found[f"coverage lex{w} cap{cap}"] = coverage(w, cap)
    return found


def shapes_of(benchmark: str, seed_of: int = conversations.SEED) -> Shapes:
    """The dataset ids of a benchmark's documents that are chatter, and of those that are
    dialogues."""
    documents = BENCHMARKS[benchmark][0](seed_of).documents
    return Shapes(
        chatter={d.id for d in documents if is_chatter(d.content)},
        dialogues={d.id for d in documents if len(voices(d.content)) >= 2},
    )


def drawers_shaped(shapes: Shapes, names: Mapping[str, str]) -> Shapes:
    """`shapes` of dataset ids as the daemon's drawer ids, by `names` (drawer id -> dataset id)."""
    return Shapes(
        chatter={d for d, name in names.items() if name in shapes.chatter},
        dialogues={d for d, name in names.items() if name in shapes.dialogues},
    )


def masses(benchmark: str, seed_of: int = conversations.SEED) -> dict[str, float]:
    """Each query's lexical mass: the sum of its terms' BM25 IDF over every filed text."""
    dataset = BENCHMARKS[benchmark][0](seed_of)
    texts = [d.content for d in dataset.documents] + [s.content for s in dataset.supersessions]
    freq: dict[str, int] = {}
    for text in texts:
        for term in set(lexical.terms(text)):
            freq[term] = freq.get(term, 0) + 1
    n = len(texts)

    def idf(term: str) -> float:
        df = freq.get(term, 0)
        return math.log(1 + (n - df + 0.5) / (df + 0.5)) if df else 0.0

    return {q.id: sum(idf(t) for t in lexical.terms(q.text)) for q in dataset.queries}


# -- scoring ------------------------------------------------------------------------------------


def scored(record: dict[str, Any], method: Method | None, leg: str = "") -> list[dict[str, Any]]:
    """Each query's metrics under a method (or a single leg, as the daemon ranks it alone)."""
    limit = record["limit"]
    pool = fusion.pool(limit)
    out = []
    for q in record["queries"]:
        names = {**q["names"]}
        if method is None:
            hits = [tuple(h) for h in q[leg][:limit]]
        else:
            lex, sem = _leg(q["lexical_any"], pool), _leg(q["semantic"], pool)
            fused = method(lex, sem, record["mass"][q["id"]], record["shapes"])
            hits = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]
        ranked = order_ties([(names.get(d, "?" + d), s) for d, s in hits])
        metrics = score_query(ranked, q["grades"])
        out.append({"category": q["category"], **{m: metrics[m] for m in METRICS}})
    return out


def _leg(raw: Sequence[Sequence[Any]], pool: int) -> Leg:
    return [(str(d), float(s)) for d, s in raw[:pool]]


def cells(per_query: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Metrics overall ("all") and per category."""
    kinds = sorted({q["category"] for q in per_query})
    groups = {"all": per_query, **{k: [q for q in per_query if q["category"] == k] for k in kinds}}
    return {
        kind: mean([{m: q[m] for m in METRICS} for q in qs]) for kind, qs in groups.items() if qs
    }


def shortfall(
    fused: dict[str, dict[str, float]], best: dict[str, dict[str, float]]
) -> list[tuple[str, str, float]]:
    """The cells where the fused ranking is below the best leg: (kind, metric, gap)."""
    return [
        (kind, m, fused[kind][m] - best[kind][m])
        for kind in best
        for m in METRICS
        if fused[kind][m] < best[kind][m] - 1e-9
    ]


def best_leg(records: dict[str, Any]) -> dict[str, dict[str, float]]:
    lexical, semantic = (cells(scored(records, None, leg)) for leg in ("lexical", "semantic"))
    return {
        kind: {m: max(lexical[kind][m], semantic[kind][m]) for m in METRICS} for kind in lexical
    }


def load(data: Path) -> dict[str, dict[str, Any]]:
    """The collected runs in `data`, by file name, each with its queries' lexical masses and its
    drawers' shapes."""
    records = {p.stem: json.loads(p.read_text()) for p in sorted(data.glob("*.json"))}
    drawn = {(r["benchmark"], r.get("seed", conversations.SEED)) for r in records.values()}
    mass = {key: masses(*key) for key in drawn}
    shapes = {key: shapes_of(*key) for key in drawn}
    for record in records.values():
        key = (record["benchmark"], record.get("seed", conversations.SEED))
        record["mass"] = mass[key]
        named = {d: name for q in record["queries"] for d, name in q["names"].items()}
        record["shapes"] = drawers_shaped(shapes[key], named)
    return records


def compare(data: Path, only: Sequence[str], *, detail: bool = False) -> None:
    records = load(data)
    best = {name: best_leg(r) for name, r in records.items()}
    legs = {
        name: {leg: cells(scored(r, None, leg))["all"] for leg in ("lexical", "semantic")}
        for name, r in records.items()
    }
    print("runs:", ", ".join(records))
    for name in records:
        print(
            name, "lexical", _fmt(legs[name]["lexical"]), "semantic", _fmt(legs[name]["semantic"])
        )
    rows = []
    for label, method in methods().items():
        if only and not any(o in label for o in only):
            continue
        below, worst, overall = 0, 0.0, []
        for name, record in records.items():
            fused = cells(scored(record, method))
            gaps = shortfall(fused, best[name])
            below += len(gaps)
            worst = min([worst, *(g for _, _, g in gaps)])
            overall.append(f"{name}:{_fmt(fused['all'])}")
            if detail:
                overall.append(" ".join(f"[{k} {m} {g:+.3f}]" for k, m, g in gaps) + "\n")
        rows.append((below, worst, label, overall))
    for below, worst, label, overall in sorted(rows, key=lambda r: (r[0], -r[1])):
        print(f"{label:24} below {below:3} worst {worst:+.3f}  " + "  ".join(overall))


def oracle(data: Path, step: float = 0.025) -> None:
    """How far a lexical share chosen for each question could go: the share, from 0 to 1 by
    `step`, whose ranking falls short of the better leg's in the fewest metrics, then scores
    most, chosen by looking at the answer. No fusion can know it; it bounds what any rule for
    the share, fed by whatever the legs' scores say, could reach. Also: when the two legs' first
    hits differ, which one is right, by where the lexical leg's first stands in the semantic
    leg's ranking."""
    shares = [i * step for i in range(round(1 / step) + 1)]
    for name, record in load(data).items():
        legs = {leg: scored(record, None, leg) for leg in ("lexical", "semantic")}
        daemon = scored(record, chosen)
        by_share = [scored(record, fixed_share(share)) for share in shares]
        picked, more, less = [], 0, 0
        for i, (q, own) in enumerate(zip(record["queries"], daemon, strict=True)):
            floor = {m: max(legs["lexical"][i][m], legs["semantic"][i][m]) for m in METRICS}

            def rank(row: dict[str, Any], floor: dict[str, float] = floor) -> tuple[int, float]:
                short = sum(row[m] < floor[m] - 1e-9 for m in METRICS)
                return short, -sum(row[m] for m in METRICS)

            ranks = [rank(rows[i]) for rows in by_share]
            best = min(ranks)
            picked.append(by_share[ranks.index(best)][i])
            if rank(own) <= best:
                continue
            good = [s for s, r in zip(shares, ranks, strict=True) if r == best]
            lex = _leg(q["lexical_any"], fusion.pool(record["limit"]))
            share = fusion.lexical_weight(lex, record["mass"][q["id"]], record["shapes"].dialogues)
            more += min(good) > share
            less += max(good) < share
        floor_cells = best_leg(record)
        for label, rows in (("the daemon's share", daemon), ("the best share each", picked)):
            figures = cells(rows)
            below = len(shortfall(figures, floor_cells))
            print(f"{name:16} {label:20} {_fmt(figures['all'])}  below the best leg {below}")
        print(
            f"{name:16} questions the daemon's share ranks worse than the best: {more + less}"
            f" of {len(daemon)} (a larger share would do: {more}, a smaller: {less})"
        )
        for depth, counts in first_hits(record).items():
            right = dict(sorted(counts.items()))
            print(f"{name:16} lexical first is the semantic leg's {depth}: {right}")


def first_hits(record: dict[str, Any]) -> dict[str, Counter[str]]:
    """Of the questions whose legs put different drawers first, which first hit is evidence,
    by the semantic leg's rank of the lexical leg's first hit (2, 3, 4-5, lower or none)."""
    found: dict[str, Counter[str]] = {}
    for q in record["queries"]:
        lex, sem = q["lexical_any"], q["semantic"]
        if not lex or not sem or lex[0][0] == sem[0][0]:
            continue
        evidence = {d for d, name in q["names"].items() if q["grades"].get(name, 0) > 0}
        order = [d for d, _ in sem]
        at = order.index(lex[0][0]) + 1 if lex[0][0] in order else 0
        depth = "2" if at == 2 else "3" if at == 3 else "4-5" if 4 <= at <= 5 else "lower"
        right = " and ".join(
            leg for leg, hits in (("lexical", lex), ("semantic", sem)) if hits[0][0] in evidence
        )
        found.setdefault(depth, Counter())[right or "neither"] += 1
    return dict(sorted(found.items()))


def _fmt(metrics: dict[str, float]) -> str:
    return " ".join(f"{metrics[m]:.3f}" for m in METRICS)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fusion", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    grab = sub.add_parser("collect")
    grab.add_argument("--out", type=Path, required=True)
    grab.add_argument("--profile", action="append", choices=("standin", "local"))
    grab.add_argument("--benchmark", action="append", choices=tuple(BENCHMARKS))
    grab.add_argument(
        "--seed",
        type=int,
        default=conversations.SEED,
        help="the conversations' generator seed (another is a fresh draw of the same generator)",
    )
    table = sub.add_parser("compare")
    table.add_argument("--data", type=Path, required=True)
    table.add_argument("--only", action="append", default=[])
    table.add_argument("--detail", action="store_true", help="each run's cells below the best leg")
    bound = sub.add_parser("oracle", help="how far a lexical share chosen per question could go")
    bound.add_argument("--data", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "oracle":
        oracle(args.data)
        return 0
    if args.command == "compare":
        compare(args.data, args.only, detail=args.detail)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for profile in args.profile or ("standin", "local"):
        for benchmark in args.benchmark or tuple(BENCHMARKS):
            record = collect(benchmark, profile, args.seed)
            path = args.out / f"{benchmark}-{profile}.json"
            path.write_text(json.dumps(record))
            print(f"wrote {path}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
