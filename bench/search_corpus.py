"""The palace `bench/search.py` searches: developer memories, their queries and their vectors.

Everything here is a pure function of the size and the seed, so the daemon's palace, the
SurrealDB comparison and every run of the benchmark see the same texts, the same supersessions,
the same queries and the same vectors, without storing any of them.

- **Texts.** Memories a developer's agent would keep: decisions, conventions, incidents, notes and
  diary entries, 30 to 200 words each (median about 80), made of sentence templates filled from
  lists of real technical words (tools, components, problems, people) and of made-up code names
  of services (the Zipf-distributed vocabulary of `bench/writes.py`, so a few code names are
  everywhere and most are rare, as in a real organisation). Texts are unique.
- **Places.** 20 wings (one a project or area), 5 rooms each. Drawers for `entries` and `diary`
  go through checkpoint jobs (the only rooms a checkpoint item can name); `decisions`,
  `incidents` and `conventions` are filed one at a time with `POST .../drawers`.
- **Validity changes.** 5% of the drawers change: 4 in 5 superseded by a revised text, 1 in 5
  invalidated without a replacement.
- **Vectors.** A seeded random projection of the words: each word has a fixed random 384-d
  vector, and a text's vector is the normalised sum of its words' vectors (stop words left out).
  Texts that share words are near, a query's vector is computed from its text the same way, so
  semantic search has a meaningful neighbourhood without a model.
- **Queries.** 1 to 4 words taken from one drawer's text (so at least that drawer matches every
  word), scoped to that drawer's wing in the scoped cells.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from bench.writes import TOPIC, TOPIC_CUMULATIVE


def _split(text: str, separator: str | None = None) -> list[str]:
    """A word list written as one string (long lists read better that way)."""
    return text.split(separator)


DIMENSIONS = 384
MIN_WORDS = 30
MAX_WORDS = 200
RESERVED_WORDS = 2  # the "(ref ...)" that closes every text
CHANGE_SHARE = 0.05  # drawers whose validity changes
INVALIDATE_SHARE = 0.2  # of those, invalidated without a replacement

WINGS = (
    "billing-api",
    "mobile-app",
    "infra",
    "data-pipeline",
    "auth-service",
    "search",
    "web-frontend",
    "payments",
    "notifications",
    "analytics",
    "platform",
    "ml-models",
    "docs-site",
    "cli-tools",
    "security",
    "onboarding",
    "reporting",
    "storage",
    "gateway",
    "observability",
)
# (room, share of the drawers, kind of text, how it is filed)
ROOMS = (
    ("entries", 0.55, "note", "checkpoint"),
    ("diary", 0.25, "diary", "checkpoint"),
    ("decisions", 0.07, "decision", "post"),
    ("incidents", 0.06, "incident", "post"),
    ("conventions", 0.07, "convention", "post"),
)
ROOM_CUMULATIVE = list(itertools.accumulate(share for _, share, _, _ in ROOMS))

TECH = _split(
    "postgres redis kafka rabbitmq celery django fastapi flask react vue svelte typescript "
    "webpack vite esbuild kubernetes helm terraform ansible nginx envoy grafana prometheus loki "
    "sentry opentelemetry jaeger docker podman s3 cloudfront lambda dynamodb sqlite duckdb "
    "clickhouse elasticsearch opensearch tantivy surrealdb mongodb cassandra etcd consul vault "
    "pytest mypy ruff black eslint prettier jest playwright cypress storybook graphql grpc "
    "protobuf openapi swagger oauth jwt saml ldap keycloak stripe twilio sendgrid airflow dagster "
    "spark pandas polars numpy pytorch onnx tensorflow mlflow dbt snowflake bigquery redshift "
    "github gitlab jenkins buildkite argocd fluxcd istio linkerd cloudflare fastly pgbouncer "
    "patroni minio ceph zfs systemd cron rust golang java kotlin swift python node deno bun uv "
    "poetry pip cargo gradle maven bazel nix homebrew"
)
THINGS = _split(
    "cache layer|retry policy|connection pool|rate limiter|feature flag|database migration|"
    "background worker|job queue|search index|session store|login flow|signup form|payment "
    "webhook|invoice export|CSV import|nightly backup|deploy pipeline|release branch|canary "
    "rollout|health check|readiness probe|config loader|secrets rotation|audit log|error "
    "budget|alert rule|dashboard|load balancer|DNS record|TLS certificate|API gateway|GraphQL "
    "schema|REST endpoint|pagination cursor|bulk endpoint|websocket channel|push notification|"
    "email template|i18n strings|dark mode|image resizer|thumbnail service|upload handler|"
    "download link|access token|refresh token|permission check|tenant isolation|sharding key|"
    "read replica|write path|hot path|cold storage|retention policy|event schema|outbox table|"
    "idempotency key|dead letter queue|circuit breaker|timeout budget|build cache|test fixtures|"
    "flaky test|lint rule|pre-commit hook|type stubs|dependency upgrade|lock file|docker image|"
    "base image|helm chart|terraform module|staging cluster|preview environment|on-call rota|"
    "runbook|postmortem template|SLO report|usage metrics|billing report|cost dashboard",
    "|",
)
PROBLEMS = _split(
    "timeouts|a memory leak|a deadlock|connection resets|duplicate events|a thundering herd|"
    "stale reads|lost writes|slow queries|a full disk|certificate expiry|a DNS outage|clock "
    "skew|an N+1 query|lock contention|a retry storm|high p99 latency|OOM kills|a crash loop|"
    "a broken migration|corrupted cache entries|a race condition|missing indexes|a bad deploy|"
    "a config typo|an expired token|rate limiting by the provider|a runaway cron job|queue "
    "backlog|replication lag|a schema mismatch|an unhandled exception|a silent data loss|"
    "double charges|wrong time zones|encoding errors|a leaked secret|flaky tests",
    "|",
)
REASONS = _split(
    "it halves the p95 latency|the team already knows it|it is cheaper to run|the current "
    "setup does not scale past a few thousand requests a second|the vendor dropped support|"
    "it removes a whole class of bugs|operations asked for fewer moving parts|we need "
    "transactions across both tables|the licence changed|it works offline|the migration path "
    "is short and reversible|it keeps the hot path free of network calls|it is what the other "
    "teams use|debugging the old one cost us a week last quarter|it makes local development "
    "match production|the security review flagged the old approach|it lets us ship the feature "
    "behind a flag|memory use stays flat under load|it avoids a second source of truth",
    "|",
)
PEOPLE = _split(
    "Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert "
    "Sybil Trent Victor Walter Yara Zoe Amir Bea Chen Dmitri Elif Farah Goran Hana Ines Jonas "
    "Kenji Lena Marco Nadia Omar Priya Quentin Rosa Sanjay Tomas Uma Vikram Wen Xavier Yusuf"
)
TEAMS = _split(
    "the platform team|the data team|the mobile team|the payments team|the SRE rota|the "
    "frontend guild|the security team|the growth squad|the API team|the infra crew",
    "|",
)
ENVS = ("production", "staging", "the preview environments", "local development", "CI")
VERBS = _split(
    "move|migrate|switch|port|split|merge|replace|wrap|rewrite|extract|pin|upgrade|downgrade|"
    "deprecate|retire|shard|cache|batch|throttle|instrument",
    "|",
)
APPROACHES = _split(
    "a read-through cache|an outbox table with a relay|optimistic locking|a nightly batch|"
    "streaming updates|a materialised view|a sidecar process|a shared library|a feature flag per "
    "tenant|blue-green deploys|a queue per tenant|an append-only log|exponential backoff with "
    "jitter|a single writer|client-side retries|server-side pagination|a denormalised table|a "
    "cron job|a webhook with signatures|polling every minute",
    "|",
)

OPENERS = {
    "decision": (
        "We decided to {verb} the {thing} of {svc} to {tech} because {reason}.",
        "Decision: {svc} keeps {tech} for the {thing} for now; we revisit this after {date}.",
        "After a long discussion {person} and {person2} agreed that the {thing} belongs in {svc}, "
        "not in {svc2}.",
        "We will not use {tech} for the {thing} of {svc}: {reason}, and {reason2}.",
        "Chosen approach for the {thing}: {approach}. Also considered: {approach2}.",
        "ADR {num}: {svc} moves its {thing} to {approach}, owned by {team}.",
        "We chose {tech} over {tech2} for {svc} since {reason}.",
    ),
    "convention": (
        "Convention for {svc}: every {thing} goes through {approach}, never around it.",
        "Always run {tech} before pushing changes to the {thing}; CI rejects the branch otherwise.",
        "In {svc}, names of the {thing} are lower case with dashes, and each one has an owner in "
        "the CODEOWNERS file.",
        "House rule: no direct {tech} calls from handlers in {svc}; use the {thing} wrapper.",
        "Style: tests for the {thing} live next to the code and use {tech} fixtures.",
        "Every change to the {thing} of {svc} needs a note in the changelog and a review from "
        "{team}.",
        "Prefer {approach} to {approach2} for anything that touches the {thing}.",
    ),
    "incident": (
        "Incident {ticket}: {svc} returned errors in {env} for {minutes} minutes because of "
        "{problem} in the {thing}.",
        "Postmortem for {ticket}: {problem} in {svc} after the {tech} upgrade; {person} was on "
        "call.",
        "Outage on {date}: the {thing} of {svc} failed with {problem}, and {svc2} piled up a "
        "queue backlog behind it.",
        "Root cause of {ticket}: {problem} when the {thing} retried against {tech}.",
        "Paged at {hour}: {svc} in {env} saw {problem}; mitigated by rolling back to {ver}.",
    ),
    "note": (
        "Note on {svc}: the {thing} depends on {tech}, and {person} knows the history.",
        "The {thing} of {svc} reads its settings from {tech}; changing them needs a restart.",
        "{person} explained how the {thing} works in {svc}: it uses {approach}.",
        "Reminder: the {svc} {thing} is shared with {svc2}, so coordinate changes with {team}.",
        "Found out today that {svc} calls {svc2} for every {thing} lookup.",
        "Useful command for the {thing}: make {cmd} in the {svc} repository.",
        "Open question about {svc}: should the {thing} use {tech} or {tech2}?",
        "The {thing} in {svc} was written by {person} in {year} and has not changed much since.",
    ),
    "diary": (
        "Session {date}: worked on the {thing} of {svc} with {person}.",
        "Today I paired with {person} on {svc}; we fixed {problem} in the {thing}.",
        "Spent the afternoon reading the {thing} code in {svc} and writing down how it uses "
        "{tech}.",
        "Morning: reviewed {person}'s change to the {thing}. Afternoon: {tech} upgrade in {svc}.",
        "Picked up {ticket} about {problem} in {svc}; reproduced it in {env}.",
    ),
}
FOLLOWERS = (
    "{person} pointed out that {problem} showed up in {svc2} too.",
    "See {ticket} for the details and the graphs.",
    "This affects {svc} and {svc2} in {env}.",
    "Benchmarks showed {ms} p95 on the {thing} before the change and {ms2} after.",
    "{person} owns the follow-up, due {date}.",
    "The {thing} is configured in {file}.",
    "We keep {tech} at {ver} until the {thing} tests pass on the new version.",
    "The old {thing} stays behind a flag until {date}.",
    "Ask {person} or {team} before touching the {thing}.",
    "It took {minutes} minutes to notice, because the {thing} dashboard had no alert.",
    "Next step: {verb} the {thing} of {svc2} the same way.",
    "The fix was to add {approach} in front of the {thing}.",
    "{team} agreed, with one objection from {person} about {problem}.",
    "Costs went from {num} to {num2} dollars a month.",
    "The runbook for the {thing} now mentions {problem} and how to spot it.",
    "Logs for the {thing} go to {tech}, traces to {tech2}.",
    "We saw {pct}% of requests to {svc} hit the {thing}.",
    "The {svc} {thing} handled {num} requests a second at peak without {problem}.",
    "Tested on {env} first, then rolled out to {pct}% of tenants.",
    "Worth remembering: {reason}.",
    "{person} wants a load test of the {thing} before {date}.",
    "The change touched {file} and the {tech} config.",
    "Version {ver} of {svc} ships it.",
    "Monitoring: an alert fires when the {thing} of {svc} goes above {ms}.",
)
EXTENSIONS = ("py", "ts", "go", "toml", "yaml")
COMMANDS = ("check", "test", "lint", "bench", "migrate", "seed", "deploy-staging", "docs")
REVISION = (
    "Update: this changed.",
    "Revised after review.",
    "Correction to the earlier note.",
    "Superseded: the plan moved on.",
)

STOP_WORDS = frozenset(
    _split(
        "a an and are as at be been but by did do does for from has have he her his i if in "
        "into is it its me my no not of on or our she so than that the their them then there "
        "these they this to too us was we were what when which while who will with you your one "
        "two all also any about after again before every each more most only other same some "
        "such up down out over under just now"
    )
)
WORD_RE = re.compile(r"[a-z0-9]+")
QUERY_WORD_RE = re.compile(r"[a-z]{3,}")


def tokens(text: str) -> list[str]:
    """Lower-cased words and numbers, as the vectors see them (stop words kept)."""
    return WORD_RE.findall(text.lower())


def _stable(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


@dataclass(frozen=True)
class Drawer:
    """One drawer as the benchmark files it."""

    index: int
    wing: str
    room: str
    kind: str
    route: str  # "checkpoint" or "post"
    content: str


@dataclass(frozen=True)
class Change:
    """A validity change: drawer `index` superseded by `content`, or invalidated (None)."""

    index: int
    content: str | None


@dataclass(frozen=True)
class Query:
    text: str
    wing: str  # the wing of the drawer its words came from
    source: int  # that drawer's index


class Writer:
    """Fills templates for one drawer; a seeded `random.Random` of its own."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def service(self) -> str:
        rng = self.rng
        name = TOPIC[bisect.bisect(TOPIC_CUMULATIVE, rng.random() * TOPIC_CUMULATIVE[-1])]
        return name if rng.random() < 0.7 else f"{name}-{rng.choice(('api', 'worker', 'web'))}"

    def slots(self) -> dict[str, str]:
        rng = self.rng
        svc, svc2 = self.service(), self.service()
        tech, tech2 = rng.sample(TECH, 2)
        person, person2 = rng.sample(PEOPLE, 2)
        approach, approach2 = rng.sample(APPROACHES, 2)
        reason, reason2 = rng.sample(REASONS, 2)
        return {
            "svc": svc,
            "svc2": svc2,
            "tech": tech,
            "tech2": tech2,
            "person": person,
            "person2": person2,
            "team": rng.choice(TEAMS),
            "thing": rng.choice(THINGS),
            "problem": rng.choice(PROBLEMS),
            "reason": reason,
            "reason2": reason2,
            "approach": approach,
            "approach2": approach2,
            "env": rng.choice(ENVS),
            "verb": rng.choice(VERBS),
            "ticket": rng.choice(("#", "INC-", "OPS-", "PR ")) + str(rng.randint(100, 9999)),
            "date": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "year": str(rng.randint(2016, 2025)),
            "hour": f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
            "minutes": str(rng.randint(3, 240)),
            "ms": f"{rng.randint(2, 900)} ms",
            "ms2": f"{rng.randint(2, 900)} ms",
            "num": str(rng.randint(2, 5000)),
            "num2": str(rng.randint(2, 5000)),
            "pct": str(rng.randint(1, 99)),
            "ver": f"v{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
            "file": f"src/{svc}/{rng.choice(THINGS).split()[0].lower()}.{rng.choice(EXTENSIONS)}",
            "cmd": rng.choice(COMMANDS),
        }

    def sentence(self, template: str) -> str:
        text = template.format(**self.slots())
        return text[0].upper() + text[1:]

    def text(self, kind: str, target: int) -> str:
        """Sentences until about `target` words: an opener of the kind, then followers (and now
        and then another opener), never more than MAX_WORDS."""
        rng = self.rng
        sentences = [self.sentence(rng.choice(OPENERS[kind]))]
        words = len(sentences[0].split())
        while words < target:
            pool = OPENERS[kind] if rng.random() < 0.25 else FOLLOWERS
            sentence = self.sentence(rng.choice(pool))
            size = len(sentence.split())
            if words + size > MAX_WORDS - RESERVED_WORDS:
                if words >= MIN_WORDS:
                    break
                continue
            sentences.append(sentence)
            words += size
        return " ".join(sentences)


def target_words(rng: random.Random) -> int:
    """30 to 200 words, most of them short (median about 80): a lognormal, clipped."""
    return min(MAX_WORDS, max(MIN_WORDS, round(rng.lognormvariate(4.35, 0.45))))


class Corpus:
    """The drawers of one size and seed, their validity changes, queries and vectors."""

    def __init__(self, size: int, seed: int) -> None:
        self.size = size
        self.seed = seed

    def drawer(self, index: int) -> Drawer:
        rng = random.Random(f"search/{self.seed}/drawer/{index}")
        wing = WINGS[index % len(WINGS)]
        room, _share, kind, route = ROOMS[bisect.bisect(ROOM_CUMULATIVE, rng.random() * 0.9999)]
        content = Writer(rng).text(kind, target_words(rng))
        # Unique whatever the draw: a reference number closes every text.
        content += f" (ref {self.seed}-{index})"
        return Drawer(index, wing, room, kind, route, content)

    @cached_property
    def drawers(self) -> list[Drawer]:
        return [self.drawer(index) for index in range(self.size)]

    @cached_property
    def changes(self) -> list[Change]:
        """5% of the drawers, in a fixed order: most superseded by a revised text (same kind,
        same place, a new draw of the template), the rest invalidated."""
        rng = random.Random(f"search/{self.seed}/changes")
        chosen = rng.sample(range(self.size), round(self.size * CHANGE_SHARE))
        changes = []
        for index in chosen:
            if rng.random() < INVALIDATE_SHARE:
                changes.append(Change(index, None))
                continue
            old = self.drawers[index]
            writer = Writer(random.Random(f"search/{self.seed}/revision/{index}"))
            revised = writer.text(old.kind, target_words(writer.rng))
            changes.append(Change(index, f"{rng.choice(REVISION)} {revised} (ref {index}-r)"))
        return changes

    def queries(self, count: int, seed: int) -> list[Query]:
        """`count` queries of 1 to 4 distinct words of one drawer's text, in the text's order."""
        rng = random.Random(f"search/{self.seed}/queries/{seed}")
        found: list[Query] = []
        while len(found) < count:
            drawer = self.drawers[rng.randrange(self.size)]
            words = list(
                dict.fromkeys(
                    w for w in QUERY_WORD_RE.findall(drawer.content.lower()) if w not in STOP_WORDS
                )
            )
            n = rng.choices((1, 2, 3, 4), (25, 35, 25, 15))[0]
            if len(words) < n:
                continue
            picked = sorted(rng.sample(range(len(words)), n))
            found.append(Query(" ".join(words[i] for i in picked), drawer.wing, drawer.index))
        return found


class Projection:
    """Word vectors drawn from a seeded generator per word, and texts' vectors as their sums."""

    def __init__(self, seed: int, dimensions: int = DIMENSIONS) -> None:
        self.seed = seed
        self.dimensions = dimensions
        self._ids: dict[str, int] = {}
        self._rows: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    def _id(self, word: str) -> int:
        found = self._ids.get(word)
        if found is None:
            rng = np.random.default_rng([_stable(word), self.seed])
            found = self._ids[word] = len(self._rows)
            self._rows.append(rng.standard_normal(self.dimensions, dtype=np.float32))
            self._matrix = None
        return found

    def _weights(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = np.stack(self._rows)
        return self._matrix

    def vectors(self, texts: Sequence[str], chunk: int = 256) -> np.ndarray:
        """Unit vectors, one row a text (float32)."""
        # Every word first, so the word matrix is stacked once, not again for each chunk that
        # brings a new word (at a million drawers that restacking took most of the time).
        for text in texts:
            for word in tokens(text):
                if word not in STOP_WORDS:
                    self._id(word)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for start in range(0, len(texts), chunk):
            ids: list[int] = []
            offsets: list[int] = []
            for text in texts[start : start + chunk]:
                offsets.append(len(ids))
                ids.extend(self._id(w) for w in tokens(text) if w not in STOP_WORDS)
            weights = self._weights()
            rows = weights[np.asarray(ids, dtype=np.int64)]
            sums = np.add.reduceat(rows, np.asarray(offsets, dtype=np.int64), axis=0)
            # A text with no words at all gets reduceat's neighbour row: zero it instead.
            ends = [*offsets[1:], len(ids)]
            empty = [n for n, (a, b) in enumerate(zip(offsets, ends, strict=True)) if a == b]
            sums[empty] = 0.0
            out[start : start + len(sums)] = sums
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    def vector(self, text: str) -> np.ndarray:
        return self.vectors([text])[0]


def as_json(vector: np.ndarray) -> list[float]:
    """A vector as a JSON-friendly list, 6 decimals (the request bodies stay small)."""
    return np.round(vector.astype(np.float64), 6).tolist()


def batches(items: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
