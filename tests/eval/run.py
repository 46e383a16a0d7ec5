"""Command-line runner: start a daemon, seed, query, score, report, compare with the baseline.

    .venv/bin/python -m tests.eval.run [--profile standin|local] [--out report.json]
        [--dataset PATH] [--baseline PATH] [--threshold 0.02] [--repetitions 5] [--scale 0]
        [--write-baseline]

Exit status: 0 when nothing dropped, 1 when a metric dropped more than the threshold or the
baseline measured something else, 2 when an invariant failed (a hit outside its scope or time,
or a dataset that no longer separates the configurations). Environment: EVAL_OUT, EVAL_DATASET,
EVAL_THRESHOLD, EVAL_REPETITIONS, EVAL_SCALE (see docs/retrieval.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.eval import daemons, invariants
from tests.eval.dataset import DEFAULT_DATASET, Dataset, load_dataset
from tests.eval.harness import LIMIT, ConfigurationRun, evaluate
from tests.eval.report import (
    THRESHOLD,
    baseline_of,
    baseline_path,
    build_report,
    compare,
    read_json,
    write_json,
)
from tests.eval.seeding import Seeded, seed
from tests.eval.vectors import DaemonVectors, StandInVectors, VectorSource

PROFILES = ("standin", "local")
SUMMARY_METRICS = ("recall@5", "ndcg@10", "mrr")
LOG_TAIL = 4000


@dataclass
class Outcome:
    """One finished run: the report and what it was computed from (for the invariant checks)."""

    dataset: Dataset
    seeded: Seeded
    runs: list[ConfigurationRun]
    report: dict[str, Any]

    def invariant_failures(self) -> list[str]:
        return (
            invariants.scope_violations(self.runs, self.seeded)
            + invariants.temporal_violations(self.runs, self.seeded)
            + invariants.separation_failures(self.report["categories"])
        )


def vectors_for(profile: str, dataset: Dataset) -> VectorSource:
    if profile == "standin":
        return StandInVectors(dataset.concepts)
    if profile == "local":
        return DaemonVectors("local", "local", "all-MiniLM-L6-v2", 384)
    raise ValueError(f"unknown profile {profile!r}; known: {PROFILES}")


def config_for(profile: str) -> str:
    return daemons.standin_config() if profile == "standin" else daemons.local_config()


def run_on(
    client: httpx.Client,
    dataset: Dataset,
    vectors: VectorSource,
    *,
    repetitions: int = 0,
    scale: int = 0,
    limit: int = LIMIT,
    label: str = "retrieval benchmark",
    notes: dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Outcome:
    """Seed `dataset` into the daemon behind `client`, run every configuration, build the report."""
    seeded = seed(client, dataset, vectors, scale=scale, progress=progress)
    all_notes = dict(notes or {})
    if vectors.embeds_in_daemon:
        waited = daemons.wait_for_embeddings(client, seeded, vectors.profile)
        all_notes["embedding_wait_seconds"] = waited.seconds
        all_notes["embed_jobs"] = waited.jobs
    runs = evaluate(
        client, dataset, seeded, vectors, repetitions=repetitions, limit=limit, progress=progress
    )
    report = build_report(
        dataset=dataset,
        runs=runs,
        vectors=vectors.describe(),
        daemon={**daemons.describe(client), "embedding": _embedding_of(seeded, vectors)},
        repetitions=repetitions,
        scale=scale,
        limit=limit,
        # With a daemon that embeds by itself, drawers were written without vectors.
        ingest={**seeded.ingest(), "vectors_attached": vectors.attaches_documents},
        label=label,
        notes=all_notes,
    )
    return Outcome(dataset, seeded, runs, report)


def _embedding_of(seeded: Seeded, vectors: VectorSource) -> dict[str, Any] | None:
    """The daemon's embedding provider and model: as it answered the harness's vectors, or as
    configured for a daemon that embeds by itself."""
    if seeded.embedding_provenance is not None:
        return seeded.embedding_provenance
    if vectors.embeds_in_daemon:
        described = vectors.describe()
        return {k: described[k] for k in ("profile", "provider", "model", "dimensions")}
    return None


def run_benchmark(
    profile: str = "standin",
    *,
    dataset: Dataset | None = None,
    repetitions: int = 0,
    scale: int = 0,
    limit: int = LIMIT,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Outcome:
    """The whole benchmark on a daemon of its own, stopped afterwards."""
    chosen = dataset or load_dataset()
    with tempfile.TemporaryDirectory(prefix="memcastle-eval-") as scratch:
        root = (workdir or Path(scratch)) / f"daemon-{profile}"
        default_profile = "" if profile == "standin" else profile
        daemon = daemons.start_daemon(root, config_for(profile), default_profile)
        try:
            with daemon.client() as client:
                return run_on(
                    client,
                    chosen,
                    vectors_for(profile, chosen),
                    repetitions=repetitions,
                    scale=scale,
                    limit=limit,
                    progress=progress,
                )
        except Exception:
            # The daemon's side of a failure is in its log, which goes with the scratch dir.
            print(f"daemon log (end):\n{daemon.log()[-LOG_TAIL:]}", file=sys.stderr)
            raise
        finally:
            daemon.stop()


def summary_lines(report: dict[str, Any]) -> list[str]:
    """A table of the headline metrics per configuration, then per category."""
    head = f"{'configuration':16} {'category':12} " + " ".join(f"{m:>9}" for m in SUMMARY_METRICS)
    lines = [head]
    for config, metrics in report["configurations"].items():
        lines.append(_row(config, "(all)", metrics))
        for category, values in report["categories"][config].items():
            lines.append(_row("", category, values))
    for config, figures in report.get("latency", {}).items():
        lines.append(f"latency {config}: " + ", ".join(f"{k} {v:.2f}" for k, v in figures.items()))
    return lines


def _row(config: str, category: str, metrics: dict[str, float]) -> str:
    values = " ".join(f"{metrics.get(m, 0.0):9.3f}" for m in SUMMARY_METRICS)
    return f"{config:16} {category:12} {values}"


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.eval.run", description=__doc__)
    parser.add_argument("--profile", choices=PROFILES, default="standin")
    parser.add_argument("--dataset", type=Path, default=os.environ.get("EVAL_DATASET"))
    parser.add_argument("--out", type=Path, default=os.environ.get("EVAL_OUT"))
    parser.add_argument("--baseline", type=Path, default=None)
    parser.add_argument(
        "--threshold", type=float, default=float(os.environ.get("EVAL_THRESHOLD") or THRESHOLD)
    )
    parser.add_argument("--repetitions", type=int, default=_env_int("EVAL_REPETITIONS", 5))
    parser.add_argument("--scale", type=int, default=_env_int("EVAL_SCALE", 0))
    parser.add_argument(
        "--write-baseline", action="store_true", help="write this run's quality metrics as baseline"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    dataset = load_dataset(args.dataset or DEFAULT_DATASET)

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    started = time.monotonic()
    outcome = run_benchmark(
        args.profile,
        dataset=dataset,
        repetitions=args.repetitions,
        scale=args.scale,
        progress=say,
    )
    report = outcome.report
    say(f"finished in {time.monotonic() - started:.1f}s")
    if args.out:
        write_json(args.out, report)
        say(f"report written to {args.out}")
    print("\n".join(summary_lines(report)))
    failures = outcome.invariant_failures()
    for failure in failures:
        print(f"INVARIANT: {failure}")
    baseline = args.baseline or baseline_path(args.profile)
    if args.write_baseline:
        write_json(baseline, baseline_of(report))
        say(f"baseline written to {baseline}")
        return 2 if failures else 0
    status = 0
    if args.scale > 0:
        say("a scaled run is not comparable with the baseline; nothing compared")
    elif baseline.exists():
        comparison = compare(read_json(baseline), report, args.threshold)
        print(f"compared with {baseline}:")
        print("\n".join(comparison.lines()))
        status = comparison.exit_code
    else:
        say(f"no baseline at {baseline}; nothing compared")
    return 2 if failures else status


if __name__ == "__main__":
    sys.exit(main())
