"""A command embedding provider for tests: a Python script that answers deterministic vectors
(from each text's SHA-256) and logs every call, so which texts were embedded, in which order and
batches, can be read back exactly. Its `mode` makes it fail in the ways a real command can."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

# A command provider: deterministic vectors from each text's SHA-256. Its argv is
# [python, this script, log file, mode, delay]; each call appends what it was asked to the log.
STUB = r"""
import hashlib, json, os, subprocess, sys, time

log, mode, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
request = json.load(sys.stdin)
entry = {
    "texts": request["texts"],
    "model": request["model"],
    "dimension": request["dimension"],
    "memcastle_env": sorted(k for k in os.environ if k.startswith("MEMCASTLE_")),
    "other_env": os.environ.get("EMBED_STUB_MARK"),
}
if mode == "hang":
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    entry["grandchild"] = sleeper.pid
with open(log, "a") as file:
    file.write(json.dumps(entry) + "\n")
time.sleep(delay)
n = request["dimension"]


def vector(text):
    digest = hashlib.sha256(text.encode()).digest()
    return [digest[i % 32] / 255 + 0.01 for i in range(n)]


texts = request["texts"]
if mode == "fail":
    sys.stderr.write("the model server is down\n" + "x" * 5000)
    sys.exit(3)
if mode == "hang":
    time.sleep(120)
if mode == "garbage":
    print("this is not json")
elif mode == "fewer":
    json.dump({"embeddings": [vector(t) for t in texts[1:]]}, sys.stdout)
elif mode == "short":
    json.dump({"embeddings": [vector(t)[:-1] for t in texts]}, sys.stdout)
elif mode == "zero":
    json.dump({"embeddings": [[0] * n for t in texts]}, sys.stdout)
elif mode == "noobject":
    json.dump([vector(t) for t in texts], sys.stdout)
else:
    json.dump({"embeddings": [vector(t) for t in texts]}, sys.stdout)
"""


def write_stub(directory: Path) -> Path:
    path = directory / "embed_stub.py"
    path.write_text(STUB, encoding="utf-8")
    return path


def stub_argv(directory: Path, mode: str = "good", delay: float = 0.0) -> list[str]:
    """A `command` profile's argv: the stub written into `directory`, logging to `calls.log`
    there, answering after `delay` seconds."""
    return [
        sys.executable,
        str(write_stub(directory)),
        str(directory / "calls.log"),
        mode,
        str(delay),
    ]


def stub_calls(directory: Path) -> list[dict[str, Any]]:
    """What the stub in `directory` was asked, call by call."""
    path = directory / "calls.log"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]
