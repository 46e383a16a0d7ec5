"""The lifecycle of an assertion (graph.md section 6): pure functions, computed on read."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from graph import lifecycle

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def day(n: float) -> dt.datetime:
    return T0 + dt.timedelta(days=n)


def fact(
    key: str,
    start: float = 0,
    end: float | None = None,
    *,
    confidence: float = 0.6,
    explicit: bool = False,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": key,
        "valid_from": day(start),
        "valid_to": None if end is None else day(end),
        "confidence": confidence,
    }
    if explicit:
        row["assertion"] = f"drawer-{key}"
    else:
        row["provenance"] = {"drawer": f"drawer-{key}", "extractor": "heuristic"}
    return row


def link(kind: str, src: str, dst: str, origin: str = "inferred", at: float = 0) -> dict:
    return {
        "id": f"{kind}:{origin}:{src}:{dst}",
        "from_id": src,
        "to_id": dst,
        "kind": kind,
        "origin": origin,
        "reason": f"{origin} {kind}",
        "at": day(at),
        "evidence": "evidence-drawer",
    }


def state_of(row: dict, links: list[dict], others: list[dict], at: float) -> dict[str, Any]:
    assertions = {r["id"]: r for r in [row, *others]}
    return lifecycle.lifecycle(row, links, assertions, day(at))


def test_open_is_start_inclusive_end_exclusive() -> None:
    row = fact("a", 1, 3)
    assert not lifecycle.is_open(row, day(0.5))
    assert lifecycle.is_open(row, day(1))
    assert lifecycle.is_open(row, day(2.9))
    assert not lifecycle.is_open(row, day(3))
    assert lifecycle.is_open(fact("b", 1), day(1000))


def test_current_and_historical() -> None:
    assert state_of(fact("a", 0), [], [], 1)["state"] == "current"
    # Not yet started at t.
    assert state_of(fact("a", 5), [], [], 1)["state"] == "historical"
    # Closed by t with no supersedes/invalidates link.
    assert state_of(fact("a", 0, 2), [], [], 3)["state"] == "historical"
    assert state_of(fact("a", 0, 2), [], [], 1)["state"] == "current"


def test_superseded_needs_a_supersedes_link_to_it() -> None:
    old, new = fact("old", 0, 2), fact("new", 2)
    links = [link("supersedes", "new", "old")]
    assert state_of(old, links, [new], 3)["state"] == "superseded"
    assert state_of(old, links, [new], 1)["state"] == "current"
    # The successor itself is current: the link points at the predecessor.
    assert state_of(new, links, [old], 3)["state"] == "current"
    # A supersedes link *from* a closed assertion does not make it superseded.
    assert state_of(fact("x", 0, 2), [link("supersedes", "x", "y")], [], 3)["state"] == (
        "historical"
    )


def test_invalidated() -> None:
    row = fact("a", 0, 2)
    links = [link("invalidates", "a", "a", "explicit", at=2)]
    assert state_of(row, links, [], 3)["state"] == "invalidated"
    # Before the decision the assertion was open and current.
    assert state_of(row, links, [], 1)["state"] == "current"


def test_superseded_wins_over_invalidated() -> None:
    row = fact("a", 0, 2)
    links = [link("invalidates", "a", "a", "explicit", at=2), link("supersedes", "b", "a")]
    assert state_of(row, links, [fact("b", 2)], 3)["state"] == "superseded"


def test_conflicting_needs_the_peer_open_at_t() -> None:
    a, b = fact("a", 0), fact("b", 1, 5)
    links = [link("contradicts", "a", "b")]
    assert state_of(a, links, [b], 0.5)["state"] == "current"  # b not started
    assert state_of(a, links, [b], 2)["state"] == "conflicting"
    assert state_of(b, links, [a], 2)["state"] == "conflicting"
    assert state_of(a, links, [b], 6)["state"] == "current"  # b closed
    # A peer that is unknown (deleted) is not open.
    assert state_of(a, links, [], 2)["state"] == "current"


def test_inferred_links_count_even_when_discovered_later() -> None:
    a, b = fact("a", 0), fact("b", 0)
    links = [link("contradicts", "a", "b", "inferred", at=10)]
    assert state_of(a, links, [b], 1)["state"] == "conflicting"


def test_explicit_links_count_from_when_they_were_made() -> None:
    a, b = fact("a", 0), fact("b", 0)
    links = [link("contradicts", "a", "b", "explicit", at=10)]
    assert state_of(a, links, [b], 1) == {"state": "current", "links": []}
    assert state_of(a, links, [b], 10)["state"] == "conflicting"


def test_inferred_links_never_override_explicit_ones() -> None:
    a, b = fact("a", 0), fact("b", 0)
    links = [link("contradicts", "a", "b"), link("confirms", "b", "a", "explicit", at=5)]
    before = state_of(a, links, [b], 1)
    assert before["state"] == "conflicting"
    after = state_of(a, links, [b], 6)
    assert after["state"] == "current"
    assert [(x["kind"], x["origin"]) for x in after["links"]] == [("confirms", "explicit")]


def test_links_shape() -> None:
    a, b = fact("a", 0), fact("b", 0)
    answer = state_of(a, [link("confirms", "a", "b")], [b], 1)
    assert answer == {
        "state": "current",
        "links": [
            {
                "from": "a",
                "to": "b",
                "kind": "confirms",
                "origin": "inferred",
                "reason": "inferred confirms",
                "at": day(0),
                "evidence": "evidence-drawer",
            }
        ],
    }
    # Links not touching the assertion are not its links.
    assert state_of(a, [link("confirms", "b", "c")], [b], 1)["links"] == []


@pytest.mark.parametrize(
    ("a", "b", "winner", "basis"),
    [
        pytest.param(
            fact("a", 0, confidence=0.3, explicit=True),
            fact("b", 0, confidence=0.9),
            "a",
            ["explicit"],
            id="explicit-first",
        ),
        pytest.param(
            fact("a", 0, confidence=0.7),
            fact("b", 1, confidence=0.6),
            "a",
            ["explicit", "confidence"],
            id="then-confidence",
        ),
        pytest.param(
            fact("a", 0, confidence=0.6),
            fact("b", 1, confidence=0.6),
            "b",
            ["explicit", "confidence", "valid_from"],
            id="then-later-start",
        ),
        pytest.param(
            fact("a", 0, confidence=0.6),
            fact("b", 0, confidence=0.6),
            "b",
            ["explicit", "confidence", "valid_from", "id"],
            id="then-id",
        ),
    ],
)
def test_preferred_and_its_basis(a: dict, b: dict, winner: str, basis: list[str]) -> None:
    links = [link("contradicts", "a", "b")]
    for row, other in ((a, b), (b, a)):
        answer = state_of(row, links, [other], 2)
        assert answer["state"] == "conflicting"
        assert (answer["preferred"], answer["basis"]) == (winner, basis)


def test_preferred_among_several_open_peers_only() -> None:
    a = fact("a", 0, confidence=0.5)
    b = fact("b", 0, confidence=0.7)
    c = fact("c", 0, 1, confidence=0.99)  # closed at day 1
    links = [link("contradicts", "a", "b"), link("contradicts", "a", "c")]
    answer = state_of(a, links, [b, c], 2)
    assert (answer["preferred"], answer["basis"]) == ("b", ["explicit", "confidence"])
    earlier = state_of(a, links, [b, c], 0.5)
    assert earlier["preferred"] == "c"


def test_no_preferred_unless_conflicting() -> None:
    answer = state_of(fact("a", 0), [link("confirms", "a", "b")], [fact("b", 0)], 1)
    assert "preferred" not in answer and "basis" not in answer


def test_is_explicit() -> None:
    assert lifecycle.is_explicit(fact("a", explicit=True))
    assert not lifecycle.is_explicit(fact("a"))
    assert lifecycle.is_explicit({"id": "x", "valid_from": T0})


def test_link_ids_order_symmetric_endpoints_only() -> None:
    assert lifecycle.link_id_parts("confirms", "inferred", "b", "a") == (
        "confirms",
        "inferred",
        "a",
        "b",
    )
    assert lifecycle.link_id_parts("supersedes", "inferred", "b", "a")[2:] == ("b", "a")
