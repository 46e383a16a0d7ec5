"""`memcastle sources`: the mining sources the daemon has, and the places mined."""

from __future__ import annotations

from typing import Any

from memcastle_project.cli import DaemonCommand, Output, table


class Command(DaemonCommand):
    help = "List the mining sources (adapters) and the places mined so far (= source list)."

    def run(self, options: dict[str, Any]) -> None:
        self.out.show(self.daemon.call("GET", "/api/sources"), render_sources)


def render_sources(out: Output, answer: dict[str, Any]) -> str:
    adapters = table(
        ["SOURCE", "ORIGIN", "STATE", "OPTIONS", "DESCRIPTION"],
        [
            [
                adapter["name"],
                adapter.get("origin", ""),
                adapter.get("state", ""),
                ", ".join(option["name"] for option in adapter.get("options", [])),
                adapter.get("description", ""),
            ]
            for adapter in answer["adapters"]
        ],
    )
    mined = table(
        ["SOURCE", "PLACE", "DOCUMENTS", "LAST RUN"],
        [
            [
                mined["source"],
                mined["locator"],
                str(mined["documents"]),
                str(mined.get("last_run_at") or ""),
            ]
            for mined in answer["sources"]
        ],
        empty="(nothing mined yet)",
    )
    return f"{out.bold('sources')}\n{adapters}\n\n{out.bold('mined')}\n{mined}"
