"""The built-in `heuristic` extractor: names and a few stated relations, without a model.

Deterministic: the same text always gives the same answer, in the same order. It finds

- **entities**: runs of capitalised words (`Alice`, `Acme Corp`, `PostgreSQL`, `Node.js`),
  `@handles` (person) and `` `code spans` `` (tool). Fenced code blocks are not read.
- **relations**: only between two entities next to each other in one sentence, and only when
  the words between them are one of the phrases of `PHRASES` ("works on" -> `works_on`, "is a
  member of" -> `member_of`, "is based in" -> `located_in`, ...; a passive phrase such as "is
  used by" swaps the two). A few adverbs ("also", "now", "currently", ...) and an article just
  before the second entity ("the", "a", "an") are ignored. Two names in one sentence with
  anything else between them relate nothing: co-occurrence alone yields no relation. Every
  relation has the confidence `CONFIDENCE`.

Capitalised words that are not names: every sentence starts with one. Words of `STOP_WORDS`
(articles, pronouns, conjunctions, prepositions, common adverbs, question words, weekdays and
months, TODO-style markers) are never part of a name and split a run around them ("The Platform
Team" is `Platform Team`). Any other capitalised word that is alone at the start of a sentence
("Deploying requires Docker.") is a name only if it looks like one (an inner capital, a digit,
all capitals: `MemCastle`, `S3`, `AWS`), or is written capitalised somewhere else in the text
too, or takes part in a relation of the phrase table ("Alice works on MemCastle.") and does not
end in "-ing".

Kinds: a handle is a `person`, a code span a `tool`, a name ending in Inc, Corp, Ltd, LLC,
GmbH, Foundation, ... an `organization`. Otherwise the role in a relation decides, the first one
that does: the object of `uses` or `depends_on` is a `tool`, of `works_on` a `project`, of
`member_of` an `organization`, of `located_in` a `place`. Everything else is `other`, which
entity resolution lets match an entity of any kind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

NAME = "heuristic"
CONFIDENCE = 0.6


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


STOP_WORDS = _set(
    """
    a an the this that these those there here
    i we you he she it they me us him her them my our your his its their mine ours yours theirs
    when where what which who whom whose why how if then else than and or nor but so because
    since while whereas after before until unless although though however yet still also
    in on at for from to of by with without within about as into onto over under between
    through during against among per via
    today yesterday tomorrow now later soon again already always never sometimes often usually
    maybe perhaps please thanks thank yes no not all some any each every both either neither
    many much most more less few several such other another same own only just even
    first second third next last finally once
    is are was were be been being am do does did done have has had will would shall should
    can could may might must let lets
    note notes todo fixme xxx hack nb ps ok okay
    monday tuesday wednesday thursday friday saturday sunday
    january february march april may june july august september october november december
    """
)

# The words between two entities -> (predicate, reversed). Reversed phrases are passive: the
# second entity is the subject.
PHRASES: dict[str, tuple[str, bool]] = {}


def _phrases(predicate: str, active: str, passive: str = "") -> None:
    for phrase in active.split(","):
        if phrase.strip():
            PHRASES[" ".join(phrase.split())] = (predicate, False)
    for phrase in passive.split(","):
        if phrase.strip():
            PHRASES[" ".join(phrase.split())] = (predicate, True)


_phrases(
    "works_on",
    "works on, work on, worked on, is working on, are working on, was working on, "
    "were working on, maintains, maintain, maintained, develops, develop, developed, "
    "contributes to, contribute to, contributed to",
    "is maintained by, are maintained by, was maintained by, is developed by, "
    "are developed by, was developed by",
)
_phrases(
    "member_of",
    "is a member of, are members of, was a member of, were members of, is member of, "
    "joined, has joined, have joined",
)
_phrases(
    "depends_on",
    "depends on, depend on, depended on, relies on, rely on, relied on, requires, require, "
    "required, is built on, are built on, is built on top of, needs, need",
    "is required by, are required by, is needed by",
)
_phrases(
    "uses",
    "uses, use, used, is using, are using, was using, were using, has adopted, adopted, "
    "switched to, has switched to, migrated to",
    "is used by, are used by, was used by",
)
_phrases(
    "owns",
    "owns, own, owned, is the owner of, is owner of, are the owners of",
    "is owned by, are owned by, was owned by",
)
_phrases(
    "part_of",
    "is part of, are part of, was part of, is a part of, is a component of, "
    "is a module of, is a subproject of, is a service of",
    "contains, contain",
)
_phrases(
    "located_in",
    "is based in, are based in, was based in, is located in, are located in, was located in, "
    "is headquartered in, lives in, live in, lived in",
)

# Ignored anywhere between two entities; articles only right before the second one.
FILLERS = _set(
    "also now still currently mainly mostly heavily actively directly primarily already "
    "officially recently"
)
ARTICLES = frozenset(("the", "a", "an"))
ORGANIZATION_SUFFIXES = _set(
    "inc inc. corp corp. corporation ltd ltd. llc gmbh ag sa plc co co. company foundation "
    "institute university labs lab team group association consortium"
)
ROLE_KINDS = {
    "uses": "tool",
    "depends_on": "tool",
    "works_on": "project",
    "member_of": "organization",
    "located_in": "place",
}
# Longer spans are rarely names (a command line, a sentence in backticks).
MAX_CODE_SPAN = 64
MAX_RUN_WORDS = 6

_FENCE = re.compile(r"^[ \t]*(```|~~~).*?(^[ \t]*\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)
# A line that is a block of its own: a heading, a list item, a quote, a table row.
_BLOCK_LINE = re.compile(r"^[ \t]*(#{1,6}\s|[-*+]\s|>|\d+[.)]\s|\|)")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n[ \t]*\n")
_CODE = re.compile(r"`([^`\n]+)`")
_HANDLE = re.compile(r"(?<![\w@.])@([A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?)")
# A word that may be capitalised (letters other than a-z first), and the first word of a
# sentence (a code span or handle counts).
_CAPITALISED = re.compile(r"(?<![\w+#.'\u2019-])[^\W\d_a-z](?:[\w+#.'\u2019-]*[\w+#])?")
_FIRST = re.compile(r"[\w`@]")
_PLAIN_WORD = re.compile(r"[^\W\d_][^\W\d_'\u2019-]*")
_BETWEEN_OK = re.compile(r"^[\s\w'\u2019-]*$")


@dataclass
class _Mention:
    start: int
    end: int
    name: str
    kind: str
    # Alone at the start of its sentence, and not name-like: an entity only if confirmed.
    tentative: bool = False
    confirmed: bool = False


@dataclass
class _Sentence:
    text: str
    mentions: list[_Mention] = field(default_factory=list)


def extract(text: str) -> dict[str, list[dict[str, Any]]]:
    """`{"entities": [{name, kind}], "relations": [{subject, predicate, object, confidence}]}`
    found in `text`, entities in order of first appearance."""
    sentences = [_Sentence(part) for part in _sentences(_without_fences(text))]
    for sentence in sentences:
        sentence.mentions = _mentions(sentence.text)
    elsewhere = {
        mention.name.casefold()
        for sentence in sentences
        for mention in sentence.mentions
        if not mention.tentative
    }
    for sentence in sentences:
        for mention in sentence.mentions:
            if mention.tentative and mention.name.casefold() in elsewhere:
                mention.confirmed = True
    found: list[tuple[_Mention, str, _Mention]] = []
    for sentence in sentences:
        for left, right in zip(sentence.mentions, sentence.mentions[1:], strict=False):
            relation = _relation(sentence.text[left.end : right.start])
            if relation is None:
                continue
            name, reverse = relation
            subject, object_ = (right, left) if reverse else (left, right)
            if subject.name.casefold() == object_.name.casefold():
                continue
            for mention in (subject, object_):
                if mention.tentative and not mention.name.casefold().endswith("ing"):
                    mention.confirmed = True
            if subject.tentative and not subject.confirmed:
                continue
            if object_.tentative and not object_.confirmed:
                continue
            found.append((subject, name, object_))
    entities: dict[str, dict[str, Any]] = {}
    for sentence in sentences:
        for mention in sentence.mentions:
            key = mention.name.casefold()
            if mention.tentative and not mention.confirmed:
                continue
            entities.setdefault(key, {"name": mention.name, "kind": mention.kind})
    relations: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for subject, predicate, object_ in found:
        role_kind = ROLE_KINDS.get(predicate)
        target = entities[object_.name.casefold()]
        if role_kind is not None and target["kind"] == "other":
            target["kind"] = role_kind
        fact = (subject.name.casefold(), predicate, object_.name.casefold())
        if fact in seen:
            continue
        seen.add(fact)
        relations.append(
            {
                "subject": entities[fact[0]]["name"],
                "predicate": predicate,
                "object": target["name"],
                "confidence": CONFIDENCE,
            }
        )
    return {"entities": list(entities.values()), "relations": relations}


def _without_fences(text: str) -> str:
    """The text with fenced code blocks blanked out (their newlines kept as sentence breaks)."""
    return _FENCE.sub(lambda match: "\n\n", text)


def _sentences(text: str) -> list[str]:
    """Sentences: split after `.`, `!`, `?` and at blank lines; a heading, list item, quote or
    table row is a sentence of its own."""
    lines: list[str] = []
    for line in text.split("\n"):
        if _BLOCK_LINE.match(line):
            lines.extend(("", line, ""))
        else:
            lines.append(line)
    return [part for part in _SENTENCE_END.split("\n".join(lines)) if part and part.strip()]


def _mentions(sentence: str) -> list[_Mention]:
    mentions: list[_Mention] = []
    taken: list[tuple[int, int]] = []

    def claim(start: int, end: int) -> bool:
        if any(start < other_end and other_start < end for other_start, other_end in taken):
            return False
        taken.append((start, end))
        return True

    for match in _CODE.finditer(sentence):
        name = " ".join(match.group(1).split())
        if name and len(name) <= MAX_CODE_SPAN and claim(match.start(), match.end()):
            mentions.append(_Mention(match.start(), match.end(), name, "tool"))
    for match in _HANDLE.finditer(sentence):
        if claim(match.start(), match.end()):
            mentions.append(_Mention(match.start(), match.end(), "@" + match.group(1), "person"))
    first = _FIRST.search(sentence)
    mentions.extend(_runs(sentence, taken, first.start() if first else -1))
    mentions.sort(key=lambda mention: mention.start)
    return mentions


def _runs(sentence: str, taken: list[tuple[int, int]], first: int) -> list[_Mention]:
    """Runs of capitalised words not inside a code span or handle, split at stop words, at
    punctuation and at line breaks; `first` is where the sentence's first word starts."""
    runs: list[list[tuple[int, int, str]]] = []
    current: list[tuple[int, int, str]] = []
    previous_end = -1
    for match in _CAPITALISED.finditer(sentence):
        start, end = match.start(), match.end()
        word = match.group()
        # Sentence-final dots, possessives and quotes are not part of a name.
        if word.endswith(("'s", "\u2019s")):
            word = word[:-2]
        word = word.rstrip(".'\u2019-")
        end = start + len(word)
        if (
            len(word) < 2
            or not word[0].isupper()
            or word.casefold() in STOP_WORDS
            or any(start < other_end and other_start < end for other_start, other_end in taken)
        ):
            # Not part of a name, and what follows is not joined to what came before.
            previous_end = -1
            continue
        if (
            current
            and previous_end >= 0
            and sentence[previous_end:start] == " "
            and len(current) < MAX_RUN_WORDS
        ):
            current.append((start, end, word))
        else:
            if current:
                runs.append(current)
            current = [(start, end, word)]
        previous_end = end
    if current:
        runs.append(current)
    mentions = []
    for run in runs:
        name = " ".join(word for _, _, word in run)
        organization = len(run) > 1 and run[-1][2].casefold() in ORGANIZATION_SUFFIXES
        kind = "organization" if organization else "other"
        tentative = len(run) == 1 and run[0][0] == first and not _name_like(name)
        mentions.append(_Mention(run[0][0], run[-1][1], name, kind, tentative=tentative))
    return mentions


def _name_like(word: str) -> bool:
    """`MemCastle`, `S3`, `AWS`, `Node.js`: not an ordinary word that happens to start a
    sentence."""
    rest = word[1:]
    # An inner capital (all capitals included), or anything but letters, apostrophes, dashes.
    return rest != rest.lower() or _PLAIN_WORD.fullmatch(word) is None


def _relation(between: str) -> tuple[str, bool] | None:
    """The predicate (and whether it is passive) the words between two entities state."""
    if not _BETWEEN_OK.match(between):
        return None
    words = [word for word in between.casefold().replace("\u2019", "'").split() if word]
    words = [word for word in words if word not in FILLERS]
    if words and words[-1] in ARTICLES:
        words.pop()
    if not words:
        return None
    return PHRASES.get(" ".join(words))
