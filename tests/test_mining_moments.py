"""Mines that end or look at awkward moments, in process. A mine interrupted between filing a
batch and recording it: the drawers it filed are the document's, and whichever run mines the
document next (the interrupted job resumed, or another job of the same place) takes them over
instead of filing beside them. A file rewritten moments after a run looked: the next run
finds it even when the filesystem gave it the time of a file that run saw."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from jobs.run import JobRun
from kernel.context import RequestContext
from memcastle_project.composition import Services
from sources import mining

WING = "notes"


class Killed(Exception):
    """Stands for the process dying after the batch's drawers were filed."""


def a_tree(tmp_path: Path, text: str) -> Path:
    """A directory of one file, `a.md`."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.md").write_text(text)
    return root


def mine(services: Services, job_id: str, root: Path, *, attempt: int = 1) -> dict[str, Any]:
    row = {
        "id": job_id,
        "kind": {"type": "mine", "path": str(root), "wing": WING},
        "attempt": attempt,
    }
    run = JobRun(row, services, lambda checkpoint, progress: {}, lambda run, result: None)
    return mining.run(run)  # type: ignore[arg-type]


def mine_killed_before_recording(
    services: Services, monkeypatch: pytest.MonkeyPatch, job_id: str, root: Path
) -> None:
    """A mine that dies after filing its batch's drawers, before recording the documents."""

    def die(*args: object) -> None:
        raise Killed()

    with monkeypatch.context() as patched:
        patched.setattr(services.sources, "record_documents", die)
        with pytest.raises(Killed):
            mine(services, job_id, root)


def named(services: Services, name: str) -> dict[str, Any]:
    return services.hierarchy.show_drawer(RequestContext.build(), WING, "files", name)


def current_texts(services: Services) -> list[str]:
    """The texts of the room's drawers valid now (a listing shows the closed ones too)."""
    listed = services.hierarchy.list_drawers(RequestContext.build(), WING, "files", limit=100)
    return sorted(d["preview"] for d in listed["drawers"] if d["valid_to"] is None)


@pytest.mark.parametrize("next_job", ["the interrupted job resumed", "another job"])
def test_a_document_changed_after_an_interrupted_mine_is_its_named_drawer(
    services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, next_job: str
) -> None:
    root = a_tree(tmp_path, "first text\n")
    mine_killed_before_recording(services, monkeypatch, "job-a", root)
    (root / "a.md").write_text("second text\n")

    if next_job == "another job":
        mine(services, "job-b", root)
    else:
        mine(services, "job-a", root, attempt=2)

    assert named(services, "a.md")["content"] == "second text\n"
    assert current_texts(services) == ["second text\n"]

    (root / "a.md").write_text("third text\n")
    mine(services, "job-c", root)
    assert named(services, "a.md")["content"] == "third text\n"
    assert current_texts(services) == ["third text\n"]


def test_a_document_unchanged_after_an_interrupted_mine_keeps_the_drawer_filed(
    services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = a_tree(tmp_path, "the same text\n")
    mine_killed_before_recording(services, monkeypatch, "job-a", root)
    filed = named(services, "a.md")

    result = mine(services, "job-b", root)

    assert result["created"] == 0
    assert named(services, "a.md")["id"] == filed["id"]
    assert current_texts(services) == ["the same text\n"]


@pytest.mark.parametrize("then", ["changed again", "unchanged"])
def test_a_supersession_left_unrecorded_is_followed_by_the_next_run(
    services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    root = a_tree(tmp_path, "first text\n")
    mine(services, "job-a", root)
    (root / "a.md").write_text("second text\n")
    mine_killed_before_recording(services, monkeypatch, "job-b", root)
    left = named(services, "a.md")
    assert left["content"] == "second text\n"
    if then == "changed again":
        (root / "a.md").write_text("third text\n")

    result = mine(services, "job-c", root)

    expected = "third text\n" if then == "changed again" else "second text\n"
    assert named(services, "a.md")["content"] == expected
    assert current_texts(services) == [expected]
    assert result["created"] == 0
    assert result["superseded"] == (then == "changed again")
    history = services.revisions.history(RequestContext.build(), named(services, "a.md")["id"])
    assert [v["content"] for v in history["versions"]] == (
        ["first text\n", "second text\n", "third text\n"][: 3 if then == "changed again" else 2]
    )


def paragraph(word: str) -> str:
    """A paragraph of near 5,000 characters: a chunk of its own at the default 6,000 characters
    a chunk."""
    return f"{word} " * (5000 // (len(word) + 1)) + "\n\n"


def current_contents(services: Services) -> list[str]:
    """The whole texts of the room's drawers valid now."""
    listed = services.hierarchy.list_drawers(RequestContext.build(), WING, "files", limit=100)
    ids = [d["id"] for d in listed["drawers"] if d["valid_to"] is None]
    return sorted(d["content"] for d in services.hierarchy.drawers_by_ids(ids).values())


@pytest.mark.parametrize("next_job", ["the interrupted job resumed", "another job"])
def test_every_chunk_an_interrupted_mine_filed_is_taken_over_by_the_next_run(
    services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, next_job: str
) -> None:
    """The chunks after the first have no name to be found by: the next run finds them by the
    document's uri, keeps the unchanged one, supersedes the changed one and retires the one
    past the document's new end."""
    alpha, bravo, charlie, delta = map(paragraph, ["alpha", "bravo", "charlie", "delta"])
    root = a_tree(tmp_path, alpha + bravo + charlie)
    mine_killed_before_recording(services, monkeypatch, "job-a", root)
    assert current_contents(services) == sorted([alpha, bravo, charlie])
    (root / "a.md").write_text(alpha + delta)

    if next_job == "another job":
        result = mine(services, "job-b", root)
    else:
        result = mine(services, "job-a", root, attempt=2)

    assert current_contents(services) == sorted([alpha, delta])
    assert (result["created"], result["superseded"], result["retired"]) == (0, 1, 1)
    assert named(services, "a.md")["content"] == alpha
    replaced = [
        d
        for d in services.hierarchy.list_drawers(RequestContext.build(), WING, "files", limit=100)[
            "drawers"
        ]
        if d["valid_to"] is None and d["name"] is None
    ]
    history = services.revisions.history(RequestContext.build(), replaced[0]["id"])
    assert [v["content"] for v in history["versions"]] == [bravo, delta]

    (root / "a.md").write_text(alpha + delta + charlie)
    mine(services, "job-c", root)
    assert current_contents(services) == sorted([alpha, delta, charlie])


def test_a_finished_run_leaves_the_next_nothing_to_take_over(
    services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a run after an unfinished one looks for drawers left unrecorded: after a finished
    run the store is not asked."""
    root = a_tree(tmp_path, paragraph("alpha"))
    mine(services, "job-a", root)
    (root / "a.md").write_text(paragraph("bravo"))
    asked: list[object] = []
    looked_up = services.hierarchy.current_drawers_with_uri

    def counted(*args: Any) -> Any:
        asked.append(args)
        return looked_up(*args)

    monkeypatch.setattr(services.hierarchy, "current_drawers_with_uri", counted)
    mine(services, "job-b", root)
    assert asked == []
    (root / "a.md").write_text(paragraph("charlie"))
    mine_killed_before_recording(services, monkeypatch, "job-c", root)
    assert asked == []
    (root / "a.md").write_text(paragraph("delta"))
    mine(services, "job-d", root)
    assert len(asked) == 1
    assert current_contents(services) == [paragraph("delta")]


def test_a_file_rewritten_within_the_time_of_one_it_was_mined_with_is_mined_again(
    services: Services, tmp_path: Path
) -> None:
    """A filesystem whose clock is coarse gives a file written just after a run looked the
    modification time of one it saw: here both are given the same time, ahead of now."""
    root = tmp_path / "tree"
    root.mkdir()
    tick = time.time_ns() + 60 * 1_000_000_000
    (root / "a.md").write_text("first text\n")
    (root / "b.md").write_text("other file\n")
    for name in ("a.md", "b.md"):
        os.utime(root / name, ns=(tick, tick))
    mine(services, "job-a", root)

    (root / "a.md").write_text("second text\n")
    os.utime(root / "a.md", ns=(tick, tick))
    result = mine(services, "job-b", root)

    assert (result["superseded"], result["unchanged"]) == (1, 1)
    assert named(services, "a.md")["content"] == "second text\n"


def test_a_document_that_shrank_in_an_unfinished_run_and_grew_again_is_mined(
    services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unfinished run retired the chunks past the document's new end before it could
    record the document: the record still names them, closed and superseded by nothing. The
    next run, the document grown again, files those chunks anew (bench/chaos.py: every later
    mine of the place failed on the document, `KeyError: 'superseded_by'`)."""
    alpha, bravo, charlie, delta, echo = map(
        paragraph, ["alpha", "bravo", "charlie", "delta", "echo"]
    )
    root = a_tree(tmp_path, alpha + bravo + charlie)
    mine(services, "job-a", root)
    (root / "a.md").write_text(alpha)
    mine_killed_before_recording(services, monkeypatch, "job-b", root)
    assert current_contents(services) == [alpha]
    (root / "a.md").write_text(alpha + delta + echo)

    mine(services, "job-c", root)

    assert current_contents(services) == sorted([alpha, delta, echo])


def test_a_chunk_superseded_in_an_unfinished_run_is_retired_when_the_document_shrinks(
    services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record names the chunk's first drawer, closed; its replacement, which no record
    names, is the one to retire."""
    alpha, bravo, charlie, delta = map(paragraph, ["alpha", "bravo", "charlie", "delta"])
    root = a_tree(tmp_path, alpha + bravo + charlie)
    mine(services, "job-a", root)
    (root / "a.md").write_text(alpha + delta + charlie)
    mine_killed_before_recording(services, monkeypatch, "job-b", root)
    assert current_contents(services) == sorted([alpha, delta, charlie])
    (root / "a.md").write_text(alpha)

    result = mine(services, "job-c", root)

    assert current_contents(services) == [alpha]
    assert result["retired"] == 2
