"""Documents into chunks: one drawer a chunk.

A document that fits in `chunk_chars` characters is one chunk, verbatim. Otherwise whole segments
are packed into chunks of up to `chunk_chars`; a segment longer than that is cut at the last
paragraph break that fits, else the last line break, else at the limit. Joining a document's
chunks gives back the concatenation of its segments, nothing added or lost.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence


def chunk(segments: Sequence[str], chunk_chars: int) -> list[str]:
    """The chunks of a document given as segments, none longer than `chunk_chars`."""
    chunks: list[str] = []
    current = ""
    for segment in segments:
        for piece in _pieces(segment, chunk_chars):
            if current and len(current) + len(piece) > chunk_chars:
                chunks.append(current)
                current = ""
            current += piece
    if current:
        chunks.append(current)
    return chunks


def _pieces(segment: str, chunk_chars: int) -> Iterator[str]:
    """A segment cut into pieces of at most `chunk_chars`, each break kept with the piece
    before it."""
    rest = segment
    while len(rest) > chunk_chars:
        window = rest[:chunk_chars]
        cut = window.rfind("\n\n")
        if cut > 0:
            cut += 2
        else:
            cut = window.rfind("\n") + 1
        if cut <= 0:
            cut = chunk_chars
        yield rest[:cut]
        rest = rest[cut:]
    if rest:
        yield rest
