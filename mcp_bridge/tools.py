"""Every MCP tool: its name, title, behaviour hints, arguments and the service it calls.

A tool is a thin call into the same application service as the REST route, so it takes the
same arguments with the same defaults, is gated by the same memory mode and fails with the same
`{error, code, help}`. The hints follow api.md "Tool annotations"; the table is pinned by a test.
Deliberately absent: hierarchy create/delete, supersede, tokens, sources, the database endpoint,
extract, embed and the demo job (api.md says why for each).
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kernel.context import Mode, RequestContext
from kernel.errors import InputInvalid
from mcp_bridge import schemas
from mcp_bridge.schemas import JOB_ID, Schema, boolean, integer, string
from palace.search import query as search_query

if TYPE_CHECKING:
    from graph.reads import GraphReads
    from jobs.services import JobService
    from palace.journal import JournalService
    from palace.revisions import RevisionService
    from palace.search.service import SearchService
    from sources.miner_service import MinerService
    from sources.trigger_service import TriggerService

# Where a session keeps its mode (see `server.session_state`).
MODE_KEY = "memcastle.mode"


class StatusReport(Protocol):
    def status(self, ctx: RequestContext) -> dict[str, Any]: ...


class ToolServices(Protocol):
    """What the tools call, handed over by the composition root."""

    @property
    def system(self) -> StatusReport: ...
    @property
    def search(self) -> SearchService: ...
    @property
    def revisions(self) -> RevisionService: ...
    @property
    def graph_reads(self) -> GraphReads: ...
    @property
    def journal(self) -> JournalService: ...
    @property
    def jobs(self) -> JobService: ...
    @property
    def miners(self) -> MinerService: ...
    @property
    def triggers(self) -> TriggerService: ...


@dataclass(frozen=True)
class Call:
    """One tool call: its checked arguments, who asks in which mode, the session's state
    (`None` for a request that belongs to no MCP session) and the services it calls."""

    arguments: dict[str, Any]
    ctx: RequestContext
    session: MutableMapping[str, Any] | None
    services: ToolServices


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: Schema
    run: Callable[[Call], Any]
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool

    @property
    def argument_names(self) -> tuple[str, ...]:
        return tuple(self.input_schema["properties"])


def _status(call: Call) -> Any:
    return call.services.system.status(call.ctx)


def _set_mode(call: Call) -> Any:
    raw = call.arguments.get("mode")
    if not isinstance(raw, str):
        raise InputInvalid("mode", "is required: full, read_only or disabled")
    mode = Mode.parse(raw, field="mode")
    if call.session is None:
        raise InputInvalid(
            "mode",
            "can only be set in an MCP session, and this request has none",
            help="initialize a session (the server answers with an mcp-session-id) and call "
            "memcastle_set_mode in it",
        )
    call.session[MODE_KEY] = mode
    return {"mode": mode.value}


def _search(call: Call) -> Any:
    query = search_query.from_options(call.arguments)
    return call.services.search.search(call.ctx, query)


def _recall(call: Call) -> Any:
    query = search_query.from_options(call.arguments, recall=True)
    return call.services.search.search(call.ctx, query, recall=True)


def _history(call: Call) -> Any:
    return call.services.revisions.history(call.ctx, _required(call, "drawer_id"))


def _fact_history(call: Call) -> Any:
    relationship_id = _required(call, "relationship_id")
    return call.services.graph_reads.history(
        call.ctx, relationship_id, as_of=call.arguments.get("as_of")
    )


def _wake_up(call: Call) -> Any:
    return call.services.journal.wake_up(
        call.ctx, **_keywords(call, "agent_identity", "wing", "max_items", "max_bytes")
    )


def _diary_write(call: Call) -> Any:
    return call.services.journal.write_diary(call.ctx, call.arguments)


def _diary_read(call: Call) -> Any:
    return call.services.journal.read_diary(
        call.ctx, **_keywords(call, "agent_identity", "wing", "limit")
    )


def _submit(kind: str) -> Callable[[Call], Any]:
    """Queue a job of `kind` with the arguments as its parameters; returned at once."""

    def submit(call: Call) -> Any:
        return call.services.jobs.submit(call.ctx, {"type": kind, **call.arguments})

    return submit


def _job_list(call: Call) -> Any:
    return call.services.jobs.list_jobs(call.ctx, **call.arguments)


def _job_get(call: Call) -> Any:
    return call.services.jobs.show(call.ctx, _required(call, "job_id"))


def _job_control(action: str) -> Callable[[Call], Any]:
    def control(call: Call) -> Any:
        return call.services.jobs.control(action, _required(call, "job_id"))

    return control


def _miner_list(call: Call) -> Any:
    return call.services.miners.list(call.ctx)


def _miner_get(call: Call) -> Any:
    return call.services.miners.get(call.ctx, _required(call, "name"))


def _trigger_list(call: Call) -> Any:
    return call.services.triggers.list(call.ctx)


def _trigger_get(call: Call) -> Any:
    return call.services.triggers.get(call.ctx, _required(call, "name"))


def _keywords(call: Call, *names: str) -> dict[str, Any]:
    """The arguments as a service's keyword arguments, an absent one as `None` (its default)."""
    return {name: call.arguments.get(name) for name in names}


def _required(call: Call, name: str) -> str:
    value = call.arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise InputInvalid(name, "is required and must be a non-empty string")
    return value.strip()


def _reader(name: str, title: str, description: str, schema: Schema, run: Callable) -> Tool:
    """A tool that only reads: it changes nothing, so repeating it is harmless."""
    return Tool(
        name=name,
        title=title,
        description=description,
        input_schema=schema,
        run=run,
        read_only=True,
        destructive=False,
        idempotent=True,
        open_world=False,
    )


def _job_controller(name: str, title: str, action: str, *, destructive: bool) -> Tool:
    """Job control: never gated by a memory mode; a repeat is refused and changes nothing."""
    return Tool(
        name=name,
        title=title,
        description=f"{title}. Never refused by the memory mode; a move the job's state does "
        "not allow is refused and leaves the job as it was.",
        input_schema=schemas.arguments({"job_id": JOB_ID}, required=("job_id",)),
        run=_job_control(action),
        read_only=False,
        destructive=destructive,
        idempotent=True,
        open_world=False,
    )


AGENT = string("the agent's identity, e.g. claude-code")

TOOLS: tuple[Tool, ...] = (
    _reader(
        "memcastle_status",
        "Daemon status",
        "The daemon's status: version, palace, datastore health, drawer and job counts, and "
        "the memory mode of this session.",
        schemas.arguments({}),
        _status,
    ),
    Tool(
        name="memcastle_set_mode",
        title="Set the session's memory mode",
        description="Set this session's memory mode: full (read and write), read_only or "
        "disabled. Call it once at the start of the session; it lasts as long as the session.",
        input_schema=schemas.arguments(
            {"mode": string("the mode", enum=[mode.value for mode in Mode])},
            required=("mode",),
        ),
        run=_set_mode,
        read_only=False,
        destructive=False,
        idempotent=True,
        open_world=False,
    ),
    Tool(
        name="memcastle_search",
        title="Search memory",
        description="Search drawers by words and meaning, in a wing or room, at a time or over "
        "a period. Each hit is a stored drawer, verbatim, with its score and id.",
        input_schema=schemas.arguments(schemas.search_options(recall=False)),
        run=_search,
        read_only=True,
        destructive=False,
        idempotent=True,
        # A configured embedding provider (a command or an HTTP endpoint) receives the query.
        open_world=True,
    ),
    Tool(
        name="memcastle_recall",
        title="Recall from a wing",
        description="Search like memcastle_search, across a whole wing (no room filter).",
        input_schema=schemas.arguments(schemas.search_options(recall=True)),
        run=_recall,
        read_only=True,
        destructive=False,
        idempotent=True,
        open_world=True,
    ),
    _reader(
        "memcastle_history",
        "Drawer history",
        "How a piece of knowledge evolved: every version of a drawer, oldest first, from the "
        "id of any of them.",
        schemas.arguments({"drawer_id": string("any version's id")}, required=("drawer_id",)),
        _history,
    ),
    _reader(
        "memcastle_fact_history",
        "Fact history",
        "A fact's history in the knowledge graph: every related assertion with its lifecycle, "
        "from the id of any of them.",
        schemas.arguments(
            {
                "relationship_id": string("any related assertion's id"),
                "as_of": string(f"the state at this instant: {schemas.INSTANT}"),
            },
            required=("relationship_id",),
        ),
        _fact_history,
    ),
    _reader(
        "memcastle_wake_up",
        "Wake up",
        "What an agent reads when it starts: its newest diary entry and the newest "
        "checkpointed drawers, whole, newest first, within a byte budget.",
        schemas.arguments(
            {
                "agent_identity": AGENT,
                "wing": string("the wing whose diary entry to include"),
                "max_items": integer("at most this many drawers: 10 by default, at most 200"),
                "max_bytes": integer("at most this many bytes of content: 8192 by default"),
            },
            required=("agent_identity",),
        ),
        _wake_up,
    ),
    Tool(
        name="memcastle_diary_write",
        title="Write a diary entry",
        description="Write an entry in an agent's diary, in a wing's diary room.",
        input_schema=schemas.arguments(
            {
                "agent_identity": AGENT,
                "wing": string("the wing whose diary to write in"),
                "content": string("the entry, verbatim"),
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            required=("agent_identity", "wing", "content"),
        ),
        run=_diary_write,
        read_only=False,
        destructive=False,
        # Each call adds a drawer.
        idempotent=False,
        open_world=False,
    ),
    _reader(
        "memcastle_diary_read",
        "Read a diary",
        "An agent's newest diary entries, superseded ones skipped.",
        schemas.arguments(
            {
                "agent_identity": AGENT,
                "wing": string("one wing's diary (every wing's when absent)"),
                "limit": integer("20 by default, 0 means the default, at most 200"),
            },
            required=("agent_identity",),
        ),
        _diary_read,
    ),
    Tool(
        name="memcastle_checkpoint",
        title="Checkpoint memories",
        description="File an already-classified batch of memories, one drawer per item, and "
        "apply the facts they carry. Returns the queued job at once; follow it with "
        "memcastle_job_get.",
        input_schema=schemas.arguments(
            {
                "payload": schemas.CHECKPOINT_PAYLOAD,
                "emergency": boolean("run it before anything else (critical priority)"),
            },
            required=("payload",),
        ),
        run=_submit("checkpoint"),
        read_only=False,
        # A fact can supersede or invalidate an earlier one.
        destructive=True,
        idempotent=False,
        open_world=False,
    ),
    Tool(
        name="memcastle_mine",
        title="Mine a source",
        description="Mine a directory (an absolute path) or an installed source into drawers, "
        "skipping what has not changed. Returns the queued job at once; follow it with "
        "memcastle_job_get.",
        input_schema=schemas.arguments(
            {
                "path": string("the absolute path of a directory (or give source)"),
                "source": string("a source as GET /api/sources lists it (or give path)"),
                "locator": string("the place the source reads, e.g. a directory"),
                "options": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": 'the source\'s options, e.g. {"since": "2026-09"}',
                },
                "wing": string("the wing to file into (else the source's default)"),
                "full": boolean("read everything again, not only what changed"),
            }
        ),
        run=_submit("mine"),
        read_only=False,
        destructive=False,
        # Mining skips unchanged documents.
        idempotent=True,
        # It reads the filesystem, and an installed source may be granted the network.
        open_world=True,
    ),
    Tool(
        name="memcastle_audit",
        title="Audit the palace",
        description="Report orphan drawers, dangling job references and exhausted jobs. "
        "Returns the queued job at once; its result is the report.",
        input_schema=schemas.arguments({"scope": string("one wing's name")}),
        run=_submit("audit"),
        read_only=False,
        destructive=False,
        # Each call adds a job record.
        idempotent=False,
        open_world=False,
    ),
    Tool(
        name="memcastle_repair",
        title="Repair the palace",
        description="Remove orphan drawers found by an audit; a dry run that only plans the "
        "deletions unless dry_run is false. Returns the queued job at once.",
        input_schema=schemas.arguments(
            {
                "dry_run": boolean("only plan the deletions (true by default)"),
                "based_on_job": string("the completed audit whose findings to repair"),
            }
        ),
        run=_submit("repair"),
        read_only=False,
        # dry_run=false removes orphan drawers.
        destructive=True,
        idempotent=False,
        open_world=False,
    ),
    _reader(
        "memcastle_job_list",
        "List jobs",
        "Jobs, newest first, with their progress and results.",
        schemas.arguments(
            {
                "status": schemas.JOB_STATUS,
                "kind": string("only jobs of this kind, e.g. mine"),
                "limit": integer("50 by default, 0 means the default, at most 200"),
                "offset": integer("jobs to skip"),
            }
        ),
        _job_list,
    ),
    _reader(
        "memcastle_job_get",
        "Show a job",
        "A job's status, progress, checkpoint and result.",
        schemas.arguments({"job_id": JOB_ID}, required=("job_id",)),
        _job_get,
    ),
    _job_controller("memcastle_job_pause", "Pause a job", "pause", destructive=False),
    _job_controller("memcastle_job_resume", "Resume a job", "resume", destructive=False),
    _job_controller("memcastle_job_cancel", "Cancel a job", "cancel", destructive=True),
    _job_controller(
        "memcastle_job_force_cancel",
        "Force-cancel a job",
        "force-cancel",
        destructive=True,
    ),
    _job_controller("memcastle_job_retry", "Retry a job", "retry", destructive=False),
    _reader(
        "memcastle_miner_list",
        "List miners",
        "The miners configured in the daemon's configuration file.",
        schemas.arguments({}),
        _miner_list,
    ),
    _reader(
        "memcastle_miner_get",
        "Show a miner",
        "One configured miner, by name.",
        schemas.arguments({"name": string("the miner's name")}, required=("name",)),
        _miner_get,
    ),
    _reader(
        "memcastle_trigger_list",
        "List triggers",
        "The triggers configured in the daemon's configuration file.",
        schemas.arguments({}),
        _trigger_list,
    ),
    _reader(
        "memcastle_trigger_get",
        "Show a trigger",
        "One configured trigger, by name.",
        schemas.arguments({"name": string("the trigger's name")}, required=("name",)),
        _trigger_get,
    ),
)

BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}
