"""Throughput of the `local` embedding profile (all-MiniLM-L6-v2 through onnxruntime).

Runs the graph the daemon uses (`int8`, dynamically quantized) and the unquantized one (`float`)
in the same process, in alternating rounds, because the machine is shared and a figure taken
minutes apart from another compares the neighbours' load, not the graphs. Reports each graph's
load time, windows of 256 tokens embedded per second (drawers of one full window each, in the
embed job's batches of 16) with the CPU time each window took (steadier than the wall clock when
other processes compete for the cores), the latency of embedding one short query, and how close
the int8 vectors are to the float ones.

    .venv/bin/python bench/embed_local.py [--drawers 160] [--queries 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import numpy as np

from palace.embeddings.local import MiniLM

TEXT = (
    "the memory daemon stores drawers in rooms of wings and searches them with lexical and "
    "semantic indexes so that agents can recall facts decisions preferences and events from long "
    "conversations about projects meetings travel code reviews deployments budgets family health "
    "and hobbies while the database keeps every version of what was true"
)
WORDS = TEXT.split()
BATCH = 16


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def full_windows(model: MiniLM, rng: random.Random, count: int) -> list[str]:
    """Drawers of exactly one full window: 254 tokens of text, with [CLS] and [SEP] 256."""
    drawers = []
    for _ in range(count):
        long = text(rng, 300)
        end = model.tokenizer.encode(long).offsets[254][1]
        drawers.append(long[:end])
    return drawers


def loaded(quantized: bool) -> tuple[MiniLM, float]:
    started = time.perf_counter()
    model = MiniLM(quantized=quantized)
    return model, time.perf_counter() - started


def documents_round(model: MiniLM, drawers: list[str]) -> tuple[float, float]:
    """Windows a second, and milliseconds of CPU (all threads) per window."""
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(drawers), BATCH):
        model.embed_documents(drawers[start : start + BATCH])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return len(drawers) / wall, 1000 * cpu / len(drawers)


def query_latencies(embed: Callable[[str], object], queries: list[str]) -> list[float]:
    embed(queries[0])
    latencies = []
    for query in queries:
        started = time.perf_counter()
        embed(query)
        latencies.append((time.perf_counter() - started) * 1000)
    return sorted(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drawers", type=int, default=160)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    models = {}
    for name, quantized in (("float", False), ("int8", True)):
        models[name], seconds = loaded(quantized)
        print(f"{name}: model load {seconds:.2f} s")
    rng = random.Random(7)
    drawers = full_windows(models["float"], rng, args.drawers)
    for model in models.values():
        model.embed_documents(drawers[:BATCH])  # warm up
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name in models}
    for round_ in range(args.rounds):
        for name, model in models.items():
            rates[name].append(documents_round(model, drawers))
            rate, cpu = rates[name][-1]
            print(f"round {round_ + 1} {name}: {rate:.1f} windows/s, {cpu:.1f} ms CPU a window")
    for name, measured in rates.items():
        rate = statistics.median(r for r, _ in measured)
        cpu = statistics.median(c for _, c in measured)
        print(
            f"{name} documents: {len(drawers)} windows of 256 tokens, median of {args.rounds} "
            f"rounds: {rate:.1f} windows/s, {cpu:.1f} ms CPU a window"
        )

    queries = [text(rng, rng.randint(4, 9)) for _ in range(args.queries)]
    for name, model in models.items():
        latencies = query_latencies(model.embed_query, queries)
        print(
            f"{name} short query: median {statistics.median(latencies):.2f} ms, "
            f"p95 {latencies[int(len(latencies) * 0.95) - 1]:.2f} ms over {len(latencies)} queries"
        )

    sample = drawers[:BATCH] + queries[:BATCH]
    cosines = np.sum(
        np.concatenate(models["float"].embed_documents(sample))
        * np.concatenate(models["int8"].embed_documents(sample)),
        axis=1,
    )
    print(f"int8 against float: cosine min {cosines.min():.4f}, mean {cosines.mean():.4f}")


if __name__ == "__main__":
    main()
