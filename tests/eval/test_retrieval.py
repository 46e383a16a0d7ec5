"""The everyday retrieval benchmark: the bundled dataset on a real daemon, against the baseline.

One daemon per module, configured with an `external` stand-in profile, so every vector is the
harness's and the figures measure the engine alone. The run is compared with the committed
baseline (`baselines/standin.json`): any metric of any configuration, overall or per category,
dropping more than 0.02 fails. Improvements pass; regenerate the baseline with
`python -m tests.eval.run --write-baseline` and commit it with the change that earned it.

The same dataset on the built-in `local` model is marked slow: the daemon embeds everything
itself, which measures the model as much as the engine.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.eval import daemons
from tests.eval.dataset import load_dataset
from tests.eval.invariants import (
    fusion_shortfalls,
    scope_violations,
    separation_failures,
    temporal_violations,
)
from tests.eval.report import baseline_path, compare, read_json
from tests.eval.run import Outcome, run_on
from tests.eval.vectors import DaemonVectors, StandInVectors
from tests.support.daemon import Daemon

REPETITIONS = int(os.environ.get("EVAL_REPETITIONS") or 0)
"""Timed passes; none by default here, because latency is never asserted."""


@pytest.fixture(scope="module")
def standin_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    daemon = daemons.start_daemon(tmp_path_factory.mktemp("eval-standin"), daemons.standin_config())
    yield daemon
    daemon.stop()


@pytest.fixture(scope="module")
def standin(standin_daemon: Daemon) -> Outcome:
    dataset = load_dataset()
    with standin_daemon.client() as client:
        return run_on(client, dataset, StandInVectors(dataset.concepts), repetitions=REPETITIONS)


def test_quality_does_not_drop_below_the_baseline(standin: Outcome) -> None:
    path = baseline_path("standin")
    assert path.exists(), f"no baseline at {path}: run python -m tests.eval.run --write-baseline"
    comparison = compare(read_json(path), standin.report)
    assert comparison.exit_code == 0, "\n".join(comparison.lines())
    assert not comparison.only_in_base, comparison.only_in_base


def test_no_hit_outside_its_wing_or_room(standin: Outcome) -> None:
    assert scope_violations(standin.runs, standin.seeded) == []


def test_no_hit_outside_its_time(standin: Outcome) -> None:
    assert temporal_violations(standin.runs, standin.seeded) == []


def test_the_dataset_still_separates_the_configurations(standin: Outcome) -> None:
    assert separation_failures(standin.report["categories"]) == []


def test_hybrid_is_never_below_its_best_leg(standin: Outcome) -> None:
    """Issue 26: any@1, any@5, any@10 and all@10, overall and per category."""
    assert fusion_shortfalls(standin.report) == []


def test_every_configuration_answered_every_query(standin: Outcome) -> None:
    counts = standin.report["query_counts"]
    assert set(counts) == {"lexical", "semantic", "hybrid", "lexical+expand"}
    everything = len(standin.dataset.queries)
    assert {counts[name]["all"] for name in ("lexical", "semantic", "hybrid")} == {everything}
    graph = sum(1 for q in standin.dataset.queries if q.category == "graph")
    assert graph >= 6
    assert counts["lexical+expand"] == {"all": graph, "graph": graph}


def test_expansion_reaches_what_shares_an_entity_with_the_top_hit(standin: Outcome) -> None:
    """Issue 7 item 8: expansion lifts graph recall@10 well above lexical alone, and appends
    only after the direct hits, which stay as lexical ranked them."""
    categories = standin.report["categories"]
    lexical = categories["lexical"]["graph"]["recall@10"]
    expanded = categories["lexical+expand"]["graph"]["recall@10"]
    assert expanded >= lexical + 0.5, (lexical, expanded)
    direct = {q.query.id: q for q in standin.runs[0].queries if q.query.category == "graph"}
    assert standin.runs[0].name == "lexical"
    [run] = [r for r in standin.runs if r.name == "lexical+expand"]
    for q in run.queries:
        plain = [hit.dataset_id for hit in direct[q.query.id].hits]
        assert [hit.dataset_id for hit in q.hits if not hit.expanded] == plain
        assert [hit.dataset_id for hit in q.hits][: len(plain)] == plain


def test_the_report_says_what_was_measured(standin: Outcome) -> None:
    report = standin.report
    assert report["dataset"]["sha256"] == standin.dataset.sha256
    assert report["vectors"]["source"] == "stand-in"
    assert report["vectors"]["dimensions"] == 384
    assert report["daemon"]["storage"]
    assert report["parameters"]["cutoffs"] == [1, 3, 5, 10]
    assert report["comparable"] is True
    assert report["latency"]["ingest"]["documents"] == len(standin.dataset.documents)
    assert report["latency"]["ingest"]["documents_per_second"] > 0
    assert len(standin.seeded.instants) == standin.dataset.last_epoch + 1


@pytest.fixture(scope="module")
def local_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    daemon = daemons.start_daemon(
        tmp_path_factory.mktemp("eval-local"), daemons.local_config(), "local"
    )
    yield daemon
    daemon.stop()


@pytest.fixture(scope="module")
def local(local_daemon: Daemon) -> Outcome:
    vectors = DaemonVectors("local", "local", "all-MiniLM-L6-v2", 384)
    with local_daemon.client() as client:
        return run_on(client, load_dataset(), vectors, repetitions=REPETITIONS)


@pytest.mark.slow
def test_local_profile_keeps_scope_and_time(local: Outcome) -> None:
    assert local.report["vectors"]["source"] == "daemon"
    assert scope_violations(local.runs, local.seeded) == []
    assert temporal_violations(local.runs, local.seeded) == []


@pytest.mark.slow
def test_local_profile_against_its_baseline(local: Outcome) -> None:
    path = baseline_path("local")
    if not path.exists():
        pytest.skip(f"no baseline at {path}")
    comparison = compare(read_json(path), local.report)
    assert comparison.exit_code == 0, "\n".join(comparison.lines())
