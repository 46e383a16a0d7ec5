"""Passages: the runs of a few consecutive turns that a conversation's drawer is also embedded as.

A drawer that holds a whole session (`Grace: how do you get around?` then `Hannah: an old Volvo
estate mostly` among a dozen turns of small talk) has one vector for all of it, and the turn that
answers a question weighs a dozenth in it. Embedded also as passages of `PASSAGE_TURNS` turns,
one starting at each turn, the drawer scores by its best window or passage (`palace.search.vectors`
takes a drawer's best vector), so a question meets the few turns that answer it. On the
conversational benchmark's sessions, with the local model, the semantic leg's any@5 went from
0.830 to 0.907 and hybrid's from 0.879 to 0.914 (docs/retrieval.md, "Passages").

A text is a conversation when its first line begins a turn and it has more than `PASSAGE_TURNS`
turns, spoken by at least two speakers, each of whom speaks twice on average: a turn begins at a
line with a speaker label (`Hannah: `, or a mined transcript's `[2026-01-31 12:00 UTC] user: `) and
runs on over the lines without one. The last two conditions keep out prose that merely has a
colon, and lists of fields (`name: ...`, `version: ...`), whose labels are mostly all different.

A drawer has at most `MAX_PASSAGES`: a longer conversation's passages start every few turns,
evenly, so that one drawer of thousands of turns costs at most that many more vectors (its
windows still cover every turn).
"""

from __future__ import annotations

import re

from kernel.profiles import LOCAL_PASSAGE_TURNS as PASSAGE_TURNS

MAX_PASSAGES = 128
# A speaker label, after a mined transcript's time stamp if any: up to 40 characters without a
# colon, not starting with a space, a colon or a bracket (a `[tool: ...]` marker continues a turn).
_TURN_START = re.compile(r"^(?:\[[^\]\n]{1,40}\] )?([^\s:\[][^:\n]{0,39}): ")


def passages(text: str) -> list[str]:
    """The passages of `text` in order, or none when it is not a conversation."""
    turns = conversation_turns(text)
    if len(turns) <= PASSAGE_TURNS:
        return []
    speakers = {speaker for speaker, _ in turns}
    if len(speakers) < 2 or 2 * len(speakers) > len(turns):
        return []
    starts = len(turns) - PASSAGE_TURNS + 1
    stride = -(-starts // MAX_PASSAGES)
    return [
        "\n".join(lines for _, lines in turns[start : start + PASSAGE_TURNS])
        for start in range(0, starts, stride)
    ]


def conversation_turns(text: str) -> list[tuple[str, str]]:
    """(speaker, the turn's lines) of each turn; none when the text does not begin with one."""
    turns: list[tuple[str, list[str]]] = []
    for line in text.strip().split("\n"):
        label = _TURN_START.match(line)
        if label is not None:
            turns.append((label.group(1), [line]))
        elif turns:
            turns[-1][1].append(line)
        else:
            return []
    return [(speaker, "\n".join(lines)) for speaker, lines in turns]
