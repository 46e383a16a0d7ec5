"""`memcastle wake-up`: what an agent reads when it starts, its diary and recent highlights."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import DaemonCommand, Output


class Command(DaemonCommand):
    help = "What an agent reads at start: its latest diary entry and recent checkpointed drawers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent-identity", required=True, metavar="ID", help="the agent")
        parser.add_argument("--wing", help="the wing whose diary entry to include")
        parser.add_argument("--max-items", type=int, help="highlights at most (10)")
        parser.add_argument("--max-bytes", type=int, help="content bytes at most (8192)")

    def run(self, options: dict[str, Any]) -> None:
        params = {
            "agent_identity": options["agent_identity"],
            "wing": options["wing"],
            "max_items": options["max_items"],
            "max_bytes": options["max_bytes"],
        }
        self.out.show(self.daemon.call("GET", "/api/wake-up", params=params), _render)


def _render(out: Output, answer: dict[str, Any]) -> str:
    diary = answer.get("diary")
    lines = [out.bold("diary"), f"  {diary['content']}" if diary else out.dim("  (none)")]
    lines.append(out.bold(f"recent highlights ({len(answer['recent_highlights'])})"))
    lines += [f"  - {drawer['content']}" for drawer in answer["recent_highlights"]]
    return "\n".join(lines)
