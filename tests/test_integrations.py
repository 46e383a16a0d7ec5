"""`memcastle integration`: each agent's integration installed, listed, changed by hand, updated
and removed through the real CLI, against a temporary HOME and XDG directories with stand-in
agent commands (scripts that record their arguments); and the session-end hook against a small
HTTP server, including the plugins that run it (through node, when it is there)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sources.integrations import session_end
from tests.support.cli import MEMCASTLE
from tests.support.daemon import REPO
from tests.support.endpoint import Endpoint
from tests.support.waits import wait_for

URL = "http://127.0.0.1:8420"
NODE = shutil.which("node")

# A stand-in for an agent's command: it records its arguments, answers --version, and for
# `claude mcp add|remove` edits ~/.claude.json as Claude Code does. STAND_IN_FAIL makes those fail.
STAND_IN = """#!{python}
import json, os, sys
from pathlib import Path

args = sys.argv[1:]
with open(os.environ["STAND_IN_LOG"], "a") as log:
    log.write(json.dumps([{name!r}, *args]) + "\\n")
if args == ["--version"]:
    print({version!r})
    sys.exit(0)
if os.environ.get("STAND_IN_FAIL"):
    sys.stderr.write("refused\\n")
    sys.exit(1)
state = Path(os.environ["HOME"]) / ".claude.json"
data = json.loads(state.read_text()) if state.exists() else {{}}
servers = data.setdefault("mcpServers", {{}})
if args[:2] == ["mcp", "add"]:
    if args[-2] in servers:
        sys.exit(1)
    servers[args[-2]] = {{"type": "http", "url": args[-1]}}
elif args[:2] == ["mcp", "remove"]:
    if servers.pop(args[-1], None) is None:
        sys.exit(1)
state.write_text(json.dumps(data, indent=2))
"""


@dataclass
class Machine:
    """A temporary HOME with XDG directories, a PATH of stand-in agents, and the CLI."""

    root: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("home", "data", "config", "bin"):
            (self.root / name).mkdir()

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def agents(self) -> Path:
        return self.root / "data" / "memcastle" / "agents"

    @property
    def log(self) -> Path:
        return self.root / "calls.log"

    @property
    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.root / "data"),
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "PATH": str(self.root / "bin"),
            "STAND_IN_LOG": str(self.log),
            **self.extra_env,
        }

    def stand_in(self, name: str, version: str) -> None:
        script = self.root / "bin" / name
        script.write_text(STAND_IN.format(python=sys.executable, name=name, version=version))
        script.chmod(0o755)

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(MEMCASTLE), "integration", *args],
            env=self.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def ok(self, *args: str) -> Any:
        done = self.cli(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def refused(self, code: str, *args: str) -> str:
        done = self.cli(*args)
        assert done.returncode == 1, (done.stdout, done.stderr)
        assert f"code: {code}" in done.stderr, done.stderr
        return done.stderr

    def state(self, agent: str) -> str:
        listing = {status["agent"]: status for status in self.ok("list")}
        return str(listing[agent]["state"])

    def files(self) -> dict[str, bytes]:
        """Every file of the user's (home and config), but the agent's own state file."""
        found = {}
        for top in ("home", "config"):
            for path in sorted((self.root / top).rglob("*")):
                if path.is_file() and path.name != ".claude.json":
                    found[str(path.relative_to(self.root))] = path.read_bytes()
        return found

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


# The agents ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    agent: str
    version: str
    # The user's configuration before anything is installed.
    setup: dict[str, str]
    # The user's files the installation changes, and the ones it adds.
    changed: frozenset[str]
    added: frozenset[str]
    # MemCastle's own files, in $XDG_DATA_HOME/memcastle/agents/<agent>/.
    data: frozenset[str]
    check: Callable[[Machine], None]
    # A hand edit of something the installation wrote.
    hand_edit: Callable[[Machine], None]


def hook_command(machine: Machine, agent: str) -> str:
    return f"{sys.executable} {machine.agents / agent / 'session-end.py'} {agent} {URL}"


def check_claude(machine: Machine) -> None:
    settings = json.loads((machine.home / ".claude/settings.json").read_text())
    assert settings["theme"] == "dark"
    assert settings["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "say done"}]}]
    [ours] = settings["hooks"]["SessionEnd"]
    assert ours == {
        "hooks": [{"type": "command", "command": hook_command(machine, "claude"), "timeout": 10}]
    }
    memory = (machine.home / ".claude/CLAUDE.md").read_text()
    assert memory.startswith("# Mine\n- be terse\n\n<!-- BEGIN memcastle integration")
    assert "memcastle_checkpoint" in memory and '"claude-code"' in memory
    state = json.loads((machine.home / ".claude.json").read_text())
    assert state["mcpServers"]["memcastle"] == {"type": "http", "url": f"{URL}/mcp"}
    add = ["claude", "mcp", "add", "--transport", "http", "--scope", "user", "memcastle"]
    assert [*add, f"{URL}/mcp"] in machine.calls()


def edit_claude(machine: Machine) -> None:
    path = machine.home / ".claude/settings.json"
    path.write_text(path.read_text().replace('"timeout": 10', '"timeout": 99'))


def check_codex(machine: Machine) -> None:
    text = (machine.home / ".codex/config.toml").read_text()
    assert text.startswith('# my settings\nmodel = "gpt-5"  # the default\n')
    config = tomllib.loads(text)
    assert config["mcp_servers"] == {
        "other": {"command": "other-server"},
        "memcastle": {"url": f"{URL}/mcp"},
    }
    hook = {"type": "command", "command": hook_command(machine, "codex"), "timeout": 3}
    assert config["hooks"]["SessionEnd"] == [
        {"hooks": [{"type": "command", "command": "notify-send bye"}]},
        {"hooks": [hook]},
    ]
    agents = (machine.home / ".codex/AGENTS.md").read_text()
    assert agents.startswith("Answer in English.\n\n<!-- BEGIN memcastle integration")
    assert '"codex"' in agents


def edit_codex(machine: Machine) -> None:
    path = machine.home / ".codex/config.toml"
    path.write_text(path.read_text().replace(f'url = "{URL}/mcp"', 'url = "http://elsewhere/mcp"'))


def check_opencode(machine: Machine) -> None:
    config = json.loads((machine.root / "config/opencode/opencode.json").read_text())
    instructions = str(machine.agents / "opencode/instructions.md")
    assert config["model"] == "anthropic/claude-sonnet-4"
    assert config["instructions"] == ["CONTRIBUTING.md", instructions]
    assert config["mcp"] == {
        "other": {"type": "local", "command": ["x"]},
        "memcastle": {"type": "remote", "url": f"{URL}/mcp", "enabled": True},
    }
    plugin = (machine.root / "config/opencode/plugins/memcastle.js").read_text()
    assert "@@" not in plugin
    assert (
        json.dumps([sys.executable, str(machine.agents / "opencode/session-end.py")])[:-1] in plugin
    )


def edit_opencode(machine: Machine) -> None:
    path = machine.root / "config/opencode/opencode.json"
    path.write_text(path.read_text().replace('"enabled": true', '"enabled": false'))


def check_pi(machine: Machine) -> None:
    skill = (machine.home / ".pi/agent/skills/memcastle/SKILL.md").read_text()
    assert skill.startswith("---\nname: memcastle\n")
    extension = (machine.home / ".pi/agent/extensions/memcastle.ts").read_text()
    assert "session_shutdown" in extension and "@@" not in extension


def edit_pi(machine: Machine) -> None:
    path = machine.home / ".pi/agent/skills/memcastle/SKILL.md"
    path.write_text(path.read_text() + "\nAlso remember birthdays.\n")


CASES = [
    Case(
        agent="claude",
        version="2.1.3 (Claude Code)",
        setup={
            "home/.claude/settings.json": '{"theme": "dark", "hooks": {"Stop": [{"hooks": '
            '[{"type": "command", "command": "say done"}]}]}}',
            "home/.claude/CLAUDE.md": "# Mine\n- be terse\n",
        },
        changed=frozenset({"home/.claude/settings.json", "home/.claude/CLAUDE.md"}),
        added=frozenset(),
        data=frozenset(
            {
                "session-end.py",
                "manifest.json",
                "originals/0-settings.json",
                "originals/1-CLAUDE.md",
            }
        ),
        check=check_claude,
        hand_edit=edit_claude,
    ),
    Case(
        agent="codex",
        version="codex-cli 0.147.2",
        setup={
            "home/.codex/config.toml": '# my settings\nmodel = "gpt-5"  # the default\n\n'
            '[mcp_servers.other]\ncommand = "other-server"\n\n'
            '[[hooks.SessionEnd]]\n[[hooks.SessionEnd.hooks]]\ntype = "command"\n'
            'command = "notify-send bye"\n',
            "home/.codex/AGENTS.md": "Answer in English.\n",
        },
        changed=frozenset({"home/.codex/config.toml", "home/.codex/AGENTS.md"}),
        added=frozenset(),
        data=frozenset(
            {"session-end.py", "manifest.json", "originals/0-config.toml", "originals/1-AGENTS.md"}
        ),
        check=check_codex,
        hand_edit=edit_codex,
    ),
    Case(
        agent="opencode",
        version="1.15.6",
        setup={
            "config/opencode/opencode.json": '{\n  "$schema": "https://opencode.ai/config.json",\n'
            '  "model": "anthropic/claude-sonnet-4",\n  "instructions": ["CONTRIBUTING.md"],\n'
            '  "mcp": {"other": {"type": "local", "command": ["x"]}}\n}\n',
        },
        changed=frozenset({"config/opencode/opencode.json"}),
        added=frozenset({"config/opencode/plugins/memcastle.js"}),
        data=frozenset(
            {"session-end.py", "instructions.md", "manifest.json", "originals/0-opencode.json"}
        ),
        check=check_opencode,
        hand_edit=edit_opencode,
    ),
    Case(
        agent="pi",
        version="0.66.1",
        setup={"home/.pi/agent/settings.json": '{"defaultProvider": "anthropic"}\n'},
        changed=frozenset(),
        added=frozenset(
            {"home/.pi/agent/skills/memcastle/SKILL.md", "home/.pi/agent/extensions/memcastle.ts"}
        ),
        data=frozenset({"session-end.py", "manifest.json"}),
        check=check_pi,
        hand_edit=edit_pi,
    ),
]


def prepared(machine: Machine, case: Case) -> dict[str, bytes]:
    """The machine with the agent and the user's configuration; the user's files then."""
    machine.stand_in(case.agent, case.version)
    for relative, text in case.setup.items():
        machine.write(relative, text)
    return machine.files()


def data_files(machine: Machine, agent: str) -> set[str]:
    root = machine.agents / agent
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("case", CASES, ids=[case.agent for case in CASES])
def test_install_list_edit_update_and_remove(machine: Machine, case: Case) -> None:
    before = prepared(machine, case)
    assert machine.state(case.agent) == "not installed"

    report = machine.ok("install", case.agent)
    assert report["state"] == "installed" and report["changed"] is True

    after = machine.files()
    assert {path for path in after if after[path] != before.get(path)} == case.changed | case.added
    assert set(before) <= set(after)
    assert data_files(machine, case.agent) == case.data
    case.check(machine)
    assert machine.state(case.agent) == "installed"
    assert machine.ok("install", case.agent)["changed"] is False

    case.hand_edit(machine)
    assert machine.state(case.agent) == "modified"
    machine.refused("memcastle::integration::conflict", "update", case.agent)
    assert machine.ok("update", case.agent, "--force")["changed"] is True
    case.check(machine)

    manifest = machine.agents / case.agent / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"version": "0.1.0"', '"version": "0.0.1"'))
    assert machine.state(case.agent) == "outdated"
    machine.ok("update", case.agent)
    assert machine.state(case.agent) == "installed"

    assert machine.ok("remove", case.agent, "--yes") == {
        "agent": case.agent,
        "title": report["title"],
        "removed": True,
    }
    assert machine.files() == before
    assert not (machine.root / "data").exists() or not any((machine.root / "data").iterdir())
    assert machine.state(case.agent) == "not installed"
    if case.agent == "claude":
        state = json.loads((machine.home / ".claude.json").read_text())
        assert "memcastle" not in state["mcpServers"]
        assert ["claude", "mcp", "remove", "--scope", "user", "memcastle"] in machine.calls()


@pytest.mark.parametrize("case", CASES, ids=[case.agent for case in CASES])
def test_a_missing_agent_is_refused_and_nothing_is_written(machine: Machine, case: Case) -> None:
    before = prepared(machine, case)
    (machine.root / "bin" / case.agent).unlink()
    if case.agent != "claude":
        # Without its command, an agent is found by its configuration directory.
        for top in {Path(*Path(relative).parts[:2]) for relative in case.setup}:
            shutil.rmtree(machine.root / top)
        before = machine.files()

    assert machine.state(case.agent) == "unavailable"
    machine.refused("memcastle::integration::agent_not_found", "install", case.agent)
    assert machine.files() == before
    assert not machine.agents.exists()


def test_an_agent_found_by_its_directory_alone_is_installed(machine: Machine) -> None:
    machine.write("home/.pi/agent/settings.json", "{}\n")
    assert machine.state("pi") == "not installed"
    machine.ok("install", "pi")
    check_pi(machine)


def test_a_version_too_old_is_incompatible_and_nothing_is_written(machine: Machine) -> None:
    machine.stand_in("codex", "codex-cli 0.120.0")
    before = machine.files()
    listing = {status["agent"]: status for status in machine.ok("list")}
    assert listing["codex"]["state"] == "incompatible"
    assert listing["codex"]["agent_version"] == "0.120.0"
    machine.refused("memcastle::integration::incompatible", "install", "codex")
    assert machine.files() == before and not machine.agents.exists()


def test_an_entry_memcastle_did_not_put_there_is_a_conflict(machine: Machine) -> None:
    machine.stand_in("codex", "codex-cli 0.150.0")
    machine.write("home/.codex/config.toml", '[mcp_servers.memcastle]\nurl = "http://x/mcp"\n')
    before = machine.files()
    said = machine.refused("memcastle::integration::conflict", "install", "codex")
    assert "mcp_servers.memcastle" in said
    assert machine.files() == before and not machine.agents.exists()


def test_a_failing_agent_command_is_put_back(machine: Machine) -> None:
    before = prepared(machine, CASES[0])
    machine.extra_env["STAND_IN_FAIL"] = "1"
    said = machine.refused("memcastle::integration::validation_failed", "install", "claude")
    assert "refused" in said
    assert machine.files() == before
    assert not machine.agents.exists()


def test_remove_keeps_what_the_user_changed_since(machine: Machine) -> None:
    case = CASES[1]
    prepared(machine, case)
    machine.ok("install", "codex")
    config = machine.home / ".codex/config.toml"
    config.write_text(config.read_text() + '\n[projects."/work"]\ntrust_level = "trusted"\n')

    machine.ok("remove", "codex", "--yes")
    text = config.read_text()
    assert "memcastle" not in text
    assert tomllib.loads(text) == {
        "model": "gpt-5",
        "mcp_servers": {"other": {"command": "other-server"}},
        "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "notify-send bye"}]}]},
        "projects": {"/work": {"trust_level": "trusted"}},
    }
    assert text.startswith(case.setup["home/.codex/config.toml"])


def test_another_daemon_address_makes_an_installation_outdated(machine: Machine) -> None:
    prepared(machine, CASES[2])
    machine.ok("install", "opencode")
    machine.extra_env["MEMCASTLE_PORT"] = "9123"
    assert machine.state("opencode") == "outdated"
    machine.ok("update", "opencode")
    config = json.loads((machine.root / "config/opencode/opencode.json").read_text())
    assert config["mcp"]["memcastle"]["url"] == "http://127.0.0.1:9123/mcp"


def test_with_authentication_on_the_agents_read_the_token_from_a_variable(
    machine: Machine,
) -> None:
    """The token's variable is named in the agents' configuration, never its value."""
    secret = "a-configured-secret-0123456789"
    machine.extra_env.update({"MEMCASTLE_AUTH_ENABLED": "true", "MEMCASTLE_AUTH_TOKEN": secret})
    prepared(machine, CASES[1])
    prepared(machine, CASES[2])
    machine.ok("install", "codex")
    machine.ok("install", "opencode")

    codex = tomllib.loads((machine.home / ".codex/config.toml").read_text())
    assert codex["mcp_servers"]["memcastle"]["bearer_token_env_var"] == "MEMCASTLE_AUTH_TOKEN"
    opencode = json.loads((machine.root / "config/opencode/opencode.json").read_text())
    assert opencode["mcp"]["memcastle"]["headers"] == {
        "Authorization": "Bearer {env:MEMCASTLE_AUTH_TOKEN}"
    }
    written = [
        *machine.files().values(),
        *(p.read_bytes() for p in machine.agents.rglob("*") if p.is_file()),
    ]
    assert not any(secret.encode() in data for data in written)


def test_an_unknown_agent_names_the_known_ones(machine: Machine) -> None:
    said = machine.refused("memcastle::cli::usage_invalid", "install", "cursor")
    assert "claude" in said and "pi" in said


def test_an_explicit_assets_dir_must_exist_and_be_complete(machine: Machine) -> None:
    prepared(machine, CASES[3])
    machine.refused(
        "memcastle::assets::not_found", "install", "pi", "--assets-dir", str(machine.root / "no")
    )
    (machine.root / "assets/integrations/pi").mkdir(parents=True)
    machine.refused(
        "memcastle::integration::assets_missing",
        "install",
        "pi",
        "--assets-dir",
        str(machine.root / "assets"),
    )
    assert not machine.agents.exists()


# The session-end hook ------------------------------------------------------------------------


@pytest.fixture
def daemon() -> Any:
    endpoint = Endpoint()
    yield endpoint
    endpoint.close()


def base_url(endpoint: Endpoint) -> str:
    return endpoint.url.removesuffix("/v1")


def run_hook(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, session_end.__file__, *args],
        env={"PATH": os.environ["PATH"], **(env or {})},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_the_hook_submits_a_mine_of_the_agents_source(daemon: Endpoint) -> None:
    daemon.replies.append((201, {"id": "j", "status": "queued"}))
    done = run_hook("claude", base_url(daemon))
    assert done.returncode == 0, done.stderr
    [request] = daemon.requests
    assert request["path"] == "/api/jobs"
    assert request["body"] == {"type": "mine", "source": "claude", "requested_by": "integration"}
    assert request["authorization"] is None


def test_the_hook_takes_the_address_and_token_from_the_environment(daemon: Endpoint) -> None:
    daemon.replies.append((201, {"id": "j", "status": "queued"}))
    env = {"MEMCASTLE_URL": base_url(daemon), "MEMCASTLE_TOKEN": "a-token-of-sixteen"}
    assert run_hook("codex", "http://127.0.0.1:1", env=env).returncode == 0
    [request] = daemon.requests
    assert request["authorization"] == "Bearer a-token-of-sixteen"
    assert request["body"]["source"] == "codex"


@pytest.mark.parametrize("mode", ["off", "read-only", "read_only", "disabled", "nonsense"])
def test_the_hook_sends_nothing_unless_memory_may_be_written(daemon: Endpoint, mode: str) -> None:
    done = run_hook("pi", base_url(daemon), env={"MEMCASTLE_MODE": mode})
    assert done.returncode == 0 and done.stderr == ""
    assert daemon.requests == []


def test_the_hook_exits_0_when_the_daemon_is_down_or_refuses(daemon: Endpoint) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{unused.getsockname()[1]}"
    down = run_hook("opencode", closed)
    assert down.returncode == 0
    assert "memcastle: the mine of opencode was not submitted" in down.stderr

    daemon.replies.append((409, {"error": "not enabled", "code": "memcastle::source::not_enabled"}))
    refused = run_hook("opencode", base_url(daemon))
    assert refused.returncode == 0 and "409" in refused.stderr


def test_the_hook_gives_up_quickly_on_a_daemon_that_does_not_answer() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        started = time.monotonic()
        done = run_hook("claude", f"http://127.0.0.1:{silent.getsockname()[1]}")
    assert done.returncode == 0
    assert time.monotonic() - started < session_end.TIMEOUT_SECS + 2


# The plugins that run the hook, run by node as opencode and pi would ---------------------------

PLUGIN_RUNS = {
    "opencode": (
        "config/opencode/plugins/memcastle.js",
        "const hooks = await plugin.MemCastle({});"
        "await hooks.event({event: {type: 'session.updated'}});"
        "await hooks.event({event: {type: 'session.idle'}});",
    ),
    "pi": (
        "home/.pi/agent/extensions/memcastle.ts",
        "const handlers = {}; plugin.default({on: (name, f) => { handlers[name] = f; }});"
        "await handlers.session_shutdown({}, {});",
    ),
}


@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.parametrize("agent", sorted(PLUGIN_RUNS))
def test_the_plugin_runs_the_hook(machine: Machine, daemon: Endpoint, agent: str) -> None:
    prepared(machine, next(case for case in CASES if case.agent == agent))
    machine.ok("install", agent)
    installed, script = PLUGIN_RUNS[agent]
    module = machine.root / "plugin.mjs"
    shutil.copy(machine.root / installed, module)
    daemon.replies.append((201, {"id": "j", "status": "queued"}))

    run = f"const plugin = await import({json.dumps(str(module))}); {script}"
    env = {"PATH": os.environ["PATH"], "MEMCASTLE_URL": base_url(daemon)}
    done = subprocess.run(
        [str(NODE), "--input-type=module", "-e", run], env=env, capture_output=True, timeout=30
    )
    assert done.returncode == 0, done.stderr

    wait_for(lambda: daemon.requests, timeout=15, what="the hook's request")
    assert [request["body"]["source"] for request in daemon.requests] == [agent]
