"""`sources.chunking.chunk`: documents into the chunks a mine files as drawers (sources.md 1).

A document that fits is one chunk, verbatim; otherwise whole segments are packed up to the size,
and a segment longer than a chunk is cut at its last paragraph break that fits, else its last
line break, else at the limit. Nothing is added or lost, and no chunk is longer than the limit.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sources.chunking import chunk

PROPERTY = settings(derandomize=True, database=None, max_examples=200, deadline=None)
# Few letters and many breaks make paragraph and line breaks likely anywhere.
TEXT = st.text(alphabet="ab \n", max_size=120)
SEGMENTS = st.lists(TEXT, max_size=8)
LIMITS = st.integers(min_value=1, max_value=40)


# A document that fits.


def test_a_document_that_fits_is_one_verbatim_chunk() -> None:
    text = "  Leading spaces, a trailing break and a tab\t are kept.\n\n"
    assert chunk([text], 200) == [text]


def test_a_document_exactly_the_limit_is_one_chunk() -> None:
    text = "x" * 199 + "\n"
    assert chunk([text], 200) == [text]
    assert chunk([text + "y"], 200) == [text, "y"]


def test_segments_that_fit_together_are_one_chunk() -> None:
    assert chunk(["one\n", "two\n", "three\n"], 200) == ["one\ntwo\nthree\n"]


def test_nothing_gives_no_chunks() -> None:
    assert chunk([], 200) == []
    assert chunk([""], 200) == []
    assert chunk(["", ""], 200) == []


# Packing whole segments.


def test_whole_segments_are_packed_up_to_the_limit() -> None:
    segments = [letter * 80 for letter in "abcde"]
    assert chunk(segments, 200) == ["a" * 80 + "b" * 80, "c" * 80 + "d" * 80, "e" * 80]


def test_a_segment_that_would_overflow_starts_the_next_chunk_whole() -> None:
    # 150 + 60 > 200: the second segment is not split to fill the first chunk.
    segments = ["a" * 150, "b" * 60, "c" * 40]
    assert chunk(segments, 200) == ["a" * 150, "b" * 60 + "c" * 40]


def test_segments_exactly_filling_a_chunk_share_it() -> None:
    assert chunk(["a" * 100, "b" * 100, "c"], 200) == ["a" * 100 + "b" * 100, "c"]


# Cutting a segment longer than a chunk.


def test_a_long_segment_is_cut_at_its_last_paragraph_break_that_fits() -> None:
    first = "alpha line one\nalpha line two\n\n"
    second = "beta line\n\n"
    rest = "gamma " * 10
    text = first + second + rest
    limit = len(first) + len(second) + 5
    # The second paragraph break is the last one in the window; the break stays with the
    # text before it.
    assert chunk([text], limit)[0] == first + second


def test_without_a_paragraph_break_a_segment_is_cut_at_its_last_line_break() -> None:
    text = "one line\nanother line\nand a third line that is long\n"
    limit = len("one line\nanother line\n") + 3
    chunks = chunk([text], limit)
    assert chunks[0] == "one line\nanother line\n"
    assert "".join(chunks) == text


def test_a_paragraph_break_beyond_the_limit_is_not_used() -> None:
    text = "short\nline\n" + "x" * 30 + "\n\nafter"
    chunks = chunk([text], 20)
    assert chunks[0] == "short\nline\n"
    assert "".join(chunks) == text


def test_a_paragraph_break_is_preferred_to_a_later_line_break() -> None:
    text = "para one\n\nbb\n" + "a" * 25 + "\n" + "z" * 40
    # The first window (30) has a paragraph break after `para one` and a later line break
    # after `bb`: the cut is at the paragraph break.
    assert chunk([text], 30) == ["para one\n\n", "bb\n" + "a" * 25 + "\n", "z" * 30, "z" * 10]


def test_a_segment_with_no_break_is_cut_at_the_limit() -> None:
    assert chunk(["x" * 45], 20) == ["x" * 20, "x" * 20, "x" * 5]


def test_a_long_line_after_a_line_break_is_cut_at_the_break_then_at_the_limit() -> None:
    text = "head\n" + "y" * 50
    # `head\n` and the next 20 characters do not fit together.
    assert chunk([text], 20) == ["head\n", "y" * 20, "y" * 20, "y" * 10]


def test_cutting_counts_characters_and_never_splits_one() -> None:
    text = "\N{GRINNING FACE}" * 450  # four bytes each in UTF-8
    chunks = chunk([text], 200)
    assert [len(piece) for piece in chunks] == [200, 200, 50]
    assert all(piece == "\N{GRINNING FACE}" * len(piece) for piece in chunks)
    for piece in chunks:
        piece.encode("utf-8")  # every chunk is whole characters
    assert "".join(chunks) == text


def test_the_pieces_of_a_cut_segment_are_packed_with_the_next_segments() -> None:
    chunks = chunk(["a" * 25, "b" * 10], 20)
    assert chunks == ["a" * 20, "a" * 5 + "b" * 10]


# Properties.


@PROPERTY
@given(SEGMENTS, LIMITS)
def test_the_chunks_join_to_the_segments(segments: list[str], limit: int) -> None:
    assert "".join(chunk(segments, limit)) == "".join(segments)


@PROPERTY
@given(SEGMENTS, LIMITS)
def test_no_chunk_is_longer_than_the_limit_or_empty(segments: list[str], limit: int) -> None:
    for piece in chunk(segments, limit):
        assert 0 < len(piece) <= limit


@PROPERTY
@given(SEGMENTS, st.integers(min_value=1, max_value=1000))
def test_a_document_that_fits_is_its_text_verbatim(segments: list[str], limit: int) -> None:
    text = "".join(segments)
    if len(text) <= limit:
        assert chunk(segments, limit) == ([text] if text else [])


@PROPERTY
@given(st.lists(st.text(alphabet="ab \n", min_size=1, max_size=30), max_size=10), LIMITS)
def test_segments_that_fit_are_never_split_and_packed_greedily(
    segments: list[str], limit: int
) -> None:
    segments = [segment for segment in segments if len(segment) <= limit]
    chunks = chunk(segments, limit)
    # Every chunk is a run of whole segments ...
    bounds = {0}
    position = 0
    for segment in segments:
        position += len(segment)
        bounds.add(position)
    position = 0
    for piece in chunks:
        position += len(piece)
        assert position in bounds
    # ... and the next segment would not have fitted in it.
    index = 0
    for piece in chunks[:-1]:
        taken = ""
        while len(taken) < len(piece):
            taken += segments[index]
            index += 1
        assert taken == piece
        assert len(piece) + len(segments[index]) > limit


@PROPERTY
@given(TEXT, LIMITS)
def test_a_long_segment_is_cut_only_after_a_break_or_at_the_limit(text: str, limit: int) -> None:
    """Every chunk but the last ends with a line break (a paragraph break is one too), or is
    exactly the limit long with no line break in it at all."""
    chunks = chunk([text], limit)
    for piece in chunks[:-1]:
        assert piece.endswith("\n") or (len(piece) == limit and "\n" not in piece), (
            chunks,
            limit,
        )


@PROPERTY
@given(SEGMENTS, LIMITS)
def test_chunking_is_deterministic(segments: list[str], limit: int) -> None:
    first = chunk(segments, limit)
    assert chunk(list(segments), limit) == first
    assert chunk(tuple(segments), limit) == first


@pytest.mark.parametrize("limit", [200, 6000, 100_000])
def test_a_long_realistic_document_round_trips(limit: int) -> None:
    paragraphs = [
        f"Paragraph {n}: " + " ".join(f"word{m}" for m in range(n % 10 + 3)) + "\n"
        for n in range(2000)
    ]
    text = "\n".join(paragraphs)
    chunks = chunk([text], limit)
    assert "".join(chunks) == text
    assert all(0 < len(piece) <= limit for piece in chunks)
    # Every chunk but the last ends at a paragraph break: paragraphs are far shorter than a
    # chunk.
    assert all(piece.endswith("\n\n") for piece in chunks[:-1])
