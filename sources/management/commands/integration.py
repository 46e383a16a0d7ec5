"""`memcastle integration list|install|update|remove AGENT`: MemCastle in a coding agent.

A local command (cli.md section 1): no daemon and no palace, only files and the agent's own
command. The daemon's address comes from the configuration, for the MCP registration and the
session-end hook. docs/integrations.md tells what each agent gets.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import MemCastleCommand, Output, card, configured_url, confirm, table
from sources.integrations.agents import AGENTS
from sources.integrations.installer import Integrations, State

STATE_STYLES = {
    State.INSTALLED: "green",
    State.OUTDATED: "yellow",
    State.MODIFIED: "magenta",
    State.INCOMPATIBLE: "red",
    State.UNAVAILABLE: "dim",
    State.NOT_INSTALLED: "dim",
}


class Command(MemCastleCommand):
    help = "List, install, update or remove MemCastle's integration with a coding agent."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        _assets_flag(actions.add("list", "every agent's integration and its state"))
        install = actions.add(
            "install", "register MemCastle's MCP server, instructions and session-end hook"
        )
        _agent_argument(install)
        _assets_flag(install)
        update = actions.add("update", "bring an installed integration up to this version")
        _agent_argument(update)
        _assets_flag(update)
        update.add_argument(
            "--force", action="store_true", help="overwrite what was changed by hand since"
        )
        remove = actions.add("remove", "take out exactly what the installation added (asks first)")
        _agent_argument(remove)
        remove.add_argument("-y", "--yes", action="store_true", help="do not ask")

    def handle(self, *args: Any, **options: Any) -> None:
        out = Output(json_flag=options["json"])
        config = self.config(options)
        integrations = Integrations(
            os.environ,
            url=configured_url(config),
            auth=config.auth_enabled,
            assets=options.get("assets_dir"),
        )
        action = options["action"]
        if action == "list":
            out.show([status.as_json() for status in integrations.statuses()], _listing)
            return
        agent: str = options["agent"]
        if action == "install":
            out.show(integrations.install(agent), _installed)
        elif action == "update":
            out.show(integrations.update(agent, force=options["force"]), _installed)
        else:
            confirm(
                f"Remove MemCastle's integration from {AGENTS[agent].title}?", yes=options["yes"]
            )
            out.show(integrations.remove(agent), _removed)


def _agent_argument(parser: CommandParser) -> None:
    parser.add_argument(
        "agent", metavar="AGENT", choices=list(AGENTS), help=f"one of {', '.join(AGENTS)}"
    )


def _assets_flag(parser: CommandParser) -> None:
    parser.add_argument(
        "--assets-dir",
        metavar="DIR",
        help="the assets to install from (MEMCASTLE_ASSETS_DIR; default: the installed ones)",
    )


def _listing(out: Output, statuses: list[dict[str, Any]]) -> str:
    rows = [
        [
            status["agent"],
            out.paint(status["state"], STATE_STYLES[State(status["state"])]),
            status["agent_version"] or "",
            status["installed_version"] or "",
            status["detail"] or "",
        ]
        for status in statuses
    ]
    return table(["AGENT", "STATE", "AGENT VERSION", "INSTALLED BY", "DETAIL"], rows)


def _installed(out: Output, report: dict[str, Any]) -> str:
    title = f"{report['title']}: {'installed' if report['changed'] else 'already installed'}"
    fields = [
        ("version", report["version"]),
        ("directory", report["path"]),
        ("files", "\n".join(report["files"])),
        ("edited", "\n".join(report["edited"])),
        ("registered", report["registered"]),
    ]
    notes = "\n".join(out.dim(note) for note in report["notes"])
    return f"{card(out, out.paint(title, 'green'), fields)}\n{notes}"


def _removed(out: Output, report: dict[str, Any]) -> str:
    if report["removed"]:
        return f"Removed MemCastle's integration from {report['title']}."
    return f"MemCastle's integration with {report['title']} is not installed: nothing to remove."
