"""__NAME__: a source that reads through programs instead of files.

A MemCastle source (contract memcastle:source@0.4.0). It is granted no directory: it asks the
host to run the programs its manifest lists (`ls`, `cat`), by name and without a shell, and files
what they print. Replace them with the command-line tool of what you want to mine.
"""

import hashlib
import json
import os

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import host, types


def run(program, *args):
    """A listed program's output, or the job's failure saying why it has none."""
    try:
        done = host.run_process(program, list(args), None)
    except Err as refused:
        raise Err(types.SourceError_Failed(f"{program}: {refused.value}")) from None
    if done.status != 0:
        said = done.stderr.decode("utf-8", "replace").strip()
        raise Err(types.SourceError_Failed(f"{program} exited {done.status}: {said}"))
    return done.stdout.decode("utf-8", "replace")


class Adapter(exports.Adapter):
    def identify(self, locator, options):
        for key, _ in options:
            raise Err(types.SourceError_InvalidInput(f"unknown option {key!r}"))
        if not locator or not os.path.isabs(locator):
            raise Err(types.SourceError_InvalidInput("`locator` must be an absolute directory"))
        return types.SourceRef(
            source="__NAME__", account=None, locator=locator.rstrip("/") or "/", options=[]
        )

    def default_wing(self, source):
        return "__NAME__"

    def default_room(self):
        return "listing"

    def discover(self, source, cursor, limit):
        after = json.loads(cursor)
        names = sorted(
            name
            for name in run("ls", "-1", source.locator).splitlines()
            if name and (after is None or name > after)
        )
        candidates = [
            types.Candidate(external_id=name, cursor_after=json.dumps(name), handle=name)
            for name in names[:limit]
        ]
        return types.Discovery(candidates=candidates, exhausted=len(names) <= limit)

    def read(self, source, candidate):
        body = run("cat", f"{source.locator}/{candidate.handle}")
        return types.RawDocument(
            external_id=candidate.external_id,
            revision=hashlib.sha256(body.encode()).hexdigest(),
            body=body,
            metadata=json.dumps({"file": candidate.handle}),
            occurred_at=None,
        )

    def normalize(self, raw):
        lines = [line for line in raw.body.splitlines() if line.strip()]
        return types.CanonicalDocument(
            title=lines[0][:80] if lines else None,
            room=None,
            name=raw.external_id,
            kind=types.SourceKind.OTHER,
            uri=None,
            tags=["__NAME__"],
            segments=[types.Segment(text=line) for line in lines],
        )
