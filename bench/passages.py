"""What embedding a conversation's passages costs: the conversational benchmark's session drawers
embedded by the `local` model as their windows only and as the daemon embeds them (windows, then
passages of turns), in alternating rounds in one process, since the machine is shared.

Prints, for each way, the vectors made, the wall time and the CPU time (all threads) of the whole
set, as the median of the rounds.

    .venv/bin/python -m bench.passages [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from palace.embeddings.local import MiniLM
from tests.eval import conversations


def timed(embed: Callable[[], int]) -> tuple[int, float, float]:
    """(vectors, wall seconds, CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    vectors = embed()
    return vectors, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    model = MiniLM()
    texts = [document.content for document in conversations.dataset("session").documents]
    windows = [window for text in texts for window in model.windows(text)]

    def windows_only() -> int:
        return len(model.embed_windows(windows))

    def with_passages() -> int:
        return sum(len(vectors) for vectors in model.embed_documents(texts))

    ways = {"windows only": windows_only, "windows and passages": with_passages}
    measured: dict[str, list[tuple[int, float, float]]] = {name: [] for name in ways}
    for round_ in range(args.rounds):
        for name, embed in ways.items():
            measured[name].append(timed(embed))
            vectors, wall, cpu = measured[name][-1]
            print(f"round {round_ + 1} {name}: {vectors} vectors, {wall:.2f} s, {cpu:.2f} s CPU")
    for name, rows in measured.items():
        wall = statistics.median(row[1] for row in rows)
        cpu = statistics.median(row[2] for row in rows)
        print(
            f"{name}: {len(texts)} session drawers, {rows[0][0]} vectors, median of "
            f"{args.rounds} rounds {wall:.2f} s ({len(texts) / wall:.0f} drawers/s), "
            f"{cpu:.2f} s CPU"
        )


if __name__ == "__main__":
    main()
