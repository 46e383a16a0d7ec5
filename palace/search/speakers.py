"""The names of a conversation's speakers, which the semantic leg leaves out of a question.

Within one conversation every passage carries its speakers' labels (`Diego: ...`), and a
small embedding model weighs a name heavily: "What does Priya get around in now?" meets the
passages where Priya speaks most, not the one where she says she sold the Fiat. Where a name
speaks in most of the conversations a search can reach, it cannot tell them apart anyway, so
the semantic leg embeds the question without it; the lexical leg keeps every word, and a name
that does narrow the scope (Priya across a palace of many conversations) stays in both. On the
conversational benchmark with the local model this moved the semantic leg's any@10 from 0.679
to 0.870 at the turn level and its any@5 from 0.907 to 0.957 at the session level; the names
left out of every question, a search across the palace's 40 conversations found half as many
(docs/retrieval.md, "Names in the question").

A drawer's speakers are the labels of its turns when its text begins with one (the turns of
`palace.embeddings.passages`): `Hannah` in `Hannah: an old Volvo estate mostly`, `user` in a
mined transcript's `[2026-01-31 12:00 UTC] user: ...`. A conversation is the drawers of one room
with one `source.uri` (`palace.search.turns`), or a drawer alone.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from palace.embeddings.passages import conversation_turns

THROUGHOUT = 0.5
"""A name is left out of the semantic leg's question when it speaks in at least this share of
the conversations in scope. The benchmark's speakers speak in 86% to 100% of their wing's
sessions, and in 1% to 3% of the palace's."""


def voices(content: str) -> tuple[str, ...]:
    """The speakers of a drawer's turns, lowercased, each once, in order of first turn."""
    return tuple(dict.fromkeys(speaker.casefold() for speaker, _ in conversation_turns(content)))


def without(text: str, names: Collection[str]) -> str:
    """`text` without the whole words (and their possessive) that are one of `names`
    (lowercased); `text` itself when that leaves nothing but punctuation."""
    if not names:
        return text
    words = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    stripped = re.sub(rf"(?<!\w)(?:{words})(?:['\u2019]s)?(?!\w)", " ", text, flags=re.IGNORECASE)
    stripped = re.sub(r"\s+", " ", stripped).strip()
    return stripped if re.search(r"\w", stripped) else text
