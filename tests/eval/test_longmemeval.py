"""The LongMemEval converter end to end: a small synthetic file in the official format, run
lexically on a daemon of its own (no embedding provider, as without EVAL_EMBEDDINGS_URL)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.eval.invariants import scope_violations, temporal_violations
from tests.eval.longmemeval import LABEL, provider_from_env, run_longmemeval
from tests.eval.samples import longmemeval_sample


def test_a_synthetic_file_runs_as_session_retrieval(tmp_path: Path) -> None:
    source = tmp_path / "longmemeval_sample.json"
    source.write_text(json.dumps(longmemeval_sample()))
    outcome = run_longmemeval(source, repetitions=1, workdir=tmp_path)
    report = outcome.report
    assert report["label"] == LABEL == "session retrieval"
    assert report["notes"]["skipped_abstention"] == 1
    assert report["notes"]["questions"] == 2
    assert report["vectors"]["source"] == "none"
    assert set(report["configurations"]) == {"lexical"}
    assert set(report["categories"]["lexical"]) == {"single-session-user", "multi-session"}
    per_query = report["queries"]["lexical"]
    assert per_query["q1"]["ranked"][0] == "q1/s1"  # "adopted" is only in the answer session
    assert report["configurations"]["lexical"]["hit@10"] == 1.0
    assert report["latency"]["lexical"]["samples"] == 2
    assert scope_violations(outcome.runs, outcome.seeded) == []
    assert temporal_violations(outcome.runs, outcome.seeded) == []


def test_semantic_runs_need_a_provider() -> None:
    assert provider_from_env({}) is None
    assert provider_from_env({"EVAL_EMBEDDINGS_URL": "http://127.0.0.1:9/v1"}) is None
    provider = provider_from_env(
        {
            "EVAL_EMBEDDINGS_URL": "http://127.0.0.1:9/v1",
            "EVAL_EMBEDDINGS_MODEL": "m",
            "EVAL_EMBEDDINGS_API_KEY": "k",
        }
    )
    assert provider is not None and provider.api_key == "k" and provider.dimensions == 768
