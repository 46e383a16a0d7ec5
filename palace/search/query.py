"""One search request, however it arrived: the converter every interface shares.

REST query strings, JSON bodies, MCP arguments and CLI flags all become a `SearchQuery` here, so
they accept the same options with the same defaults and fail with the same errors (api.md
"Searching", search.md section 1). Only the query text is required.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernel.errors import InputInvalid
from kernel.validation import parse_instant, parse_limit

DEFAULT_LIMIT = 10
RANKINGS = ("auto", "lexical", "semantic", "hybrid")
SOURCE_KINDS = ("file", "manual", "transcript", "note", "other")
MAX_QUERY_CHARS = 10_000

# The flat options of the query-string form (and of MCP and the CLI).
FLAT_OPTIONS = (
    "q",
    "query",
    "text",
    "ranking",
    "limit",
    "wing",
    "room",
    "tags",
    "source_kind",
    "as_of",
    "from",
    "until",
    "include_historical",
    "expand",
    "profile",
)
# The JSON body of POST /api/search and /api/recall.
BODY_OPTIONS = (
    "text",
    "query",
    "ranking",
    "limit",
    "filter",
    "expand",
    "profile",
    "query_embedding",
)
FILTER_OPTIONS = ("wing", "room", "tags", "source_kind", "temporal")


@dataclass(frozen=True)
class Period:
    """Which memory to look at, in validity time: drawers valid at some instant of
    `[start, end)`. No bounds (`include_historical`) means every drawer, and `current` is the
    instant the search runs."""

    kind: str  # "current", "as_of", "between" or "all"
    start: dt.datetime | None = None
    end: dt.datetime | None = None

    def bounds_ns(self, now: dt.datetime) -> tuple[int, int] | None:
        """`[start, end)` in nanoseconds since the epoch; an instant is `[t, t + 1ns)`."""
        if self.kind == "all":
            return None
        if self.kind == "between":
            assert self.start is not None and self.end is not None
            return held_ns(self.start), held_ns(self.end)
        instant = held_ns(self.start if self.kind == "as_of" and self.start else now)
        return instant, instant + 1

    def view(self) -> Any:
        if self.kind in ("current", "all"):
            return self.kind
        if self.kind == "as_of":
            return {"as_of": _iso(self.start)}
        return {"between": {"from": _iso(self.start), "until": _iso(self.end)}}


@dataclass(frozen=True)
class SearchQuery:
    text: str
    ranking: str = "auto"
    limit: int = DEFAULT_LIMIT
    wing: str | None = None
    room: str | None = None
    tags: tuple[str, ...] = ()
    source_kind: str | None = None
    period: Period = Period("current")
    expand: bool = False
    profile: str | None = None
    query_embedding: Any = None  # checked against the profile by the embedding service

    @property
    def scoped(self) -> bool:
        return bool(self.wing or self.room or self.tags or self.source_kind)


def to_ns(instant: dt.datetime) -> int:
    """Nanoseconds since the epoch, exactly (no float rounding)."""
    delta = instant - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


# The instants the search indexes hold: signed 64-bit nanoseconds since the epoch, from
# 1677-09-21 to 2262-04-11; the largest is `scope.OPEN`, an open validity.
EARLIEST_HELD_NS = -(2**63)
LATEST_HELD_NS = 2**63 - 2


def held_ns(instant: dt.datetime) -> int:
    """`to_ns` within what the indexes hold: an instant before 1677 or after 2262 (a drawer may
    be valid from the year 1000) counts as the nearest one they can hold, so it never breaks
    them."""
    return max(EARLIEST_HELD_NS, min(LATEST_HELD_NS, to_ns(instant)))


def _iso(instant: dt.datetime | None) -> str | None:
    return None if instant is None else instant.isoformat().replace("+00:00", "Z")


def from_options(options: Mapping[str, Any], *, recall: bool = False) -> SearchQuery:
    """The flat form: `GET /api/search?q=...`, MCP arguments and CLI flags. Values may be text
    (a query string) or typed (JSON); `tags` is a list or a comma-separated string."""
    _refuse_unknown(options, FLAT_OPTIONS, "option")
    return _build(
        text=_text(options, ("q", "query", "text")),
        options=options,
        filters=options,
        period=_period_from_flat(options),
        recall=recall,
        embedding=None,
    )


def from_body(body: Mapping[str, Any], *, recall: bool = False) -> SearchQuery:
    """The JSON form of `POST /api/search`: a nested `filter` and an optional vector."""
    _refuse_unknown(body, BODY_OPTIONS, "field")
    raw_filter = body.get("filter")
    if raw_filter is None:
        raw_filter = {}
    if not isinstance(raw_filter, Mapping):
        raise InputInvalid("filter", "must be an object")
    _refuse_unknown(raw_filter, FILTER_OPTIONS, "filter field", prefix="filter.")
    return _build(
        text=_text(body, ("text", "query")),
        options=body,
        filters=raw_filter,
        period=_period_from_temporal(raw_filter.get("temporal")),
        recall=recall,
        embedding=body.get("query_embedding"),
    )


def _build(
    *,
    text: str,
    options: Mapping[str, Any],
    filters: Mapping[str, Any],
    period: Period,
    recall: bool,
    embedding: Any,
) -> SearchQuery:
    room = _optional_name(filters, "room")
    if recall and room is not None:
        raise InputInvalid("room", "is not an option of recall, which searches whole wings")
    ranking = options.get("ranking") or "auto"
    if ranking not in RANKINGS:
        raise InputInvalid("ranking", f"must be one of {', '.join(RANKINGS)} (got {ranking!r})")
    source_kind = filters.get("source_kind") or None
    if source_kind is not None and source_kind not in SOURCE_KINDS:
        raise InputInvalid(
            "source_kind", f"must be one of {', '.join(SOURCE_KINDS)} (got {source_kind!r})"
        )
    profile = options.get("profile")
    if profile is not None and (not isinstance(profile, str) or not profile.strip()):
        raise InputInvalid("profile", "must be the name of a configured embedding profile")
    return SearchQuery(
        text=text,
        ranking=ranking,
        limit=parse_limit(options.get("limit"), default=DEFAULT_LIMIT),
        wing=_optional_name(filters, "wing"),
        room=room,
        tags=_tags(filters.get("tags")),
        source_kind=source_kind,
        period=period,
        expand=_boolean(options.get("expand"), "expand"),
        profile=profile.strip() if profile else None,
        query_embedding=embedding,
    )


def _refuse_unknown(
    data: Mapping[str, Any], allowed: tuple[str, ...], what: str, prefix: str = ""
) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise InputInvalid(
            f"{prefix}{unknown[0]}",
            f"is not a search {what}; accepted: {', '.join(allowed)}",
        )


def _text(data: Mapping[str, Any], fields: tuple[str, ...]) -> str:
    given = [field for field in fields if data.get(field) not in (None, "")]
    if not given:
        raise InputInvalid(fields[0], "is required: the words to search for")
    if len(given) > 1:
        raise InputInvalid(given[1], f"cannot be combined with `{given[0]}`: give one query")
    value = data[given[0]]
    if not isinstance(value, str) or not value.strip():
        raise InputInvalid(given[0], "must be non-blank text")
    if len(value) > MAX_QUERY_CHARS:
        raise InputInvalid(given[0], f"must be at most {MAX_QUERY_CHARS} characters")
    return value


def _optional_name(data: Mapping[str, Any], field: str) -> str | None:
    value = data.get(field)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputInvalid(field, "must be a name")
    return value.strip()


def _tags(raw: object) -> tuple[str, ...]:
    if raw is None or raw == "":
        return ()
    if isinstance(raw, str):
        items = raw.split(",")
    elif isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        items = raw
    else:
        raise InputInvalid("tags", "must be a list of strings or a comma-separated string")
    tags = tuple(dict.fromkeys(item.strip() for item in items if item.strip()))
    return tags


def _boolean(raw: object, field: str) -> bool:
    if raw is None or raw == "":
        return False
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in ("true", "1", "yes", "false", "0", "no"):
        return raw.lower() in ("true", "1", "yes")
    raise InputInvalid(field, f"must be true or false (got {raw!r})")


def _period_from_flat(options: Mapping[str, Any]) -> Period:
    chosen = [
        name
        for name in ("as_of", "from", "until", "include_historical")
        if options.get(name) not in (None, "")
        and not (name == "include_historical" and not _boolean(options[name], name))
    ]
    # Each question by the first of its options that was sent: from with until is one.
    sent: dict[str, str] = {}
    for name in chosen:
        sent.setdefault("window" if name in ("from", "until") else name, name)
    if len(sent) > 1:
        first, second = list(sent.values())[:2]
        raise InputInvalid(
            second,
            f"cannot be combined with `{first}`: as_of, from with until, and "
            "include_historical each say which memory to look at",
        )
    if "as_of" in chosen:
        return Period("as_of", parse_instant(options["as_of"], "as_of"))
    if "include_historical" in chosen:
        return Period("all")
    if chosen:
        return _between(options.get("from"), options.get("until"), "from", "until")
    return Period("current")


def _period_from_temporal(raw: object) -> Period:
    field = "filter.temporal"
    if raw is None or raw == "current":
        return Period("current")
    if raw == "all":
        return Period("all")
    if isinstance(raw, Mapping) and len(raw) == 1:
        if "as_of" in raw:
            return Period("as_of", parse_instant(raw["as_of"], f"{field}.as_of"))
        if "between" in raw and isinstance(raw["between"], Mapping):
            window = raw["between"]
            _refuse_unknown(window, ("from", "until"), "window field", prefix=f"{field}.between.")
            return _between(
                window.get("from"),
                window.get("until"),
                f"{field}.between.from",
                f"{field}.between.until",
            )
    raise InputInvalid(
        field,
        'must be "current", "all", {"as_of": instant} or {"between": {"from": instant, '
        '"until": instant}}',
    )


def _between(start: object, end: object, start_field: str, end_field: str) -> Period:
    if start in (None, ""):
        raise InputInvalid(start_field, f"is required with `{end_field}`: a window has two ends")
    if end in (None, ""):
        raise InputInvalid(end_field, f"is required with `{start_field}`: a window has two ends")
    begins = parse_instant(start, start_field)
    ends = parse_instant(end, end_field)
    if begins >= ends:
        raise InputInvalid(start_field, f"must be before `{end_field}`")
    return Period("between", begins, ends)
