"""The lifecycle of an assertion (graph.md section 6), computed on read and never stored.

Pure functions over assertions (`relates_to` rows: `id`, `valid_from`, `valid_to`,
`confidence`, `provenance?`, `assertion?`) and fact links (`fact_link` rows: `from_id`, `to_id`,
`kind`, `origin`, `reason`, `at`, `evidence?`). The state of an assertion at an instant `t`:

| state         | rule                                                                      |
|---------------|---------------------------------------------------------------------------|
| `historical`  | starts after `t`; or closed by `t` with no supersedes/invalidates link    |
| `superseded`  | closed by `t` and some link `supersedes` it                               |
| `invalidated` | closed by `t` and it has an `invalidates` link                            |
| `conflicting` | open at `t` with a `contradicts` link to another assertion open at `t`    |
| `current`     | open at `t` otherwise                                                     |

The links considered at `t` are every inferred link (even one discovered later) and the
explicit links made at or before `t`. An inferred link never overrides an explicit one: between
two assertions an explicit decision considered at `t` hides the inferred links of that pair.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

STATES = ("current", "conflicting", "superseded", "invalidated", "historical")
LINK_KINDS = ("confirms", "contradicts", "supersedes", "refines", "invalidates")
SYMMETRIC = ("confirms", "contradicts")
ORIGINS = ("inferred", "explicit")
# The tie-break chain of `preferred`, in order.
BASIS = ("explicit", "confidence", "valid_from", "id")

Assertion = Mapping[str, Any]
Link = Mapping[str, Any]


def is_open(assertion: Assertion, at: dt.datetime) -> bool:
    """Valid at `at`: started at or before it, and not closed by it (the end is exclusive)."""
    if assertion["valid_from"] > at:
        return False
    valid_to = assertion.get("valid_to")
    return valid_to is None or valid_to > at


def is_explicit(assertion: Assertion) -> bool:
    """Asserted directly: by a checkpoint (it names its drawer) or with no extractor's
    provenance."""
    return assertion.get("assertion") is not None or not assertion.get("provenance")


def considered(links: Iterable[Link], at: dt.datetime) -> list[Link]:
    """The links that count at `at`: every inferred one and the explicit ones made by then,
    less the inferred links of a pair that has an explicit one among those."""
    kept = [
        link
        for link in links
        if link["origin"] == "inferred" or (link.get("at") is not None and link["at"] <= at)
    ]
    decided = {
        frozenset((link["from_id"], link["to_id"])) for link in kept if link["origin"] == "explicit"
    }
    return [
        link
        for link in kept
        if link["origin"] == "explicit"
        or frozenset((link["from_id"], link["to_id"])) not in decided
    ]


def _touching(links: Iterable[Link], assertion_id: str) -> list[Link]:
    return [link for link in links if assertion_id in (link["from_id"], link["to_id"])]


def _other_end(link: Link, assertion_id: str) -> str:
    return link["to_id"] if link["from_id"] == assertion_id else link["from_id"]


def state(
    assertion: Assertion,
    links: Iterable[Link],
    assertions: Mapping[str, Assertion],
    at: dt.datetime,
) -> str:
    """The state of `assertion` at `at`, given the links considered then (`considered`) and the
    assertions they name (to tell whether a contradicting peer is open)."""
    own = _touching(links, assertion["id"])
    if assertion["valid_from"] > at:
        return "historical"
    valid_to = assertion.get("valid_to")
    if valid_to is not None and valid_to <= at:
        if any(link["kind"] == "supersedes" and link["to_id"] == assertion["id"] for link in own):
            return "superseded"
        if any(link["kind"] == "invalidates" for link in own):
            return "invalidated"
        return "historical"
    if _open_peers(assertion, own, assertions, at):
        return "conflicting"
    return "current"


def _open_peers(
    assertion: Assertion, own: list[Link], assertions: Mapping[str, Assertion], at: dt.datetime
) -> list[Assertion]:
    peers: dict[str, Assertion] = {}
    for link in own:
        if link["kind"] != "contradicts":
            continue
        other = assertions.get(_other_end(link, assertion["id"]))
        if other is not None and other["id"] != assertion["id"] and is_open(other, at):
            peers[other["id"]] = other
    return [peers[key] for key in sorted(peers)]


def _rank(assertion: Assertion) -> tuple:
    return (
        is_explicit(assertion),
        float(assertion.get("confidence") or 0.0),
        assertion["valid_from"],
        assertion["id"],
    )


def preferred(contenders: Iterable[Assertion]) -> tuple[str, list[str]]:
    """The preferred assertion among contradicting ones and the tie-break chain that chose it:
    explicit first, then confidence, then the later start of validity, then the id. A
    presentation hint: it resolves nothing."""
    ranked = sorted(contenders, key=_rank, reverse=True)
    best = ranked[0]
    if len(ranked) == 1:
        return best["id"], list(BASIS[:1])
    top, runner_up = _rank(best), _rank(ranked[1])
    decided = next(
        (index for index in range(len(BASIS)) if top[index] != runner_up[index]),
        len(BASIS) - 1,
    )
    return best["id"], list(BASIS[: decided + 1])


def link_values(link: Link) -> dict[str, Any]:
    """A fact link as `graph.shapes.FactLink` renders it: its ends by the names api.md gives
    them, its evidence only when it has one."""
    values = {
        "from": link["from_id"],
        "to": link["to_id"],
        "kind": link["kind"],
        "origin": link["origin"],
        "reason": link.get("reason", ""),
        "at": link.get("at"),
    }
    if link.get("evidence") is not None:
        values["evidence"] = link["evidence"]
    return values


def lifecycle(
    assertion: Assertion,
    links: Iterable[Link],
    assertions: Mapping[str, Assertion],
    at: dt.datetime,
) -> dict[str, Any]:
    """`{state, links, preferred?, basis?}` of `assertion` at `at`. `links` are all the known
    links touching it (they are filtered here); `assertions` holds every assertion they name."""
    kept = considered(links, at)
    own = sorted(
        _touching(kept, assertion["id"]),
        key=lambda link: (link.get("at") or at, link["kind"], link["from_id"], link["to_id"]),
    )
    current_state = state(assertion, own, assertions, at)
    answer: dict[str, Any] = {"state": current_state, "links": [link_values(link) for link in own]}
    if current_state == "conflicting":
        chosen, basis = preferred([assertion, *_open_peers(assertion, own, assertions, at)])
        answer["preferred"] = chosen
        answer["basis"] = basis
    return answer


def link_id_parts(kind: str, origin: str, from_id: str, to_id: str) -> tuple[str, str, str, str]:
    """What a fact link's id is derived from: symmetric kinds order their endpoints, so the
    same decision between two assertions is one link whichever way round it was made."""
    if kind in SYMMETRIC and to_id < from_id:
        from_id, to_id = to_id, from_id
    return kind, origin, from_id, to_id
