"""A conversational benchmark of our own: generated chats, filed per session and per turn.

The people this daemon is for file conversations and then ask questions whose words rarely match
the words filed (issue 26). The judged set holds none, and the public datasets cannot be
bundled, so this module generates them: deterministic from a seed, pure Python, no model. Each
conversation has two or three speakers and several dated sessions of short turns, small talk
and filler ("haha ok", "yes, the blue one") around the turns that carry facts; some facts are
said only in answer to another speaker's question, so the answer turn alone lacks the topic.

Five kinds of question, each listing its evidence turns:

- `single`: one fact, said in one turn;
- `two-sessions`: a fact spread over two sessions (a plan, then how it went);
- `time`: "when did X ..." (the turn that reports it), or "what did X say about Y in May"
  when X spoke of Y in several months (only the May turn is evidence);
- `changed`: a fact said, then changed in a later session; the later turn is the evidence;
- `paraphrase`: a question that shares no content word with its evidence turn, only concepts
  (the `concepts` table the stand-in model uses).

The corpus is filed both ways, each conversation its own wing: one drawer per session (its
turns as `Speaker: text` lines) and one drawer per turn. Every drawer of a session carries the
session as `source.uri` (`conv://<conversation>/<session>`, kind `transcript`) and its time as
`valid_from` (a turn's, monotonic within its session), filed in order: what grouping and ordering
a conversation needs. Turn drawers are named, because the daemon stores an unnamed exact copy
("haha ok") once per room.

    .venv/bin/python -m tests.eval.conversations [--profile local] [--granularity turn]
    .venv/bin/python -m tests.eval.conversations --write-baseline
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.eval import phrases
from tests.eval.dataset import Dataset, parse_dataset
from tests.eval.invariants import fusion_shortfalls
from tests.eval.report import BASELINE_DIR, baseline_of, compare, read_json, write_json
from tests.eval.run import run_benchmark

SEED = 26
CONVERSATIONS = 40
GRANULARITIES = ("session", "turn")
KINDS = ("single", "two-sessions", "time", "changed", "paraphrase")
SESSION_ROOM = "sessions"
TURN_ROOM = "turns"
SUMMARY_METRICS = ("hit@1", "hit@5", "hit@10", "all@10")
LIMIT = 20
"""Hits asked per question, twice the largest cut-off: the daemon breaks ties by its random
drawer ids, so equal scores straddling rank 10 would move the figures from run to run; with the
whole tie in the page, the harness orders it by dataset id."""


@dataclass
class Turn:
    """One line of a session; `id` and `at` are set once the session is laid out."""

    speaker: str
    text: str
    id: str = ""
    at: dt.datetime | None = None


@dataclass
class Session:
    id: str
    start: dt.datetime
    turns: list[Turn] = field(default_factory=list)


@dataclass
class Question:
    id: str
    kind: str
    text: str
    evidence: list[Turn]


@dataclass
class Conversation:
    id: str
    speakers: list[str]
    sessions: list[Session]
    questions: list[Question]


@dataclass
class Corpus:
    seed: int
    conversations: list[Conversation]

    def questions(self) -> list[Question]:
        return [q for c in self.conversations for q in c.questions]


def generate(seed: int = SEED, count: int = CONVERSATIONS) -> Corpus:
    """`count` conversations, the same for the same seed on every platform."""
    rng = random.Random(seed)
    return Corpus(seed, [_conversation(rng, index) for index in range(count)])


def _conversation(rng: random.Random, index: int) -> Conversation:
    conv_id = f"c{index:02d}"
    speakers = rng.sample(phrases.NAMES, rng.choice((2, 2, 3)))
    sessions = _sessions(rng, index)
    blocks: list[list[_Block]] = [[] for _ in sessions]
    writer = _Writer(rng, conv_id, speakers, sessions, blocks)
    writer.plan()
    for session, planned in zip(sessions, blocks, strict=True):
        _lay_out(rng, session, speakers, planned)
    return Conversation(conv_id, speakers, sessions, writer.questions)


def _sessions(rng: random.Random, index: int) -> list[Session]:
    """Ten to fourteen sessions, one to three weeks apart, each starting at some hour of the day:
    enough sessions a wing that finding the right one is not a given."""
    day = dt.date(2023, 1, 2) + dt.timedelta(days=index * 3 + rng.randrange(20))
    sessions: list[Session] = []
    for number in range(rng.randint(10, 14)):
        start = dt.datetime(day.year, day.month, day.day, rng.randrange(8, 22), tzinfo=dt.UTC)
        sessions.append(Session(f"s{number + 1}", start + dt.timedelta(minutes=rng.randrange(60))))
        day += dt.timedelta(days=rng.randrange(7, 25))
    return sessions


_Block = list[Turn]
"""Turns said together, in order (a fact and the reactions to it)."""


class _Writer:
    """Plans one conversation's facts as blocks of turns in its sessions, and their questions."""

    def __init__(
        self,
        rng: random.Random,
        conv_id: str,
        speakers: list[str],
        sessions: list[Session],
        blocks: list[list[_Block]],
    ) -> None:
        self.rng = rng
        self.conv_id = conv_id
        self.speakers = speakers
        self.sessions = sessions
        self.blocks = blocks
        self.questions: list[Question] = []

    def plan(self) -> None:
        """Fourteen questions: four single facts (every other one said only in answer to a
        prompt), two arcs, three time questions, two changes and three paraphrases."""
        topics = self.rng.sample(phrases.FACTS, 4)
        for number, topic in enumerate(topics):
            self._single(topic, asked=number % 2 == 0)
        for arc in self.rng.sample(phrases.ARCS, 2):
            self._two_sessions(arc)
        for event in self.rng.sample(phrases.EVENTS, 2):
            self._when(event)
        self._in_month(self.rng.choice(phrases.RECURRING))
        for change in self.rng.sample(phrases.CHANGES, 2):
            self._changed(change)
        for pair in self.rng.sample(phrases.PARAPHRASES, 3):
            self._paraphrase(pair)

    def _ask(self, kind: str, text: str, evidence: list[Turn]) -> None:
        number = len(self.questions) + 1
        self.questions.append(Question(f"{self.conv_id}-q{number:02d}", kind, text, evidence))

    def _other(self, speaker: str) -> str:
        return self.rng.choice([s for s in self.speakers if s != speaker])

    def _add(self, session: int, block: _Block) -> None:
        self.blocks[session].append(block)

    def _fact_block(self, speaker: str, says: str, prompt: str | None) -> tuple[_Block, Turn]:
        """The fact's turn, after another speaker's prompt when given, then a reaction."""
        fact = Turn(speaker, says)
        block = [fact, Turn(self._other(speaker), self.rng.choice(phrases.REACTIONS))]
        if prompt is not None:
            block.insert(0, Turn(self._other(speaker), prompt))
        return block, fact

    def _single(self, topic: phrases.Fact, *, asked: bool) -> None:
        """One speaker's fact, and another speaker's fact on the same topic as a distractor."""
        owner, rival = self.rng.sample(self.speakers, 2)
        first, second = self.rng.sample(topic.values, 2)
        fact = self._say(topic, owner, first, asked)
        self._say(topic, rival, second, self.rng.random() < 0.5)
        question = self.rng.choice(topic.questions).format(name=owner)
        self._ask("single", question, [fact])

    def _say(self, topic: phrases.Fact, speaker: str, value: str, asked: bool) -> Turn:
        if asked:
            prompt, answer = self.rng.choice(topic.answers)
            block, fact = self._fact_block(speaker, answer.format(value=value), prompt)
        else:
            block, fact = self._fact_block(
                speaker, self.rng.choice(topic.statements).format(value=value), None
            )
        self._add(self.rng.randrange(len(self.sessions)), block)
        return fact

    def _two_sessions(self, arc: phrases.Arc) -> None:
        speaker = self.rng.choice(self.speakers)
        early, late = sorted(self.rng.sample(range(len(self.sessions)), 2))
        slots = {key: self.rng.choice(values) for key, values in arc.slots.items()}
        plan_block, plan = self._fact_block(
            speaker, self.rng.choice(arc.plans).format(**slots), None
        )
        outcome_block, outcome = self._fact_block(
            speaker, self.rng.choice(arc.outcomes).format(**slots), None
        )
        self._add(early, plan_block)
        self._add(late, outcome_block)
        self._ask("two-sessions", arc.question.format(name=speaker), [plan, outcome])

    def _when(self, event: phrases.Event) -> None:
        speaker = self.rng.choice(self.speakers)
        block, fact = self._fact_block(speaker, self.rng.choice(event.reports), None)
        self._add(self.rng.randrange(len(self.sessions)), block)
        self._ask("time", event.question.format(name=speaker), [fact])

    def _in_month(self, topic: phrases.Recurring) -> None:
        """The same speaker on the same topic in sessions of different months."""
        speaker = self.rng.choice(self.speakers)
        by_month: dict[int, int] = {}
        for number, session in enumerate(self.sessions):
            by_month.setdefault(session.start.month, number)
        firsts = sorted(by_month.values())
        chosen = sorted(self.rng.sample(firsts, min(3, len(firsts))))
        lines = self.rng.sample(topic.lines, len(chosen))
        turns = []
        for number, line in zip(chosen, lines, strict=True):
            block, fact = self._fact_block(speaker, line, None)
            self._add(number, block)
            turns.append(fact)
        target = self.rng.randrange(len(chosen))
        month = self.sessions[chosen[target]].start.strftime("%B")
        question = topic.question.format(name=speaker, month=month)
        self._ask("time", question, [turns[target]])

    def _changed(self, change: phrases.Change) -> None:
        speaker = self.rng.choice(self.speakers)
        early, late = sorted(self.rng.sample(range(len(self.sessions)), 2))
        old, new = self.rng.sample(change.values, 2)
        before, _ = self._fact_block(
            speaker, self.rng.choice(change.before).format(value=old), None
        )
        after_text = self.rng.choice(change.after).format(old=old, new=new)
        after, fact = self._fact_block(speaker, after_text, None)
        self._add(early, before)
        self._add(late, after)
        self._ask("changed", change.question.format(name=speaker), [fact])

    def _paraphrase(self, pair: phrases.Paraphrase) -> None:
        speaker = self.rng.choice(self.speakers)
        block, fact = self._fact_block(speaker, pair.says, None)
        self._add(self.rng.randrange(len(self.sessions)), block)
        self._ask("paraphrase", pair.question, [fact])


def _lay_out(
    rng: random.Random, session: Session, speakers: list[str], planned: list[_Block]
) -> None:
    """Interleave the planned blocks with small talk and filler, then number and time the turns."""
    blocks = [*planned, *(_chatter(rng, speakers) for _ in range(rng.randint(1, 3)))]
    rng.shuffle(blocks)
    greeting = Turn(rng.choice(speakers), rng.choice(phrases.GREETINGS))
    farewell = Turn(rng.choice(speakers), rng.choice(phrases.FAREWELLS))
    session.turns = [greeting, *(turn for block in blocks for turn in block), farewell]
    moment = session.start
    for number, turn in enumerate(session.turns):
        turn.id = f"{session.id}/t{number:02d}"
        turn.at = moment
        moment += dt.timedelta(seconds=rng.randrange(20, 240))


def _chatter(rng: random.Random, speakers: list[str]) -> _Block:
    """Small talk: a question and its answer, or a few fillers."""
    if rng.random() < 0.5:
        asker, answerer = rng.sample(speakers, 2)
        prompt, answer = rng.choice(phrases.SMALL_TALK)
        return [Turn(asker, prompt), Turn(answerer, answer)]
    return [
        Turn(rng.choice(speakers), rng.choice(phrases.FILLERS)) for _ in range(rng.randint(1, 3))
    ]


# -- as harness datasets ------------------------------------------------------------------------


def line(turn: Turn) -> str:
    return f"{turn.speaker}: {turn.text}"


def _instant(moment: dt.datetime | None) -> str:
    assert moment is not None, "a turn is timed when its session is laid out"
    return moment.isoformat().replace("+00:00", "Z")


def _filing(conv: Conversation, session: Session, moment: dt.datetime | None) -> dict[str, Any]:
    uri = f"conv://{conv.id}/{session.id}"
    return {"source": {"kind": "transcript", "uri": uri}, "valid_from": _instant(moment)}


def dataset_json(corpus: Corpus, granularity: str) -> dict[str, Any]:
    """The corpus in the harness's dataset format, filed one drawer per session or per turn."""
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity is one of {GRANULARITIES}, not {granularity!r}")
    documents: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for conv in corpus.conversations:
        for session in conv.sessions:
            documents.extend(_documents(conv, session, granularity))
        for q in conv.questions:
            docs = sorted({_doc_id(conv, t, granularity) for t in q.evidence})
            queries.append(
                {
                    "id": q.id,
                    "category": q.kind,
                    "text": q.text,
                    "filter": {"wing": conv.id},
                    "relevant": [{"doc": d, "grade": 2} for d in docs],
                }
            )
    return {
        "name": f"conversations-{granularity}",
        "version": 1,
        "description": (
            f"generated conversations (seed {corpus.seed}), one drawer per {granularity}"
        ),
        "concepts": dict(sorted(phrases.CONCEPTS.items())),
        "documents": documents,
        "supersessions": [],
        "mentions": [],
        "queries": queries,
    }


def _documents(conv: Conversation, session: Session, granularity: str) -> list[dict[str, Any]]:
    if granularity == "session":
        text = "\n".join(line(t) for t in session.turns)
        return [
            {
                "id": f"{conv.id}/{session.id}",
                "wing": conv.id,
                "room": SESSION_ROOM,
                "content": text,
                **_filing(conv, session, session.turns[0].at),
            }
        ]
    return [
        {
            "id": f"{conv.id}/{turn.id}",
            "wing": conv.id,
            "room": TURN_ROOM,
            "content": line(turn),
            "name": turn.id.replace("/", "-"),
            **_filing(conv, session, turn.at),
        }
        for turn in session.turns
    ]


def _doc_id(conv: Conversation, turn: Turn, granularity: str) -> str:
    return (
        f"{conv.id}/{turn.id.split('/')[0]}" if granularity == "session" else f"{conv.id}/{turn.id}"
    )


def canonical(data: dict[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, ensure_ascii=False).encode()


def dataset(granularity: str, seed: int = SEED, count: int = CONVERSATIONS) -> Dataset:
    """The validated dataset; its identity is the SHA-256 of its canonical JSON."""
    data = dataset_json(generate(seed, count), granularity)
    raw = canonical(data)
    return parse_dataset(data, sha256=hashlib.sha256(raw).hexdigest(), size=len(raw))


# -- running it ---------------------------------------------------------------------------------


def baseline_path(granularity: str, profile: str) -> Path:
    """The committed baseline of one granularity and vector profile."""
    return BASELINE_DIR / f"conversations-{granularity}-{profile}.json"


def summary_lines(report: dict[str, Any]) -> list[str]:
    """any@k and all@k (the harness's hit@k, all@k) per ranking, overall and per kind."""
    head = f"{'ranking':10} {'kind':13} " + " ".join(f"{m:>7}" for m in SUMMARY_METRICS)
    lines = [head]
    for config, metrics in report["configurations"].items():
        lines.append(_row(config, "(all)", metrics))
        for kind, values in report["categories"][config].items():
            lines.append(_row("", kind, values))
    return lines


def _row(config: str, kind: str, metrics: dict[str, float]) -> str:
    return f"{config:10} {kind:13} " + " ".join(f"{metrics[m]:7.3f}" for m in SUMMARY_METRICS)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.eval.conversations", description=__doc__)
    parser.add_argument("--profile", choices=("standin", "local"), default="standin")
    parser.add_argument("--granularity", choices=(*GRANULARITIES, "both"), default="both")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, help="a directory for the full reports")
    parser.add_argument("--write-baseline", action="store_true")
    args = parser.parse_args(argv)
    wanted = GRANULARITIES if args.granularity == "both" else (args.granularity,)
    status = 0
    for granularity in wanted:
        chosen = dataset(granularity, args.seed)
        outcome = run_benchmark(
            args.profile,
            dataset=chosen,
            limit=LIMIT,
            progress=lambda m: print(m, file=sys.stderr, flush=True),
        )
        report = outcome.report
        print(f"{granularity} level, {args.profile}: {json.dumps(report['dataset'])}")
        print(f"ingest: {json.dumps(report['latency'].get('ingest'))} {report.get('notes', {})}")
        print("\n".join(summary_lines(report)))
        print("\n".join(fusion_shortfalls(report)) or "hybrid is nowhere below its best leg")
        if args.out:
            write_json(args.out / f"conversations-{granularity}-{args.profile}.json", report)
        path = baseline_path(granularity, args.profile)
        if args.write_baseline:
            write_json(path, baseline_of(report))
        elif path.exists():
            comparison = compare(read_json(path), report)
            print("\n".join(comparison.lines()[:20]))
            status = max(status, comparison.exit_code)
        status = max(status, 2 if outcome.invariant_failures() else 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
