"""The report of a run, the committed quality baseline, and the comparison of the two.

A report says exactly what was measured (dataset hash, vector source, daemon, parameters) so that
two reports are compared only when they measured the same thing. The baseline keeps the quality
metrics only: latency depends on the machine and the build, and is never committed or asserted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.eval import TOOL_VERSION
from tests.eval.dataset import Dataset
from tests.eval.harness import ConfigurationRun
from tests.eval.metrics import CUTOFFS

THRESHOLD = 0.02
BASELINE_DIR = Path(__file__).resolve().parent / "baselines"
QUALITY_KEYS = ("tool", "label", "dataset", "parameters", "configurations", "categories")
"""What a baseline keeps of a report."""
PER_QUERY_METRICS = ("mrr", "recall@5", "ndcg@10")


def baseline_path(profile: str) -> Path:
    """The committed baseline of a vector profile (`standin`, `local`)."""
    return BASELINE_DIR / f"{profile}.json"


def build_report(
    *,
    dataset: Dataset,
    runs: Sequence[ConfigurationRun],
    vectors: Mapping[str, Any],
    daemon: Mapping[str, Any],
    repetitions: int,
    scale: int,
    limit: int,
    ingest: Mapping[str, float] | None = None,
    cutoffs: Sequence[int] = CUTOFFS,
    label: str = "retrieval benchmark",
    notes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything a run measured; `json.dumps(..., sort_keys=True)` keeps every table sorted."""
    latency: dict[str, Any] = {r.name: r.latency for r in runs if r.latency is not None}
    if ingest is not None:
        latency["ingest"] = dict(ingest)
    return {
        "tool": {"name": "memcastle retrieval harness", "version": TOOL_VERSION},
        "label": label,
        "dataset": dataset.describe(),
        "vectors": dict(vectors),
        "daemon": dict(daemon),
        "parameters": {
            "cutoffs": list(cutoffs),
            "limit": limit,
            "scale": scale,
            "vectors": {k: vectors.get(k) for k in ("source", "provider", "model", "dimensions")},
        },
        "comparable": scale == 0,
        "repetitions": repetitions,
        "configurations": {r.name: r.mean() for r in runs},
        "categories": {r.name: r.by_category() for r in runs},
        "query_counts": {r.name: _counts(r) for r in runs},
        "latency": latency,
        "queries": {r.name: _per_query(r, limit) for r in runs},
        **({"notes": dict(notes)} if notes else {}),
    }


def _counts(run: ConfigurationRun) -> dict[str, int]:
    counts: dict[str, int] = {"all": len(run.queries)}
    for q in run.queries:
        counts[q.query.category] = counts.get(q.query.category, 0) + 1
    return counts


def _per_query(run: ConfigurationRun, limit: int) -> dict[str, Any]:
    return {
        q.query.id: {
            "category": q.query.category,
            "ranked": q.ranked[:limit],
            **{k: q.metrics[k] for k in PER_QUERY_METRICS if k in q.metrics},
        }
        for q in run.queries
    }


def baseline_of(report: Mapping[str, Any]) -> dict[str, Any]:
    """The quality part of a report: what may be committed."""
    return {k: report[k] for k in QUALITY_KEYS if k in report}


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


@dataclass(frozen=True)
class Change:
    key: str
    base: float
    new: float

    @property
    def delta(self) -> float:
        return self.new - self.base


@dataclass
class Comparison:
    """What changed between a baseline and a new report, and whether that is a failure."""

    threshold: float
    changes: list[Change] = field(default_factory=list)
    """Every metric that changed, worst first."""
    problems: list[str] = field(default_factory=list)
    """Reasons the two reports cannot be compared (dataset, parameters)."""
    only_in_base: list[str] = field(default_factory=list)
    only_in_new: list[str] = field(default_factory=list)

    @property
    def drops(self) -> list[Change]:
        return [c for c in self.changes if c.delta < -self.threshold]

    @property
    def exit_code(self) -> int:
        return 1 if self.problems or self.drops else 0

    def lines(self) -> list[str]:
        out = [f"not comparable: {p}" for p in self.problems]
        out += [f"configuration only in the baseline: {c}" for c in self.only_in_base]
        out += [f"configuration only in the new report: {c}" for c in self.only_in_new]
        for c in self.changes:
            mark = "DROP" if c.delta < -self.threshold else "    "
            out.append(f"{mark} {c.key}: {c.base:.4f} -> {c.new:.4f} ({c.delta:+.4f})")
        if not out:
            out.append("no metric changed")
        return out


def compare(
    base: Mapping[str, Any], new: Mapping[str, Any], threshold: float = THRESHOLD
) -> Comparison:
    """Compare a new report (or baseline) with a baseline.

    Not comparable (a failure): another dataset hash, other parameters, or a scaled run. Failure:
    any metric of a configuration present in both, overall or per category, dropping by more
    than `threshold`. Configurations present in only one report are listed.
    """
    result = Comparison(threshold)
    base_hash = base.get("dataset", {}).get("sha256")
    new_hash = new.get("dataset", {}).get("sha256")
    if base_hash != new_hash:
        result.problems.append(f"dataset {new_hash} is not the baseline's {base_hash}")
    base_params, new_params = base.get("parameters", {}), new.get("parameters", {})
    for key in sorted(set(base_params) | set(new_params)):
        if base_params.get(key) != new_params.get(key):
            result.problems.append(
                f"parameter {key}: {new_params.get(key)!r}, baseline {base_params.get(key)!r}"
            )
    if new.get("comparable") is False:
        result.problems.append("a scaled run is never compared with the baseline")
    base_configs = set(base.get("configurations", {}))
    new_configs = set(new.get("configurations", {}))
    result.only_in_base = sorted(base_configs - new_configs)
    result.only_in_new = sorted(new_configs - base_configs)
    base_metrics, new_metrics = dict(_flatten(base)), dict(_flatten(new))
    for key in sorted(set(base_metrics) & set(new_metrics)):
        before, after = base_metrics[key], new_metrics[key]
        if abs(after - before) > 1e-9:
            result.changes.append(Change(key, before, after))
    result.changes.sort(key=lambda c: (c.delta, c.key))
    return result


def _flatten(report: Mapping[str, Any]) -> Iterator[tuple[str, float]]:
    for config, metrics in report.get("configurations", {}).items():
        for metric, value in metrics.items():
            yield f"{config} {metric}", float(value)
    for config, categories in report.get("categories", {}).items():
        for category, metrics in categories.items():
            for metric, value in metrics.items():
                yield f"{config}/{category} {metric}", float(value)
