"""`memcastle entity ...`: read the knowledge graph's entities, and record a spelling."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import DaemonCommand, Output, card, table


class Command(DaemonCommand):
    help = "List and show entities, their relationships, mentions and candidates; add an alias."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.subcommands(parser)
        listing = actions.add("list", "entities, by a part of the name or by kind")
        listing.add_argument("--name", help="a part of the name, any case")
        listing.add_argument("--kind", help="person, organization, project, tool, ...")
        listing.add_argument("--limit", type=int, help="entities at most (50, at most 200)")
        actions.add("show", "one entity with its counts").add_argument(
            "id", metavar="ID", help="the entity's UUID"
        )
        relationships = actions.add("relationships", "an entity's relationships")
        relationships.add_argument("id", metavar="ID", help="the entity's UUID")
        relationships.add_argument(
            "--include-expired", action="store_true", help="closed relationships too"
        )
        relationships.add_argument("--as-of", metavar="WHEN", help="the state at that instant")
        mentions = actions.add("mentions", "the drawers that mention the entity")
        mentions.add_argument("id", metavar="ID", help="the entity's UUID")
        mentions.add_argument("--limit", type=int, help="mentions at most (200)")
        candidates = actions.add("candidates", "entities that may be this one, spelt otherwise")
        candidates.add_argument("id", metavar="ID", help="the entity's UUID")
        alias = actions.add("alias", "record another spelling of the entity")
        alias.add_argument("id", metavar="ID", help="the entity's UUID")
        alias.add_argument("alias", metavar="ALIAS", help="the other spelling")

    def run(self, options: dict[str, Any]) -> None:
        action = options["action"]
        if action == "list":
            params = {key: options[key] for key in ("name", "kind", "limit")}
            self.out.show(self.daemon.call("GET", "/api/entities", params=params), _entities)
            return
        path = f"/api/entities/{options['id']}"
        if action == "show":
            self.out.show(self.daemon.call("GET", path), _entity)
        elif action == "alias":
            answer = self.daemon.call("POST", f"{path}/aliases", body={"alias": options["alias"]})
            self.out.show(answer, _entity)
        elif action == "relationships":
            params = {
                "include_expired": options["include_expired"] or None,
                "as_of": options["as_of"],
            }
            self.out.show(
                self.daemon.call("GET", f"{path}/relationships", params=params), relationships
            )
        elif action == "mentions":
            answer = self.daemon.call("GET", f"{path}/mentions", params={"limit": options["limit"]})
            self.out.show(answer, _mentions)
        else:
            self.out.show(self.daemon.call("GET", f"{path}/candidates"), _candidates)


def _entities(out: Output, answer: dict[str, Any]) -> str:
    rows = [[e["id"], e["kind"], e["name"], ", ".join(e["aliases"])] for e in answer["entities"]]
    return table(["ID", "KIND", "NAME", "ALIASES"], rows, empty="(no entities)")


def _entity(out: Output, entity: dict[str, Any]) -> str:
    counts = entity.get("counts") or {}
    return card(
        out,
        f"{entity['name']} ({entity['kind']})",
        [
            ("id", entity["id"]),
            ("aliases", ", ".join(entity["aliases"])),
            ("mentions", counts.get("mentions")),
            ("relationships", counts.get("relationships")),
        ],
    )


def relationships(out: Output, answer: dict[str, Any]) -> str:
    """Relationships (an entity's, or a fact's history) with names for their ends."""
    names = {key: value["name"] for key, value in answer["entities"].items()}
    rows = [
        [
            names.get(rel["from"], rel["from"]),
            rel["predicate"],
            names.get(rel["to"], rel["to"]),
            rel["lifecycle"]["state"],
            rel["valid_from"],
            rel.get("valid_to") or "",
            rel["id"],
        ]
        for rel in answer.get("relationships", answer.get("assertions", []))
    ]
    return table(
        ["FROM", "PREDICATE", "TO", "STATE", "VALID FROM", "VALID TO", "ID"],
        rows,
        empty="(no relationships)",
    )


def _mentions(out: Output, answer: dict[str, Any]) -> str:
    rows = [
        [
            m["drawer"]["id"],
            m["observation"].get("name", ""),
            m["observation"].get("rule", ""),
            " ".join(m["drawer"]["preview"].split())[:60],
        ]
        for m in answer["mentions"]
    ]
    return table(["DRAWER", "WRITTEN AS", "RULE", "PREVIEW"], rows, empty="(no mentions)")


def _candidates(out: Output, answer: dict[str, Any]) -> str:
    rows = [
        [c["entity"]["id"], c["entity"]["name"], c["side"], f"{c['similarity']:.2f}"]
        for c in answer["candidates"]
    ]
    return table(["ID", "NAME", "SIDE", "SIMILARITY"], rows, empty="(no candidates)")
