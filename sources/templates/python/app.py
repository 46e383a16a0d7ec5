"""__NAME__: the text files (.txt, .md) under a directory, one document per file.

A MemCastle source (contract memcastle:source@0.4.0). The daemon calls these methods, each in a
fresh sandbox that sees the locator's directory read-only; `normalize` sees nothing at all.
Errors are raised as `Err(types.SourceError_...)`; any other exception fails the job.
"""

import hashlib
import json
import os

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

SUFFIXES = (".txt", ".md")


class Adapter(exports.Adapter):
    def identify(self, locator, options):
        for key, _ in options:
            raise Err(types.SourceError_InvalidInput(f"unknown option {key!r}"))
        if not locator or not os.path.isabs(locator) or not os.path.isdir(locator):
            raise Err(types.SourceError_InvalidInput("`locator` must be an absolute directory"))
        return types.SourceRef(
            source="__NAME__", account=None, locator=locator.rstrip("/") or "/", options=[]
        )

    def default_wing(self, source):
        return "__NAME__"

    def default_room(self):
        return "notes"

    def discover(self, source, cursor, limit):
        after = json.loads(cursor)
        names = sorted(
            name
            for name in os.listdir(source.locator)
            if name.endswith(SUFFIXES) and (after is None or name > after)
        )
        candidates = [
            types.Candidate(external_id=name, cursor_after=json.dumps(name), handle=name)
            for name in names[:limit]
        ]
        return types.Discovery(candidates=candidates, exhausted=len(names) <= limit)

    def read(self, source, candidate):
        path = os.path.join(source.locator, candidate.handle)
        try:
            with open(path, encoding="utf-8") as stream:
                body = stream.read()
        except (OSError, UnicodeDecodeError):
            return None
        return types.RawDocument(
            external_id=candidate.external_id,
            revision=hashlib.sha256(body.encode()).hexdigest(),
            body=body,
            metadata=json.dumps({"file": candidate.handle}),
            occurred_at=None,
        )

    def normalize(self, raw):
        paragraphs = [part.strip() for part in raw.body.split("\n\n") if part.strip()]
        return types.CanonicalDocument(
            title=paragraphs[0].splitlines()[0][:80] if paragraphs else None,
            room=None,
            name=raw.external_id,
            kind=types.SourceKind.FILE,
            uri=None,
            tags=["__NAME__"],
            segments=[types.Segment(text=part) for part in paragraphs],
        )
