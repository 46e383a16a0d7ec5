"""The harness's pure parts: metrics, stand-in vectors, dataset validation, comparison, converter.

No daemon here: these pin the arithmetic the retrieval figures rest on, with expectations
computed by hand, so a change to a metric or to the stand-in model shows up as a failing test
rather than as a silently moved baseline.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import re
from typing import Any

import pytest

from tests.eval import standin
from tests.eval.dataset import (
    CONFIGURATIONS,
    DEFAULT_RUNS,
    AsOf,
    Between,
    Current,
    DatasetError,
    Historical,
    Lifetime,
    Query,
    load_dataset,
    parse_dataset,
    visible,
)
from tests.eval.harness import (
    ConfigurationRun,
    Hit,
    QueryRun,
    request_body,
    temporal_filter,
)
from tests.eval.invariants import scope_violations, separation_failures, temporal_violations
from tests.eval.longmemeval import LongMemEvalError, as_dataset, convert, session_text
from tests.eval.metrics import (
    dcg,
    dedupe,
    latency_summary,
    mean,
    metric_names,
    nearest_rank,
    order_ties,
    score_query,
)
from tests.eval.report import baseline_of, compare
from tests.eval.samples import longmemeval_sample
from tests.eval.seeding import Seeded, filler_documents, instant_after
from tests.eval.vectors import DaemonVectors, StandInVectors

# -- metrics ----------------------------------------------------------------------------------


def test_metrics_of_a_ranking_with_graded_judgments() -> None:
    # Relevant: a (grade 2), b and c (grade 1); returned a, x, b, y.
    scores = score_query(["a", "x", "b", "y"], {"a": 2, "b": 1, "c": 1})
    assert scores["recall@1"] == pytest.approx(1 / 3)
    assert scores["recall@3"] == pytest.approx(2 / 3)
    assert scores["recall@10"] == pytest.approx(2 / 3)
    assert scores["precision@1"] == 1.0
    assert scores["precision@3"] == pytest.approx(2 / 3)
    assert scores["precision@5"] == pytest.approx(2 / 5)  # k, not the 4 returned
    assert scores["precision@10"] == pytest.approx(2 / 10)
    assert scores["hit@1"] == 1.0
    assert scores["all@10"] == 0.0
    assert scores["mrr"] == 1.0
    # DCG@3 = 3/log2(2) + 0 + 1/log2(4) = 3.5; IDCG@3 = 3 + 1/log2(3) + 1/log2(4).
    assert scores["ndcg@1"] == 1.0
    assert scores["ndcg@3"] == pytest.approx(3.5 / (3.5 + 1 / math.log2(3)))
    assert list(scores) == metric_names()


def test_metrics_when_the_answer_comes_third() -> None:
    scores = score_query(["x", "y", "b", "z"], {"b": 2})
    assert scores["mrr"] == pytest.approx(1 / 3)
    assert scores["hit@1"] == 0.0
    assert scores["hit@3"] == 1.0
    assert scores["all@3"] == 1.0
    assert scores["recall@1"] == 0.0
    assert scores["ndcg@3"] == pytest.approx(0.5)  # (3 / log2(4)) / 3
    assert scores["ndcg@10"] == pytest.approx(0.5)


def test_metrics_of_nothing_found() -> None:
    scores = score_query([], {"a": 1})
    assert all(value == 0.0 for value in scores.values())


def test_repeated_ids_count_once() -> None:
    assert dedupe(["a", "a", "b", "a"]) == ["a", "b"]
    assert score_query(["x", "x", "a"], {"a": 1})["mrr"] == pytest.approx(1 / 2)


def test_dcg_gain_and_discount() -> None:
    assert dcg([2, 1]) == pytest.approx(3 + 1 / math.log2(3))
    assert dcg([]) == 0.0


def test_equal_scores_are_ordered_by_dataset_id() -> None:
    hits = [("b", 1.0), ("a", 1.0), ("c", 0.5), ("e", 0.2), ("d", 0.2)]
    assert order_ties(hits) == ["a", "b", "c", "d", "e"]
    # Only adjacent ties: an appended tail is never moved ahead of the direct hits.
    assert order_ties([("b", 1.0), ("c", 0.5), ("a", 1.0)]) == ["b", "c", "a"]


def test_mean_over_queries() -> None:
    assert mean([{"mrr": 1.0}, {"mrr": 0.5}]) == {"mrr": 0.75}
    assert mean([]) == {}


def test_nearest_rank_percentiles() -> None:
    samples = [float(n) for n in range(20, 0, -1)]  # 1..20, unsorted
    assert nearest_rank(samples, 50) == 10.0
    assert nearest_rank(samples, 95) == 19.0
    assert nearest_rank(samples, 99) == 20.0
    assert nearest_rank(samples, 0) == 1.0
    assert nearest_rank([7.0], 99) == 7.0
    assert nearest_rank([1.0] * 99 + [5.0], 99) == 1.0  # ceil(0.99 * 100) = 99, not 100
    assert nearest_rank([], 50) == 0.0


def test_latency_summary() -> None:
    summary = latency_summary([10.0, 20.0, 30.0, 40.0], wall_seconds=0.5)
    assert summary == {
        "samples": 4,
        "mean_ms": 25.0,
        "p50_ms": 20.0,
        "p95_ms": 40.0,
        "p99_ms": 40.0,
        "queries_per_second": 8.0,
    }


# -- stand-in vectors -------------------------------------------------------------------------


def test_fnv1a_known_values() -> None:
    assert standin.fnv1a32("") == 0x811C9DC5
    assert standin.fnv1a32("a") == 0xE40C292C
    assert standin.fnv1a32("foobar") == 0xBF9CF968


def test_xorshift64_known_value() -> None:
    assert standin.xorshift64(1) == 1082269761


def test_tokens_drop_stop_words_and_apply_concepts() -> None:
    assert standin.tokens("The Formatter, and ruff_format!", {"formatter": "format"}) == [
        "format",
        "ruff",
        "format",
    ]
    assert standin.tokens("Tomás Rivera") == ["tomás", "rivera"]


def test_same_text_same_vector() -> None:
    first = standin.embed("ruff formats Python code", {"formats": "format"})
    again = standin.embed("ruff formats Python code", {"formats": "format"})
    assert first == again
    assert len(first) == standin.DIMENSIONS
    assert math.fsum(v * v for v in first) == pytest.approx(1.0)


def test_stand_in_vector_known_values() -> None:
    """Computed once and pinned: any change to tokenising, hashing or the background shows."""
    vector = standin.embed("ruff formats Python code", None, 384)
    slots = {standin.fnv1a32(t) % 384 for t in ("ruff", "formats", "python", "code")}
    assert slots == {316, 243, 279, 116}
    assert vector[116] == pytest.approx(0.505140544907614, abs=1e-12)
    assert vector[243] == pytest.approx(0.4906679401252472, abs=1e-12)
    assert vector[279] == pytest.approx(0.4922068907139666, abs=1e-12)
    assert vector[316] == pytest.approx(0.4997222721288669, abs=1e-12)
    assert vector[0] == pytest.approx(-0.016304471970748177, abs=1e-12)
    assert vector[383] == pytest.approx(-0.0003431056555675688, abs=1e-12)


def test_dimension_is_a_parameter() -> None:
    assert len(standin.embed("one two", None, 16)) == 16
    with pytest.raises(ValueError):
        standin.embed("one", None, 0)


def test_a_text_of_stop_words_points_along_dimension_zero() -> None:
    assert standin.embed("the and of", None, 8) == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_concepts_link_paraphrases() -> None:
    concepts = {"credentials": "secret", "secrets": "secret"}
    query = standin.embed("credentials", concepts)
    answer = standin.embed("secrets are kept in vault", concepts)
    other = standin.embed("payments logs are structured", concepts)
    assert standin.cosine(query, answer) > 0.4
    assert abs(standin.cosine(query, other)) < 0.1
    assert standin.cosine(query, other) != 0.0  # the background prevents exact ties


# -- dataset validation -----------------------------------------------------------------------


def minimal() -> dict[str, Any]:
    return {
        "name": "tiny",
        "version": 1,
        "description": "validation fixture",
        "concepts": {"db": "database"},
        "documents": [
            {"id": "a", "wing": "w", "room": "r", "content": "alpha"},
            {"id": "b", "wing": "w", "room": "r", "content": "beta"},
        ],
        "supersessions": [
            {"epoch": 1, "doc": "a", "new_id": "a2", "content": "alpha two"},
            {"epoch": 2, "doc": "a2", "new_id": "a3", "content": "alpha three"},
        ],
        "mentions": [{"doc": "b", "entity": "Beta", "kind": "concept"}],
        "queries": [
            {
                "id": "q1",
                "category": "lexical",
                "text": "alpha",
                "relevant": [{"doc": "a3", "grade": 2}],
            },
            {
                "id": "q2",
                "category": "temporal",
                "text": "alpha",
                "filter": {"wing": "w", "room": "r"},
                "temporal": {"between_epochs": [0, 2]},
                "relevant": [{"doc": "a", "grade": 2}, {"doc": "a2", "grade": 1}],
            },
        ],
    }


def refused(data: dict[str, Any], message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        parse_dataset(data)


def test_a_valid_dataset_is_accepted() -> None:
    dataset = parse_dataset(minimal())
    assert dataset.last_epoch == 2
    assert dataset.lifetimes == {
        "a": Lifetime(0, 1),
        "b": Lifetime(0),
        "a2": Lifetime(1, 2),
        "a3": Lifetime(2),
    }
    assert dataset.placements["a3"] == ("w", "r")
    q2 = dataset.queries[1]
    assert (q2.wing, q2.room, q2.temporal) == ("w", "r", Between(0, 2))
    assert q2.runs == DEFAULT_RUNS
    assert dataset.queries[0].temporal == Current()


def test_graph_queries_run_every_configuration_by_default() -> None:
    data = minimal()
    data["queries"][0]["category"] = "graph"
    assert parse_dataset(data).queries[0].runs == CONFIGURATIONS


def test_a_document_may_carry_the_create_routes_optional_fields() -> None:
    data = minimal()
    source = {"kind": "transcript", "uri": "conv://c/s1"}
    data["documents"][0].update(name="s1-t00", source=source, valid_from="2023-01-02T10:00:00Z")
    a, b = parse_dataset(data).documents[:2]
    assert a.filing == {"name": "s1-t00", "source": source, "valid_from": "2023-01-02T10:00:00Z"}
    assert b.filing == {}


def test_refuses_an_unknown_document_key() -> None:
    data = minimal()
    data["documents"][0]["tags"] = ["x"]
    refused(data, r"documents\[0\]: unknown keys \['tags'\]")


def test_refuses_a_duplicate_document_id() -> None:
    data = minimal()
    data["documents"][1]["id"] = "a"
    refused(data, "duplicate id 'a'")


def test_refuses_a_replacement_id_already_taken() -> None:
    data = minimal()
    data["supersessions"][0]["new_id"] = "b"
    refused(data, "duplicate id 'b'")
    data = minimal()
    data["supersessions"][1]["new_id"] = "a2"
    refused(data, "duplicate id 'a2'")


def test_refuses_a_supersession_in_epoch_zero() -> None:
    data = minimal()
    data["supersessions"][0]["epoch"] = 0
    refused(data, "epoch 0")


def test_refuses_a_supersession_of_an_unknown_doc() -> None:
    data = minimal()
    data["supersessions"][0]["doc"] = "ghost"
    refused(data, "unknown doc 'ghost'")


def test_refuses_a_supersession_of_a_doc_not_yet_filed() -> None:
    data = minimal()
    data["supersessions"][1]["epoch"] = 1  # a2 is itself filed in epoch 1
    refused(data, "unknown doc 'a2'")


def test_refuses_superseding_a_doc_twice() -> None:
    data = minimal()
    data["supersessions"][1]["doc"] = "a"
    refused(data, "'a' is superseded twice")


def test_refuses_a_mention_of_an_unknown_doc() -> None:
    data = minimal()
    data["mentions"][0]["doc"] = "ghost"
    refused(data, "unknown doc 'ghost'")


def test_refuses_a_duplicate_query_id() -> None:
    data = minimal()
    data["queries"][1]["id"] = "q1"
    refused(data, "duplicate query id")


def test_refuses_a_query_without_judgments() -> None:
    data = minimal()
    data["queries"][0]["relevant"] = []
    refused(data, "no judgments")
    del data["queries"][0]["relevant"]
    refused(data, "no judgments")


def test_refuses_judging_an_unknown_doc() -> None:
    data = minimal()
    data["queries"][0]["relevant"][0]["doc"] = "ghost"
    refused(data, "judges unknown doc 'ghost'")


def test_refuses_listing_grade_zero() -> None:
    data = minimal()
    data["queries"][0]["relevant"].append({"doc": "b", "grade": 0})
    refused(data, "grade 0")


def test_refuses_as_of_beyond_the_last_epoch() -> None:
    data = minimal()
    data["queries"][0]["temporal"] = {"as_of_epoch": 3}
    refused(data, "as_of_epoch 3 is beyond the last epoch 2")
    data["queries"][0]["temporal"] = {"as_of_epoch": 2}
    parse_dataset(data)


@pytest.mark.parametrize("window", [[1, 1], [2, 1], [0, 3]])
def test_refuses_an_empty_or_unknown_window(window: list[int]) -> None:
    data = minimal()
    data["queries"][1]["temporal"] = {"between_epochs": window}
    refused(data, "between_epochs")


def test_refuses_an_unknown_run_name() -> None:
    data = minimal()
    data["queries"][0]["runs"] = ["lexical", "bm42"]
    refused(data, "unknown run 'bm42'")


def test_refuses_a_malformed_temporal_choice() -> None:
    data = minimal()
    data["queries"][0]["temporal"] = {"as_of": "2026-01-01"}
    refused(data, "temporal is")


# -- ground truth -----------------------------------------------------------------------------


def test_visibility_by_epochs() -> None:
    closed = Lifetime(1, 3)  # filed in epoch 1, superseded in epoch 3
    assert not visible(closed, Current())
    assert [visible(closed, AsOf(k)) for k in range(4)] == [False, True, True, False]
    assert visible(closed, Between(0, 1))  # filed before T1
    assert not visible(closed, Between(3, 4))  # closed before T3
    assert visible(closed, Between(2, 3))
    assert visible(closed, Historical())
    assert visible(Lifetime(0), Current())


# -- the bundled dataset ----------------------------------------------------------------------


def _stems(text: str) -> set[str]:
    """Meaningful words, crudely stemmed: a shared 5-letter prefix counts as the same word."""
    words = [w for w in re.split(r"[\W_]+", text.lower()) if w and w not in standin.STOP_WORDS]
    return {w[:5] for w in words}


def test_the_bundled_dataset_is_large_enough_and_well_formed() -> None:
    dataset = load_dataset()
    assert len(dataset.documents) >= 60
    assert len(dataset.queries) >= 40
    assert {q.category for q in dataset.queries} == {
        "lexical",
        "paraphrase",
        "scoped",
        "temporal",
        "graph",
    }
    assert len(dataset.sha256) == 64


def test_every_judged_drawer_can_be_found_by_its_query() -> None:
    dataset = load_dataset()
    for q in dataset.queries:
        for j in q.relevant:
            wing, room = dataset.placements[j.doc]
            assert visible(dataset.lifetimes[j.doc], q.temporal), (q.id, j.doc)
            assert q.wing in (None, wing) and q.room in (None, room), (q.id, j.doc)


def test_paraphrases_share_no_word_with_their_answers_but_a_concept() -> None:
    dataset = load_dataset()
    texts = {d.id: d.content for d in dataset.documents}
    texts.update({s.new_id: s.content for s in dataset.supersessions})
    paraphrases = [q for q in dataset.queries if q.category == "paraphrase"]
    assert len(paraphrases) >= 10
    for q in paraphrases:
        for j in q.relevant:
            assert not _stems(q.text) & _stems(texts[j.doc]), (q.id, j.doc)
            shared = set(standin.tokens(q.text, dataset.concepts)) & set(
                standin.tokens(texts[j.doc], dataset.concepts)
            )
            assert shared, f"{q.id}: the concepts table links nothing to {j.doc}"


def test_scoped_queries_would_match_other_wings_without_their_filter() -> None:
    dataset = load_dataset()
    texts = {d.id: d.content for d in dataset.documents}
    for q in (q for q in dataset.queries if q.category == "scoped"):
        outside = [
            doc
            for doc, text in texts.items()
            if dataset.placements[doc][0] != q.wing and _stems(q.text) & _stems(text)
        ]
        assert outside, f"{q.id} needs no filter: no other wing shares its words"


def test_graph_answers_share_an_entity_with_the_top_hit_but_no_word_with_the_query() -> None:
    """Issue 7 item 8: only the knowledge graph can reach a graph query's answer. Every word of
    the query is in some drawer valid then (the top hit), which mentions an entity the answer
    mentions; the answer has none of the query's words."""
    dataset = load_dataset()
    texts = {d.id: d.content for d in dataset.documents}
    texts.update({s.new_id: s.content for s in dataset.supersessions})
    entities: dict[str, set[str]] = {}
    for m in dataset.mentions:
        entities.setdefault(m.doc, set()).add(m.entity)
    graph = [q for q in dataset.queries if q.category == "graph"]
    assert len(graph) >= 6
    for q in graph:
        assert "lexical+expand" in q.runs, q.id
        words = _stems(q.text)
        tops = [
            doc
            for doc, text in texts.items()
            if words <= _stems(text)
            and visible(dataset.lifetimes[doc], q.temporal)
            and q.wing in (None, dataset.placements[doc][0])
        ]
        assert tops, f"{q.id}: no drawer has every word of the query"
        for j in (j for j in q.relevant if j.grade == 2):
            assert not words & _stems(texts[j.doc]), (q.id, j.doc)
            assert any(entities.get(top, set()) & entities.get(j.doc, set()) for top in tops), (
                f"{q.id}: {j.doc} shares no entity with {tops}"
            )


def test_temporal_queries_ask_about_superseded_drawers() -> None:
    dataset = load_dataset()
    chained = {s.doc for s in dataset.supersessions} | {s.new_id for s in dataset.supersessions}
    temporal = [q for q in dataset.queries if q.category == "temporal"]
    assert {type(q.temporal) for q in temporal} == {Current, AsOf, Between, Historical}
    for q in temporal:
        assert all(j.doc in chained for j in q.relevant), q.id


# -- requests ---------------------------------------------------------------------------------

INSTANTS = ["2026-01-01T00:00:00.000001Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"]


def query(**overrides: Any) -> Query:
    fields: dict[str, Any] = {
        "id": "q",
        "category": "lexical",
        "text": "alpha",
        "wing": None,
        "room": None,
        "temporal": Current(),
        "runs": DEFAULT_RUNS,
        "relevant": (),
    }
    return Query(**{**fields, **overrides})


def test_temporal_choices_become_instants() -> None:
    assert temporal_filter(Current(), INSTANTS) == "current"
    assert temporal_filter(Historical(), INSTANTS) == "all"
    assert temporal_filter(AsOf(1), INSTANTS) == {"as_of": INSTANTS[1]}
    assert temporal_filter(Between(0, 2), INSTANTS) == {
        "between": {"from": INSTANTS[0], "until": INSTANTS[2]}
    }


def test_lexical_requests_carry_no_vector() -> None:
    vectors = StandInVectors({})
    body = request_body(query(wing="w", room="r"), "lexical", INSTANTS, vectors)
    assert body == {
        "text": "alpha",
        "ranking": "lexical",
        "limit": 10,
        "filter": {"temporal": "current", "wing": "w", "room": "r"},
    }
    expanded = request_body(query(), "lexical+expand", INSTANTS, vectors)
    assert expanded["expand"] is True and "query_embedding" not in expanded


def test_vector_requests_name_their_profile() -> None:
    body = request_body(query(temporal=AsOf(2)), "hybrid", INSTANTS, StandInVectors({}))
    assert body["profile"] == "standin"
    assert body["query_embedding"] == standin.embed("alpha")
    assert body["filter"] == {"temporal": {"as_of": INSTANTS[2]}}
    local = request_body(query(), "semantic", INSTANTS, DaemonVectors("local", "local", "m"))
    assert local["profile"] == "local" and "query_embedding" not in local


# -- seeding helpers --------------------------------------------------------------------------


def test_instant_after_waits_for_a_strictly_later_instant() -> None:
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    ticks = iter([start, start, start + dt.timedelta(microseconds=1)])
    assert instant_after(start, clock=lambda: next(ticks)) == start + dt.timedelta(microseconds=1)


def test_filler_documents_are_fixed_and_match_no_query() -> None:
    first = list(filler_documents(300))
    assert first == list(filler_documents(300))
    assert len({d.room for d in first}) == 2
    dataset = load_dataset()
    query_words = {w for q in dataset.queries for w in standin.tokens(q.text)}
    assert not query_words & {w for d in first for w in standin.tokens(d.content)}


# -- invariants -------------------------------------------------------------------------------


def seeded_fixture() -> Seeded:
    seeded = Seeded(instants=INSTANTS)
    seeded.wings = {"W1": "w", "W2": "other"}
    seeded.rooms = {"R1": ("w", "r"), "R2": ("other", "r")}
    seeded.lifetimes = {"a": Lifetime(0, 1), "a2": Lifetime(1), "b": Lifetime(0)}
    return seeded


def hit(doc: str, wing: str, room: str, valid_from: str, valid_to: str | None = None) -> Hit:
    return Hit(f"id-{doc}", doc, 1.0, wing, room, valid_from, valid_to, False)


def test_scope_invariant_catches_a_hit_from_another_wing() -> None:
    seeded = seeded_fixture()
    q = query(wing="w")
    good = hit("b", "W1", "R1", INSTANTS[0])
    bad = hit("b", "W2", "R2", INSTANTS[0])
    runs = [ConfigurationRun("lexical", [QueryRun(q, "lexical", [good, bad], [], {})])]
    violations = scope_violations(runs, seeded)
    assert len(violations) == 1 and "not 'w'" in violations[0]


def test_temporal_invariant_catches_a_closed_drawer_answering_now() -> None:
    seeded = seeded_fixture()
    stale = hit("a", "W1", "R1", "2025-12-31T00:00:00Z", "2026-01-01T00:00:00.5Z")
    fresh = hit("a2", "W1", "R1", "2026-01-01T00:00:00.5Z")
    runs = [ConfigurationRun("semantic", [QueryRun(query(), "semantic", [fresh, stale], [], {})])]
    violations = temporal_violations(runs, seeded)
    assert len(violations) == 2  # by its epochs, and by the validity it carries
    as_of_0 = query(temporal=AsOf(0))
    runs = [ConfigurationRun("semantic", [QueryRun(as_of_0, "semantic", [stale], [], {})])]
    assert temporal_violations(runs, seeded) == []


def test_separation_requires_semantic_to_beat_lexical_on_paraphrases() -> None:
    good = {
        "lexical": {"paraphrase": {"recall@5": 0.1, "mrr": 0.1}},
        "semantic": {"paraphrase": {"recall@5": 0.9, "mrr": 0.8}},
    }
    assert separation_failures(good) == []
    broken = copy.deepcopy(good)
    broken["semantic"]["paraphrase"]["mrr"] = 0.1
    assert len(separation_failures(broken)) == 1
    graph = {
        "lexical": {"graph": {"recall@10": 0.3}},
        "lexical+expand": {"graph": {"recall@10": 0.3}},
    }
    assert "expansion" in separation_failures(graph)[0]


# -- report comparison ------------------------------------------------------------------------


def report(**metrics: float) -> dict[str, Any]:
    values = {"mrr": 0.8, "recall@5": 0.7, **metrics}
    return {
        "dataset": {"name": "d", "sha256": "abc"},
        "parameters": {"cutoffs": [1, 3, 5, 10], "limit": 10, "scale": 0},
        "comparable": True,
        "configurations": {"lexical": dict(values)},
        "categories": {"lexical": {"paraphrase": dict(values)}},
        "latency": {"lexical": {"p50_ms": 3.0}},
    }


def test_identical_reports_compare_clean() -> None:
    result = compare(report(), report())
    assert result.exit_code == 0 and result.changes == []
    assert result.lines() == ["no metric changed"]


def test_a_drop_beyond_the_threshold_fails_and_comes_first() -> None:
    result = compare(report(), report(mrr=0.77, **{"recall@5": 0.75}))
    assert result.exit_code == 1
    assert [c.key for c in result.changes][:2] == ["lexical mrr", "lexical/paraphrase mrr"]
    assert result.changes[-1].delta == pytest.approx(0.05)
    assert result.lines()[0].startswith("DROP lexical mrr")


def test_a_small_drop_is_listed_but_passes() -> None:
    result = compare(report(), report(mrr=0.79))
    assert result.exit_code == 0
    assert len(result.changes) == 2


def test_another_dataset_or_other_parameters_are_not_comparable() -> None:
    other = report()
    other["dataset"]["sha256"] = "def"
    assert compare(report(), other).exit_code == 1
    other = report()
    other["parameters"]["limit"] = 20
    assert "parameter limit" in compare(report(), other).problems[0]
    scaled = report()
    scaled["comparable"] = False
    assert compare(report(), scaled).exit_code == 1


def test_configurations_in_only_one_report_are_listed() -> None:
    new = report()
    new["configurations"]["hybrid"] = {"mrr": 0.9}
    result = compare(report(), new)
    assert result.only_in_new == ["hybrid"] and result.exit_code == 0
    assert "only in the new report: hybrid" in "\n".join(result.lines())


def test_a_baseline_keeps_quality_only() -> None:
    full = {**report(), "tool": {}, "label": "x", "queries": {}, "vectors": {}, "repetitions": 5}
    kept = baseline_of(full)
    assert "latency" not in kept and "queries" not in kept and "repetitions" not in kept
    assert compare(kept, full).exit_code == 0


# -- LongMemEval converter --------------------------------------------------------------------


def test_longmemeval_questions_become_wings_sessions_and_queries() -> None:
    conversion = convert(longmemeval_sample())
    assert conversion.counts() == {
        "questions": 2,
        "skipped_abstention": 1,
        "skipped_without_answer": 0,
        "empty_sessions": 0,
        "merged_identical_sessions": 1,
    }
    docs = {d["id"]: d for d in conversion.data["documents"]}
    assert set(docs) == {"q1/s1", "q1/s2", "q3/s4", "q3/s6"}
    assert docs["q1/s1"]["wing"] == "lme-q1"
    assert (
        docs["q1/s1"]["content"]
        == "user: I adopted a beagle last week.\nassistant: Congratulations!"
    )
    q1, q3 = conversion.data["queries"]
    assert q1["filter"] == {"wing": "lme-q1"} and q1["runs"] == ["lexical"]
    assert q1["relevant"] == [{"doc": "q1/s1", "grade": 2}]
    assert q1["category"] == "single-session-user"
    # s5 is a copy of s4: the kept drawer is relevant in its place.
    assert {j["doc"] for j in q3["relevant"]} == {"q3/s4", "q3/s6"}
    dataset = as_dataset(conversion)
    assert len(dataset.queries) == 2 and len(dataset.sha256) == 64


def test_longmemeval_limit_caps_questions() -> None:
    conversion = convert(longmemeval_sample(), limit=1, runs=("lexical", "semantic", "hybrid"))
    assert conversion.questions == 1
    assert conversion.data["queries"][0]["runs"] == ["lexical", "semantic", "hybrid"]
    assert {d["wing"] for d in conversion.data["documents"]} == {"lme-q1"}


def test_longmemeval_refuses_another_format() -> None:
    with pytest.raises(LongMemEvalError):
        convert({"questions": []})
    with pytest.raises(LongMemEvalError, match="lacks"):
        convert([{"question_id": "x"}])


def test_session_text_is_one_line_per_turn() -> None:
    assert session_text(
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    ) == ("user: a\nassistant: b")
