"""Mine jobs over real HTTP against a real daemon (sources.md 1-2, api.md, palace.md 3, jobs.md).

A directory tree generated under tmp_path is mined into its own wing: where chunks land and what
their drawers say, the cursor that makes a second run read nothing, `full`, a changed chunk
superseded and a shrunk file's chunks retired, `since`, the files and directories never read,
the refusals at submission, GET /api/sources, `mining.max_documents`, pause, cancel and a kill -9
in the middle of a large mine.

Files are given modification times with `os.utime`, so the order a run reads them in and the
cursor it leaves are exact. Tests on the shared daemon each mine their own directory into their
own wing; tests that kill or reconfigure a daemon start one of their own. Every wait polls a
condition with a deadline.
"""

from __future__ import annotations

import hashlib
import os
import random
import string
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from jobs.replay import unit_id
from sources.chunking import chunk
from sources.mining import BATCH
from tests.support.daemon import Daemon
from tests.support.files import BASE_NS, SECOND, tree, write
from tests.support.http import (
    TERMINAL,
    Drawer,
    Job,
    assert_error,
    drawer,
    get_job,
    room_drawers,
    submit,
    total,
    wait_job,
    watch,
)
from tests.support.instants import instant

INVALID = "memcastle::input::invalid"
FORBIDDEN = "memcastle::mode::forbidden"
PATH_INVALID = "memcastle::palace::path_invalid"
READ_ONLY = {"X-MemCastle-Mode": "read_only"}
DISABLED = {"X-MemCastle-Mode": "disabled"}
CHUNK_CHARS = 6000  # the daemon's default `mining.chunk_chars`
MAX_FILE_BYTES = 2_097_152  # the default `mining.max_file_bytes`
ORIGIN_KEYS = ("source_id", "source", "document", "chunk", "revision")
COUNTS = ("documents", "created", "superseded", "retired", "unchanged", "skipped", "similar")


# Trees.


def paragraph(seed: int, size: int = 1990) -> str:
    """`size` characters of words no other seed repeats, so no two paragraphs are alike."""
    rng = random.Random(seed)
    words: list[str] = []
    length = 0
    while length < size:
        word = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 10)))
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[: size - 1] + "."


def big_document(seeds: list[int]) -> str:
    """Paragraphs joined by blank lines: eight make three chunks of the default size, the
    first two of three paragraphs each."""
    return "\n\n".join(paragraph(seed) for seed in seeds)


def small_files(count: int, seed: int = 0) -> dict[str, str]:
    """`count` one-line files, spread over a few directories, none like another."""
    rng = random.Random(seed)
    return {
        f"d{n % 7}/f{n:05}.txt": f"file {n}: {rng.getrandbits(256):064x}\n" for n in range(count)
    }


def sha256(data: str | bytes) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def chunk_id(job_id: str, source_id: str, document: str, index: int, text: str) -> str:
    """The derived id of a mined chunk (jobs.md 5)."""
    return unit_id(job_id, f"mine-chunk:{source_id}:{document}:{index}:{sha256(text)}")


# HTTP.


def mine(client: httpx.Client, path: Path | str, **body: Any) -> Job:
    """Mine `path` (the `path` form) and wait for the job to complete."""
    return wait_job(client, submit(client, {"type": "mine", "path": str(path), **body})["id"])


def mine_source(client: httpx.Client, locator: Path | str, **body: Any) -> Job:
    """Mine `locator` with the `source` form and wait for the job to complete."""
    job = submit(client, {"type": "mine", "source": "directory", "locator": str(locator), **body})
    return wait_job(client, job["id"])


def result(**counts: int | bool) -> dict[str, Any]:
    """A mine result: the counts given, every other count 0, not truncated."""
    return {**dict.fromkeys(COUNTS, 0), "truncated": False, **counts}


def history(client: httpx.Client, drawer_id: str) -> list[Drawer]:
    response = client.get(f"/api/drawers/{drawer_id}/history")
    assert response.status_code == 200, response.text
    return response.json()["versions"]


def current_by_chunk(listed: list[Drawer]) -> dict[tuple[str, int], list[Drawer]]:
    """The current drawers of a room by (document, chunk)."""
    found: dict[tuple[str, int], list[Drawer]] = defaultdict(list)
    for row in listed:
        if row["valid_to"] is None:
            origin = row["source"]["origin"]
            found[(origin["document"], origin["chunk"])].append(row)
    return found


def mined_source(client: httpx.Client, locator: Path, **headers: str) -> dict[str, Any]:
    response = client.get("/api/sources", headers=headers)
    assert response.status_code == 200, response.text
    matching = [row for row in response.json()["sources"] if row["locator"] == str(locator)]
    assert len(matching) == 1, response.json()["sources"]
    return matching[0]


def assert_each_chunk_once(
    client: httpx.Client, wing: str, files: dict[str, str], root: Path, job_id: str | None = None
) -> list[Drawer]:
    """Every chunk of every file in exactly one current drawer and nothing else current in the
    room; with `job_id`, each under the id that job derives for it."""
    listed = room_drawers(client, wing)
    current = current_by_chunk(listed)
    expected = {
        (relative, index): text
        for relative, content in files.items()
        for index, text in enumerate(chunk([content], CHUNK_CHARS))
    }
    assert set(current) == set(expected)
    for key, rows in current.items():
        assert len(rows) == 1, (key, rows)
    assert sum(len(rows) for rows in current.values()) == len(expected)
    if job_id is not None:
        source_id = mined_source(client, root)["id"]
        for (relative, index), text in expected.items():
            (row,) = current[(relative, index)]
            assert row["id"] == chunk_id(job_id, source_id, relative, index, text)
    return listed


@pytest.fixture
def leftover_jobs(client: httpx.Client) -> Iterator[list[str]]:
    """Jobs a test cancels if it ends (fails) before they do: a paused mine left behind would
    hold off every wing delete on the shared daemon."""
    started: list[str] = []
    yield started
    for job_id in started:
        if get_job(client, job_id)["status"] not in TERMINAL:
            client.post(f"/api/jobs/{job_id}/cancel")


# The first mine.


def test_a_first_mine_files_every_chunk_in_the_files_room(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    big = big_document(list(range(8)))
    files: dict[str, str] = {
        "README.md": "# Project\n\nA small readme.\n",
        "src/lib.rs": 'fn main() {\n    println!("hi");\n}\n',
        "docs/guide/big.md": big,
        "notes/été.txt": "Accents \u00e9t\u00e9 and \N{GRINNING FACE} survive.\r\n",
    }
    root = tree(tmp_path / "project", files)
    chunks = {relative: chunk([content], CHUNK_CHARS) for relative, content in files.items()}
    assert [len(chunks[relative]) for relative in files] == [1, 1, 3, 1]

    queued = submit(client, {"type": "mine", "path": str(root), "wing": wing_name})
    assert queued["kind"] == {"type": "mine", "path": str(root), "wing": wing_name}
    assert queued["priority"] == 0
    assert queued["requested_by"] == "http"
    done = wait_job(client, queued["id"])
    assert done["result"] == result(documents=4, created=6)
    assert done["progress"] == {"current": 4, "total": 4, "message": "done: 4 of 4 documents"}
    assert done["checkpoint"]["next_index"] == 4
    assert (done["error"], done["error_code"]) == (None, None)

    rooms = client.get(f"/api/wings/{wing_name}/rooms").json()["rooms"]
    assert [(room["name"], room["counts"]["drawers"]) for room in rooms] == [("files", 6)]

    source = mined_source(client, root)
    listed = room_drawers(client, wing_name)
    assert len(listed) == 6
    by_chunk = {
        (row["source"]["origin"]["document"], row["source"]["origin"]["chunk"]): row
        for row in listed
    }
    assert set(by_chunk) == {
        (relative, n) for relative in files for n in range(len(chunks[relative]))
    }
    for (relative, index), row in by_chunk.items():
        stored = drawer(client, row["id"])
        text = chunks[relative][index]
        # Verbatim, whitespace and line endings included.
        assert stored["content"] == text
        assert stored["content_hash"] == sha256(text)
        # Only the first chunk is named, by the relative path.
        assert stored["name"] == (relative if index == 0 else None)
        assert set(stored["source"]) == {"kind", "uri", "origin"}
        assert (stored["source"]["kind"], stored["source"]["uri"]) == ("file", str(root / relative))
        origin = stored["source"]["origin"]
        assert {key: origin[key] for key in ORIGIN_KEYS} == {
            "source_id": source["id"],
            "source": "directory",
            "document": relative,
            "chunk": index,
            "revision": sha256(files[relative]),
        }
        assert set(origin) - set(ORIGIN_KEYS) <= {"metadata", "occurred_at"}
        assert stored["tags"] == []
        assert stored["provenance"] == {"job_id": done["id"], "requested_by": "http"}
        assert stored["valid_to"] is None
        assert stored["id"] == chunk_id(done["id"], source["id"], relative, index, text)
    # Nothing added or lost: the chunks join to the file.
    joined = "".join(
        drawer(client, by_chunk[("docs/guide/big.md", n)]["id"])["content"] for n in range(3)
    )
    assert joined == big

    # The first chunk is found by its path, `/` and all.
    for relative in files:
        response = client.get(f"/api/wings/{wing_name}/rooms/files/drawers/{relative}")
        assert response.status_code == 200, (relative, response.text)
        assert response.json()["id"] == by_chunk[(relative, 0)]["id"]


def test_without_a_wing_the_directory_name_is_the_wing(
    client: httpx.Client, tmp_path: Path
) -> None:
    name = f"proj-{uuid.uuid4().hex[:12]}"
    root = tree(tmp_path / name, {"a.txt": "alpha\n", "b/c.txt": "gamma\n"})
    done = mine(client, root)
    assert "wing" not in done["kind"]
    assert done["result"] == result(documents=2, created=2)
    wing = client.get(f"/api/wings/{name}")
    assert wing.status_code == 200, wing.text
    assert wing.json()["counts"] == {"rooms": 1, "drawers": 2}
    assert {row["name"] for row in room_drawers(client, name)} == {"a.txt", "b/c.txt"}


def test_identical_files_are_both_filed_and_linked(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    text = "The same text, in two files of one directory.\n"
    root = tree(tmp_path / "twins", {"one.md": text, "two.md": text})
    done = mine(client, root, wing=wing_name)
    # A mined copy is always stored, and counted as similar (palace.md 7).
    assert done["result"] == result(documents=2, created=2, similar=1)
    listed = {row["name"]: row for row in room_drawers(client, wing_name)}
    assert set(listed) == {"one.md", "two.md"}
    links = client.get(f"/api/drawers/{listed['two.md']['id']}/duplicates").json()["similar"]
    assert [(link["drawer"]["id"], link["side"], link["kind"]) for link in links] == [
        (listed["one.md"]["id"], "older", "exact")
    ]


def test_a_document_name_that_is_no_drawer_name_leaves_its_drawer_unnamed(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    looks_like_an_id = str(uuid.uuid4())
    files = {
        " padded.txt": "leading space in the file name\n",
        looks_like_an_id: "a file named like a UUID\n",
        "dir/ok.txt": "a fine name\n",
    }
    root = tree(tmp_path / "names", files)
    done = mine(client, root, wing=wing_name)
    assert done["result"] == result(documents=3, created=3)
    names = {
        row["source"]["origin"]["document"]: row["name"] for row in room_drawers(client, wing_name)
    }
    assert names == {" padded.txt": None, looks_like_an_id: None, "dir/ok.txt": "dir/ok.txt"}


# Mining again.


def test_mining_again_files_nothing_and_full_finds_everything_unchanged(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    files = {
        "a.md": "first file\n",
        "b/big.md": big_document(list(range(100, 108))),
        "c.md": "third file\n",
        "empty.md": "",
    }
    root = tree(tmp_path / "again", files)
    first = mine(client, root, wing=wing_name)
    assert first["result"] == result(documents=4, created=5, skipped=1)
    cursor = mined_source(client, root)["cursor"]
    assert cursor == {"mtime_ns": BASE_NS + 3 * SECOND, "key": "empty.md"}

    # The cursor: nothing after it.
    second = mine(client, root, wing=wing_name)
    assert second["result"] == result()
    assert second["progress"] == {"current": 0, "total": 0, "message": "done: 0 of 0 documents"}
    assert mined_source(client, root)["cursor"] == cursor

    # `full` reads every file again, through the other form of the request: the same place,
    # so the same source. Every revision is one already held.
    queued = submit(
        client,
        {
            "type": "mine",
            "source": "directory",
            "locator": str(root),
            "wing": wing_name,
            "full": True,
        },
    )
    assert queued["kind"] == {
        "type": "mine",
        "source": "directory",
        "locator": str(root),
        "wing": wing_name,
        "full": True,
    }
    full = wait_job(client, queued["id"])
    assert full["result"] == result(documents=4, unchanged=3, skipped=1)
    assert full["progress"] == {"current": 4, "total": 4, "message": "done: 4 of 4 documents"}

    source = mined_source(client, root)
    assert (source["cursor"], source["documents"], source["last_job"]) == (cursor, 3, full["id"])
    listed = assert_each_chunk_once(client, wing_name, {k: v for k, v in files.items() if v}, root)
    assert len(listed) == 5
    assert {drawer(client, row["id"])["provenance"]["job_id"] for row in listed} == {first["id"]}


def test_full_false_is_the_default_and_not_stored(client: httpx.Client, tmp_path: Path) -> None:
    root = tree(tmp_path / "plain", {"a.txt": "a\n"})
    queued = submit(
        client,
        {"type": "mine", "path": str(root), "full": False, "wing": "w-" + uuid.uuid4().hex[:8]},
    )
    assert "full" not in queued["kind"]
    wait_job(client, queued["id"])


def test_touching_a_file_without_changing_it_files_nothing(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    root = tree(tmp_path / "touch", {"a.txt": "alpha\n", "b.txt": "beta\n"})
    mine(client, root, wing=wing_name)
    os.utime(root / "a.txt", ns=(BASE_NS + 100 * SECOND,) * 2)
    again = mine(client, root, wing=wing_name)
    assert again["result"] == result(documents=1, unchanged=1)
    assert mined_source(client, root)["cursor"] == {
        "mtime_ns": BASE_NS + 100 * SECOND,
        "key": "a.txt",
    }
    assert len(room_drawers(client, wing_name)) == 2


def test_a_changed_chunk_supersedes_only_its_own_drawer(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    seeds = list(range(200, 208))
    files = {"big.md": big_document(seeds), "small.md": "untouched\n"}
    root = tree(tmp_path / "edit", files)
    first = mine(client, root, wing=wing_name)
    assert first["result"] == result(documents=2, created=4)
    source_id = mined_source(client, root)["id"]
    before = chunk([files["big.md"]], CHUNK_CHARS)
    assert len(before) == 3
    old_ids = [chunk_id(first["id"], source_id, "big.md", n, text) for n, text in enumerate(before)]

    # One paragraph of the middle chunk changes, to text of the same length.
    seeds[4] = 999
    edited = big_document(seeds)
    write(root, "big.md", edited, BASE_NS + 1000 * SECOND)
    after = chunk([edited], CHUNK_CHARS)
    assert (after[0], after[2]) == (before[0], before[2])
    assert after[1] != before[1]

    second = mine(client, root, wing=wing_name)
    assert second["result"] == result(documents=1, superseded=1)
    new_id = chunk_id(second["id"], source_id, "big.md", 1, after[1])

    closed = drawer(client, old_ids[1])
    replacement = drawer(client, new_id)
    assert closed["valid_to"] is not None
    assert closed["superseded_by"] == new_id
    assert closed["content"] == before[1]
    assert replacement["supersedes"] == old_ids[1]
    assert replacement["valid_to"] is None
    assert replacement["valid_from"] == closed["valid_to"]
    assert replacement["content"] == after[1]
    assert replacement["name"] is None
    origin = replacement["source"]["origin"]
    assert {key: origin[key] for key in ORIGIN_KEYS} == {
        "source_id": source_id,
        "source": "directory",
        "document": "big.md",
        "chunk": 1,
        "revision": sha256(edited),
    }
    # The document's metadata as mined, which source preferences match on.
    assert origin["metadata"]["size"] == len(edited.encode())
    assert replacement["provenance"]["job_id"] == second["id"]
    for version_of in (old_ids[1], new_id):
        assert [v["id"] for v in history(client, version_of)] == [old_ids[1], new_id]
    # The unchanged chunks keep their drawers, still current.
    for index in (0, 2):
        kept = drawer(client, old_ids[index])
        assert (kept["valid_to"], kept["content"]) == (None, before[index])
        assert history(client, old_ids[index]) == [kept]
    assert len(room_drawers(client, wing_name)) == 5

    # Now the first chunk changes: its replacement takes over the name.
    seeds[0] = 998
    again = big_document(seeds)
    write(root, "big.md", again, BASE_NS + 2000 * SECOND)
    latest = chunk([again], CHUNK_CHARS)
    third = mine(client, root, wing=wing_name)
    assert third["result"] == result(documents=1, superseded=1)
    renamed = chunk_id(third["id"], source_id, "big.md", 0, latest[0])
    by_path = client.get(f"/api/wings/{wing_name}/rooms/files/drawers/big.md")
    assert by_path.status_code == 200, by_path.text
    assert by_path.json()["id"] == renamed
    assert drawer(client, old_ids[0])["name"] is None
    assert [v["id"] for v in history(client, renamed)] == [old_ids[0], renamed]
    assert_each_chunk_once(client, wing_name, {"big.md": again, "small.md": "untouched\n"}, root)


def test_a_shrunk_file_retires_the_chunks_past_its_end(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    text = big_document(list(range(300, 308)))
    root = tree(tmp_path / "shrink", {"big.md": text})
    first = mine(client, root, wing=wing_name)
    source_id = mined_source(client, root)["id"]
    before = chunk([text], CHUNK_CHARS)
    ids = [chunk_id(first["id"], source_id, "big.md", n, piece) for n, piece in enumerate(before)]

    # Only the first chunk's text is left: it is unchanged, the other two are retired.
    write(root, "big.md", before[0], BASE_NS + 1000 * SECOND)
    second = mine(client, root, wing=wing_name)
    assert second["result"] == result(documents=1, retired=2)
    kept = drawer(client, ids[0])
    assert (kept["valid_to"], kept["name"]) == (None, "big.md")
    for retired_id in ids[1:]:
        retired = drawer(client, retired_id)
        assert retired["valid_to"] is not None
        assert "superseded_by" not in retired
        assert [v["id"] for v in history(client, retired_id)] == [retired_id]
    assert {key for key in current_by_chunk(room_drawers(client, wing_name))} == {("big.md", 0)}

    # Grown back, the chunks are filed anew; the retired drawers stay closed.
    write(root, "big.md", text, BASE_NS + 2000 * SECOND)
    third = mine(client, root, wing=wing_name)
    # Copies of closed drawers only: dedup looks at current ones.
    assert third["result"] == result(documents=1, created=2)
    for retired_id in ids[1:]:
        assert drawer(client, retired_id)["valid_to"] is not None
    assert_each_chunk_once(client, wing_name, {"big.md": text}, root)
    assert len(room_drawers(client, wing_name)) == 5


def test_since_narrows_a_run_to_recent_files(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    root = tmp_path / "since"
    september = 1_788_220_800 * SECOND  # 2026-09-01T00:00:00Z
    write(root, "old/2025.md", "from last year\n", BASE_NS - 200 * 86400 * SECOND)
    write(root, "old/august.md", "just before\n", september - 1)
    write(root, "new/first-day.md", "at the start\n", september)
    write(root, "new/october.md", "well after\n", september + 40 * 86400 * SECOND)
    root = Path(os.path.realpath(root))

    queued = submit(
        client,
        {
            "type": "mine",
            "source": "directory",
            "locator": str(root),
            "options": {"since": "2026-09"},
            "wing": wing_name,
        },
    )
    assert queued["kind"]["options"] == {"since": "2026-09"}
    narrowed = wait_job(client, queued["id"])
    assert narrowed["result"] == result(documents=2, created=2)
    assert {row["name"] for row in room_drawers(client, wing_name)} == {
        "new/first-day.md",
        "new/october.md",
    }

    # A full run without it reads everything; what the narrowed run filed is unchanged.
    full = mine(client, root, wing=wing_name, full=True)
    assert full["result"] == result(documents=4, created=2, unchanged=2)
    assert {row["name"] for row in room_drawers(client, wing_name)} == {
        "old/2025.md",
        "old/august.md",
        "new/first-day.md",
        "new/october.md",
    }


# What is never read.


def test_empty_oversized_binary_and_non_utf8_files_are_skipped(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    files: dict[str, str | bytes] = {
        "good.md": "plain text\n",
        "empty.txt": b"",
        "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "latin1.txt": b"caf\xe9\n",
        "huge.log": b"y" * (MAX_FILE_BYTES + 1),
        "limit.log": b"z" * 1000,
        "also-good.rs": "fn f() {}\n",
    }
    root = tree(tmp_path / "skips", files)
    done = mine(client, root, wing=wing_name)
    assert done["result"] == result(documents=7, created=3, skipped=4)
    names = {row["source"]["origin"]["document"] for row in room_drawers(client, wing_name)}
    assert names == {"good.md", "limit.log", "also-good.rs"}
    assert mined_source(client, root)["documents"] == 3


def test_vcs_build_cache_and_hidden_directories_and_links_are_not_read(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    outside = tree(tmp_path / "outside", {"secret.txt": "outside the tree\n", "dir/x.txt": "far\n"})
    files: dict[str, str] = {
        "src/main.py": "print('hi')\n",
        "docs/.hidden-but-a-file.md": "a hidden file is read\n",
        ".git/config": "[core]\n",
        ".git/objects/ab/cdef": "blob\n",
        "target/debug/out.txt": "build output\n",
        "node_modules/pkg/index.js": "module.exports = 1\n",
        ".venv/lib/site.py": "x = 1\n",
        "venv/bin/activate": "export X\n",
        "dist/app.js": "bundle\n",
        "build/lib/a.py": "a = 1\n",
        ".cache/entry": "cached\n",
        ".hidden/notes.md": "not read\n",
        "src/.idea/workspace.xml": "<xml/>\n",
        "src/node_modules/nested.js": "nested\n",
    }
    root = tree(tmp_path / "skipdirs", files)
    (root / "link-to-file.txt").symlink_to(root / "src" / "main.py")
    (root / "link-outside.txt").symlink_to(outside / "secret.txt")
    (root / "link-dir").symlink_to(outside / "dir", target_is_directory=True)
    (root / "src" / "loop").symlink_to(root, target_is_directory=True)

    done = mine(client, root, wing=wing_name)
    assert done["result"] == result(documents=2, created=2)
    names = {row["name"] for row in room_drawers(client, wing_name)}
    assert names == {"src/main.py", "docs/.hidden-but-a-file.md"}


def test_a_directory_reached_through_a_link_is_the_same_source(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    root = tree(tmp_path / "real", {"a.md": "through a link\n"})
    link = tmp_path / "link"
    link.symlink_to(root, target_is_directory=True)
    first = mine(client, link, wing=wing_name)
    assert first["result"] == result(documents=1, created=1)
    source = mined_source(client, root)
    assert source["locator"] == str(root)
    assert mine(client, root, wing=wing_name)["result"] == result()
    assert mine(client, str(root) + "/", wing=wing_name)["result"] == result()
    stored = drawer(client, room_drawers(client, wing_name)[0]["id"])
    assert stored["source"]["uri"] == str(root / "a.md")


# Refusals at submission.


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        pytest.param({"path": "relative/dir"}, "path", "absolute", id="relative-path"),
        pytest.param({"path": "."}, "path", "absolute", id="dot"),
        pytest.param({"path": ""}, "path", "absolute", id="empty-path"),
        pytest.param({"path": 5}, "path", "absolute", id="path-not-text"),
        pytest.param(
            {"path": "/no/such/directory/anywhere"}, "path", "not a directory", id="missing"
        ),
        pytest.param(
            {"source": "directory", "locator": "relative"},
            "locator",
            "absolute",
            id="relative-locator",
        ),
        pytest.param({"source": "directory"}, "locator", "required", id="no-locator"),
        pytest.param(
            {"source": "directory", "locator": 5}, "locator", "string", id="locator-not-text"
        ),
        pytest.param(
            {"source": "nowhere", "locator": "/tmp"},
            "source",
            "known: chatgpt, claude, codex, directory, github, opencode, pi",
            id="unknown-source",
        ),
        pytest.param({"source": 5}, "source", "name of a source", id="source-not-text"),
        pytest.param({}, "path", "`source`", id="neither"),
        pytest.param({"path": "/tmp", "source": "directory"}, "path", "exactly one", id="both"),
        pytest.param(
            {"path": "/tmp", "locator": "/tmp"}, "locator", "`source`", id="locator-with-path"
        ),
        pytest.param({"path": "/tmp", "dir": "/tmp"}, "dir", "known: path", id="unknown-parameter"),
        pytest.param(
            {"path": "/tmp", "options": {"dir": "/tmp"}},
            "options",
            "accepts: since",
            id="unknown-option",
        ),
        pytest.param(
            {"path": "/tmp", "options": {"since": "soon"}}, "options", "since", id="bad-since"
        ),
        pytest.param(
            {"path": "/tmp", "options": {"since": 2026}}, "options", "strings", id="since-number"
        ),
        pytest.param(
            {"path": "/tmp", "options": ["since"]}, "options", "object", id="options-list"
        ),
        pytest.param({"path": "/tmp", "full": "yes"}, "full", "true or false", id="full-text"),
        pytest.param({"path": "/tmp", "full": 1}, "full", "true or false", id="full-number"),
    ],
)
def test_a_bad_mine_is_refused_at_submission_naming_the_field(
    client: httpx.Client, body: dict[str, Any], field: str, fragment: str
) -> None:
    before = total(client, "mine")
    answer = assert_error(client.post("/api/jobs", json={"type": "mine", **body}), 400, INVALID)
    assert answer["error"].startswith(f"`{field}`"), answer
    assert fragment in answer["error"], answer
    assert total(client, "mine") == before, "a refused mine was queued"


@pytest.mark.parametrize(
    ("wing", "fragment"),
    [
        pytest.param("a/b", "/", id="wing-slash"),
        pytest.param(str(uuid.uuid4()), "UUID", id="wing-uuid"),
        pytest.param(" padded", "whitespace", id="wing-padded"),
    ],
)
def test_a_new_wing_with_a_bad_name_is_refused_at_submission(
    client: httpx.Client, wing: str, fragment: str
) -> None:
    """A new wing's name must be valid (palace.md 2): `memcastle::palace::path_invalid`."""
    before = total(client, "mine")
    answer = assert_error(
        client.post("/api/jobs", json={"type": "mine", "path": "/tmp", "wing": wing}),
        400,
        PATH_INVALID,
    )
    assert "wing" in answer["error"] and fragment in answer["error"], answer
    assert total(client, "mine") == before, "a refused mine was queued"


def test_a_path_to_a_file_is_refused(client: httpx.Client, tmp_path: Path) -> None:
    write(tmp_path, "a-file.txt", "text\n", BASE_NS)
    before = total(client, "mine")
    answer = assert_error(
        client.post("/api/jobs", json={"type": "mine", "path": str(tmp_path / "a-file.txt")}),
        400,
        INVALID,
    )
    assert answer["error"].startswith("`path` ")
    assert total(client, "mine") == before


def test_mining_is_a_write_refused_outside_full_mode(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    root = tree(tmp_path / "gated", {"a.md": "written only in full mode\n"})
    before = total(client, "mine")
    for headers in (READ_ONLY, DISABLED):
        for body in (
            {"type": "mine", "path": str(root), "wing": wing_name},
            {"type": "mine", "source": "directory", "locator": str(root), "wing": wing_name},
        ):
            refused = client.post("/api/jobs", json=body, headers=headers)
            assert "`mine`" in assert_error(refused, 403, FORBIDDEN)["error"]
    assert total(client, "mine") == before, "a refused mine was queued"
    assert client.get(f"/api/wings/{wing_name}").status_code == 404
    done = wait_job(
        client,
        submit(
            client,
            {"type": "mine", "path": str(root), "wing": wing_name},
            **{"X-MemCastle-Mode": "full"},
        )["id"],
    )
    assert done["result"] == result(documents=1, created=1)


def test_a_directory_whose_name_is_no_wing_name_files_nothing_without_a_wing(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    """The default wing is the directory's name, and a new wing's name must be valid
    (palace.md 2): the mine is refused at submission, and nothing is filed. With
    a wing given, the same directory is mined."""
    name = str(uuid.uuid4())
    root = tree(tmp_path / name, {"a.md": "in a directory named like a UUID\n"})
    response = client.post("/api/jobs", json={"type": "mine", "path": str(root)})
    assert "`wing`" in assert_error(response, 400, PATH_INVALID)["error"]
    assert client.get(f"/api/wings/{name}").status_code == 404
    assert mine(client, root, wing=wing_name)["result"] == result(documents=1, created=1)


# GET /api/sources.


def test_sources_lists_the_directory_adapter_and_the_places_mined(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    files = {"b.md": "bee\n", "a.md": "ay\n", "c/d.md": "dee\n", "skipped.bin": b"\x00\x01"}
    root = tree(tmp_path / "listed", files)
    response = client.get("/api/sources")
    assert response.status_code == 200, response.text
    listing = response.json()
    assert set(listing) == {"adapters", "sources"}
    directory = [adapter for adapter in listing["adapters"] if adapter["name"] == "directory"]
    assert directory == [
        {
            "name": "directory",
            "description": directory[0]["description"],
            "capabilities": {"incremental": True, "retains_raw": False, "needs_credentials": False},
            "origin": "builtin",
            "options": [
                {
                    "name": "since",
                    "description": directory[0]["options"][0]["description"],
                    "type": "date",
                    "breadth": "since",
                }
            ],
            "triggers": ["watch", "webhook"],
            "state": "enabled",
        }
    ]
    assert directory[0]["description"] and directory[0]["options"][0]["description"]
    assert all(row["locator"] != str(root) for row in listing["sources"])

    done = mine(client, root, wing=wing_name)
    source = mined_source(client, root)
    assert set(source) >= {
        "id",
        "source",
        "account",
        "locator",
        "cursor",
        "last_job",
        "last_run_at",
        "documents",
    }
    assert uuid.UUID(source["id"])
    assert (source["source"], source["account"], source["locator"]) == (
        "directory",
        None,
        str(root),
    )
    # The last file in (mtime, path) order: the one written last.
    assert source["cursor"] == {"mtime_ns": BASE_NS + 3 * SECOND, "key": "skipped.bin"}
    assert source["last_job"] == done["id"]
    assert instant(done["started_at"], require_z=False) <= instant(
        source["last_run_at"], require_z=False
    )
    assert instant(source["last_run_at"], require_z=False) <= instant(
        done["completed_at"], require_z=False
    )
    assert source["documents"] == 3
    for row in room_drawers(client, wing_name):
        assert row["source"]["origin"]["source_id"] == source["id"]

    # A read: allowed read-only, refused disabled.
    assert mined_source(client, root, **READ_ONLY) == source
    refused = client.get("/api/sources", headers=DISABLED)
    assert "`sources`" in assert_error(refused, 403, FORBIDDEN)["error"]

    # A second place is a second source; the first is unchanged by it.
    other = tree(tmp_path / "listed-too", {"x.md": "ex\n"})
    mine(client, other, wing=wing_name)
    assert mined_source(client, other)["id"] != source["id"]
    assert mined_source(client, root) == source


# Cross-source filing in one wing.


def copies(tmp_path: Path) -> tuple[Path, Path]:
    """The same file under the same relative path in two directories of the same name."""
    text = "Identical in both checkouts.\n"
    first = tree(tmp_path / "one" / "checkout", {"notes.md": text})
    second = tree(tmp_path / "two" / "checkout", {"notes.md": text})
    return first, second


def test_an_identical_file_from_another_directory_is_filed_for_its_own_source(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    first, second = copies(tmp_path)
    mine(client, first, wing=wing_name)
    done = mine(client, second, wing=wing_name)
    # Mined copies are always stored and linked (palace.md 7); the name being taken, the new
    # drawer stays unnamed (palace.md 2).
    assert done["result"] == result(documents=1, created=1, similar=1)
    sources = {row["source"]["origin"]["source_id"] for row in room_drawers(client, wing_name)}
    assert sources == {mined_source(client, first)["id"], mined_source(client, second)["id"]}


def test_editing_one_copy_never_closes_the_other_sources_drawer(
    client: httpx.Client, tmp_path: Path, wing_name: str
) -> None:
    first, second = copies(tmp_path)
    mine(client, first, wing=wing_name)
    mine(client, second, wing=wing_name)
    first_id = mined_source(client, first)["id"]
    write(second, "notes.md", "Only the second checkout changed.\n", BASE_NS + 1000 * SECOND)
    mine(client, second, wing=wing_name)
    current = [
        row
        for row in room_drawers(client, wing_name)
        if row["valid_to"] is None and row["source"]["origin"]["source_id"] == first_id
    ]
    assert [row["preview"] for row in current] == ["Identical in both checkouts.\n"]


# Batches: pause, cancel, and mining.max_documents.


PAUSE_COUNT = 600  # twelve batches


def test_pause_and_resume_continue_between_batches_without_filing_twice(
    client: httpx.Client, tmp_path: Path, wing_name: str, leftover_jobs: list[str]
) -> None:
    files = small_files(PAUSE_COUNT, seed=1)
    root = tree(tmp_path / "paused", files)
    order = list(files)  # one second apart: the order they are read in
    job_id = submit(client, {"type": "mine", "path": str(root), "wing": wing_name})["id"]
    leftover_jobs.append(job_id)
    watch(
        client,
        job_id,
        lambda job: job["progress"].get("current", 0) >= BATCH,
        "the mine to file its first batch",
    )
    requested = client.post(f"/api/jobs/{job_id}/pause")
    assert requested.status_code == 200, f"the mine ended before the pause: {requested.text}"
    paused = wait_job(client, job_id, "paused")
    stopped_at = paused["checkpoint"]["next_index"]
    assert BATCH <= stopped_at < PAUSE_COUNT
    assert stopped_at % BATCH == 0, "a pause lands between batches"
    assert paused["progress"] == {
        "current": stopped_at,
        "total": PAUSE_COUNT,
        "message": f"document {stopped_at} of {PAUSE_COUNT}",
    }
    cursor = {"mtime_ns": BASE_NS + (stopped_at - 1) * SECOND, "key": order[stopped_at - 1]}
    assert paused["checkpoint"]["cursor"] == cursor
    assert paused["checkpoint"]["created"] == stopped_at
    # What the batches before the pause filed, and nothing more; the source's cursor is there.
    listed = room_drawers(client, wing_name)
    assert sorted(row["name"] for row in listed) == sorted(order[:stopped_at])
    assert mined_source(client, root)["cursor"] == cursor

    resumed = client.post(f"/api/jobs/{job_id}/resume")
    assert resumed.status_code == 200, resumed.text
    done = wait_job(client, job_id)
    assert done["result"] == result(documents=PAUSE_COUNT, created=PAUSE_COUNT)
    assert done["progress"] == {
        "current": PAUSE_COUNT,
        "total": PAUSE_COUNT,
        "message": f"done: {PAUSE_COUNT} of {PAUSE_COUNT} documents",
    }
    assert (done["attempt"], done["recovery_attempts"]) == (2, 0)
    assert len(assert_each_chunk_once(client, wing_name, files, root, job_id)) == PAUSE_COUNT


def test_cancel_stops_between_batches_and_the_next_mine_continues(
    client: httpx.Client, tmp_path: Path, wing_name: str, leftover_jobs: list[str]
) -> None:
    files = small_files(PAUSE_COUNT, seed=2)
    root = tree(tmp_path / "cancelled", files)
    order = list(files)
    job_id = submit(client, {"type": "mine", "path": str(root), "wing": wing_name})["id"]
    leftover_jobs.append(job_id)
    watch(
        client,
        job_id,
        lambda job: job["progress"].get("current", 0) >= BATCH,
        "the mine to file its first batch",
    )
    requested = client.post(f"/api/jobs/{job_id}/cancel")
    assert requested.status_code == 200, f"the mine ended before the cancel: {requested.text}"
    cancelled = wait_job(client, job_id, "cancelled")
    stopped_at = cancelled["checkpoint"]["next_index"]
    assert BATCH <= stopped_at < PAUSE_COUNT
    assert stopped_at % BATCH == 0
    # What it filed stays.
    assert sorted(row["name"] for row in room_drawers(client, wing_name)) == sorted(
        order[:stopped_at]
    )
    assert mined_source(client, root)["cursor"]["key"] == order[stopped_at - 1]

    rest = mine(client, root, wing=wing_name)
    left = PAUSE_COUNT - stopped_at
    assert rest["result"] == result(documents=left, created=left)
    assert len(assert_each_chunk_once(client, wing_name, files, root)) == PAUSE_COUNT
    assert mined_source(client, root)["documents"] == PAUSE_COUNT


MAX_DOCUMENTS = 120


def test_max_documents_truncates_a_run_and_the_next_run_continues(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    fresh_daemon.env["MEMCASTLE_MINING_MAX_DOCUMENTS"] = str(MAX_DOCUMENTS)
    fresh_daemon.start()
    count = 2 * MAX_DOCUMENTS + 10
    files = small_files(count, seed=3)
    root = tree(tmp_path / "many", files)
    order = list(files)
    with fresh_daemon.client() as client:
        for run in range(2):
            done = mine(client, root, wing="many")
            assert done["result"] == result(
                documents=MAX_DOCUMENTS, created=MAX_DOCUMENTS, truncated=True
            ), run
            progress = done["progress"]
            assert (progress["current"], progress["total"]) == (MAX_DOCUMENTS, MAX_DOCUMENTS)
            assert "mining.max_documents" in progress["message"]
            assert "run the mine again" in progress["message"]
            assert (
                mined_source(client, root)["cursor"]["key"] == order[(run + 1) * MAX_DOCUMENTS - 1]
            )
        last = mine(client, root, wing="many")
        assert last["result"] == result(documents=10, created=10)
        assert last["progress"]["message"] == "done: 10 of 10 documents"
        assert mine(client, root, wing="many")["result"] == result()
        assert len(assert_each_chunk_once(client, "many", files, root)) == count

        # Exactly the most one job reads is not truncated.
        for n, relative in enumerate(order[:MAX_DOCUMENTS]):
            os.utime(root / relative, ns=(BASE_NS + (10_000 + n) * SECOND,) * 2)
        touched = mine(client, root, wing="many")
        assert touched["result"] == result(documents=MAX_DOCUMENTS, unchanged=MAX_DOCUMENTS)


@pytest.mark.slow
def test_chunk_chars_sets_the_chunk_size_and_changing_it_rechunks_nothing(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    fresh_daemon.env["MEMCASTLE_MINING_CHUNK_CHARS"] = "200"
    fresh_daemon.start()
    text = "\n\n".join(paragraph(400 + n, size=90) for n in range(12))
    files = {"doc.md": text, "short.md": "short\n"}
    root = tree(tmp_path / "sized", files)
    small = chunk([text], 200)
    assert len(small) >= 6
    with fresh_daemon.client() as client:
        first = mine(client, root, wing="sized")
        assert first["result"] == result(documents=2, created=len(small) + 1)
        contents = {
            row["source"]["origin"]["chunk"]: drawer(client, row["id"])["content"]
            for row in room_drawers(client, "sized")
            if row["source"]["origin"]["document"] == "doc.md"
        }
        assert [contents[n] for n in range(len(small))] == small
        assert all(len(piece) <= 200 for piece in contents.values())
    assert fresh_daemon.stop() == 0

    del fresh_daemon.env["MEMCASTLE_MINING_CHUNK_CHARS"]
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        full = mine(client, root, wing="sized", full=True)
        assert full["result"] == result(documents=2, unchanged=2)
        assert len(room_drawers(client, "sized")) == len(small) + 1


# A kill -9 in the middle of a large mine: a third of the way, so that documents are filed both
# before and after it.
KILL_COUNT = 1800
KILL_AT = 600
KILL_WAIT = 180.0


@pytest.mark.slow
def test_kill_9_in_the_middle_of_a_mine_resumes_and_files_nothing_twice(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    files = small_files(KILL_COUNT, seed=4)
    root = tree(tmp_path / "killed", files)
    wing = "killed"
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        job_id = submit(client, {"type": "mine", "path": str(root), "wing": wing})["id"]
        seen = watch(
            client,
            job_id,
            lambda job: job["progress"].get("current", 0) >= KILL_AT,
            f"the mine to file {KILL_AT} documents",
            timeout=KILL_WAIT,
            interval=0.05,
        )
    fresh_daemon.kill()
    assert seen["status"] == "running"
    assert seen["progress"]["current"] < KILL_COUNT, "the mine ended before the kill"

    log_before = len(fresh_daemon.log())
    fresh_daemon.start()
    with fresh_daemon.client() as client:
        after = get_job(client, job_id)
        assert after["recovery_attempts"] == 1, after
        assert after["status"] in ("queued", "running", "completed"), after
        # It resumes from its saved checkpoint, not from the start.
        assert after["checkpoint"]["next_index"] >= seen["progress"]["current"]
        done = wait_job(client, job_id, timeout=KILL_WAIT, interval=0.2)
        assert done["result"]["documents"] == KILL_COUNT
        assert done["result"]["truncated"] is False
        assert done["result"]["skipped"] == done["result"]["superseded"] == 0
        assert done["result"]["retired"] == 0
        # A batch replayed after the kill may find its drawers (or its documents) already
        # there: they are not counted as created again.
        filed = done["result"]["created"] + done["result"]["unchanged"]
        assert KILL_COUNT - BATCH <= filed <= KILL_COUNT, done["result"]
        assert done["progress"] == {
            "current": KILL_COUNT,
            "total": KILL_COUNT,
            "message": f"done: {KILL_COUNT} of {KILL_COUNT} documents",
        }
        assert (done["attempt"], done["recovery_attempts"]) == (2, 1)
        assert f"job recovered job_id={job_id} status=queued" in fresh_daemon.log()[log_before:]

        # Every file in exactly one drawer, under the id this job derives for it, and nothing
        # else anywhere in the palace.
        listed = assert_each_chunk_once(client, wing, files, root, job_id)
        assert len(listed) == KILL_COUNT
        wings = client.get("/api/wings").json()["wings"]
        assert [(w["name"], w["counts"]) for w in wings] == [
            (wing, {"rooms": 1, "drawers": KILL_COUNT})
        ]
        source = mined_source(client, root)
        assert source["documents"] == KILL_COUNT
        assert source["cursor"] == {
            "mtime_ns": BASE_NS + (KILL_COUNT - 1) * SECOND,
            "key": list(files)[-1],
        }
        # Run again: nothing left.
        assert mine(client, root, wing=wing)["result"] == result()
