"""Documents into chunks: one drawer a chunk.

A document that fits in `chunk_chars` characters is one chunk, verbatim. Otherwise whole segments
are packed into chunks of up to `chunk_chars`; a segment longer than that is cut at the last
paragraph break that fits, else the last line break, else at the limit. Joining a document's
chunks gives back the concatenation of its segments, nothing added or lost.
"""

from __future__ import annotations

from collections.abc import Sequence


def chunk(segments: Sequence[str], chunk_chars: int) -> list[str]:
    """The chunks of a document given as segments, none longer than `chunk_chars`."""
    chunks: list[str] = []
    current = ""
    for segment in segments:
        if current and len(current) + len(segment) > chunk_chars:
            chunks.append(current)
            current = ""
        if len(segment) <= chunk_chars:
            current += segment
            continue
        # A long segment's pieces end where it was cut; only its last piece is packed on.
        *cut, current = _pieces(segment, chunk_chars)
        chunks.extend(cut)
    if current:
        chunks.append(current)
    return chunks


def _pieces(segment: str, chunk_chars: int) -> list[str]:
    """A segment cut into pieces of at most `chunk_chars`, each break kept with the piece
    before it (a paragraph break is `\n\n` or `\r\n\r\n`)."""
    pieces = []
    rest = segment
    while len(rest) > chunk_chars:
        window = rest[:chunk_chars]
        paragraph = max(_after(window, "\n\n"), _after(window, "\r\n\r\n"))
        cut = paragraph or _after(window, "\n") or chunk_chars
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    return pieces


def _after(window: str, separator: str) -> int:
    """Where the window's last `separator` ends, or 0 when it has none."""
    found = window.rfind(separator)
    return found + len(separator) if found >= 0 else 0
