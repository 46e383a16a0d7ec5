"""LongMemEval converter: the official question file as a harness dataset (session retrieval).

The user supplies the file (it is never bundled). Each question becomes its own wing, each of
its haystack sessions one drawer (turns as `role: content` lines), and the question a query
scoped to that wing whose relevant drawers are its answer sessions. Abstention questions
(`question_id` ending in `_abs`) have no answer to find and are skipped, counted in the report.
What comes out is labelled "session retrieval": it measures finding the right sessions, not the
question answering that a LongMemEval score means.

    .venv/bin/python -m tests.eval.longmemeval longmemeval_s.json [--out report.json]

Lexical always runs. Semantic and hybrid run only when EVAL_EMBEDDINGS_URL and
EVAL_EMBEDDINGS_MODEL (and EVAL_EMBEDDINGS_API_KEY when the endpoint needs one) name an
OpenAI-compatible provider: the daemon embeds the sessions itself. EVAL_LONGMEMEVAL_LIMIT caps
the number of questions; EVAL_REPETITIONS (default 1) the timed passes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.eval import daemons
from tests.eval.dataset import Dataset, parse_dataset
from tests.eval.report import write_json
from tests.eval.run import Outcome, run_on, summary_lines
from tests.eval.vectors import DaemonVectors, NoVectors, VectorSource

LABEL = "session retrieval"
ABSTENTION_SUFFIX = "_abs"
ROOM = "sessions"
LEXICAL_ONLY = ("lexical",)
ALL_RANKINGS = ("lexical", "semantic", "hybrid")
EMBEDDING_DIMENSIONS = 768


class LongMemEvalError(ValueError):
    """The file is not in LongMemEval's format."""


@dataclass
class Conversion:
    """The harness dataset (JSON form) and what the conversion left out."""

    data: dict[str, Any]
    questions: int
    skipped_abstention: int
    skipped_without_answer: int
    empty_sessions: int
    merged_copies: int

    def counts(self) -> dict[str, int]:
        return {
            "questions": self.questions,
            "skipped_abstention": self.skipped_abstention,
            "skipped_without_answer": self.skipped_without_answer,
            "empty_sessions": self.empty_sessions,
            "merged_identical_sessions": self.merged_copies,
        }


def session_text(turns: Sequence[Mapping[str, Any]]) -> str:
    """A session as the drawer stores it: one `role: content` line per turn."""
    return "\n".join(f"{turn.get('role', '')}: {turn.get('content', '')}" for turn in turns)


def convert(
    questions: object, *, limit: int | None = None, runs: Sequence[str] = LEXICAL_ONLY
) -> Conversion:
    """Turn LongMemEval's question list into the harness's dataset format."""
    if not isinstance(questions, list):
        raise LongMemEvalError("a LongMemEval file is a JSON list of questions")
    documents: list[dict[str, str]] = []
    queries: list[dict[str, Any]] = []
    abstention = without_answer = empty = merged = 0
    for index, item in enumerate(questions):
        if limit is not None and len(queries) >= limit:
            break
        question = _question(item, index)
        qid = str(question["question_id"])
        if qid.endswith(ABSTENTION_SUFFIX):
            abstention += 1
            continue
        wing = f"lme-{qid}"
        by_content: dict[str, str] = {}
        relevant: set[str] = set()
        answers = {str(s) for s in question["answer_session_ids"]}
        seen_ids: set[str] = set()
        sessions = zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True)
        for position, (session_id, turns) in enumerate(sessions):
            text = session_text(turns)
            if not text.strip():
                empty += 1
                continue
            doc_id = f"{qid}/{session_id}"
            if doc_id in seen_ids:
                doc_id = f"{doc_id}#{position}"
            seen_ids.add(doc_id)
            # The daemon stores an exact copy in a room once: identical sessions become one
            # drawer, relevant when any of them is.
            kept = by_content.get(text)
            if kept is None:
                kept = by_content[text] = doc_id
                documents.append({"id": doc_id, "wing": wing, "room": ROOM, "content": text})
            else:
                merged += 1
            if str(session_id) in answers:
                relevant.add(kept)
        if not relevant:
            without_answer += 1
            continue
        queries.append(
            {
                "id": qid,
                "category": str(question.get("question_type") or "unknown"),
                "text": str(question["question"]),
                "filter": {"wing": wing},
                "runs": list(runs),
                "relevant": [{"doc": doc, "grade": 2} for doc in sorted(relevant)],
            }
        )
    used_wings = {q["filter"]["wing"] for q in queries}
    data = {
        "name": "longmemeval-sessions",
        "version": 1,
        "description": f"LongMemEval questions converted for {LABEL}",
        "concepts": {},
        "documents": [d for d in documents if d["wing"] in used_wings],
        "supersessions": [],
        "mentions": [],
        "queries": queries,
    }
    return Conversion(data, len(queries), abstention, without_answer, empty, merged)


def _question(item: object, index: int) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise LongMemEvalError(f"question {index} is not an object")
    required = ("question_id", "question", "haystack_session_ids", "haystack_sessions")
    missing = [k for k in (*required, "answer_session_ids") if k not in item]
    if missing:
        raise LongMemEvalError(f"question {index} lacks {missing}")
    if len(item["haystack_session_ids"]) != len(item["haystack_sessions"]):
        raise LongMemEvalError(f"question {item['question_id']}: session ids and sessions differ")
    return item


def as_dataset(conversion: Conversion) -> Dataset:
    """Validate the converted dataset; its identity is the hash of its canonical JSON."""
    canonical = json.dumps(conversion.data, sort_keys=True, ensure_ascii=False).encode()
    return parse_dataset(
        conversion.data, sha256=hashlib.sha256(canonical).hexdigest(), size=len(canonical)
    )


@dataclass(frozen=True)
class Provider:
    url: str
    model: str
    api_key: str | None
    dimensions: int


def provider_from_env(env: Mapping[str, str]) -> Provider | None:
    """The embedding provider of semantic runs, when EVAL_EMBEDDINGS_URL and _MODEL are set."""
    url, model = env.get("EVAL_EMBEDDINGS_URL"), env.get("EVAL_EMBEDDINGS_MODEL")
    if not url or not model:
        return None
    dimensions = int(env.get("EVAL_EMBEDDINGS_DIMENSIONS") or EMBEDDING_DIMENSIONS)
    return Provider(url, model, env.get("EVAL_EMBEDDINGS_API_KEY") or None, dimensions)


def run_longmemeval(
    path: Path,
    *,
    limit: int | None = None,
    provider: Provider | None = None,
    repetitions: int = 1,
    workdir: Path | None = None,
) -> Outcome:
    """Convert `path` and run it on a daemon of its own."""
    raw = path.read_bytes()
    runs = ALL_RANKINGS if provider else LEXICAL_ONLY
    conversion = convert(json.loads(raw), limit=limit, runs=runs)
    dataset = as_dataset(conversion)
    vectors: VectorSource
    if provider is None:
        config, default_profile = '[embeddings]\ndefault_profile = ""\n', ""
        vectors = NoVectors()
    else:
        config = daemons.http_config(
            provider.url, provider.model, provider.api_key, provider.dimensions
        )
        default_profile = "eval"
        vectors = DaemonVectors("eval", "http", provider.model, provider.dimensions)
    notes = {
        "source_file_sha256": hashlib.sha256(raw).hexdigest(),
        "limit": limit,
        **conversion.counts(),
    }
    with tempfile.TemporaryDirectory(prefix="memcastle-lme-") as scratch:
        daemon = daemons.start_daemon(
            (workdir or Path(scratch)) / "daemon-lme", config, default_profile
        )
        try:
            with daemon.client() as client:
                return run_on(
                    client,
                    dataset,
                    vectors,
                    repetitions=repetitions,
                    label=LABEL,
                    notes=notes,
                    progress=lambda m: print(m, file=sys.stderr, flush=True),
                )
        finally:
            daemon.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.eval.longmemeval", description=__doc__)
    parser.add_argument("file", type=Path, help="a LongMemEval JSON file (e.g. longmemeval_s)")
    parser.add_argument("--out", type=Path, default=os.environ.get("EVAL_OUT"))
    parser.add_argument("--limit", type=int, default=os.environ.get("EVAL_LONGMEMEVAL_LIMIT"))
    parser.add_argument(
        "--repetitions", type=int, default=int(os.environ.get("EVAL_REPETITIONS") or 1)
    )
    args = parser.parse_args(argv)
    outcome = run_longmemeval(
        args.file,
        limit=args.limit,
        provider=provider_from_env(os.environ),
        repetitions=args.repetitions,
    )
    if args.out:
        write_json(args.out, outcome.report)
    print(f"{LABEL} (not a LongMemEval score): {json.dumps(outcome.report['notes'])}")
    print("\n".join(summary_lines(outcome.report)))
    failures = outcome.invariant_failures()
    for failure in failures:
        print(f"INVARIANT: {failure}")
    return 2 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
