"""`memcastle diary write|read`: an agent's diary in a wing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import DaemonCommand, Output


class Command(DaemonCommand):
    help = "Write an agent's diary entry, or read its newest entries."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        write = actions.add("write", "write a diary entry in <wing>/diary")
        read = actions.add("read", "the agent's newest entries, superseded ones skipped")
        for action in (write, read):
            action.add_argument("--agent-identity", required=True, metavar="ID", help="the agent")
            action.add_argument("--wing", required=True, help="the wing of the diary")
        write.add_argument("content", metavar="CONTENT", help="the entry, verbatim")
        read.add_argument("--limit", type=int, help="entries at most (20, at most 200)")

    def run(self, options: dict[str, Any]) -> None:
        scope = {"agent_identity": options["agent_identity"], "wing": options["wing"]}
        if options["action"] == "write":
            answer = self.daemon.call(
                "POST", "/api/diary", body={**scope, "content": options["content"]}
            )
            self.out.show(answer, lambda out, drawer: f"Saved diary entry {drawer['id']}")
        else:
            answer = self.daemon.call(
                "GET", "/api/diary", params={**scope, "limit": options["limit"]}
            )
            self.out.show(answer, _entries)


def _entries(out: Output, answer: dict[str, Any]) -> str:
    if not answer["entries"]:
        return out.dim("(no entries)")
    return "\n".join(
        f"{out.dim(entry['valid_from'])}  {entry['content']}" for entry in answer["entries"]
    )
