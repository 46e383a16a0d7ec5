"""Stable ids for the records a job writes, so that a replayed unit writes nothing twice.

A handler writes its records first and its checkpoint second; a crash between the two replays the
unit. Each record's id is derived from the job's id and a name for the unit
(`checkpoint-drawer:3`, `demo-step:0`), and writes are create-if-absent, so the replay finds the
record already there. The derivation strings are persisted API: changing one needs a data
migration. The guarantee is per job, not a global deduplication.
"""

from __future__ import annotations

import hashlib
import uuid


def unit_id(job_id: str, name: str) -> str:
    """SHA-256 over (job id, unit name), shaped as a version-8 UUID."""
    digest = bytearray(hashlib.sha256(f"{job_id}\x00{name}".encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x80
    digest[8] = (digest[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(digest)))
