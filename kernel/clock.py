"""The daemon's clock: the instants it records (`created_at`, `updated_at`, leases).

SurrealDB 3.0's index keys collate a datetime on a whole second after the sub-second instants
of that same second (surrealdb/surrealdb#7493), so an index scan ordered by time puts such a
row out of place, and a range scan can drop it. Measured here: with an index on (k, c), rows at
12:00:00.000, 12:00:00.000001 and 12:00:00.001 came back as .000001, .001, .000. An instant the
daemon records is therefore never on a whole second: it is moved 1 microsecond later.
"""

from __future__ import annotations

import datetime as dt


def utc_now() -> dt.datetime:
    return off_whole_second(dt.datetime.now(dt.UTC))


def off_whole_second(instant: dt.datetime) -> dt.datetime:
    if instant.microsecond == 0:
        return instant + dt.timedelta(microseconds=1)
    return instant
