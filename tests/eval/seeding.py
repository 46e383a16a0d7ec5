"""Seed a dataset into a daemon over HTTP, epoch by epoch, and remember what became of it.

No write route takes a timestamp for a correction, so time is made by waiting: after the writes
of an epoch the harness waits until the clock has passed the latest instant the daemon returned,
records that fresh instant as Tn, and waits again until the clock has passed Tn before the next
epoch writes anything. Every drawer of epoch n is then valid from before Tn, and every drawer
closed in epoch n + 1 is still valid at Tn: the instants separate the epochs exactly, with no
guessed sleep. The daemon runs on this machine, so its clock is this clock.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.eval import api
from tests.eval.dataset import Dataset, Document, Lifetime, Mention
from tests.eval.vectors import VectorSource

FILLER_WING = "eval-filler"
FILLER_ROOM_SIZE = 150
"""Filler drawers per room: small enough that one 200-hit search sees a whole room."""
FILLER_SEED = 20260101
_SYLLABLE_TEXT = (
    "zor vek qui lum brax tev quo zyn mip dra kel fum yat orp lix nuv sef gux wib tazh plo"
)
_SYLLABLES = _SYLLABLE_TEXT.split()


class SeedingError(RuntimeError):
    """The daemon did not store the dataset as written."""


@dataclass
class Seeded:
    """The dataset as it now lives in the daemon."""

    drawer_ids: dict[str, str] = field(default_factory=dict)
    """Dataset id -> daemon drawer id."""
    dataset_ids: dict[str, str] = field(default_factory=dict)
    """Daemon drawer id -> dataset id: hits are translated back through it before scoring."""
    instants: list[str] = field(default_factory=list)
    """Tn (RFC 3339) for every epoch n, recorded after that epoch's writes."""
    wings: dict[str, str] = field(default_factory=dict)
    """Daemon wing id -> wing name."""
    rooms: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Daemon room id -> (wing name, room name)."""
    placements: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Dataset id -> (wing name, room name), filler drawers included."""
    lifetimes: dict[str, Lifetime] = field(default_factory=dict)
    """Dataset id -> epochs of validity, filler drawers included."""
    documents: int = 0
    """Epoch-0 drawers written (with their vectors and mentions)."""
    ingest_seconds: float = 0.0
    last_write: dt.datetime | None = None
    embedding_provenance: dict[str, Any] | None = None
    """What the daemon recorded with the harness's vectors (provider, model, pipeline)."""

    def record(self, dataset_id: str, drawer: dict[str, Any], wing: str, room: str) -> None:
        earlier = self.dataset_ids.get(drawer["id"])
        if earlier is not None and earlier != dataset_id:
            # The daemon keeps one drawer for an exact copy in a room: two dataset ids would
            # share it and one of them could never be found.
            raise SeedingError(f"{dataset_id!r} was stored as a copy of {earlier!r}")
        self.drawer_ids[dataset_id] = drawer["id"]
        self.dataset_ids[drawer["id"]] = dataset_id
        self.wings[drawer["wing"]] = wing
        self.rooms[drawer["room"]] = (wing, room)
        self.placements[dataset_id] = (wing, room)
        self.saw(drawer)

    def saw(self, drawer: dict[str, Any] | None) -> None:
        """Remember the latest instant a write response carried."""
        if drawer is None:
            return
        for key in ("valid_from", "valid_to", "created_at", "updated_at"):
            if drawer.get(key):
                moment = parse_instant(drawer[key])
                if self.last_write is None or moment > self.last_write:
                    self.last_write = moment

    def ingest(self) -> dict[str, float]:
        rate = self.documents / self.ingest_seconds if self.ingest_seconds > 0 else 0.0
        return {
            "documents": self.documents,
            "seconds": self.ingest_seconds,
            "documents_per_second": rate,
        }


def parse_instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def format_instant(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def instant_after(
    moment: dt.datetime | None, clock: Callable[[], dt.datetime] = utc_now
) -> dt.datetime:
    """A fresh instant strictly later than `moment`, polling the clock (microseconds) for it."""
    while True:
        now = clock()
        if moment is None or now > moment:
            return now
        time.sleep(0.0001)


def seed(
    client: httpx.Client,
    dataset: Dataset,
    vectors: VectorSource,
    *,
    scale: int = 0,
    progress: Callable[[str], None] | None = None,
) -> Seeded:
    """File every document (epoch 0), then every epoch's corrections, recording T0..Tn."""
    seeded = Seeded()
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    for doc in (*dataset.documents, *filler_documents(scale)):
        drawer = api.create_drawer(client, doc.wing, doc.room, doc.content, doc.filing)
        seeded.record(doc.id, drawer, doc.wing, doc.room)
        seeded.lifetimes[doc.id] = Lifetime(0)
        if vectors.attaches_documents:
            vector = vectors.vector(doc.content)
            seeded.saw(
                _attached(
                    seeded, api.attach_embedding(client, drawer["id"], vectors.profile, vector)
                )
            )
    # A correction's mentions are recorded in its epoch, once its drawer exists.
    mentions: dict[str, list[Mention]] = {}
    for m in dataset.mentions:
        mentions.setdefault(m.doc, []).append(m)
    for doc in dataset.documents:
        _mention(client, seeded, mentions.get(doc.id, ()))
    seeded.ingest_seconds = time.perf_counter() - started
    seeded.documents = len(seeded.drawer_ids)
    _close_epoch(seeded)
    say(f"epoch 0: {seeded.documents} drawers filed")
    for epoch in dataset.epochs():
        instant_after(parse_instant(seeded.instants[-1]))
        for s in dataset.supersessions_in(epoch):
            answer = api.supersede(client, seeded.drawer_ids[s.doc], s.content)
            replacement = answer["replacement"]
            seeded.saw(answer["superseded"])
            wing, room = seeded.placements[s.doc]
            seeded.record(s.new_id, replacement, wing, room)
            _mention(client, seeded, mentions.get(s.new_id, ()))
            if vectors.attaches_documents:
                vector = vectors.vector(s.content)
                seeded.saw(
                    _attached(
                        seeded,
                        api.attach_embedding(client, replacement["id"], vectors.profile, vector),
                    )
                )
        _close_epoch(seeded)
        say(f"epoch {epoch}: {len(dataset.supersessions_in(epoch))} corrections filed")
    seeded.lifetimes.update(dataset.lifetimes)
    return seeded


def _attached(seeded: Seeded, answer: Any) -> dict[str, Any] | None:
    """Note the provenance an embedding PUT answered with; the drawer, if it returned one (its
    timestamps count too)."""
    if (
        isinstance(answer, dict)
        and "profile" in answer
        and isinstance(answer.get("provenance"), dict)
    ):
        seeded.embedding_provenance = answer["provenance"]
    return answer if isinstance(answer, dict) and "content" in answer else None


def _mention(client: httpx.Client, seeded: Seeded, mentions: Iterable[Mention]) -> None:
    """Link a filed drawer to the entities the dataset says it mentions
    (`POST /api/drawers/{id}/mentions`)."""
    for m in mentions:
        api.mention(client, seeded.drawer_ids[m.doc], m.entity, m.kind)


def _close_epoch(seeded: Seeded) -> None:
    seeded.instants.append(format_instant(instant_after(seeded.last_write)))


def filler_documents(count: int, seed_value: int = FILLER_SEED) -> Iterable[Document]:
    """`count` drawers of invented words (a fixed seed), in their own wing: no query matches them.

    They only make the palace bigger, for latency and for ranking under load; a scaled run is
    flagged as not comparable with the baseline.
    """
    rng = random.Random(seed_value)
    for index in range(count):
        words = (
            "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3)))
            for _ in range(rng.randint(12, 40))
        )
        yield Document(
            id=f"~filler-{index:06d}",
            wing=FILLER_WING,
            room=f"filler-{index // FILLER_ROOM_SIZE:04d}",
            content=" ".join(words) + ".",
        )
