"""The built-in `directory` source on real trees under tmp_path (sources.md 2, palace.md 3).

identify validates and canonicalizes the place and its `since`; discover lists regular files in
order of modification time, then relative path, strictly after a cursor, never following a link
or entering a skipped or hidden directory; read skips empty, oversized, binary and non-UTF-8
files; normalize makes one file document. Modification times are set with `os.utime`, so every
order is exact.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from kernel.errors import InputInvalid
from sources.adapters import Candidate, CursorInvalid, RawDocument, check_options, describe
from sources.directory import SETTLING_NS, SKIPPED_DIRECTORIES, DirectoryAdapter, parse_since
from tests.support.files import BASE_NS, SECOND, write

MAX = 1000


@pytest.fixture
def adapter() -> DirectoryAdapter:
    return DirectoryAdapter(max_file_bytes=MAX)


def ns(text: str) -> int:
    """Nanoseconds since the epoch of an RFC 3339 instant."""
    instant = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(instant.timestamp()) * 1_000_000_000 + instant.microsecond * 1000


def found(
    adapter: DirectoryAdapter, root: Path, cursor: Any = None, limit: int = 10_000, **options: str
) -> list[str]:
    ref = adapter.identify(str(root), options)
    return [candidate.external_id for candidate in adapter.discover(ref, cursor, limit).candidates]


def candidate(relative: str) -> Candidate:
    return Candidate(
        external_id=relative, cursor_after={"mtime_ns": 0, "key": relative}, handle=relative
    )


# identify


def test_identify_canonicalizes_the_directory(adapter: DirectoryAdapter, tmp_path: Path) -> None:
    (tmp_path / "real" / "inner").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    real = os.path.realpath(tmp_path / "real")
    for spelling in (
        str(tmp_path / "real"),
        str(tmp_path / "real") + "/",
        str(tmp_path / "real" / "inner" / ".."),
        str(tmp_path / "real" / "." / "inner" / ".." / "."),
        str(tmp_path / "link"),
    ):
        ref = adapter.identify(spelling, {})
        assert (ref.source, ref.account, ref.locator) == ("directory", None, real), spelling
        assert dict(ref.options) == {}


def test_identify_names_the_place_and_its_defaults(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    (tmp_path / "my-project").mkdir()
    ref = adapter.identify(str(tmp_path / "my-project"), {})
    assert adapter.default_wing(ref) == "my-project"
    assert adapter.default_room() == "files"
    assert adapter.default_wing(adapter.identify("/", {})) == "root"


@pytest.mark.parametrize("locator", [None, "", "relative/dir", "./here", "~/somewhere", "dir"])
def test_a_missing_or_relative_locator_is_refused_naming_the_field(
    adapter: DirectoryAdapter, locator: str | None
) -> None:
    with pytest.raises(InputInvalid) as caught:
        adapter.identify(locator, {})
    assert caught.value.field == "locator"
    assert caught.value.message.startswith("`locator` ")
    assert caught.value.status == 400
    assert caught.value.code == "memcastle::input::invalid"


def test_a_relative_locator_is_refused_even_when_it_exists_here(
    adapter: DirectoryAdapter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputInvalid) as caught:
        adapter.identify("here", {})
    assert "absolute" in caught.value.message
    assert "'here'" in caught.value.message


def test_a_missing_directory_or_a_file_is_refused(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    write(tmp_path, "a-file.txt")
    for locator in (tmp_path / "missing", tmp_path / "a-file.txt", tmp_path / "missing" / "deeper"):
        with pytest.raises(InputInvalid) as caught:
            adapter.identify(str(locator), {})
        assert caught.value.field == "locator"
        assert str(locator) in caught.value.message


def test_a_dangling_link_is_refused(adapter: DirectoryAdapter, tmp_path: Path) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(InputInvalid) as caught:
        adapter.identify(str(tmp_path / "dangling"), {})
    assert caught.value.field == "locator"


@pytest.mark.parametrize(
    ("since", "normalized"),
    [
        ("2026-09", "2026-09-01T00:00:00Z"),
        ("2026-09-15", "2026-09-15T00:00:00Z"),
        ("  2026-09-15  ", "2026-09-15T00:00:00Z"),
        ("2026-09-15T10:20:30Z", "2026-09-15T10:20:30Z"),
        ("2026-09-15T10:20:30+00:00", "2026-09-15T10:20:30Z"),
        ("2026-09-15T10:20:30+02:00", "2026-09-15T08:20:30Z"),
        ("2026-09-15T01:00:00-03:30", "2026-09-15T04:30:00Z"),
        ("2026-09-15T10:20:30.250Z", "2026-09-15T10:20:30.250000Z"),
        ("2026-01-01T00:30:00+01:00", "2025-12-31T23:30:00Z"),
    ],
)
def test_since_is_parsed_as_a_utc_instant(
    adapter: DirectoryAdapter, tmp_path: Path, since: str, normalized: str
) -> None:
    ref = adapter.identify(str(tmp_path), {"since": since})
    assert dict(ref.options) == {"since": normalized}
    assert parse_since(since) == dt.datetime.fromisoformat(normalized.replace("Z", "+00:00"))
    assert parse_since(since).tzinfo is not None


@pytest.mark.parametrize(
    "since",
    [
        "",
        "   ",
        "2026",
        "2026-9",
        "2026-13",
        "2026-00",
        "2026-09-31",
        "2026-9-1",
        "09/2026",
        "yesterday",
        "2026-09-15T10:20:30",  # no time zone
        "2026-09-15 10:20",
        "2026-09-15T25:00:00Z",
    ],
)
def test_a_bad_since_is_refused_naming_options(
    adapter: DirectoryAdapter, tmp_path: Path, since: str
) -> None:
    with pytest.raises(InputInvalid) as caught:
        adapter.identify(str(tmp_path), {"since": since})
    assert caught.value.field == "options"
    assert "since" in caught.value.message
    assert repr(since) in caught.value.message


def test_options_never_enter_the_identity(adapter: DirectoryAdapter, tmp_path: Path) -> None:
    plain = adapter.identify(str(tmp_path), {})
    narrowed = adapter.identify(str(tmp_path), {"since": "2026-09"})
    assert (plain.source, plain.account, plain.locator) == (
        narrowed.source,
        narrowed.account,
        narrowed.locator,
    )


def test_an_undeclared_option_is_refused_naming_the_accepted_ones(
    adapter: DirectoryAdapter,
) -> None:
    check_options(adapter, {})
    check_options(adapter, {"since": "2026-09"})
    with pytest.raises(InputInvalid) as caught:
        check_options(adapter, {"since": "2026-09", "dir": "/elsewhere"})
    assert caught.value.field == "options"
    assert "'dir'" in caught.value.message
    assert "accepts: since" in caught.value.message


def test_the_adapter_describes_itself(adapter: DirectoryAdapter) -> None:
    described = describe(adapter)
    (since,) = described.pop("options")
    assert described == {
        "name": "directory",
        "description": adapter.description,
        "capabilities": {"incremental": True, "retains_raw": False, "needs_credentials": False},
        "origin": "builtin",
        "triggers": ["watch", "webhook"],
    }
    assert described["description"]
    assert set(since) == {"name", "description", "type", "breadth"}
    assert (since["name"], since["type"], since["breadth"]) == ("since", "date", "since")
    assert since["description"]


# discover


def test_files_are_found_by_modification_time_then_path(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    write(tmp_path, "z-oldest.txt", mtime_ns=BASE_NS)
    write(tmp_path, "b.txt", mtime_ns=BASE_NS + 2 * SECOND)
    write(tmp_path, "a.txt", mtime_ns=BASE_NS + 2 * SECOND)
    write(tmp_path, "sub/a.txt", mtime_ns=BASE_NS + 2 * SECOND)
    write(tmp_path, "sub/deeper/newest.txt", mtime_ns=BASE_NS + 3 * SECOND)
    write(tmp_path, "m.txt", mtime_ns=BASE_NS + SECOND + 1)
    ref = adapter.identify(str(tmp_path), {})
    discovery = adapter.discover(ref, None, 100)
    assert discovery.exhausted is True
    assert [(c.external_id, c.handle, c.cursor_after) for c in discovery.candidates] == [
        ("z-oldest.txt", "z-oldest.txt", {"mtime_ns": BASE_NS, "key": "z-oldest.txt"}),
        ("m.txt", "m.txt", {"mtime_ns": BASE_NS + SECOND + 1, "key": "m.txt"}),
        ("a.txt", "a.txt", {"mtime_ns": BASE_NS + 2 * SECOND, "key": "a.txt"}),
        ("b.txt", "b.txt", {"mtime_ns": BASE_NS + 2 * SECOND, "key": "b.txt"}),
        ("sub/a.txt", "sub/a.txt", {"mtime_ns": BASE_NS + 2 * SECOND, "key": "sub/a.txt"}),
        (
            "sub/deeper/newest.txt",
            "sub/deeper/newest.txt",
            {"mtime_ns": BASE_NS + 3 * SECOND, "key": "sub/deeper/newest.txt"},
        ),
    ]


def test_files_modified_moments_before_the_look_leave_the_cursor_before_them(
    tmp_path: Path,
) -> None:
    looked_at = BASE_NS + 10 * SECOND
    adapter = DirectoryAdapter(max_file_bytes=MAX, clock_ns=lambda: looked_at)
    write(tmp_path, "old.txt", mtime_ns=looked_at - SETTLING_NS - 1)
    write(tmp_path, "b.txt", mtime_ns=looked_at - SETTLING_NS)
    write(tmp_path, "a.txt", mtime_ns=looked_at + SECOND)
    ref = adapter.identify(str(tmp_path), {})
    settled = {"mtime_ns": looked_at - SETTLING_NS - 1, "key": "old.txt"}

    discovery = adapter.discover(ref, None, 100)

    # Every file is found; the cursor after each recent one is the last settled file's.
    assert [(c.external_id, c.cursor_after) for c in discovery.candidates] == [
        ("old.txt", settled),
        ("b.txt", settled),
        ("a.txt", settled),
    ]
    # With nothing settled, the cursor stays where it was.
    assert [c.cursor_after for c in adapter.discover(ref, settled, 100).candidates] == [
        settled,
        settled,
    ]


def test_an_empty_directory_has_nothing(adapter: DirectoryAdapter, tmp_path: Path) -> None:
    ref = adapter.identify(str(tmp_path), {})
    discovery = adapter.discover(ref, None, 10)
    assert (discovery.candidates, discovery.exhausted) == ([], True)


def test_discovery_is_strictly_after_the_cursor(adapter: DirectoryAdapter, tmp_path: Path) -> None:
    write(tmp_path, "early.txt", mtime_ns=BASE_NS)
    for name in ("a.txt", "b.txt", "c.txt"):
        write(tmp_path, name, mtime_ns=BASE_NS + SECOND)
    write(tmp_path, "late.txt", mtime_ns=BASE_NS + 2 * SECOND)
    same_time = BASE_NS + SECOND
    assert found(adapter, tmp_path, {"mtime_ns": same_time, "key": "b.txt"}) == [
        "c.txt",
        "late.txt",
    ]
    # A key between two names, or before all of them, at the same time.
    assert found(adapter, tmp_path, {"mtime_ns": same_time, "key": "a.txt0"}) == [
        "b.txt",
        "c.txt",
        "late.txt",
    ]
    assert found(adapter, tmp_path, {"mtime_ns": same_time, "key": ""}) == [
        "a.txt",
        "b.txt",
        "c.txt",
        "late.txt",
    ]
    # A later time wins over any key.
    assert found(adapter, tmp_path, {"mtime_ns": same_time + 1, "key": ""}) == ["late.txt"]
    assert found(adapter, tmp_path, {"mtime_ns": BASE_NS, "key": "zzz"}) == [
        "a.txt",
        "b.txt",
        "c.txt",
        "late.txt",
    ]
    assert found(adapter, tmp_path, {"mtime_ns": BASE_NS + 2 * SECOND, "key": "late.txt"}) == []


def test_limit_and_exhausted_page_through_every_file_once(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    names = [f"f{n:02}.txt" for n in range(7)]
    for n, name in enumerate(reversed(names)):
        # Times in the opposite order of names: time decides.
        write(tmp_path, name, mtime_ns=BASE_NS + n * SECOND)
    ref = adapter.identify(str(tmp_path), {})

    pages = []
    cursor = None
    while True:
        discovery = adapter.discover(ref, cursor, 3)
        assert len(discovery.candidates) <= 3
        pages.append([c.external_id for c in discovery.candidates])
        if discovery.exhausted:
            break
        cursor = discovery.candidates[-1].cursor_after
    assert pages == [
        ["f06.txt", "f05.txt", "f04.txt"],
        ["f03.txt", "f02.txt", "f01.txt"],
        ["f00.txt"],
    ]

    # Exactly the limit left is exhausted; one more is not.
    assert adapter.discover(ref, None, 7).exhausted is True
    assert adapter.discover(ref, None, 6).exhausted is False
    assert len(adapter.discover(ref, None, 6).candidates) == 6
    none = adapter.discover(ref, None, 0)
    assert (none.candidates, none.exhausted) == ([], False)


def test_since_keeps_files_modified_at_or_after_it(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    write(tmp_path, "2025.txt", mtime_ns=ns("2025-12-31T23:59:59Z"))
    write(tmp_path, "just-before.txt", mtime_ns=ns("2026-09-01T00:00:00Z") - 1)
    write(tmp_path, "at.txt", mtime_ns=ns("2026-09-01T00:00:00Z"))
    write(tmp_path, "after.txt", mtime_ns=ns("2026-09-15T12:00:00Z"))
    write(tmp_path, "october.txt", mtime_ns=ns("2026-10-02T00:00:00Z"))
    assert found(adapter, tmp_path) == [
        "2025.txt",
        "just-before.txt",
        "at.txt",
        "after.txt",
        "october.txt",
    ]
    assert found(adapter, tmp_path, since="2026-09") == ["at.txt", "after.txt", "october.txt"]
    assert found(adapter, tmp_path, since="2026-09-01") == ["at.txt", "after.txt", "october.txt"]
    assert found(adapter, tmp_path, since="2026-09-15T12:00:00Z") == ["after.txt", "october.txt"]
    assert found(adapter, tmp_path, since="2026-09-15T14:00:00+02:00") == [
        "after.txt",
        "october.txt",
    ]
    assert found(adapter, tmp_path, since="2026-09-15T12:00:00.000001Z") == ["october.txt"]
    assert found(adapter, tmp_path, since="2027-01") == []
    # With a cursor too: both narrow.
    cursor = {"mtime_ns": ns("2026-09-01T00:00:00Z"), "key": "at.txt"}
    assert found(adapter, tmp_path, cursor, since="2026-09") == ["after.txt", "october.txt"]


def test_since_counts_only_kept_files_against_the_limit(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    for n in range(5):
        write(tmp_path, f"old{n}.txt", mtime_ns=ns("2025-01-01T00:00:00Z") + n)
    write(tmp_path, "new.txt", mtime_ns=ns("2026-10-01T00:00:00Z"))
    ref = adapter.identify(str(tmp_path), {"since": "2026-09"})
    discovery = adapter.discover(ref, None, 1)
    assert [c.external_id for c in discovery.candidates] == ["new.txt"]
    assert discovery.exhausted is True


@pytest.mark.parametrize("skipped", sorted(SKIPPED_DIRECTORIES))
def test_build_cache_and_vcs_directories_are_not_entered(
    adapter: DirectoryAdapter, tmp_path: Path, skipped: str
) -> None:
    write(tmp_path, "kept.txt")
    write(tmp_path, f"{skipped}/inside.txt")
    write(tmp_path, f"{skipped}/deeper/inside.txt")
    write(tmp_path, f"src/{skipped}/nested.txt")
    assert found(adapter, tmp_path) == ["kept.txt"]


def test_the_skipped_names_are_the_documented_ones() -> None:
    assert frozenset(
        {".git", "target", "node_modules", ".venv", "venv", "dist", "build", ".cache"}
    ) == (SKIPPED_DIRECTORIES)


def test_hidden_directories_are_not_entered_but_similar_names_are(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    write(tmp_path, ".hidden/secret.txt", mtime_ns=BASE_NS)
    write(tmp_path, "src/.idea/workspace.xml", mtime_ns=BASE_NS)
    write(tmp_path, "..double/x.txt", mtime_ns=BASE_NS)
    # Only exact names are skipped, and a hidden *file* is a file like any other.
    write(tmp_path, "builds/a.txt", mtime_ns=BASE_NS + 1)
    write(tmp_path, "target2/b.txt", mtime_ns=BASE_NS + 2)
    write(tmp_path, "my.git/c.txt", mtime_ns=BASE_NS + 3)
    write(tmp_path, "build", "a file named build\n", mtime_ns=BASE_NS + 4)
    write(tmp_path, ".env", "KEY=value\n", mtime_ns=BASE_NS + 5)
    write(tmp_path, "src/.gitignore", "*.pyc\n", mtime_ns=BASE_NS + 6)
    assert found(adapter, tmp_path) == [
        "builds/a.txt",
        "target2/b.txt",
        "my.git/c.txt",
        "build",
        ".env",
        "src/.gitignore",
    ]


def test_the_directory_itself_may_be_hidden_or_skipped_by_name(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    """Only directories under the mined one are skipped: mining `.config` or `build` itself
    reads it."""
    write(tmp_path, ".config/app.toml", "a = 1\n")
    write(tmp_path, "build/out.txt")
    assert found(adapter, tmp_path / ".config") == ["app.toml"]
    assert found(adapter, tmp_path / "build") == ["out.txt"]


def test_links_are_never_followed(adapter: DirectoryAdapter, tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    write(outside, "elsewhere.txt")
    write(outside, "dir/far.txt")
    write(root, "real.txt", mtime_ns=BASE_NS)
    write(root, "sub/inner.txt", mtime_ns=BASE_NS + 1)
    (root / "to-real.txt").symlink_to(root / "real.txt")
    (root / "to-outside.txt").symlink_to(outside / "elsewhere.txt")
    (root / "to-sub").symlink_to(root / "sub", target_is_directory=True)
    (root / "to-outside-dir").symlink_to(outside / "dir", target_is_directory=True)
    (root / "dangling.txt").symlink_to(root / "missing.txt")
    (root / "loop").symlink_to(root, target_is_directory=True)
    assert found(adapter, root) == ["real.txt", "sub/inner.txt"]


def test_the_mined_directory_may_be_reached_through_a_link(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    write(tmp_path, "real/a.txt")
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    ref = adapter.identify(str(tmp_path / "link"), {})
    assert [c.external_id for c in adapter.discover(ref, None, 10).candidates] == ["a.txt"]
    assert ref.locator == os.path.realpath(tmp_path / "real")


def test_special_files_are_not_candidates(adapter: DirectoryAdapter, tmp_path: Path) -> None:
    write(tmp_path, "plain.txt")
    os.mkfifo(tmp_path / "a-fifo")
    assert found(adapter, tmp_path) == ["plain.txt"]


@pytest.mark.parametrize(
    "cursor",
    [
        "a.txt",
        42,
        [BASE_NS, "a.txt"],
        {},
        {"mtime_ns": BASE_NS},
        {"key": "a.txt"},
        {"mtime_ns": str(BASE_NS), "key": "a.txt"},
        {"mtime_ns": float(BASE_NS), "key": "a.txt"},
        {"mtime_ns": BASE_NS, "key": 5},
        {"mtime_ns": None, "key": "a.txt"},
    ],
)
def test_a_cursor_of_another_shape_is_refused(
    adapter: DirectoryAdapter, tmp_path: Path, cursor: Any
) -> None:
    write(tmp_path, "a.txt")
    ref = adapter.identify(str(tmp_path), {})
    with pytest.raises(CursorInvalid) as caught:
        adapter.discover(ref, cursor, 10)
    assert caught.value.code == "memcastle::source::cursor_invalid"
    assert "full" in caught.value.help


def test_a_cursor_with_extra_keys_is_still_a_cursor(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    write(tmp_path, "a.txt", mtime_ns=BASE_NS)
    write(tmp_path, "b.txt", mtime_ns=BASE_NS + 1)
    cursor = {"mtime_ns": BASE_NS, "key": "a.txt", "note": "kept by an older version"}
    assert found(adapter, tmp_path, cursor) == ["b.txt"]


# read


def test_read_returns_the_file_verbatim_with_its_revision(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    content = "line one\r\nline two\n\ttabbed \u00e9t\u00e9 \N{GRINNING FACE}\n\n"
    path = write(tmp_path, "docs/notes.md", content, mtime_ns=ns("2026-09-15T10:20:30.123456Z"))
    ref = adapter.identify(str(tmp_path), {})
    (found_candidate,) = adapter.discover(ref, None, 10).candidates
    raw = adapter.read(ref, found_candidate)
    data = content.encode("utf-8")
    assert raw == RawDocument(
        external_id="docs/notes.md",
        revision=hashlib.sha256(data).hexdigest(),
        body=content,
        metadata={
            "path": str(path),
            "size": len(data),
            "mtime_ns": ns("2026-09-15T10:20:30.123456Z"),
        },
        occurred_at="2026-09-15T10:20:30.123456Z",
    )
    assert os.path.isabs(raw.metadata["path"])


def test_the_revision_is_the_hash_of_the_bytes_not_of_the_time(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    ref = adapter.identify(str(tmp_path), {})
    write(tmp_path, "a.txt", "same\n", mtime_ns=BASE_NS)
    first = adapter.read(ref, candidate("a.txt"))
    write(tmp_path, "a.txt", "same\n", mtime_ns=BASE_NS + SECOND)
    touched = adapter.read(ref, candidate("a.txt"))
    write(tmp_path, "a.txt", "same!\n", mtime_ns=BASE_NS)
    edited = adapter.read(ref, candidate("a.txt"))
    assert first is not None and touched is not None and edited is not None
    assert first.revision == touched.revision == hashlib.sha256(b"same\n").hexdigest()
    assert edited.revision == hashlib.sha256(b"same!\n").hexdigest()


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "empty"),
        (b"text with a \x00 NUL byte", "binary"),
        (b"\x00", "only a NUL"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "an image"),
        (b"caf\xe9 in Latin-1", "not UTF-8"),
        (b"\xff\xfe\x00t\x00e\x00x\x00t", "UTF-16"),
        (b"truncated \xe2\x82", "a cut UTF-8 sequence"),
        (b"x" * (MAX + 1), "one byte over max_file_bytes"),
        (b"x" * (MAX * 3), "far over max_file_bytes"),
    ],
)
def test_files_that_are_not_mineable_text_are_skipped(
    adapter: DirectoryAdapter, tmp_path: Path, content: bytes, why: str
) -> None:
    write(tmp_path, "file", content)
    ref = adapter.identify(str(tmp_path), {})
    assert adapter.read(ref, candidate("file")) is None, why


def test_a_file_of_exactly_max_file_bytes_is_read(tmp_path: Path) -> None:
    ref_adapter = DirectoryAdapter(max_file_bytes=8)
    write(tmp_path, "eight", b"12345678")
    write(tmp_path, "nine", b"123456789")
    ref = ref_adapter.identify(str(tmp_path), {})
    raw = ref_adapter.read(ref, candidate("eight"))
    assert raw is not None and raw.body == "12345678"
    assert ref_adapter.read(ref, candidate("nine")) is None


def test_max_file_bytes_counts_bytes_not_characters(tmp_path: Path) -> None:
    small = DirectoryAdapter(max_file_bytes=10)
    write(tmp_path, "accents", "\u00e9" * 6)  # 6 characters, 12 bytes
    ref = small.identify(str(tmp_path), {})
    assert small.read(ref, candidate("accents")) is None


def test_a_file_gone_or_turned_into_a_link_or_directory_is_skipped(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    ref = adapter.identify(str(tmp_path), {})
    write(tmp_path, "target.txt", "the target\n")
    assert adapter.read(ref, candidate("gone.txt")) is None
    (tmp_path / "now-a-link.txt").symlink_to(tmp_path / "target.txt")
    assert adapter.read(ref, candidate("now-a-link.txt")) is None
    (tmp_path / "now-a-dir").mkdir()
    assert adapter.read(ref, candidate("now-a-dir")) is None
    assert adapter.read(ref, candidate("target.txt")) is not None


def test_a_utf8_byte_order_mark_is_text(adapter: DirectoryAdapter, tmp_path: Path) -> None:
    write(tmp_path, "bom.txt", b"\xef\xbb\xbfhello\n")
    ref = adapter.identify(str(tmp_path), {})
    raw = adapter.read(ref, candidate("bom.txt"))
    assert raw is not None
    assert raw.body == "\ufeffhello\n"
    assert raw.revision == hashlib.sha256(b"\xef\xbb\xbfhello\n").hexdigest()


# normalize


def test_normalize_makes_one_file_document_of_one_segment(
    adapter: DirectoryAdapter, tmp_path: Path
) -> None:
    path = write(tmp_path, "src/lib.rs", "fn main() {}\n")
    ref = adapter.identify(str(tmp_path), {})
    raw = adapter.read(ref, candidate("src/lib.rs"))
    assert raw is not None
    document = adapter.normalize(raw)
    assert document.kind == "file"
    assert document.segments == ["fn main() {}\n"]
    assert (document.title, document.name) == ("src/lib.rs", "src/lib.rs")
    assert document.uri == str(path)
    assert document.room is None
    assert document.tags == []
    # Pure: the same raw document gives the same canonical one.
    assert adapter.normalize(raw) == document


def test_normalize_reads_nothing_from_disk(adapter: DirectoryAdapter, tmp_path: Path) -> None:
    raw = RawDocument(
        external_id="gone/away.md",
        revision="0" * 64,
        body="kept in memory\n",
        metadata={"path": str(tmp_path / "gone" / "away.md"), "size": 15, "mtime_ns": BASE_NS},
    )
    document = adapter.normalize(raw)
    assert document.segments == ["kept in memory\n"]
    assert document.uri == str(tmp_path / "gone" / "away.md")
