"""The agents MemCastle integrates with, each described in a few lines: where it keeps its
configuration, which versions work, and the plan of an installation (the files written, the
entries put in the agent's own configuration files, the agent command that registers MCP).

Every agent gets the same three things where it can take them: the MCP server at the daemon's
`/mcp` (streamable HTTP), instructions on using MemCastle, and a session-end hook that submits a
mine of that agent's source. How, and the sources that say so, is in docs/integrations.md.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sources.integrations.documents import Block, Entry, Format, Item, Key
from sources.integrations.errors import AssetsMissing

SERVER = "memcastle"
HOOK = "session-end.py"
INSTRUCTIONS = "instructions.md"
# The one placeholder in the assets: the plugins that run the hook get its command line as JSON,
# which is also a JavaScript array.
HOOK_ARGV = "@@HOOK_ARGV@@"
# With authentication on, an agent that can read its bearer token from a variable is pointed at
# this one (the one the CLI reads): the token itself is never written into its configuration.
TOKEN_VARIABLE = "MEMCASTLE_AUTH_TOKEN"


@dataclass(frozen=True)
class Context:
    """Where one agent's integration goes on this machine."""

    agent: str
    home: Path
    # MemCastle's directory for this agent: $XDG_DATA_HOME/memcastle/agents/<agent>.
    data: Path
    # The agent's own configuration directory.
    config: Path
    # `integrations/<agent>/` of the assets in use.
    assets: Path
    # The daemon's base URL, and the Python that runs the hook (the one MemCastle runs on,
    # which exists for sure: a bare `python3` may be missing or a stub).
    url: str
    python: str
    env: Mapping[str, str]
    # Whether the daemon wants a token (authentication on).
    auth: bool = False

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    @property
    def hook(self) -> Path:
        return self.data / HOOK

    @property
    def hook_argv(self) -> list[str]:
        return [self.python, str(self.hook), self.agent, self.url]

    @property
    def hook_command(self) -> str:
        return shlex.join(self.hook_argv)

    def asset(self, name: str) -> str:
        """An asset's text, with the hook's command line filled in."""
        try:
            text = (self.assets / name).read_text(encoding="utf-8")
        except OSError as exc:
            raise AssetsMissing(
                f"the {self.agent} integration's asset {name} is missing: {exc}"
            ) from exc
        return text.replace(HOOK_ARGV, json.dumps(self.hook_argv))


@dataclass(frozen=True)
class FileSpec:
    """A file the integration writes; `asset` is None for the session-end hook, which is code
    of this package rather than an asset."""

    target: Path
    asset: str | None = None


@dataclass(frozen=True)
class Edit:
    """MemCastle's entries in one of the agent's configuration files."""

    path: Path
    format: Format
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class Registration:
    """MCP registered through the agent's own command. `probe` is the agent's JSON file where
    the registration shows: the server's entry at `at`, whose `url` is `value`."""

    add: tuple[str, ...]
    remove: tuple[str, ...]
    probe: Path
    at: tuple[str, ...]
    value: str


@dataclass(frozen=True)
class Plan:
    files: tuple[FileSpec, ...]
    edits: tuple[Edit, ...] = ()
    registration: Registration | None = None


Version = tuple[int, ...]


@dataclass(frozen=True)
class Agent:
    id: str
    title: str
    program: str
    # The agent's configuration directory, from the environment and the home directory.
    config_dir: Callable[[Mapping[str, str], Path], Path]
    plan: Callable[[Context], Plan]
    # Supported versions: at least `minimum`, and below `below`.
    minimum: Version | None = None
    below: Version | None = None
    # The program must be on PATH (it registers MCP), not only the configuration directory.
    needs_program: bool = False
    notes: tuple[str, ...] = ()


def _dir(variable: str, default: str) -> Callable[[Mapping[str, str], Path], Path]:
    """A directory an environment variable may move (only to an absolute path)."""

    def resolve(env: Mapping[str, str], home: Path) -> Path:
        value = env.get(variable, "")
        return Path(value) if value and Path(value).is_absolute() else home / default

    return resolve


def _opencode_dir(env: Mapping[str, str], home: Path) -> Path:
    return _dir("XDG_CONFIG_HOME", ".config")(env, home) / "opencode"


def _session_end(c: Context, timeout: int) -> Item:
    """A hooks entry in the shape Claude Code and Codex share: a group holding one command."""
    hook = {"type": "command", "command": c.hook_command, "timeout": timeout}
    return Item(("hooks", "SessionEnd"), {"hooks": [hook]}, owner=str(c.hook))


def _instructions(c: Context) -> Block:
    """The instructions, as a block at the end of the agent's global instructions file."""
    return Block(c.asset(INSTRUCTIONS).rstrip("\n"))


def _claude(c: Context) -> Plan:
    # `.claude.json` (where `claude mcp add --scope user` records servers) is in the home
    # directory, or in CLAUDE_CONFIG_DIR when that is set.
    state = c.config if c.env.get("CLAUDE_CONFIG_DIR") else c.home
    # User scope: every project sees the server.
    scope = ("--scope", "user")
    return Plan(
        files=(FileSpec(c.hook),),
        edits=(
            Edit(c.config / "settings.json", Format.JSON, (_session_end(c, timeout=10),)),
            Edit(c.config / "CLAUDE.md", Format.MARKDOWN, (_instructions(c),)),
        ),
        registration=Registration(
            add=("claude", "mcp", "add", "--transport", "http", *scope, SERVER, c.mcp_url),
            remove=("claude", "mcp", "remove", *scope, SERVER),
            probe=state / ".claude.json",
            at=("mcpServers", SERVER),
            value=c.mcp_url,
        ),
    )


def _codex(c: Context) -> Plan:
    # Codex reads the first non-empty one of AGENTS.override.md and AGENTS.md in its home.
    override = c.config / "AGENTS.override.md"
    instructions = (
        override if override.exists() and override.stat().st_size else c.config / "AGENTS.md"
    )
    server = {"url": c.mcp_url, **({"bearer_token_env_var": TOKEN_VARIABLE} if c.auth else {})}
    # Codex caps a SessionEnd hook at 3 seconds.
    config = (Key(("mcp_servers", SERVER), server), _session_end(c, timeout=3))
    return Plan(
        files=(FileSpec(c.hook),),
        edits=(
            Edit(c.config / "config.toml", Format.TOML, config),
            Edit(instructions, Format.MARKDOWN, (_instructions(c),)),
        ),
    )


def _opencode(c: Context) -> Plan:
    # Instructions go through `instructions` rather than a global AGENTS.md: creating that file
    # would stop opencode from falling back to ~/.claude/CLAUDE.md.
    instructions = str(c.data / INSTRUCTIONS)
    names = ("opencode.json", "opencode.jsonc")
    config = next((c.config / n for n in names if (c.config / n).exists()), c.config / names[0])
    server: dict[str, object] = {"type": "remote", "url": c.mcp_url, "enabled": True}
    if c.auth:
        # opencode puts the variable's value in place of `{env:...}`.
        server["headers"] = {"Authorization": f"Bearer {{env:{TOKEN_VARIABLE}}}"}
    return Plan(
        files=(
            FileSpec(c.hook),
            FileSpec(c.data / INSTRUCTIONS, INSTRUCTIONS),
            FileSpec(c.config / "plugins" / "memcastle.js", "memcastle.js"),
        ),
        edits=(
            Edit(
                config,
                Format.JSON,
                (Key(("mcp", SERVER), server), Item(("instructions",), instructions, instructions)),
            ),
        ),
    )


def _pi(c: Context) -> Plan:
    return Plan(
        files=(
            FileSpec(c.hook),
            FileSpec(c.config / "skills" / "memcastle" / "SKILL.md", "SKILL.md"),
            FileSpec(c.config / "extensions" / "memcastle.ts", "memcastle.ts"),
        ),
    )


AGENTS: dict[str, Agent] = {
    agent.id: agent
    for agent in (
        Agent(
            id="claude",
            title="Claude Code",
            program="claude",
            config_dir=_dir("CLAUDE_CONFIG_DIR", ".claude"),
            plan=_claude,
            minimum=(2, 0, 0),
            needs_program=True,
        ),
        Agent(
            id="codex",
            title="Codex CLI",
            program="codex",
            config_dir=_dir("CODEX_HOME", ".codex"),
            plan=_codex,
            # The first release that runs SessionEnd hooks.
            minimum=(0, 146, 0),
            notes=(
                "Codex runs a hook only once it is trusted: open /hooks in Codex and trust "
                "MemCastle's SessionEnd hook.",
            ),
        ),
        Agent(
            id="opencode",
            title="opencode",
            program="opencode",
            config_dir=_opencode_dir,
            plan=_opencode,
            # The opencode source needs 1.2; 2.x moved MCP servers under `mcp.servers`.
            minimum=(1, 2, 0),
            below=(2, 0, 0),
            notes=(
                "opencode has no session-end event: the plugin submits the mine whenever a "
                "session goes idle, and mining skips what has not changed.",
            ),
        ),
        Agent(
            id="pi",
            title="pi",
            program="pi",
            config_dir=_dir("PI_CODING_AGENT_DIR", ".pi/agent"),
            plan=_pi,
            notes=(
                "pi has no MCP by design: the memcastle skill has pi use the memcastle command "
                "line instead of MCP tools.",
            ),
        ),
    )
}
