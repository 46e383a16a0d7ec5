"""How fast mine jobs read a directory of text files into drawers, through a real daemon.

Run from the repository root: `.venv/bin/python bench/mine.py`; `--files 500 --mb 5` gives a quick
run. It measures and reports; it is not a test, so it exits 0 whatever the figures are.

1. **Tree.** `--files` text files (5,000) of about `--mb` MB in all (50; MB = 10^6 bytes), 2 to
   20 KB each, in nested directories: markdown notes and docs, journals, plain-text notes,
   code-like sources and a few config files, made of paragraphs of generated prose (the
   vocabulary of `bench/writes.py`: common English words and made-up topic words with Zipf
   frequencies), with fixed seeds and fixed modification times spread over 2025. The tree is
   cached under the temporary directory, keyed by a version string and its parameters; each run
   works on a fresh copy (modification times kept), so the cache is never edited.
2. **Through a daemon.** A daemon (`manage.py serve` in a subprocess, Celery in the daemon,
   default configuration: `store.sync = every`, deduplication on, `mining.chunk_chars` 6,000
   unless `--chunk-chars` says otherwise) is started on a new palace with
   `MEMCASTLE_MINING_MAX_DOCUMENTS` raised above the file count, so one job reads the whole tree.
   Four mine jobs (`POST /api/jobs {"type": "mine", "path": ...}`) run one at a time: the first
   mine; an unchanged re-mine (the cursor is at the newest file, so nothing is discovered); an
   unchanged `full` re-mine (every file read again, and skipped because its revision is stored);
   and, after 1% of the files are touched or edited (appended to, changed in the middle, cut to
   half), a re-mine that reads those. For each: files and MB per second on the server
   (`completed_at - started_at` of the job record, the daemon's clock) and end to end (POST sent
   to `completed_at`, same host, same clock), the job's result against what the benchmark
   expects from chunking the files itself, the daemon's CPU time, and what the rest of the
   machine did meanwhile (CPU used by other processes, time stolen by the hypervisor); a fixed
   Python loop is timed before and after, as a probe of the machine's speed. The job's
   `completed` frame on `GET /api/events` says when to read the record.
3. **Where the time goes.** With no daemon running, the same four jobs run in this process on a
   new palace and a fresh copy of the tree (`JobService.submit`, then `Executor.execute` on this
   thread), with every store call timed by the repository method that made it (the engine's
   call, the SDK's decoding and the rest apart) and the pipeline's Python stages timed apart
   (walking the tree, reading files, chunking, digests, similarity). Then the first mine once
   more on a new palace under cProfile: own time by where the code lives, and the top functions.

`--shared-header 1` makes every code file start with the same licence header, as in many
repositories; `--files 50 --mb 50` makes files of about a megabyte. Embedding is not implemented
yet, so every figure is with embedding off. Daemons are stopped by their pid, on error too.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime as dt
import hashlib
import io
import itertools
import json
import os
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# Jobs run in this process too, and the apps register their job kinds as Django starts.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402

from bench.hierarchy import directory_size, machine  # noqa: E402
from bench.jobs import EventListener, cpu_seconds, ok, parse_time  # noqa: E402
from bench.writes import (  # noqa: E402
    COMMON,
    TOPIC,
    TOPIC_CUMULATIVE,
    Call,
    Profiler,
    code_state,
    log_problems,
    per_sec,
    stop,
    wait_finished,
)
from kernel.config import MiningConfig, load_config  # noqa: E402
from kernel.context import RequestContext  # noqa: E402
from kernel.store import Store  # noqa: E402
from sources import chunking  # noqa: E402
from tests.support.daemon import Daemon  # noqa: E402

# Bump when the generated tree changes, so a cached tree of the old shape is not reused.
TREE_VERSION = "mine-1"
CACHE_DIR = Path(tempfile.gettempdir()) / "memcastle-bench-mine"
MB = 1_000_000
MIN_FILE_BYTES = 2_000
MAX_FILE_BYTES = 20_000
# The tree's files were last modified in 2025, at fixed instants: discovery order and the
# cursor are the same on every run. Edited files get the current time.
MTIME_START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
MTIME_SPAN_SECS = 365 * 86_400
EDIT_SHARE = 0.01
REQUESTED_BY = "bench"
TARGET_FIRST_FILES_PER_SEC = 200.0
TARGET_UNCHANGED_FILES_PER_SEC = 2_000.0
TREE_NAME = "corpus"

# What the tree holds: (kind, share of the files).
KINDS = (
    ("notes", 0.30),  # markdown notes: headings, paragraphs, lists, the odd code block
    ("docs", 0.15),  # markdown documentation, with links and tables
    ("journal", 0.12),  # dated markdown journals: timed entries
    ("text", 0.13),  # plain text, wrapped at 72 columns
    ("code", 0.25),  # Python-, TypeScript- and Rust-like sources
    ("config", 0.05),  # TOML and YAML
)
# Some prose has typographic punctuation and accented words (not ASCII), as real notes do.
NON_ASCII_SHARE = 0.2
NON_ASCII_WORDS = ("café", "naïve", "résumé", "déjà", "façade", "Zürich", "São Paulo", "coöperate")
EM_DASH, APOSTROPHE = "\u2014", "\u2019"


# Text


class Words:
    """Words drawn in bulk (one `choices` call for many words, not one a word): half common
    words, half topic words with Zipf frequencies, a few numbers."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pool: list[str] = []

    def take(self, n: int) -> list[str]:
        while len(self.pool) < n:
            self._refill()
        taken, self.pool = self.pool[:n], self.pool[n:]
        return taken

    def _refill(self, size: int = 2048) -> None:
        rng = self.rng
        common = rng.choices(COMMON, k=size)
        topic = rng.choices(TOPIC, cum_weights=TOPIC_CUMULATIVE, k=size)
        picks = [rng.random() for _ in range(size)]
        for n, pick in enumerate(picks):
            if pick < 0.5:
                self.pool.append(common[n])
            elif pick < 0.97:
                self.pool.append(topic[n])
            else:
                self.pool.append(
                    rng.choice(
                        (
                            f"#{rng.randint(100, 9999)}",
                            f"v{rng.randint(1, 9)}.{rng.randint(0, 20)}",
                            f"{rng.randint(1, 28)}/{rng.randint(1, 12)}",
                            f"{rng.randint(2, 500)}ms",
                        )
                    )
                )


class Writer:
    """Generated prose for one file."""

    def __init__(self, rng: random.Random, fancy: bool) -> None:
        self.rng = rng
        self.words = Words(rng)
        self.fancy = fancy  # typographic punctuation and accented words

    def sentence(self, low: int = 6, high: int = 18) -> str:
        rng = self.rng
        words = self.words.take(rng.randint(low, high))
        if self.fancy and rng.random() < 0.15:
            words[rng.randrange(len(words))] = rng.choice(NON_ASCII_WORDS)
        if len(words) > 8 and rng.random() < 0.3:
            cut = rng.randint(3, len(words) - 3)
            words[cut] += f" {EM_DASH}" if self.fancy else ","
        if self.fancy and rng.random() < 0.1:
            words[0] = f"it{APOSTROPHE}s"
        text = " ".join(words)
        return text[0].upper() + text[1:] + rng.choice(".......?!")

    def paragraph(self, low: int = 2, high: int = 7) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(low, high)))

    def title(self, low: int = 2, high: int = 6) -> str:
        words = self.words.take(self.rng.randint(low, high))
        return " ".join(word.capitalize() if n == 0 else word for n, word in enumerate(words))

    def identifier(self) -> str:
        return "_".join(w for w in self.words.take(self.rng.randint(1, 3)) if w.isalpha()) or "x"


def wrap(text: str, width: int) -> str:
    """Greedy word wrap, at spaces."""
    lines, line, length = [], [], 0
    for word in text.split(" "):
        if line and length + 1 + len(word) > width:
            lines.append(" ".join(line))
            line, length = [], 0
        length += len(word) + (1 if line else 0)
        line.append(word)
    if line:
        lines.append(" ".join(line))
    return "\n".join(lines)


def notes_blocks(w: Writer, variant: str) -> Iterator[str]:
    rng = w.rng
    yield f"# {w.title()}"
    if rng.random() < 0.4:
        yield f"Tags: {', '.join(w.words.take(rng.randint(2, 4)))}"
    while True:
        pick = rng.random()
        if pick < 0.15:
            yield f"## {w.title()}"
        elif pick < 0.30:
            yield "\n".join(f"- {w.sentence(4, 12)}" for _ in range(rng.randint(2, 6)))
        elif pick < 0.35:
            yield "```\n" + "\n".join(code_line(w) for _ in range(rng.randint(3, 10))) + "\n```"
        else:
            paragraph = w.paragraph()
            yield wrap(paragraph, 80) if rng.random() < 0.5 else paragraph


def docs_blocks(w: Writer, variant: str) -> Iterator[str]:
    rng = w.rng
    yield f"# {w.title()}"
    yield w.paragraph(1, 3)
    while True:
        pick = rng.random()
        if pick < 0.12:
            yield f"## {w.title()}"
        elif pick < 0.18:
            columns = [w.title(1, 2) for _ in range(rng.randint(2, 4))]
            rows = [
                "| " + " | ".join(w.words.take(1)[0] for _ in columns) + " |"
                for _ in range(rng.randint(2, 6))
            ]
            yield "\n".join(["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns), *rows])
        elif pick < 0.26:
            yield (
                "```sh\n"
                + "\n".join(
                    f"$ {w.identifier()} --{w.identifier()} {w.words.take(1)[0]}"
                    for _ in range(rng.randint(1, 4))
                )
                + "\n```"
            )
        else:
            paragraph = w.paragraph()
            link = w.words.take(1)[0]
            yield paragraph.replace(" ", f" [{link}](../{link}.md) ", 1)


def journal_blocks(w: Writer, day: str) -> Iterator[str]:
    rng = w.rng
    yield f"# {dt.date.fromisoformat(day):%A %d %B %Y}"
    minutes = rng.randint(7 * 60, 10 * 60)
    while True:
        minutes = (minutes + rng.randint(5, 90)) % (24 * 60)
        yield f"- {minutes // 60:02d}:{minutes % 60:02d} {w.paragraph(1, 4)}"


def text_blocks(w: Writer, variant: str) -> Iterator[str]:
    yield w.title().upper()
    while True:
        yield wrap(w.paragraph(), 72)


def code_line(w: Writer, comment: str = "#") -> str:
    rng = w.rng
    pick = rng.random()
    name = w.identifier()
    if pick < 0.3:
        return f"{name} = {w.identifier()}({w.identifier()}, {rng.randint(0, 100)})"
    if pick < 0.5:
        return f"if {name} is not None and {w.identifier()} > {rng.randint(0, 9)}:"
    if pick < 0.7:
        return f"    return {name}.{w.identifier()}()"
    if pick < 0.85:
        return f"{comment} {w.sentence(4, 10)}"
    return f"for {name} in {w.identifier()}:"


def code_blocks(w: Writer, language: str) -> Iterator[str]:
    """Python-like, TypeScript-like or Rust-like (`py`, `ts`, `rs`)."""
    rng = w.rng
    comment = {"py": "#", "ts": "//", "rs": "//"}[language]
    if language == "py":
        yield '"""' + w.sentence() + "\n\n" + wrap(w.paragraph(1, 3), 96) + '\n"""'
    else:
        yield "\n".join(f"{comment} {line}" for line in wrap(w.paragraph(1, 3), 96).split("\n"))
    while True:
        name, args = w.identifier(), ", ".join(w.identifier() for _ in range(rng.randint(0, 3)))
        doc = w.sentence(5, 14)
        body = "\n".join("    " + code_line(w, comment) for _ in range(rng.randint(3, 14)))
        if language == "py":
            yield f'def {name}({args}):\n    """{doc}"""\n{body}'
        elif language == "ts":
            yield f"/** {doc} */\nexport function {name}({args}) {{\n{body}\n}}"
        else:
            yield f"/// {doc}\npub fn {name}({args}) {{\n{body}\n}}"


def config_blocks(w: Writer, variant: str) -> Iterator[str]:
    rng = w.rng
    toml = variant == "toml"
    yield f"# {w.sentence()}"
    while True:
        section = w.identifier()
        keys = [
            f"{w.identifier()} = {json.dumps(' '.join(w.words.take(rng.randint(1, 5))))}"
            if toml
            else f"  {w.identifier()}: {' '.join(w.words.take(rng.randint(1, 5)))}"
            for _ in range(rng.randint(2, 8))
        ]
        yield (f"[{section}]" if toml else f"{section}:") + "\n" + "\n".join(keys)


BLOCKS = {
    "notes": notes_blocks,
    "docs": docs_blocks,
    "journal": journal_blocks,
    "text": text_blocks,
    "code": code_blocks,
    "config": config_blocks,
}


# The tree


@dataclass(frozen=True)
class Spec:
    """One file of the tree."""

    path: str  # relative, with `/`
    kind: str
    variant: str  # the language of code, the format of config, else the kind
    size: int  # target bytes
    mtime_ns: int


def _name(rng: random.Random, words: int = 2) -> str:
    picked = rng.choices(TOPIC[:600], k=rng.randint(1, words))
    return "-".join(picked)


def plan(args: argparse.Namespace) -> list[Spec]:
    """Every file's place, kind, size and modification time, the same for the same arguments."""
    rng = random.Random(f"tree/{args.seed}")
    kinds, shares = zip(*KINDS, strict=True)
    # Directory names: a few areas, each with subdirectories, as a real notes folder or project.
    areas = [_name(rng, 1) for _ in range(10)]
    subareas = {area: [_name(rng) for _ in range(rng.randint(4, 10))] for area in areas}
    packages = [_name(rng, 1) for _ in range(6)]
    modules = {package: [_name(rng, 1) for _ in range(rng.randint(3, 8))] for package in packages}
    mean = args.mb * MB / args.files
    mode = min(max(3 * mean - MIN_FILE_BYTES - MAX_FILE_BYTES, MIN_FILE_BYTES), MAX_FILE_BYTES)
    sizes = [rng.triangular(MIN_FILE_BYTES, MAX_FILE_BYTES, mode) for _ in range(args.files)]
    scale = args.mb * MB / sum(sizes)
    taken: set[str] = set()
    specs = []
    start_ns = int(MTIME_START.timestamp()) * 1_000_000_000
    for index in range(args.files):
        kind = rng.choices(kinds, shares)[0]
        variant = kind
        area = rng.choice(areas)
        if kind == "notes":
            folder = f"notes/{area}/{rng.choice(subareas[area])}"
            if rng.random() < 0.3:
                folder += f"/{_name(rng, 1)}"
            stem, extension = _name(rng, 3), "md"
        elif kind == "docs":
            folder = f"docs/{area}"
            if rng.random() < 0.6:
                folder += f"/{rng.choice(subareas[area])}"
            stem, extension = _name(rng, 3), "md"
        elif kind == "journal":
            day = MTIME_START + dt.timedelta(days=rng.randrange(365))
            folder = f"journal/{day:%Y/%m}"
            variant = f"{day:%Y-%m-%d}"
            stem, extension = f"{variant}-{_name(rng, 1)}", "md"
        elif kind == "text":
            folder = f"text/{area}"
            stem, extension = _name(rng, 3), "txt"
        elif kind == "code":
            package = rng.choice(packages)
            folder = f"src/{package}/{rng.choice(modules[package])}"
            variant = rng.choice(("py", "ts", "rs"))
            stem, extension = _name(rng, 2).replace("-", "_"), variant
        else:
            folder = f"config/{area}"
            variant = rng.choice(("toml", "yaml"))
            stem, extension = _name(rng, 2), variant
        path = f"{folder}/{stem}.{extension}"
        suffix = 2
        while path in taken:
            path = f"{folder}/{stem}-{suffix}.{extension}"
            suffix += 1
        taken.add(path)
        size = round(sizes[index] * scale)
        mtime_ns = start_ns + rng.randrange(MTIME_SPAN_SECS * 1_000_000_000)
        specs.append(Spec(path, kind, variant, size, mtime_ns))
    return specs


def license_header(language: str) -> str:
    """The same licence header, as many projects start every source file with."""
    comment = "#" if language == "py" else "//"
    return "\n".join(f"{comment} {line}".rstrip() for line in LICENSE.splitlines())


LICENSE = """Copyright 2025 The Example Project Authors. All rights reserved.

Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file
except in compliance with the License. You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software distributed under the
License is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND,
either express or implied. See the License for the specific language governing permissions
and limitations under the License."""


def has_header(spec: Spec, shared_header: float) -> bool:
    return spec.kind == "code" and random.Random(f"header/{spec.path}").random() < shared_header


def file_text(spec: Spec, seed: int, shared_header: float = 0.0) -> str:
    """Blocks separated by blank lines until about `spec.size` UTF-8 bytes, cut at a line end.
    With `shared_header`, that share of the code files starts with the same licence header."""
    rng = random.Random(f"file/{seed}/{spec.path}")
    prose = spec.kind in ("notes", "docs", "journal", "text")
    writer = Writer(rng, fancy=prose and rng.random() < NON_ASCII_SHARE)
    blocks: Iterator[str] = BLOCKS[spec.kind](writer, spec.variant)
    if has_header(spec, shared_header):
        blocks = itertools.chain([license_header(spec.variant)], blocks)
    parts, length = [], 0
    for block in blocks:
        parts.append(block)
        length += len(block.encode()) + 2
        if length >= spec.size:
            break
    data = "\n\n".join(parts).encode()[: spec.size]
    # At a line end when there is one in the second half, and never inside a UTF-8 sequence.
    cut = data.rfind(b"\n")
    text = data[: cut if cut > spec.size // 2 else spec.size].decode(errors="ignore")
    return text.rstrip() + "\n"


@dataclass
class Tree:
    root: Path  # the cached tree; never edited
    specs: list[Spec]
    bytes: int
    seconds: float
    cached: bool

    @property
    def directories(self) -> int:
        return len({spec.path.rsplit("/", 1)[0] for spec in self.specs})


def cache_key(args: argparse.Namespace) -> str:
    header = f"-header{args.shared_header:g}" if args.shared_header else ""
    return f"{TREE_VERSION}-{args.files}files-{args.mb:g}mb-seed{args.seed}{header}"


def build_tree(root: Path, specs: list[Spec], seed: int, shared_header: float) -> int:
    """Write every file and set its modification time; returns the bytes written."""
    total = 0
    start = last_report = time.perf_counter()
    for done, spec in enumerate(specs, 1):
        path = root / spec.path
        path.parent.mkdir(parents=True, exist_ok=True)
        data = file_text(spec, seed, shared_header).encode()
        path.write_bytes(data)
        os.utime(path, ns=(spec.mtime_ns, spec.mtime_ns))
        total += len(data)
        if time.perf_counter() - last_report > 15 or done == len(specs):
            last_report = time.perf_counter()
            print(
                f"  {done:,} of {len(specs):,} files, {total / MB:,.1f} MB, in "
                f"{last_report - start:,.0f} s",
                flush=True,
            )
    return total


def cached_tree(args: argparse.Namespace) -> Tree:
    """The generated tree: from the cache when it has one of this key, else built and cached."""
    specs = plan(args)
    key = cache_key(args)
    root = args.cache_dir / key
    meta = root / "built.json"
    if meta.exists() and not args.rebuild:
        recorded = json.loads(meta.read_text())
        print(f"using the tree cached in {root}", flush=True)
        return Tree(root / "tree", specs, recorded["bytes"], recorded["seconds"], True)
    partial = args.cache_dir / f"{key}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    (partial / "tree").mkdir(parents=True)
    print(f"generating {args.files:,} files of about {args.mb:g} MB in {partial}", flush=True)
    start = time.perf_counter()
    total = build_tree(partial / "tree", specs, args.seed, args.shared_header)
    seconds = time.perf_counter() - start
    (partial / "built.json").write_text(json.dumps({"bytes": total, "seconds": seconds}))
    partial.rename(root)
    return Tree(root / "tree", specs, total, seconds, False)


def copy_tree(tree: Tree, parent: Path) -> Path:
    """A fresh copy to mine, modification times kept (`copy2`)."""
    parent.mkdir(parents=True, exist_ok=True)
    target = parent / TREE_NAME
    shutil.copytree(tree.root, target)
    return target


def chunks_of(text: str, chunk_chars: int) -> list[str]:
    """The chunks the pipeline makes of a file (the directory source gives one segment)."""
    return chunking.chunk([text], chunk_chars)


# Editing 1% of the files


@dataclass
class Edits:
    """What was changed in the copy, and what a re-mine should report for it."""

    how: dict[str, int] = field(default_factory=dict)  # touched, appended, changed, shrunk
    documents: int = 0
    bytes: int = 0
    expected: dict[str, int] = field(default_factory=dict)


def edit_tree(root: Path, tree: Tree, args: argparse.Namespace, chunk_chars: int) -> Edits:
    """Touch or edit 1% of the files, the same ones on every run: a fifth only touched (new
    modification time, same bytes), three tenths appended to (a paragraph at the end), three
    tenths changed in the middle (one word replaced), a fifth cut to half at a line end."""
    rng = random.Random(f"edits/{args.seed}")
    count = max(4, round(len(tree.specs) * EDIT_SHARE))
    picked = rng.sample(tree.specs, min(count, len(tree.specs)))
    plan_ = ["touched"] * round(count * 0.2) + ["appended"] * round(count * 0.3)
    plan_ += ["shrunk"] * round(count * 0.2)
    plan_ += ["changed"] * (len(picked) - len(plan_))
    edits = Edits(expected=dict.fromkeys(("created", "superseded", "retired", "unchanged"), 0))
    writer = Writer(rng, fancy=False)
    now = time.time_ns()
    for spec, how in zip(picked, plan_, strict=True):
        path = root / spec.path
        old = path.read_text()
        if how == "touched":
            new = old
        elif how == "appended":
            new = old + "\n" + wrap(writer.paragraph(), 80) + "\n"
        elif how == "changed":
            middle = len(old) // 2
            start = old.find(" ", middle)
            end = old.find(" ", start + 1)
            if start < 0 or end < 0:
                start, end = 0, 0
            new = old[:start] + " " + writer.words.take(1)[0] + "-edited" + old[end:]
        else:
            cut = old.rfind("\n", 0, len(old) // 2)
            new = old[: cut + 1] if cut > 0 else old[: len(old) // 2]
        if new != old:
            path.write_text(new)
        os.utime(path, ns=(now, now))
        edits.how[how] = edits.how.get(how, 0) + 1
        edits.documents += 1
        edits.bytes += len(new.encode())
        if new == old:
            edits.expected["unchanged"] += 1
            continue
        before = [hashlib.sha256(c.encode()).digest() for c in chunks_of(old, chunk_chars)]
        after = [hashlib.sha256(c.encode()).digest() for c in chunks_of(new, chunk_chars)]
        edits.expected["superseded"] += sum(
            1 for a, b in zip(before, after, strict=False) if a != b
        )
        edits.expected["retired"] += max(0, len(before) - len(after))
        edits.expected["created"] += max(0, len(after) - len(before))
    return edits


# Mining, through a daemon


@dataclass
class Phase:
    label: str
    body: dict[str, Any]
    tree_files: int  # files in the tree: what discovery walks
    documents: int  # files the job should read
    bytes: int  # their bytes
    expected: dict[str, int]
    record: dict[str, Any] = field(default_factory=dict)
    run_secs: float = 0.0  # completed_at - started_at
    end_to_end_secs: float = 0.0  # POST sent to completed_at
    queue_secs: float = 0.0  # started_at - created_at
    daemon_cpu_secs: float = 0.0
    wall_secs: float = 0.0  # over which the daemon's CPU was read: POST to the record read
    busy_secs: float = 0.0  # CPU time used on the machine meanwhile, every process and core
    steal_secs: float = 0.0  # time the hypervisor gave this machine's CPUs to others

    @property
    def result(self) -> dict[str, Any]:
        return self.record.get("result") or {}

    def rate(self, count: float, end_to_end: bool = False) -> float:
        seconds = self.end_to_end_secs if end_to_end else self.run_secs
        return count / seconds if seconds > 0 else float("nan")

    def mismatches(self) -> list[str]:
        return [
            f"{key} {self.result.get(key)!r} (expected {value!r})"
            for key, value in self.expected.items()
            if self.result.get(key) != value
        ]


def phases(tree: Tree, chunk_chars: int) -> list[Phase]:
    files, total = len(tree.specs), tree.bytes
    return [
        Phase(
            "first mine",
            {},
            files,
            files,
            total,
            {
                "documents": files,
                "created": tree_chunks(tree, chunk_chars),
                "superseded": 0,
                "retired": 0,
                "unchanged": 0,
                "skipped": 0,
                "truncated": False,
            },
        ),
        Phase(
            "unchanged re-mine (cursor)",
            {},
            files,
            0,
            0,
            {"documents": 0, "created": 0, "unchanged": 0, "truncated": False},
        ),
        Phase(
            "unchanged full re-mine",
            {"full": True},
            files,
            files,
            total,
            {"documents": files, "created": 0, "unchanged": files, "truncated": False},
        ),
    ]


_chunk_counts: dict[tuple[str, int], int] = {}


def tree_chunks(tree: Tree, chunk_chars: int) -> int:
    """How many chunks (so drawers) the whole tree makes: read from the files themselves."""
    key = (str(tree.root), chunk_chars)
    if key not in _chunk_counts:
        _chunk_counts[key] = sum(
            len(chunks_of((tree.root / spec.path).read_text(), chunk_chars)) for spec in tree.specs
        )
    return _chunk_counts[key]


def edit_phase(tree: Tree, edits: Edits) -> Phase:
    how = ", ".join(f"{n} {what}" for what, n in edits.how.items())
    return Phase(
        f"re-mine after editing 1% ({how})",
        {},
        len(tree.specs),
        edits.documents,
        edits.bytes,
        {"documents": edits.documents, **edits.expected, "truncated": False},
    )


def wait_done(
    client: httpx.Client, events: EventListener, job_id: str, label: str, timeout: float
) -> dict[str, Any]:
    """The job's record once its terminal frame arrived; its progress printed every 15 s."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(TimeoutError):
            wait_finished(events, job_id, 15)
            return ok(client.get(f"/api/jobs/{job_id}"))
        if time.monotonic() > deadline:
            raise TimeoutError(f"{label}: job {job_id} did not finish in {timeout:.0f} s")
        record = ok(client.get(f"/api/jobs/{job_id}"))
        print(f"    {record['status']}: {record['progress'].get('message', '')}", flush=True)


def run_phase(
    client: httpx.Client,
    events: EventListener,
    pid: int,
    phase: Phase,
    directory: Path,
    timeout: float,
) -> None:
    print(f"  {phase.label}", flush=True)
    body = {"type": "mine", "path": str(directory), **phase.body, "requested_by": REQUESTED_BY}
    cpu_before, wall_before = cpu_seconds(pid), time.perf_counter()
    host_before = host_cpu()
    sent = time.time()
    job = ok(client.post("/api/jobs", json=body), 201)
    record = wait_done(client, events, job["id"], phase.label, timeout)
    phase.daemon_cpu_secs = cpu_seconds(pid) - cpu_before
    phase.wall_secs = time.perf_counter() - wall_before
    host_after = host_cpu()
    phase.busy_secs = host_after[0] - host_before[0]
    phase.steal_secs = host_after[1] - host_before[1]
    phase.record = record
    if record["status"] != "completed":
        raise RuntimeError(
            f"{phase.label}: mine job {job['id']} ended {record['status']}: {record.get('error')}"
        )
    started, completed = parse_time(record["started_at"]), parse_time(record["completed_at"])
    phase.run_secs = completed - started
    phase.end_to_end_secs = completed - sent
    phase.queue_secs = started - parse_time(record["created_at"])
    print(
        f"    {phase.result.get('documents', 0):,} documents in {phase.run_secs:.2f} s "
        f"({per_sec(phase.rate(phase.tree_files))} tree files/s)",
        flush=True,
    )


def print_machine(load_before: Sequence[float], probes: tuple[float, float]) -> None:
    """The report's machine section: what it is, how loaded and how fast it was, the code."""
    print("\nMachine")
    for key, value in machine():
        print(f"  {key:<17} {value}")
    print(
        f"  load average      before {' '.join(f'{x:.2f}' for x in load_before)}, after "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print(
        f"  CPU probe         {probes[0]:.0f} ms before, {probes[1]:.0f} ms after (a fixed "
        "Python loop, best of 3: lower is faster)"
    )
    print(f"  code              {code_state()}")
    print("  palace            embedded surrealkv, store.sync=every (the default)")


def cpu_probe() -> float:
    """Milliseconds for a fixed pure-Python loop, the best of three: how fast this machine's
    CPU is right now (virtual machines vary from hour to hour)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        total = 0
        for n in range(2_000_000):
            total += n * n
        best = min(best, time.perf_counter() - start)
    return best * 1000


def host_cpu() -> tuple[float, float]:
    """CPU seconds the machine has been busy (every process, every core) and stolen by the
    hypervisor, from /proc/stat; zeros where there is none."""
    try:
        fields_ = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields_[:8]
    return (user + nice + system + irq + softirq) / tick, steal / tick


@dataclass
class DaemonRun:
    env: dict[str, str]
    start_secs: float
    phases: list[Phase]
    sources: dict[str, Any]
    sources_ms: float
    status: dict[str, Any]
    palace_mib: float
    log_problems: list[str]


def daemon_env(args: argparse.Namespace) -> dict[str, str]:
    """The default configuration, but one job may read the whole tree."""
    env = {"MEMCASTLE_MINING_MAX_DOCUMENTS": str(max_documents(args))}
    if args.chunk_chars is not None:
        env["MEMCASTLE_MINING_CHUNK_CHARS"] = str(args.chunk_chars)
    return env


def max_documents(args: argparse.Namespace) -> int:
    return min(1_000_000, max(MiningConfig.max_documents, 2 * args.files))


def chunk_chars(args: argparse.Namespace) -> int:
    return args.chunk_chars or MiningConfig.chunk_chars


def run_daemon(tree: Tree, root: Path, args: argparse.Namespace) -> DaemonRun:
    directory = copy_tree(tree, root / "files")
    env = daemon_env(args)
    daemon = Daemon(root, env=env)
    print(f"starting a daemon on a new palace in {root} ({env})", flush=True)
    planned = phases(tree, chunk_chars(args))
    try:
        start = time.perf_counter()
        daemon.start()
        start_secs = time.perf_counter() - start
        assert daemon.process is not None
        pid = daemon.process.pid
        events = EventListener(daemon.base_url).start()
        try:
            with httpx.Client(base_url=daemon.base_url, timeout=60) as client:
                for phase in planned:
                    run_phase(client, events, pid, phase, directory, args.job_timeout)
                edits = edit_tree(directory, tree, args, chunk_chars(args))
                planned.append(edit_phase(tree, edits))
                run_phase(client, events, pid, planned[-1], directory, args.job_timeout)
                sources_start = time.perf_counter()
                sources = ok(client.get("/api/sources"))
                sources_ms = (time.perf_counter() - sources_start) * 1000
                status = ok(client.get("/api/status"))
        finally:
            events.close()
    finally:
        stop(daemon)
    return DaemonRun(
        env,
        start_secs,
        planned,
        sources,
        sources_ms,
        status,
        directory_size(daemon.palace) / 1024**2,
        log_problems(daemon.log()),
    )


# Where the time goes, in-process


@dataclass
class Breakdown:
    label: str
    documents: int
    tree_files: int
    seconds: float
    calls: dict[str, Call]


@contextlib.contextmanager
def timed(profiler: Profiler, owner: Any, name: str, label: str) -> Iterator[None]:
    """Time every call of `owner.name` under `label` in the profiler's table."""
    real = getattr(owner, name)

    def wrapper(*a: Any, **kw: Any) -> Any:
        start = time.perf_counter()
        try:
            return real(*a, **kw)
        finally:
            call = profiler.calls[label]
            call.calls += 1
            call.total += time.perf_counter() - start

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, real)


@contextlib.contextmanager
def in_process(root: Path, args: argparse.Namespace) -> Iterator[Any]:
    """The services on a new palace in this process, as the daemon builds them."""
    from memcastle_project.composition import compose

    env = {
        "MEMCASTLE_PALACE_PATH": str(root / "palace"),
        "XDG_CONFIG_HOME": str(root / "config"),
        **daemon_env(args),
    }
    config = load_config(env=env)
    store = Store.from_config(config)
    store.open()
    try:
        store.migrate()
        yield compose(config, store)
    finally:
        store.close()


def mine_here(daemon: Any, directory: Path, phase: Phase) -> dict[str, Any]:
    """Submit and run one mine job on this thread; its record."""
    ctx = RequestContext.build(requested_by=REQUESTED_BY)
    submitted = daemon.jobs.submit(ctx, {"type": "mine", "path": str(directory), **phase.body})
    daemon.executor.execute(submitted["id"])
    row = daemon.jobs.record(submitted["id"])
    if row is None or row["status"] != "completed":
        raise RuntimeError(f"in-process mine job ended {row and row['status']}")
    return row


def profile_in_process(tree: Tree, root: Path, args: argparse.Namespace) -> list[Breakdown]:
    """The daemon's four jobs, run here: `JobService.submit`, then `Executor.execute` on this
    thread, which claims the job and runs the mine handler; every store call timed by the
    method that made it, and the Python stages of the pipeline timed apart."""
    from palace import drawers
    from sources import mining
    from sources.directory import DirectoryAdapter

    directory = copy_tree(tree, root / "files")
    results = []
    with in_process(root, args) as daemon:
        profiler = Profiler(daemon.store)
        with contextlib.ExitStack() as stack:
            stack.enter_context(profiler.installed())
            for owner, name, label in (
                (DirectoryAdapter, "discover", "DirectoryAdapter.discover (walk the tree)"),
                (DirectoryAdapter, "read", "DirectoryAdapter.read (read, hash)"),
                (mining.chunking, "chunk", "chunking.chunk (split into chunks)"),
                (drawers, "derived", "drawers.derived (digests, dedup keys)"),
            ):
                stack.enter_context(timed(profiler, owner, name, label))
            planned = phases(tree, chunk_chars(args))
            for n in range(len(planned) + 1):
                if n == len(planned):
                    edits = edit_tree(directory, tree, args, chunk_chars(args))
                    planned.append(edit_phase(tree, edits))
                phase = planned[n]
                profiler.reset()
                start = time.perf_counter()
                row = mine_here(daemon, directory, phase)
                seconds = time.perf_counter() - start
                documents = row["result"]["documents"]
                results.append(
                    Breakdown(
                        phase.label, documents, phase.tree_files, seconds, dict(profiler.calls)
                    )
                )
                print(
                    f"  {phase.label}: {documents:,} documents in {seconds:.2f} s in-process",
                    flush=True,
                )
    return results


@dataclass
class Hotspots:
    seconds: float
    areas: list[tuple[str, float]]
    functions: str


# Where cProfile's own time is put, by the file of the function (the first that matches).
AREAS = (
    ("SurrealDB engine (the SDK's call into it)", "SyncEmbeddedDB"),
    ("SDK: CBOR encoding", "surrealdb/cbor/_encoder"),
    ("SDK: CBOR decoding", "surrealdb/cbor/_decoder"),
    ("SDK: the rest", "surrealdb/"),
    ("memcastle_project (store wrapper, jobs plumbing)", "memcastle_project/"),
    ("palace/dedup.py (keys, normalizing, similarity)", "palace/dedup.py"),
    ("palace/ (services, repository, digests)", "palace/"),
    ("sources/ (pipeline, directory, chunking)", "sources/"),
    ("jobs/", "jobs/"),
)


def hotspots(tree: Tree, root: Path, args: argparse.Namespace) -> Hotspots:
    """The first mine again, on a new palace, under cProfile: the functions with the most own
    time, and own time summed by where the code lives (built-ins are counted apart: they are
    called from all of these)."""
    directory = copy_tree(tree, root / "files")
    with in_process(root, args) as daemon:
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        mine_here(daemon, directory, phases(tree, chunk_chars(args))[0])
        profile.disable()
        seconds = time.perf_counter() - start
    stats = pstats.Stats(profile)
    areas: dict[str, float] = {}
    for (filename, _line, function), (_cc, _nc, own, _cum, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{filename}:{function}"
        area = next(
            (label for label, marker in AREAS if marker in where),
            "built-ins and the standard library (called from all of these)",
        )
        areas[area] = areas.get(area, 0.0) + own
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(args.top)
    return Hotspots(seconds, sorted(areas.items(), key=lambda kv: -kv[1]), out.getvalue())


# Reporting


def result_text(result: dict[str, Any]) -> str:
    return ", ".join(
        f"{key} {value:,}"
        if isinstance(value, int) and not isinstance(value, bool)
        else f"{key} {value}"
        for key, value in result.items()
    )


def report_phase(phase: Phase) -> None:
    documents = phase.result.get("documents", 0)
    print(f"\n  {phase.label}")
    print(
        f"    server (completed_at - started_at): {phase.run_secs:.2f} s; "
        f"end to end (POST sent to completed_at): {phase.end_to_end_secs:.2f} s; "
        f"queue wait {phase.queue_secs * 1000:.0f} ms"
    )
    print(
        f"    documents read: {documents:,}, {per_sec(phase.rate(documents))}/s server, "
        f"{per_sec(phase.rate(documents, True))}/s end to end; "
        f"{phase.bytes / MB:,.2f} MB, {per_sec(phase.rate(phase.bytes / MB))} MB/s server, "
        f"{per_sec(phase.rate(phase.bytes / MB, True))} MB/s end to end"
    )
    print(
        f"    tree covered: {phase.tree_files:,} files, "
        f"{per_sec(phase.rate(phase.tree_files))} files/s server, "
        f"{per_sec(phase.rate(phase.tree_files, True))}/s end to end"
    )
    print(
        f"    daemon CPU: {phase.daemon_cpu_secs:.2f} s "
        f"({phase.daemon_cpu_secs / max(phase.wall_secs, 1e-9):.0%} of a core from POST to "
        "the record read"
        + (f"; {phase.daemon_cpu_secs * 1000 / documents:.2f} ms a document)" if documents else ")")
    )
    others = phase.busy_secs - phase.daemon_cpu_secs
    print(
        f"    the machine meanwhile ({os.cpu_count()} cores): {phase.busy_secs:.2f} CPU s used in "
        f"all, {others:.2f} s of them not by the daemon (this client and any other process); "
        f"{phase.steal_secs:.2f} s stolen by the hypervisor"
    )
    print(f"    result: {result_text(phase.result)}")
    print(f"    progress: {phase.record.get('progress', {}).get('message')}")
    mismatches = phase.mismatches()
    print(
        "    result as expected from chunking the files here"
        if not mismatches
        else f"    UNEXPECTED: {'; '.join(mismatches)}"
    )


def verdict(run: DaemonRun) -> None:
    first, cursor, full = run.phases[:3]
    print("\nTargets (server side; embedding is not implemented yet, so it is off throughout)")
    rows = [
        (
            "first mine, embedding off",
            first.rate(first.result.get("documents", 0)),
            TARGET_FIRST_FILES_PER_SEC,
            "files read/s",
        ),
        (
            "unchanged re-mine (cursor; every file listed, none read)",
            cursor.rate(cursor.tree_files),
            TARGET_UNCHANGED_FILES_PER_SEC,
            "tree files/s",
        ),
        (
            "unchanged full re-mine (every file read, revision compared)",
            full.rate(full.result.get("documents", 0)),
            TARGET_UNCHANGED_FILES_PER_SEC,
            "files read/s",
        ),
    ]
    for label, rate, target, unit in rows:
        met = "met" if rate >= target else "MISSED"
        print(f"  {label}: {per_sec(rate)} {unit}, target {target:,.0f}: {met}")


def report_breakdown(breakdown: Breakdown) -> None:
    count = breakdown.documents or breakdown.tree_files
    unit = "document" if breakdown.documents else "tree file"
    per = 1000 / count
    print(
        f"\n  {breakdown.label}: {breakdown.seconds:.2f} s in-process "
        f"({breakdown.documents:,} documents; {breakdown.seconds * per:.3f} ms a {unit}; "
        f"{per_sec(count / breakdown.seconds)} {unit}s/s)"
    )
    print(
        f"    {'what':<48} {'calls':>7} {'ms/' + unit:>12} {'share':>6} {'engine':>8} "
        f"{'decode':>8} {'encode+':>8}"
    )
    rows = sorted(breakdown.calls.items(), key=lambda kv: -kv[1].total)
    accounted = 0.0
    for label, call in rows:
        python = "(" in label  # a Python stage, not a store call
        accounted += call.total  # none of the timed stages makes a store call
        store_columns = (
            ""
            if python
            else f" {call.engine * per:8.3f} {call.decode * per:8.3f} "
            f"{(call.total - call.engine - call.decode) * per:8.3f}"
        )
        print(
            f"    {label[:48]:<48} {call.calls:7,} {call.total * per:12.3f} "
            f"{call.total / breakdown.seconds:6.0%}{store_columns}"
        )
    rest = breakdown.seconds - accounted
    print(f"    {'everything else':<48} {'':>7} {rest * per:12.3f} {rest / breakdown.seconds:6.0%}")


def report_hotspots(spots: Hotspots) -> None:
    print(
        f"\nThe first mine under cProfile, in-process on a new palace: {spots.seconds:.1f} s "
        "(cProfile slows Python code, not the engine). Own time by where the code lives:"
    )
    for area, own in spots.areas:
        print(f"  {area:<66} {own:7.2f} s {own / spots.seconds:6.0%}")
    print("  the functions with the most own time:")
    lines = spots.functions.strip().splitlines()
    start = next((n for n, line in enumerate(lines) if "ncalls" in line), 0)
    for line in lines[start:]:
        print(f"    {line.replace(str(REPO) + '/', '')[:150]}")


def report(
    tree: Tree,
    run: DaemonRun,
    breakdowns: Sequence[Breakdown],
    spots: Hotspots | None,
    args: argparse.Namespace,
    load_before: Sequence[float],
    probes: tuple[float, float],
) -> None:
    print_machine(load_before, probes)
    sizes = [spec.size for spec in tree.specs]
    kinds: dict[str, int] = {}
    for spec in tree.specs:
        kinds[spec.kind] = kinds.get(spec.kind, 0) + 1
    mix = ", ".join(f"{n:,} {kind}" for kind, n in kinds.items())
    print(
        f"\nTree: {len(tree.specs):,} files, {tree.bytes / MB:,.1f} MB, in {tree.directories:,} "
        f"directories; files of {min(sizes) / 1000:.1f} to {max(sizes) / 1000:.1f} KB, median "
        f"{statistics.median(sizes) / 1000:.1f} KB; {mix}; "
        f"{tree_chunks(tree, chunk_chars(args)):,} chunks of at most {chunk_chars(args):,} "
        f"characters; generated in {tree.seconds:.0f} s" + (" (cached)" if tree.cached else "")
    )
    if args.shared_header:
        headed = sum(has_header(spec, args.shared_header) for spec in tree.specs)
        print(f"  {headed:,} code files start with the same licence header (--shared-header)")
    print(
        "\nDaemon: default configuration but MEMCASTLE_MINING_MAX_DOCUMENTS="
        f"{max_documents(args)} (the default is {MiningConfig.max_documents:,}), so one job "
        "reads the whole tree"
        + (f"; MEMCASTLE_MINING_CHUNK_CHARS={args.chunk_chars}" if args.chunk_chars else "")
        + f"; ready {run.start_secs:.1f} s after start. Embedding is not implemented yet: off."
    )
    for phase in run.phases:
        report_phase(phase)
    mined = run.sources.get("sources", [])
    print(
        f"\n  afterwards: {run.status.get('drawers', '?'):,} drawers, palace {run.palace_mib:,.0f} "
        f"MiB on disk; GET /api/sources in {run.sources_ms:.1f} ms lists "
        + ", ".join(
            f"{s['source']} {s['locator']} with {s['documents']:,} documents" for s in mined
        )
    )
    if run.log_problems:
        print(f"  daemon log: {len(run.log_problems)} warnings or errors, the first:")
        for line in run.log_problems[:5]:
            print(f"    {line[:200]}")
    else:
        print("  daemon log: no warnings or errors")
    verdict(run)
    if breakdowns:
        print(
            "\nWhere the time goes: the same jobs in-process (no HTTP, no daemon) on a new "
            "palace; store calls by the method that made them (engine = the engine's call, "
            "decode = the SDK's CBOR decoding, encode+ = the rest: CBOR encoding and the SDK), "
            "and the pipeline's Python stages timed apart"
        )
        for breakdown in breakdowns:
            report_breakdown(breakdown)
    if spots is not None:
        report_hotspots(spots)


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=5000, help="files in the tree (5000)")
    parser.add_argument(
        "--mb", type=float, default=50.0, help="MB (10^6 bytes) in the tree, in all (50)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the tree and the edits (1)")
    parser.add_argument(
        "--shared-header",
        type=float,
        default=0.0,
        help="share of the code files that start with the same licence header, 0-1 (0)",
    )
    parser.add_argument(
        "--chunk-chars",
        type=int,
        default=None,
        help="MEMCASTLE_MINING_CHUNK_CHARS for the daemon (unset: the default, 6000)",
    )
    parser.add_argument(
        "--no-profile", action="store_true", help="skip the in-process breakdown and cProfile"
    )
    parser.add_argument(
        "--top", type=int, default=25, help="functions listed from cProfile, by own time (25)"
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=CACHE_DIR, help=f"where trees are kept ({CACHE_DIR})"
    )
    parser.add_argument(
        "--rebuild", action="store_true", help="generate the tree again even if cached"
    )
    parser.add_argument(
        "--job-timeout",
        type=float,
        default=3600.0,
        help="seconds to wait for one job before giving up (3600)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the run's palaces, tree copies and daemon log"
    )
    args = parser.parse_args(argv)
    if args.files < 10 or args.mb <= 0:
        parser.error("--files must be at least 10 and --mb positive")
    if not 0 <= args.shared_header <= 1:
        parser.error("--shared-header is a share, 0 to 1")
    if args.chunk_chars is not None and not 200 <= args.chunk_chars <= 100_000:
        parser.error("--chunk-chars must be 200-100000, as mining.chunk_chars")
    return args


def run(scratch: Path, args: argparse.Namespace) -> None:
    load_before = os.getloadavg()
    probe_before = cpu_probe()
    tree = cached_tree(args)
    print(f"counting the tree's chunks: {tree_chunks(tree, chunk_chars(args)):,}", flush=True)
    daemon_run = run_daemon(tree, scratch / "daemon", args)
    breakdowns: list[Breakdown] = []
    spots = None
    if not args.no_profile:
        print("the same jobs in-process", flush=True)
        breakdowns = profile_in_process(tree, scratch / "profile", args)
        print("the first mine in-process under cProfile", flush=True)
        spots = hotspots(tree, scratch / "cprofile", args)
    probes = (probe_before, cpu_probe())
    report(tree, daemon_run, breakdowns, spots, args, load_before, probes)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.keep:
        scratch = Path(tempfile.mkdtemp(prefix="memcastle-bench-mine-"))
        run(scratch, args)
        print(f"\nkept {scratch}")
        return 0
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-mine-") as name:
        run(Path(name), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
