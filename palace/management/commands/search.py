"""`memcastle search QUERY`: find drawers by their words or meaning, in scope and in time."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import DaemonCommand, Output
from palace.search.query import RANKINGS, SOURCE_KINDS

PREVIEW_CHARS = 200


def add_search_arguments(parser: CommandParser, *, room: bool) -> None:
    """The options search and recall share (recall has no --room)."""
    parser.add_argument("query", metavar="QUERY", help="the words to search for")
    parser.add_argument("--limit", type=int, help="hits to return (10 by default, at most 200)")
    parser.add_argument("--wing", help="only this wing")
    if room:
        parser.add_argument("--room", help="only this room (of --wing)")
    parser.add_argument(
        "--ranking",
        choices=RANKINGS,
        help="auto (the default: hybrid when the query can be embedded, else lexical), lexical, "
        "semantic or hybrid",
    )
    parser.add_argument(
        "--tag",
        action="append",
        dest="tags",
        metavar="TAG",
        help="a tag every hit carries (repeat for more)",
    )
    parser.add_argument("--source-kind", choices=SOURCE_KINDS, help="only drawers of this kind")
    parser.add_argument("--as-of", metavar="WHEN", help="what was valid then (RFC 3339 or date)")
    parser.add_argument(
        "--from",
        dest="from_",
        metavar="WHEN",
        help="with --until: what was valid at some point from this instant",
    )
    parser.add_argument("--until", metavar="WHEN", help="the end of the --from window (exclusive)")
    parser.add_argument("--include-historical", action="store_true", help="superseded drawers too")
    parser.add_argument(
        "--expand", action="store_true", help="append drawers related through the graph"
    )


def search_params(options: dict[str, Any]) -> dict[str, Any]:
    return {
        "q": options["query"],
        "limit": options["limit"],
        "wing": options["wing"],
        "room": options.get("room"),
        "ranking": options["ranking"],
        "tags": options["tags"],
        "source_kind": options["source_kind"],
        "as_of": options["as_of"],
        "from": options["from_"],
        "until": options["until"],
        "include_historical": options["include_historical"] or None,
        "expand": options["expand"] or None,
    }


def render_hits(out: Output, answer: dict[str, Any]) -> str:
    lines = [out.dim(f"{answer['ranking']} ranking, {len(answer['results'])} hits")]
    for rank, hit in enumerate(answer["results"], 1):
        title = hit.get("name") or hit["id"]
        via = f" via {', '.join(hit['via'])}" if hit.get("via") else ""
        ended = f" until {hit['valid_to']}" if hit.get("valid_to") else ""
        lines.append(
            f"{rank:>2}. {out.bold(title)}  {out.paint(f'{hit["score"]:.4f}', 'cyan')}{via}"
            + out.dim(f"  {hit['id']}{ended}")
        )
        content = " ".join(hit["content"].split())
        lines.append(f"    {content[:PREVIEW_CHARS]}{'…' if len(content) > PREVIEW_CHARS else ''}")
    return "\n".join(lines)


class Command(DaemonCommand):
    help = "Search drawers: lexical, semantic or hybrid ranking, in a wing or room, in time."

    route = "/api/search"

    def add_arguments(self, parser: CommandParser) -> None:
        add_search_arguments(parser, room=True)

    def run(self, options: dict[str, Any]) -> None:
        self.out.show(
            self.daemon.call("GET", self.route, params=search_params(options)), render_hits
        )
