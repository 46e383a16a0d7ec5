"""Hostile input from the schema: Schemathesis with every check against a fresh daemon.

Run from the repository root: `.venv/bin/python bench/schema.py` (`--examples 25`, `--seed`).
It starts a daemon on an empty palace, closes every object of its OpenAPI document (an answer
with an undeclared key fails like a server error), and runs `schemathesis run --checks all`
with its stateful phase over every operation but those `tests/test_openapi.py` leaves out too
(shutdown, the event stream, package uploads, registries and sign-ins, which reach the
network). It prints the failures by check and, for each, the operations that failed it. It
measures and reports; it is not a test (`tests/test_openapi.py` runs the bounded version with
the checks the daemon meets).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")

from tests.support.daemon import Daemon  # noqa: E402
from tests.support.openapi import SCHEMATHESIS_EXCLUDED, closed  # noqa: E402

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
OPERATION = re.compile(r"^_+ (GET|POST|PUT|PATCH|DELETE|Stateful tests)(.*?) _+$")
CHECK = re.compile(r"^- (ST\d+ .+)$")
GENERATED = re.compile(r"(\d+) generated")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=25, help="examples an operation")
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument(
        "--report", type=Path, help="also write Schemathesis' own report and the daemon's log here"
    )
    return parser.parse_args()


def run(root: Path, examples: int, seed: int) -> tuple[str, str]:
    """Schemathesis' report of one run against a fresh daemon under `root`, and the daemon's
    log."""
    daemon = Daemon(root).start()
    try:
        with daemon.client() as client:
            document = client.get("/api/schema/", params={"format": "json"}).json()
        schema = root / "openapi.json"
        schema.write_text(json.dumps(closed(document)))
        finished = subprocess.run(
            [
                str(SCHEMATHESIS),
                "run",
                str(schema),
                "--url",
                daemon.base_url,
                "--checks",
                "all",
                *SCHEMATHESIS_EXCLUDED,
                "--max-examples",
                str(examples),
                "--workers",
                "1",
                "--seed",
                str(seed),
            ],
            capture_output=True,
            text=True,
            cwd=root,
            check=False,
        )
        return finished.stdout + finished.stderr, daemon.log()
    finally:
        daemon.stop()


def failures(report: str) -> dict[str, set[str]]:
    """The operations that failed each check, read from the report's failure sections."""
    found: dict[str, set[str]] = defaultdict(set)
    operation = ""
    for line in report.splitlines():
        if heading := OPERATION.match(line.strip()):
            operation = (heading[1] + heading[2]).strip()
        elif (check := CHECK.match(line.strip())) and operation:
            found[check[1]].add(operation)
    return found


def main() -> int:
    args = arguments()
    with tempfile.TemporaryDirectory(prefix="memcastle-schema-") as root:
        report, log = run(Path(root), args.examples, args.seed)
    if args.report is not None:
        args.report.write_text(f"{report}\n\nThe daemon's log:\n{log}")
    generated = GENERATED.search(report)
    found = failures(report)
    print(
        f"schemathesis --checks all, {args.examples} examples an operation, seed {args.seed}: "
        f"{generated[1] if generated else '?'} test cases, "
        f"{sum(len(operations) for operations in found.values())} failures, "
        f"{log.count('Traceback')} tracebacks in the daemon's log"
    )
    for check in sorted(found):
        print(f"  {check}: {len(found[check])}")
        for operation in sorted(found[check]):
            print(f"    {operation}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
