"""The extract job's selection and sweeps against a real in-memory store (graph.md section 3).

The extraction records it works through are the real `ExtractionRecords` for what the job
selects, with a recording stand-in for what it writes (the real writes are tested end to end in
`test_graph_extraction.py`): which drawers are read, in which order, in which
batches, with which validity; which drawers have their facts closed and at which instant; which
predecessor a replacement's facts are linked to; what a failing provider leaves for the next run;
and how the sweeper decides to queue a job.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest
from surrealdb import RecordID

from graph import extraction
from graph.entities import EntityService
from graph.extraction_records import ExtractionRecords
from graph.providers import ExtractFailed, ExtractNotConfigured, Item
from graph.repositories.entities import EntityRepository
from graph.repositories.extraction import ExtractionRepository
from jobs.run import JobRun
from kernel.config import ExtractionConfig
from kernel.context import RequestContext
from kernel.errors import InputInvalid
from kernel.events import Event
from kernel.store import Store
from palace.filing import Filing
from palace.hierarchy import WingNotFound
from tests.support.palace_services import Palace

HEURISTIC = ExtractionConfig(provider="heuristic", batch_size=2)


class RecordingGraph(ExtractionRecords):
    """Selects as `ExtractionRecords` does; writes the marker (and one open fact per relation) as
    it would, and records every call."""

    def __init__(self, store: Store) -> None:
        super().__init__(ExtractionRepository(store), EntityService(EntityRepository(store)))
        self.store = store
        self.recorded: list[dict[str, Any]] = []
        self.closed: list[tuple[str, dt.datetime]] = []
        self.linked: list[tuple[str, str]] = []

    def record_extraction(
        self,
        drawer: Mapping[str, Any],
        entities: list[dict],
        relations: list[dict],
        *,
        extractor: str,
        job_id: str | None,
        valid_from: dt.datetime,
        predecessor: str | None = None,
    ) -> tuple[int, int]:
        self.recorded.append(
            {
                "drawer": drawer["id"],
                "predecessor": predecessor,
                "entities": entities,
                "relations": relations,
                "extractor": extractor,
                "job_id": job_id,
                "valid_from": valid_from,
                "has_content": "content" in drawer,
            }
        )
        for n, _ in enumerate(relations):
            self.store.query(
                "RELATE $a->relates_to->$b CONTENT $row",
                {
                    "a": RecordID("entity", f"{drawer['id']}-{n}-s"),
                    "b": RecordID("entity", f"{drawer['id']}-{n}-o"),
                    "row": {"provenance": {"drawer": drawer["id"]}, "valid_from": valid_from},
                },
            )
        self.store.query(
            "UPSERT type::record('drawer_extraction', $d) CONTENT {drawer: $d, job: $job}",
            {"d": drawer["id"], "job": job_id},
        )
        return len(entities), len(relations)

    def close_facts_of(self, drawer_id: str, at: dt.datetime) -> list[dict[str, Any]]:
        self.closed.append((drawer_id, at))
        self.store.query(
            "UPDATE relates_to SET valid_to = $at WHERE provenance.drawer = $d AND valid_to = NONE",
            {"d": drawer_id, "at": at},
        )
        return []

    def link_successor_facts(self, old_drawer_id: str, new_drawer_id: str) -> int:
        self.linked.append((old_drawer_id, new_drawer_id))
        return 0

    @property
    def read(self) -> list[str]:
        return [call["drawer"] for call in self.recorded]


class FakeJob:
    """What a handler sees of its job, with the saves it made."""

    def __init__(
        self, services: SimpleNamespace, params: dict[str, Any] | None = None, *, attempt: int = 1
    ) -> None:
        self.services = services
        self.job_id = str(uuid.uuid4())
        self.params = params or {}
        self.checkpoint: dict[str, Any] = {}
        self.attempt = attempt
        self.saves: list[dict[str, Any]] = []

    @property
    def resumed(self) -> bool:
        return self.attempt > 1

    def save(self, checkpoint: dict[str, Any], **progress: Any) -> None:
        self.checkpoint = dict(checkpoint)
        self.saves.append({"checkpoint": dict(checkpoint), **progress})

    def check(self) -> None:
        pass

    @contextmanager
    def holding(self, lock: threading.Lock) -> Iterator[None]:
        with lock:
            yield


@pytest.fixture
def graph(store: Store) -> RecordingGraph:
    return RecordingGraph(store)


@pytest.fixture
def services(palace: Palace, graph: RecordingGraph) -> SimpleNamespace:
    return install(palace, graph, HEURISTIC)


def install(palace: Palace, graph: Any, config: ExtractionConfig) -> SimpleNamespace:
    """What the extract job calls, with `graph` in the place of `ExtractionRecords`."""
    return SimpleNamespace(
        config=SimpleNamespace(extraction=config),
        hierarchy=palace.hierarchy,
        extraction_records=graph,
    )


def mined(document: str, chunk: int = 0, **origin: Any) -> dict[str, Any]:
    return {
        "kind": "file",
        "uri": f"/src/{document}",
        "origin": {
            "source_id": "src-1",
            "source": "directory",
            "document": document,
            "chunk": chunk,
            "revision": "r1",
            **origin,
        },
    }


def file(
    palace: Palace,
    ctx: RequestContext,
    content: str,
    source: dict[str, Any],
    *,
    wing: str = "work",
    valid_from: dt.datetime | None = None,
) -> dict[str, Any]:
    drawer, created = palace.filing.file(
        ctx, wing, "room", Filing(content=content, source=source, valid_from=valid_from)
    )
    assert created
    return drawer


def run(job: FakeJob) -> dict[str, Any]:
    return extraction.run(job)  # type: ignore[arg-type]


def test_current_mined_drawers_and_notes_are_read_oldest_first_in_batches(
    store: Store,
    palace: Palace,
    ctx: RequestContext,
    graph: RecordingGraph,
    services: SimpleNamespace,
) -> None:
    a = file(palace, ctx, "Alice works on Atlas.", mined("a.md"))
    note = file(palace, ctx, "Bob uses Vim.", {"kind": "note"})
    file(palace, ctx, "Carol owns Atlas.", {"kind": "manual"})
    file(palace, ctx, "Dave uses Emacs.", {"kind": "manual", "agent": "x"}, wing="diaries")
    b = file(palace, ctx, "Erin joined Acme Corp.", mined("b.md"))
    closed = file(palace, ctx, "Frank uses Git.", mined("c.md"))
    palace.revisions.retire(closed)
    job = FakeJob(services)
    assert run(job) == {"drawers": 3, "entities": 6, "relations": 3, "closed": 0}
    assert graph.read == [a["id"], note["id"], b["id"]]
    first = graph.recorded[0]
    assert first["entities"] == [
        {"name": "Alice", "kind": "other"},
        {"name": "Atlas", "kind": "project"},
    ]
    assert first["relations"] == [
        {"subject": "Alice", "predicate": "works_on", "object": "Atlas", "confidence": 0.6}
    ]
    assert (first["extractor"], first["job_id"]) == ("heuristic", job.job_id)
    assert not first["has_content"]
    # Batches of two: a save after each, the last kept for the end state.
    assert [(s["current"], s["total"], s.get("last", False)) for s in job.saves] == [
        (2, 3, False),
        (3, 3, True),
    ]
    # The markers are the cursor: nothing is read twice, even by another provider.
    services = install(palace, graph, ExtractionConfig(provider="command", command=("/bin/false",)))
    assert run(FakeJob(services)) == {"drawers": 0, "entities": 0, "relations": 0, "closed": 0}
    assert len(graph.recorded) == 3


def test_a_wing_narrows_the_selection(
    palace: Palace, ctx: RequestContext, graph: RecordingGraph, services: SimpleNamespace
) -> None:
    file(palace, ctx, "Alice works on Atlas.", mined("a.md"), wing="one")
    other = file(palace, ctx, "Bob uses Vim.", mined("b.md"), wing="two")
    assert run(FakeJob(services, {"wing": "two"}))["drawers"] == 1
    assert graph.read == [other["id"]]
    assert run(FakeJob(services, {"wing": "two"}))["drawers"] == 0
    gone = FakeJob(services, {"wing": "three"})
    assert run(gone)["drawers"] == 0
    assert gone.saves[-1]["message"] == "the wing no longer exists"


def test_facts_are_valid_from_the_source_time_else_the_drawer_never_later_than_now(
    store: Store,
    palace: Palace,
    ctx: RequestContext,
    graph: RecordingGraph,
    services: SimpleNamespace,
) -> None:
    past = dt.datetime(2026, 3, 1, 12, 0, 0, 1, tzinfo=dt.UTC)
    with_origin_time = file(
        palace, ctx, "A uses B.", mined("o.md", occurred_at="2026-02-01T00:00:00Z")
    )
    with_document = file(palace, ctx, "C uses D.", mined("d.md"), valid_from=past)
    stale_document = file(palace, ctx, "E uses F.", mined("s.md"), valid_from=past)
    future_note = file(
        palace, ctx, "G uses H.", {"kind": "note"}, valid_from=past.replace(year=2099)
    )
    store.query(
        "INSERT INTO source_document $rows",
        {
            "rows": [
                {
                    "id": RecordID("source_document", ["src-1", "d.md"]),
                    "revision": "r1",
                    "occurred_at": "2026-01-15T10:00:00Z",
                },
                {
                    "id": RecordID("source_document", ["src-1", "s.md"]),
                    "revision": "r2",
                    "occurred_at": "2026-01-16T10:00:00Z",
                },
            ]
        },
    )
    before = dt.datetime.now(dt.UTC)
    run(FakeJob(services))
    after = dt.datetime.now(dt.UTC)
    valid = {call["drawer"]: call["valid_from"] for call in graph.recorded}
    assert valid[with_origin_time["id"]] == dt.datetime(2026, 2, 1, tzinfo=dt.UTC)
    assert valid[with_document["id"]] == dt.datetime(2026, 1, 15, 10, tzinfo=dt.UTC)
    # The document moved on to another revision: its time is not this drawer's.
    assert valid[stale_document["id"]] == past
    assert before <= valid[future_note["id"]] <= after


def test_a_superseded_drawer_has_its_facts_closed_and_its_replacement_linked(
    store: Store,
    palace: Palace,
    ctx: RequestContext,
    graph: RecordingGraph,
    services: SimpleNamespace,
) -> None:
    old = file(palace, ctx, "Atlas is based in Berlin.", mined("a.md"))
    retired = file(palace, ctx, "Bob uses Vim.", mined("b.md"))
    quiet = file(palace, ctx, "nothing named here.", mined("c.md"))
    run(FakeJob(services))
    revision = palace.revisions.revise(
        ctx, old, Filing(content="Atlas is based in Paris.", source=mined("a.md"))
    )
    closed_retired = palace.revisions.retire(retired)
    palace.revisions.retire(quiet)
    result = run(FakeJob(services))
    # `quiet` had no open fact: nothing to close.
    assert result == {"drawers": 1, "entities": 2, "relations": 1, "closed": 2}
    assert sorted(graph.closed) == sorted(
        [(old["id"], revision.closed["valid_to"]), (retired["id"], closed_retired["valid_to"])]
    )
    assert graph.read[-1] == revision.replacement["id"]
    assert graph.linked == [(old["id"], revision.replacement["id"])]
    # Told its predecessor when recorded, so its facts never contradict the predecessor's.
    assert [
        r["predecessor"] for r in graph.recorded if r["drawer"] == revision.replacement["id"]
    ] == [old["id"]]
    # Closed once: the next run finds nothing open.
    assert run(FakeJob(services))["closed"] == 0
    assert len(graph.closed) == 2


def test_a_replacement_links_to_the_nearest_predecessor_that_was_read(
    palace: Palace, ctx: RequestContext, graph: RecordingGraph, services: SimpleNamespace
) -> None:
    first = file(palace, ctx, "Atlas is based in Berlin.", mined("a.md"))
    run(FakeJob(services))
    second = palace.revisions.revise(
        ctx, first, Filing("Atlas is based in Rome.", source=mined("a.md"))
    )
    third = palace.revisions.revise(
        ctx, second.replacement, Filing("Atlas is based in Oslo.", source=mined("a.md"))
    )
    run(FakeJob(services))
    # The middle version was never current at a run: never read, skipped in the lineage.
    assert graph.read == [first["id"], third.replacement["id"]]
    assert graph.linked == [(first["id"], third.replacement["id"])]
    assert [r["predecessor"] for r in graph.recorded if r["drawer"] == third.replacement["id"]] == [
        first["id"]
    ]


def test_a_resumed_run_links_what_it_recorded_before_a_crash(
    palace: Palace, ctx: RequestContext, graph: RecordingGraph, services: SimpleNamespace
) -> None:
    old = file(palace, ctx, "Atlas is based in Berlin.", mined("a.md"))
    run(FakeJob(services))
    new = palace.revisions.revise(ctx, old, Filing("Atlas is based in Rome.", source=mined("a.md")))
    job = FakeJob(services)
    # The first attempt recorded the replacement and crashed before linking it.
    graph.record_extraction(
        new.replacement,
        [],
        [],
        extractor="heuristic",
        job_id=job.job_id,
        valid_from=dt.datetime.now(dt.UTC),
    )
    job.attempt = 2
    run(job)
    assert graph.linked == [(old["id"], new.replacement["id"])]


class FailingAfter:
    """A provider that answers `good` drawers, then fails."""

    name = "command"
    batch_size = 1

    def __init__(self, good: int) -> None:
        self.good = good
        self.calls = 0

    def extract(self, items: Sequence[Item]) -> Iterator[Mapping[str, Any]]:
        for _ in items:
            self.calls += 1
            if self.calls > self.good:
                raise ExtractFailed("the extraction command exited with status 1")
            yield {"entities": [{"name": "X", "kind": "tool"}], "relations": []}


def test_a_failing_provider_fails_the_run_and_the_next_reads_what_is_left(
    palace: Palace,
    ctx: RequestContext,
    graph: RecordingGraph,
    monkeypatch: pytest.MonkeyPatch,
    services: SimpleNamespace,
) -> None:
    drawers = [file(palace, ctx, f"Drawer {n} uses Git.", mined(f"{n}.md")) for n in range(4)]
    monkeypatch.setattr(extraction.providers, "for_config", lambda config: FailingAfter(2))
    with pytest.raises(ExtractFailed):
        run(FakeJob(services))
    assert graph.read == [drawer["id"] for drawer in drawers[:2]]
    monkeypatch.setattr(extraction.providers, "for_config", lambda config: FailingAfter(10))
    assert run(FakeJob(services))["drawers"] == 2
    assert graph.read == [drawer["id"] for drawer in drawers]


def test_submission_is_refused_without_a_provider_and_checks_its_parameters(
    store: Store,
    palace: Palace,
    ctx: RequestContext,
    graph: RecordingGraph,
    services: SimpleNamespace,
) -> None:
    file(palace, ctx, "Alice works on Atlas.", mined("a.md"))
    assert extraction.parse({}, services) == {}
    assert extraction.parse({"wing": "work"}, services) == {"wing": "work"}
    with pytest.raises(InputInvalid, match="`path` is not an extract job parameter"):
        extraction.parse({"path": "/x"}, services)
    with pytest.raises(InputInvalid, match="`wing`"):
        extraction.parse({"wing": 3}, services)
    with pytest.raises(WingNotFound):
        extraction.parse({"wing": "nowhere"}, services)
    services = install(palace, graph, ExtractionConfig())
    with pytest.raises(ExtractNotConfigured) as refused:
        extraction.parse({}, services)
    assert (refused.value.status, refused.value.code) == (400, "memcastle::extract::not_configured")
    kind = extraction.EXTRACT
    assert (kind.gate({}), int(kind.priority), kind.writes_palace({})) == ("extract", 25, False)


@pytest.mark.parametrize(
    ("event", "queues", "noted"),
    [
        (Event("job", {"id": "j", "job_kind": "mine", "status": "completed"}), True, []),
        (Event("job", {"id": "j", "job_kind": "mine", "status": "running"}), False, []),
        (Event("job", {"id": "j", "job_kind": "embed", "status": "completed"}), False, []),
        (Event("resync", {"kind": "resync"}), True, []),
        (Event("drawer", {"action": "created", "id": "d1"}), False, ["d1"]),
        (Event("drawer", {"action": "updated", "id": "d1"}), False, []),
        (Event("wing", {"action": "created", "id": "w"}), False, []),
    ],
)
def test_the_sweeper_follows_completed_mines_and_filed_drawers(
    event: Event, queues: bool, noted: list[str]
) -> None:
    created: list[str] = []
    assert extraction._wanted(event, created) is queues
    assert created == noted


def sweeping(config: ExtractionConfig, store: Store) -> Any:
    """What the sweeper is built on; it queues nothing here, so it has no jobs or events."""
    records = ExtractionRecords(ExtractionRepository(store), EntityService(EntityRepository(store)))
    return SimpleNamespace(
        config=SimpleNamespace(extraction=config),
        extraction_records=records,
        jobs=None,
        events=None,
    )


def test_the_sweeper_looks_for_notes_among_filed_drawers(
    store: Store, palace: Palace, ctx: RequestContext
) -> None:
    sweeper = extraction.ExtractSweeper(sweeping(HEURISTIC, store))
    manual = file(palace, ctx, "Carol owns Atlas.", {"kind": "manual"})
    note = file(palace, ctx, "Bob uses Vim.", {"kind": "note"})
    assert not sweeper._has_note([manual["id"]])
    assert sweeper._has_note([manual["id"], note["id"]])
    assert not extraction.ExtractSweeper(sweeping(ExtractionConfig(), store)).enabled


def test_the_job_run_interface_is_the_one_faked_here() -> None:
    real = JobRun(
        {"id": "j", "kind": {"type": "extract", "wing": "w"}, "attempt": 2},
        None,  # type: ignore[arg-type]
        lambda checkpoint, progress: {},
        lambda run, result: None,  # type: ignore[arg-type,return-value]
    )
    assert (real.job_id, real.params, real.checkpoint, real.resumed) == (
        "j",
        {"wing": "w"},
        {},
        True,
    )
    real.save({"drawers": 1}, current=1, total=1, message="done", last=True)
    real.check()
