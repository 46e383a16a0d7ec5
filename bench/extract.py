"""Extraction throughput of the `heuristic` provider: drawers read into the graph per second.

Run from the repository root: `.venv/bin/python bench/extract.py [--drawers 2000] [--seed 7]`.
It measures and reports; it is not a test, so it exits 0 whatever the figures are.

1. **Corpus.** `--drawers` mined drawers (500) of about 1,500 characters each: generated prose
   (lower-case filler words) with, per drawer, 6 to 12 sentences that name people, projects,
   tools, places and organisations from fixed pools (1,000 names in all, so entities recur and
   resolution finds most names already known) and state a relation with a phrase of the
   heuristic's table in most of them. Fixed seed; drawers filed through `FilingService` with a
   mining origin, in a fresh embedded palace in a temporary directory (`store.sync = every`, as
   a daemon has it).
2. **Provider alone.** `heuristic.extract` over every drawer's first 8,000 characters, in this
   process: drawers per second and the entities and relations found per drawer.
3. **The extract job.** The job's handler (`graph.extraction.run`) on this thread, with the real
   `ExtractionRecords` over the palace: drawers per second end to end (selection, reading, the
   provider, normalisation, entity resolution, the writes and markers), with the time spent in
   `ExtractionRecords.record_extraction` apart; then a second run, which finds nothing left to read
   (the cost of the selection alone).

`run(drawers, seed, root)` returns the figures as a dict, for `bench/graph.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _words(text: str) -> list[str]:
    return text.split()


FIRST = _words(
    "Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert "
    "Sybil Trent Victor Walter Yara Zoe Amir Bela Chen Dana Emil Farah Goran Hana Ines"
)
LAST = _words("Smith Jones Novak Silva Tanaka Weber Rossi Dubois Kowal Berg")
SYLLABLES = _words("ka lo mi ne ru sa ti vo xe zu bri cla dro fen gal hop")
TOOLS = _words(
    "PostgreSQL Redis Kafka Docker Kubernetes Terraform Grafana Prometheus Celery Django "
    "SurrealDB Nginx Jenkins Ansible Vault Consul Elasticsearch RabbitMQ Spark Airflow"
)
PLACES = _words(
    "Berlin Lisbon Madrid Paris Oslo Vienna Prague Dublin Warsaw Zurich Tokyo Austin Toronto "
    "Nairobi Lagos Lima Quito Seoul Taipei Perth"
)
PHRASES = (
    ("person", "works on", "project"),
    ("person", "is a member of the", "organization"),
    ("project", "depends on", "tool"),
    ("project", "uses", "tool"),
    ("person", "owns", "project"),
    ("project", "is part of", "organization"),
    ("organization", "is based in", "place"),
    ("person", "uses", "tool"),
)
FILLER = _words(
    "the a of to and in that it for on with as was at by this we be from or have not are but "
    "had they which one you were all there when can more if out so said what up its about "
    "into than them only other new some could time these two may then do first any like now "
    "my such make over our even most me state after also made many before must through back "
    "years where much your way well down should because each just those people how too little "
    "release deploy review branch merge ticket sprint budget meeting design schema migration"
)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


def pools(seed: int) -> dict[str, list[str]]:
    """The names a corpus draws from, by kind: about 1,000 in all."""
    rng = random.Random(seed)
    people = sorted({f"{rng.choice(FIRST)} {rng.choice(LAST)}" for _ in range(600)})
    projects = sorted(
        {_word(rng).capitalize() + rng.choice(("", "DB", "Hub", "OS")) for _ in range(250)}
    )
    organizations = sorted(
        {
            f"{_word(rng).capitalize()} {rng.choice(('Labs', 'Team', 'Corp', 'Group'))}"
            for _ in range(120)
        }
    )
    return {
        "person": people,
        "project": projects,
        "organization": organizations,
        "tool": TOOLS,
        "place": PLACES,
    }


def _filler(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(FILLER) for _ in range(words))


def corpus(drawers: int, seed: int, chars: int = 1500) -> list[str]:
    """`drawers` texts of about `chars` characters with names and stated relations."""
    names = pools(seed)
    rng = random.Random(seed + 1)
    texts = []
    for _ in range(drawers):
        sentences = []
        for _ in range(rng.randint(6, 12)):
            subject_kind, phrase, object_kind = rng.choice(PHRASES)
            subject, object_ = rng.choice(names[subject_kind]), rng.choice(names[object_kind])
            if rng.random() < 0.8:
                middle = phrase
            else:
                # Two names with other words between them: co-occurrence, no relation.
                middle = "met with" if subject_kind == "person" else "and"
            sentences.append(f"{subject} {middle} {object_}.")
            sentences.append(_filler(rng, rng.randint(8, 20)).capitalize() + ".")
        text = " ".join(sentences)
        while len(text) < chars:
            text += " " + _filler(rng, 12).capitalize() + "."
        texts.append(text[: chars + 200])
    return texts


class _Job:
    """What the extract handler sees of its job."""

    def __init__(self, services: Any) -> None:
        self.services = services
        self.job_id = str(uuid.uuid4())
        self.params: dict[str, Any] = {}
        self.checkpoint: dict[str, Any] = {}
        self.resumed = False

    def save(self, checkpoint: dict[str, Any], **progress: Any) -> None:
        self.checkpoint = dict(checkpoint)

    def check(self) -> None:
        pass

    @contextlib.contextmanager
    def holding(self, lock: threading.Lock) -> Iterator[None]:
        with lock:
            yield


def _file(store: Any, texts: list[str]) -> None:
    from kernel.context import RequestContext
    from palace.filing import Filing, FilingService
    from palace.hierarchy import HierarchyService
    from palace.repositories.filing import FilingRepository
    from palace.repositories.hierarchy import HierarchyRepository

    filing = FilingService(FilingRepository(store), HierarchyService(HierarchyRepository(store)))
    ctx = RequestContext.build(requested_by="bench")
    entries = []
    for index, text in enumerate(texts):
        origin = {
            "source_id": "bench",
            "source": "directory",
            "document": f"doc{index // 3:05}.md",
            "chunk": index % 3,
            "revision": "r1",
        }
        source = {"kind": "file", "uri": f"/bench/doc{index // 3:05}.md", "origin": origin}
        entries.append(("bench", "files", Filing(content=text, source=source, keep_copy=True)))
    for start in range(0, len(entries), 200):
        filing.file_batch(ctx, entries[start : start + 200])


def run(drawers: int = 500, seed: int = 7, root: Path | None = None) -> dict[str, Any]:
    """Build a palace of `drawers` mined drawers under `root` and measure; returns figures."""
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")
    django.setup()
    from graph import extraction, heuristic
    from graph.entities import EntityService
    from graph.extraction_records import ExtractionRecords
    from graph.providers import INPUT_CHARS
    from graph.repositories.entities import EntityRepository
    from graph.repositories.extraction import ExtractionRepository
    from kernel.config import ExtractionConfig, load_config
    from kernel.events import EventBus
    from kernel.store import Store
    from palace.hierarchy import HierarchyService
    from palace.repositories.hierarchy import HierarchyRepository

    texts = corpus(drawers, seed)
    figures: dict[str, Any] = {
        "drawers": drawers,
        "chars_per_drawer": statistics.mean(map(len, texts)),
    }

    started = time.perf_counter()
    found = [heuristic.extract(text[:INPUT_CHARS]) for text in texts]
    seconds = time.perf_counter() - started
    figures["provider_drawers_per_sec"] = drawers / seconds
    figures["entities_per_drawer"] = statistics.mean(len(f["entities"]) for f in found)
    figures["relations_per_drawer"] = statistics.mean(len(f["relations"]) for f in found)

    owned = root is None
    base = Path(tempfile.mkdtemp(prefix="memcastle-bench-extract-")) if root is None else root
    env = {"MEMCASTLE_PALACE_PATH": str(base / "palace"), "XDG_CONFIG_HOME": str(base / "config")}
    store = Store.from_config(load_config(env=env))
    store.open()
    try:
        store.migrate()
        started = time.perf_counter()
        _file(store, texts)
        figures["filing_secs"] = time.perf_counter() - started
        events = EventBus()
        records = ExtractionRecords(
            ExtractionRepository(store), EntityService(EntityRepository(store), events), events
        )
        recording: list[float] = []
        record = records.record_extraction

        def timed(*args: Any, **kwargs: Any) -> tuple[int, int]:
            begun = time.perf_counter()
            try:
                return record(*args, **kwargs)
            finally:
                recording.append(time.perf_counter() - begun)

        records.record_extraction = timed  # type: ignore[method-assign]
        services = SimpleNamespace(
            config=SimpleNamespace(extraction=ExtractionConfig(provider="heuristic")),
            hierarchy=HierarchyService(HierarchyRepository(store)),
            extraction_records=records,
        )
        started = time.perf_counter()
        result = extraction.run(_Job(services))  # type: ignore[arg-type]
        seconds = time.perf_counter() - started
        figures["job"] = result
        figures["job_secs"] = seconds
        figures["job_drawers_per_sec"] = result["drawers"] / seconds
        figures["record_secs"] = sum(recording)
        figures["record_ms_median"] = statistics.median(recording) * 1000
        figures["record_ms_p95"] = sorted(recording)[int(len(recording) * 0.95)] * 1000
        started = time.perf_counter()
        again = extraction.run(_Job(services))  # type: ignore[arg-type]
        figures["empty_run_ms"] = (time.perf_counter() - started) * 1000
        figures["empty_run_drawers"] = again["drawers"]
        for table in ("entity", "relates_to"):
            (row,) = store.one(f"SELECT count() AS n FROM {table} GROUP ALL")
            figures[f"{table}_rows"] = row["n"]
    finally:
        store.close()
        if owned:
            shutil.rmtree(base, ignore_errors=True)
    return figures


def report(figures: dict[str, Any]) -> None:
    print(
        f"corpus: {figures['drawers']} mined drawers, {figures['chars_per_drawer']:.0f} chars each"
    )
    print(
        f"heuristic provider alone: {figures['provider_drawers_per_sec']:,.0f} drawers/s "
        f"({figures['entities_per_drawer']:.1f} entities, {figures['relations_per_drawer']:.1f} "
        "relations per drawer)"
    )
    job = figures["job"]
    print(
        f"extract job: {job['drawers']} drawers in {figures['job_secs']:.2f} s = "
        f"{figures['job_drawers_per_sec']:,.1f} drawers/s; {job['entities']} mentions, "
        f"{job['relations']} relations recorded"
    )
    print(
        f"  in ExtractionRecords.record_extraction: {figures['record_secs']:.2f} s "
        f"({100 * figures['record_secs'] / figures['job_secs']:.0f}%), per drawer median "
        f"{figures['record_ms_median']:.1f} ms, p95 {figures['record_ms_p95']:.1f} ms"
    )
    print(f"graph: {figures['entity_rows']} entities, {figures['relates_to_rows']} relationships")
    print(
        f"a second run (nothing left to read): {figures['empty_run_ms']:.0f} ms, "
        f"{figures['empty_run_drawers']} drawers"
    )
    print(f"(palace filled in {figures['filing_secs']:.1f} s, not part of the figures)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drawers", type=int, default=500, help="mined drawers (500)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(f"started {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M:%S} UTC")
    report(run(args.drawers, args.seed))


if __name__ == "__main__":
    main()
