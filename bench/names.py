"""The semantic leg with and without the speakers' names in the question, replayed offline on
the conversational benchmark's sessions (docs/retrieval.md, "Names in the question").

The daemon's `local` model embeds, in this process, every session drawer as the daemon does (its
windows and its passages, labelled or with the speaker labels dropped) and every question as
asked or without the names of the benchmark's speakers; each question is ranked within its wing
(and, for the last row, across every wing), then fused with the lexical leg that
`bench.fusion collect` recorded from a daemon, by the daemon's own fusion:

    .venv/bin/python -m bench.fusion collect --out /tmp/fusion --profile local --benchmark session
    .venv/bin/python -m bench.names /tmp/fusion/session-local.json

It prints semantic and hybrid any@5 per row. It measures and reports; it is not a test.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import fusion as replay
from palace.embeddings.local import MiniLM
from palace.embeddings.passages import passages
from palace.search.speakers import voices, without
from tests.eval import conversations
from tests.eval.metrics import order_ties, score_query

POOL = 20


def unlabelled(passage: str) -> str:
    return "\n".join(re.sub(r"^[^:\n]{1,40}: ", "", line) for line in passage.split("\n"))


class Replay:
    def __init__(self, collected: Path) -> None:
        self.dataset = conversations.dataset("session")
        self.model = MiniLM()
        self.record = json.loads(collected.read_text())
        self.asked = {q["id"]: q for q in self.record["queries"]}
        self.mass = replay.masses("session")
        self.shapes = replay.shapes_of("session")
        self.names = {n for d in self.dataset.documents for n in voices(d.content)}
        self.windows = {
            d.id: self.model.embed_windows(self.model.windows(d.content))
            for d in self.dataset.documents
        }

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.model.embed_windows([self.model.windows(text)[0] for text in texts])

    def run(self, label: str, nameless: bool, passage: Callable[[str], str], wide: bool) -> None:
        vectors = {
            d.id: np.vstack(
                [self.windows[d.id], self.embed([passage(p) for p in passages(d.content)])]
            )
            for d in self.dataset.documents
        }
        texts = [without(q.text, self.names) if nameless else q.text for q in self.dataset.queries]
        questions = self.embed(texts)
        semantic = hybrid = 0.0
        for question, query in zip(questions, self.dataset.queries, strict=True):
            drawers = [d for d in self.dataset.documents if wide or d.wing == query.wing]
            ranked = sorted(
                ((d.id, float((vectors[d.id] @ question).max())) for d in drawers),
                key=lambda hit: (-hit[1], hit[0]),
            )
            semantic += score_query(order_ties(ranked[:10]), query.grades())["hit@5"]
            if not wide:
                hybrid += self._fused(query, ranked[:POOL])
        count = len(self.dataset.queries)
        fused = "" if wide else f", hybrid any@5 {hybrid / count:.3f}"
        print(f"{label}: semantic any@5 {semantic / count:.3f}{fused}", flush=True)

    def _fused(self, query: Any, semantic: list[tuple[str, float]]) -> float:
        collected = self.asked[query.id]
        daemon_id = {name: drawer for drawer, name in collected["names"].items()}
        lexical = replay._leg(collected["lexical_any"], POOL)
        leg = [(daemon_id.get(name, "?" + name), score) for name, score in semantic]
        shapes = replay.drawers_shaped(self.shapes, collected["names"])
        fused = replay.chosen(lexical, leg, self.mass[query.id], shapes)
        hits = sorted(fused.items(), key=lambda hit: (-hit[1], hit[0]))[:10]
        named = [(collected["names"].get(d, d.lstrip("?")), s) for d, s in hits]
        return score_query(order_ties(named), query.grades())["hit@5"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("collected", type=Path, help="bench.fusion's session-local.json")
    args = parser.parse_args()
    run = Replay(args.collected).run
    run("as asked, passages labelled", False, str, wide=False)
    run("without the names, passages labelled", True, str, wide=False)
    run("without the names, passages unlabelled", True, unlabelled, wide=False)
    run("as asked, passages unlabelled", False, unlabelled, wide=False)
    run("as asked, across every wing", False, str, wide=True)
    run("without the names, across every wing", True, str, wide=True)


if __name__ == "__main__":
    main()
