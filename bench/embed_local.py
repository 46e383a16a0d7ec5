"""Throughput of the `local` embedding profile (all-MiniLM-L6-v2 through onnxruntime).

Reports the model's load time, windows of 256 tokens embedded per second (drawers of about 256
tokens each, in the embed job's batches of 16), and the latency of embedding one short query.

    .venv/bin/python bench/embed_local.py [--drawers 160] [--queries 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

TEXT = (
    "the memory daemon stores drawers in rooms of wings and searches them with lexical and "
    "semantic indexes so that agents can recall facts decisions preferences and events from long "
    "conversations about projects meetings travel code reviews deployments budgets family health "
    "and hobbies while the database keeps every version of what was true"
)
WORDS = TEXT.split()


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drawers", type=int, default=160)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    from palace.embeddings import local

    started = time.perf_counter()
    model = local.model()
    print(f"model load: {time.perf_counter() - started:.2f} s")

    rng = random.Random(7)
    # Drawers of exactly one full window: 254 tokens of text, with [CLS] and [SEP] 256.
    drawers = []
    for _ in range(args.drawers):
        long = text(rng, 300)
        end = model.tokenizer.encode(long).offsets[254][1]
        drawers.append(long[:end])
    windows = sum(len(model.windows(d)) for d in drawers)
    lengths = [len(w) for d in drawers for w in model.windows(d)]
    model.embed_documents(drawers[:16])  # warm up
    started = time.perf_counter()
    for start in range(0, len(drawers), 16):
        model.embed_documents(drawers[start : start + 16])
    elapsed = time.perf_counter() - started
    print(
        f"documents: {len(drawers)} drawers, {windows} windows (median {statistics.median(lengths)}"
        f" tokens) in {elapsed:.2f} s: {windows / elapsed:.1f} windows/s, "
        f"{len(drawers) / elapsed:.1f} drawers/s"
    )

    queries = [text(rng, rng.randint(4, 9)) for _ in range(args.queries)]
    model.embed_query(queries[0])
    latencies = []
    for query in queries:
        started = time.perf_counter()
        model.embed_query(query)
        latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()
    print(
        f"short query: median {statistics.median(latencies):.2f} ms, "
        f"p95 {latencies[int(len(latencies) * 0.95) - 1]:.2f} ms over {len(latencies)} queries"
    )


if __name__ == "__main__":
    main()
