"""The judged dataset: its format, its validation and the ground truth derived from it.

A dataset is a JSON file identified by the SHA-256 of its bytes, so a baseline can never be
compared with results of a dataset that changed under it. Time is counted in epochs because the
supersede route takes no timestamp: epoch 0 files every document, epoch n >= 1 files that epoch's
corrections, and the harness records one instant after each epoch.

Validation refuses a dataset that would score something other than what its author meant: an
ambiguous id, a correction of nothing, a judgment of a drawer that never exists, a window that
selects no epoch. Every refusal is a `DatasetError` naming the offending item.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIGURATIONS: tuple[str, ...] = ("lexical", "semantic", "hybrid", "lexical+expand")
"""Every configuration a query may name in `runs`, in report order."""

GRAPH_CATEGORY = "graph"
DEFAULT_RUNS: tuple[str, ...] = ("lexical", "semantic", "hybrid")
"""Configurations meaningful for every category but `graph`: expansion is measured on graph
queries only, because elsewhere it would only measure how the page is padded."""

FILING_FIELDS: tuple[str, ...] = ("name", "source", "valid_from")
"""Optional document fields passed to `POST /api/wings/{w}/rooms/{r}/drawers` as they are."""

DEFAULT_DATASET = Path(__file__).resolve().parent / "data" / "devmemory.json"


class DatasetError(ValueError):
    """The dataset is refused; the message names the item at fault."""


@dataclass(frozen=True)
class Document:
    """A drawer filed in epoch 0; `filing` holds the optional fields of the create route (`name`,
    `source`, `valid_from`), sent as they are: a conversation's turns need a name each (an
    unnamed exact copy in a room is stored once), their session as `source.uri` and their
    time as validity start."""

    id: str
    wing: str
    room: str
    content: str
    filing: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Supersession:
    """A correction filed in epoch `epoch`: `doc` is closed and `new_id` replaces it in its room."""

    epoch: int
    doc: str
    new_id: str
    content: str


@dataclass(frozen=True)
class Mention:
    doc: str
    entity: str
    kind: str


@dataclass(frozen=True)
class Judgment:
    doc: str
    grade: int


@dataclass(frozen=True)
class Current:
    """What is valid now (no temporal option)."""


@dataclass(frozen=True)
class AsOf:
    epoch: int


@dataclass(frozen=True)
class Between:
    start: int
    end: int


@dataclass(frozen=True)
class Historical:
    """Every version ever filed."""


Temporal = Current | AsOf | Between | Historical


@dataclass(frozen=True)
class Query:
    id: str
    category: str
    text: str
    wing: str | None
    room: str | None
    temporal: Temporal
    runs: tuple[str, ...]
    relevant: tuple[Judgment, ...]

    def grades(self) -> dict[str, int]:
        return {j.doc: j.grade for j in self.relevant}


@dataclass(frozen=True)
class Lifetime:
    """The epochs a drawer lives in: created in `created`, closed in `ended` (None: still valid)."""

    created: int
    ended: int | None = None


@dataclass(frozen=True)
class Dataset:
    name: str
    version: int
    description: str
    concepts: Mapping[str, str]
    documents: tuple[Document, ...]
    supersessions: tuple[Supersession, ...]
    mentions: tuple[Mention, ...]
    queries: tuple[Query, ...]
    sha256: str = ""
    size: int = 0
    placements: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    lifetimes: Mapping[str, Lifetime] = field(default_factory=dict)

    @property
    def last_epoch(self) -> int:
        return max((s.epoch for s in self.supersessions), default=0)

    def epochs(self) -> range:
        return range(1, self.last_epoch + 1)

    def supersessions_in(self, epoch: int) -> list[Supersession]:
        return [s for s in self.supersessions if s.epoch == epoch]

    def describe(self) -> dict[str, Any]:
        """The dataset's identity as reports record it."""
        return {
            "name": self.name,
            "version": self.version,
            "sha256": self.sha256,
            "size": self.size,
            "documents": len(self.documents),
            "drawers": len(self.documents) + len(self.supersessions),
            "queries": len(self.queries),
            "last_epoch": self.last_epoch,
        }


def visible(lifetime: Lifetime, temporal: Temporal) -> bool:
    """Ground truth: is a drawer with this lifetime valid under `temporal`?

    Instant Tk is recorded after every write of epoch k and before any of epoch k + 1, so a
    drawer created in epoch c is valid from before Tc, and one closed in epoch e until after
    T(e-1) and before Te.
    """
    created, ended = lifetime.created, lifetime.ended
    match temporal:
        case Current():
            return ended is None
        case AsOf(epoch=k):
            return created <= k and (ended is None or ended > k)
        case Between(start=a, end=b):
            return created <= b and (ended is None or ended > a)
        case Historical():
            return True
    raise AssertionError(f"unknown temporal choice {temporal!r}")


def load_dataset(path: Path | str = DEFAULT_DATASET) -> Dataset:
    """Read, identify (SHA-256 of the bytes) and validate a dataset file."""
    raw = Path(path).read_bytes()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not JSON: {exc}") from exc
    return parse_dataset(data, sha256=hashlib.sha256(raw).hexdigest(), size=len(raw))


def parse_dataset(data: object, *, sha256: str = "", size: int = 0) -> Dataset:
    """Turn decoded JSON into a validated `Dataset`, or raise `DatasetError`."""
    top = _object(data, "dataset")
    concepts = _object(top.get("concepts", {}), "concepts")
    for word, concept in concepts.items():
        if not isinstance(concept, str) or not concept:
            raise DatasetError(f"concepts: {word!r} must map to a non-empty string")
    documents = tuple(_document(d, i) for i, d in enumerate(_list(top, "documents")))
    supersessions = tuple(
        _supersession(s, i) for i, s in enumerate(_list(top, "supersessions", required=False))
    )
    mentions = tuple(_mention(m, i) for i, m in enumerate(_list(top, "mentions", required=False)))
    queries = tuple(_query(q, i) for i, q in enumerate(_list(top, "queries")))
    version = top.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise DatasetError("version must be an integer")
    placements, lifetimes = _check_drawers(documents, supersessions)
    _check_mentions(mentions, lifetimes)
    last_epoch = max((s.epoch for s in supersessions), default=0)
    _check_queries(queries, lifetimes, last_epoch)
    return Dataset(
        name=_text(top, "name", "dataset"),
        version=version,
        description=str(top.get("description", "")),
        concepts=dict(concepts),
        documents=documents,
        supersessions=supersessions,
        mentions=mentions,
        queries=queries,
        sha256=sha256,
        size=size,
        placements=placements,
        lifetimes=lifetimes,
    )


def _check_drawers(
    documents: Sequence[Document], supersessions: Sequence[Supersession]
) -> tuple[dict[str, tuple[str, str]], dict[str, Lifetime]]:
    """Ids are unique, and each correction closes a drawer that exists by then, exactly once."""
    placements: dict[str, tuple[str, str]] = {}
    lifetimes: dict[str, Lifetime] = {}
    for doc in documents:
        if doc.id in placements:
            raise DatasetError(f"documents: duplicate id {doc.id!r}")
        placements[doc.id] = (doc.wing, doc.room)
        lifetimes[doc.id] = Lifetime(0)
    new_ids = {s.new_id for s in supersessions}
    for s in sorted(supersessions, key=lambda s: s.epoch):
        where = f"supersession {s.doc!r} -> {s.new_id!r}"
        if s.epoch < 1:
            raise DatasetError(f"{where}: epoch {s.epoch}; corrections start at epoch 1")
        if s.new_id in placements:
            raise DatasetError(f"{where}: duplicate id {s.new_id!r}")
        old = lifetimes.get(s.doc)
        if old is None or old.created >= s.epoch:
            later = " (it is filed in this epoch or later)" if s.doc in new_ids else ""
            raise DatasetError(f"{where}: unknown doc {s.doc!r}{later}")
        if old.ended is not None:
            raise DatasetError(f"{where}: {s.doc!r} is superseded twice")
        lifetimes[s.doc] = Lifetime(old.created, s.epoch)
        placements[s.new_id] = placements[s.doc]
        lifetimes[s.new_id] = Lifetime(s.epoch)
    return placements, lifetimes


def _check_mentions(mentions: Sequence[Mention], lifetimes: Mapping[str, Lifetime]) -> None:
    for m in mentions:
        if m.doc not in lifetimes:
            raise DatasetError(f"mention of {m.entity!r}: unknown doc {m.doc!r}")


def _check_queries(
    queries: Sequence[Query], lifetimes: Mapping[str, Lifetime], last_epoch: int
) -> None:
    seen: set[str] = set()
    for q in queries:
        where = f"query {q.id!r}"
        if q.id in seen:
            raise DatasetError(f"{where}: duplicate query id")
        seen.add(q.id)
        if not q.relevant:
            raise DatasetError(f"{where}: no judgments")
        for j in q.relevant:
            if j.doc not in lifetimes:
                raise DatasetError(f"{where}: judges unknown doc {j.doc!r}")
            if j.grade == 0:
                raise DatasetError(f"{where}: lists {j.doc!r} with grade 0; leave it out instead")
        match q.temporal:
            case AsOf(epoch=k) if k < 0 or k > last_epoch:
                raise DatasetError(
                    f"{where}: as_of_epoch {k} is beyond the last epoch {last_epoch}"
                )
            case Between(start=a, end=b) if a < 0 or a >= b or b > last_epoch:
                raise DatasetError(
                    f"{where}: between_epochs [{a}, {b}] is empty or beyond the last epoch "
                    f"{last_epoch}"
                )
        for run in q.runs:
            if run not in CONFIGURATIONS:
                raise DatasetError(f"{where}: unknown run {run!r}; known: {list(CONFIGURATIONS)}")


def _document(item: object, index: int) -> Document:
    where = f"documents[{index}]"
    obj = _object(item, where)
    unknown = set(obj) - {"id", "wing", "room", "content", *FILING_FIELDS}
    if unknown:
        raise DatasetError(f"{where}: unknown keys {sorted(unknown)}")
    return Document(
        id=_text(obj, "id", where),
        wing=_text(obj, "wing", where),
        room=_text(obj, "room", where),
        content=_text(obj, "content", where),
        filing={k: obj[k] for k in FILING_FIELDS if obj.get(k) is not None},
    )


def _supersession(item: object, index: int) -> Supersession:
    where = f"supersessions[{index}]"
    obj = _object(item, where)
    return Supersession(
        epoch=_int(obj, "epoch", where),
        doc=_text(obj, "doc", where),
        new_id=_text(obj, "new_id", where),
        content=_text(obj, "content", where),
    )


def _mention(item: object, index: int) -> Mention:
    where = f"mentions[{index}]"
    obj = _object(item, where)
    return Mention(
        doc=_text(obj, "doc", where),
        entity=_text(obj, "entity", where),
        kind=_text(obj, "kind", where),
    )


def _query(item: object, index: int) -> Query:
    obj = _object(item, f"queries[{index}]")
    where = f"query {obj.get('id', index)!r}"
    category = _text(obj, "category", where)
    scope = _object(obj.get("filter", {}), f"{where} filter")
    unknown = set(scope) - {"wing", "room"}
    if unknown:
        raise DatasetError(f"{where}: filter keys {sorted(unknown)} are not wing or room")
    runs_raw = obj.get("runs")
    if runs_raw is None:
        runs = CONFIGURATIONS if category == GRAPH_CATEGORY else DEFAULT_RUNS
    elif isinstance(runs_raw, list) and all(isinstance(r, str) for r in runs_raw):
        runs = tuple(runs_raw)
    else:
        raise DatasetError(f"{where}: runs must be a list of configuration names")
    relevant: list[Judgment] = []
    for i, j in enumerate(_list(obj, "relevant", required=False)):
        judged = _object(j, f"{where} relevant[{i}]")
        relevant.append(
            Judgment(_text(judged, "doc", where), _int(judged, "grade", f"{where} relevant[{i}]"))
        )
    grades = [j.grade for j in relevant]
    if any(g not in (0, 1, 2) for g in grades):
        raise DatasetError(f"{where}: grades are 2 (answer) or 1 (related)")
    docs = [j.doc for j in relevant]
    if len(set(docs)) != len(docs):
        raise DatasetError(f"{where}: a doc is judged twice")
    return Query(
        id=_text(obj, "id", where),
        category=category,
        text=_text(obj, "text", where),
        wing=_optional_text(scope, "wing", where),
        room=_optional_text(scope, "room", where),
        temporal=_temporal(obj.get("temporal"), where),
        runs=runs,
        relevant=tuple(relevant),
    )


def _temporal(raw: object, where: str) -> Temporal:
    if raw is None:
        return Current()
    if raw == "historical":
        return Historical()
    if isinstance(raw, dict) and set(raw) == {"as_of_epoch"}:
        epoch = raw["as_of_epoch"]
        if isinstance(epoch, int) and not isinstance(epoch, bool):
            return AsOf(epoch)
    if isinstance(raw, dict) and set(raw) == {"between_epochs"}:
        pair = raw["between_epochs"]
        if (
            isinstance(pair, list)
            and len(pair) == 2
            and all(isinstance(e, int) and not isinstance(e, bool) for e in pair)
        ):
            return Between(pair[0], pair[1])
    raise DatasetError(
        f"{where}: temporal is {{'as_of_epoch': n}}, {{'between_epochs': [a, b]}} or "
        f"'historical', not {raw!r}"
    )


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DatasetError(f"{where} must be a JSON object")
    return value


def _list(obj: Mapping[str, Any], key: str, *, required: bool = True) -> list[Any]:
    value = obj.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list):
        raise DatasetError(f"{key} must be a list")
    return value


def _text(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise DatasetError(f"{where}: {key} must be a non-empty string")
    return value


def _optional_text(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    return None if obj.get(key) is None else _text(obj, key, where)


def _int(obj: Mapping[str, Any], key: str, where: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise DatasetError(f"{where}: {key} must be an integer")
    return value
