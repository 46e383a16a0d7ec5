"""The MCP server: lists the tools, runs a call through its service, renders the answer.

Every answer is the service's JSON, pretty-printed, as text; every failure is an error result
whose text is the `{error, code, help}` body REST would send. The memory mode of a call is its
session's (`memcastle_set_mode`), and every write is recorded as requested by `mcp`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import METHOD_NOT_FOUND
from rest_framework.utils.encoders import JSONEncoder

from kernel import __version__
from kernel.context import Mode, RequestContext
from kernel.errors import InputInvalid, MemCastleError, ServerFailed
from kernel.shapes import Error
from kernel.validation import refuse_unwritable
from mcp_bridge.tools import BY_NAME, MODE_KEY, TOOLS, Call, Tool, ToolServices

logger = logging.getLogger(__name__)

PREAMBLE = (
    "MemCastle is the memory of the agents on this machine: verbatim memories (drawers) in "
    "wings (projects, people, sources) and rooms (topics). A drawer is never rewritten, only "
    "superseded, and each has a validity period, so you can ask what was true at a time and "
    "how it changed. Call memcastle_set_mode once at the start of a session if this session "
    "must not write (read_only) or must not touch memory at all (disabled); the mode lasts as "
    "long as the session. Every search hit carries its drawer id, for memcastle_history. Jobs "
    "(checkpoint, mine, audit, repair) are returned at once: follow them with "
    "memcastle_job_get. Every answer is JSON; a failure is an error result whose text is "
    '{"error", "code", "help"}.'
)


def instructions(tools: Iterable[Tool]) -> str:
    """What a client is told at initialize, generated from the tools so it cannot drift."""
    lines = [PREAMBLE, "", "Tools:"]
    lines += [f"- {tool.name}: {tool.title}. {tool.description}" for tool in tools]
    return "\n".join(lines)


def listing(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,
            idempotent_hint=tool.idempotent,
            open_world_hint=tool.open_world,
        ),
    )


def session_state(ctx: ServerRequestContext[Any]) -> MutableMapping[str, Any] | None:
    """The MCP session's own state, which lives exactly as long as the session; `None` for a
    request outside any session.

    The SDK keeps it on the session's `Connection` (`Connection.state`) but hands handlers no
    public path to the connection yet, hence `_connection`. tests/test_mcp_modes.py pins the
    lifetime this relies on.
    """
    connection = ctx.session._connection
    return connection.state if connection.session_id is not None else None


def checked_arguments(tool: Tool, raw: dict[str, Any] | None) -> dict[str, Any]:
    """The arguments, refused when one is not the tool's; their values are the service's to
    check."""
    arguments = dict(raw or {})
    for name in sorted(arguments):
        if name not in tool.argument_names:
            known = ", ".join(tool.argument_names) or "none"
            raise InputInvalid(name, f"is not an argument of {tool.name} (known: {known})")
        refuse_unwritable(arguments[name], name)
    return arguments


def rendered(answer: Any, *, is_error: bool = False) -> types.CallToolResult:
    # DRF's encoder, so dates, ids and numbers read exactly as REST renders them.
    text = json.dumps(answer, cls=JSONEncoder, indent=2, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error=is_error
    )


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[listing(tool) for tool in TOOLS])


def tool_caller(
    services: ToolServices,
) -> Callable[
    [ServerRequestContext[Any], types.CallToolRequestParams], Awaitable[types.CallToolResult]
]:
    """The `tools/call` handler: each call runs its tool on `services`."""

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            tool = BY_NAME.get(params.name)
            if tool is None:
                raise InputInvalid("name", f"is not a MemCastle tool (known: {', '.join(BY_NAME)})")
            state = session_state(ctx)
            call = Call(
                arguments=checked_arguments(tool, params.arguments),
                ctx=RequestContext(
                    mode=state.get(MODE_KEY, Mode.FULL) if state is not None else Mode.FULL,
                    requested_by="mcp",
                ),
                session=state,
                services=services,
            )
            # Services are synchronous; they run on the thread the REST views use.
            answer = await sync_to_async(tool.run, thread_sensitive=True)(call)
        except MemCastleError as error:
            return rendered(Error.render(error.body()), is_error=True)
        except Exception:
            logger.exception("unexpected failure in MCP tool %s", params.name)
            return rendered(Error.render(ServerFailed().body()), is_error=True)
        return rendered(answer)

    return call_tool


async def no_discovery(
    ctx: ServerRequestContext[Any], params: types.RequestParams
) -> types.DiscoverResult:
    """Refuse `server/discover`, so a client falls back to the `initialize` handshake.

    Memory modes are kept per session (`mcp-session-id`), and only the handshake protocol has
    sessions: a client that discovered the sessionless 2026-07-28 revision could never set
    one. The SDK's own client, left on `mode="auto"`, answers this refusal with `initialize`.
    """
    raise MCPError(
        METHOD_NOT_FOUND,
        "server/discover is not offered: MemCastle keeps memory modes per session, so "
        "connect with the initialize handshake",
    )


def build_server(services: ToolServices) -> Server[Any]:
    server: Server[Any] = Server(
        "memcastle",
        version=__version__,
        title="MemCastle",
        instructions=instructions(TOOLS),
        on_list_tools=list_tools,
        on_call_tool=tool_caller(services),
    )
    server.add_request_handler("server/discover", types.RequestParams, no_discovery)
    return server
