"""`memcastle extract`: read drawers for the knowledge graph (an extract job)."""

from __future__ import annotations

from palace.management.commands import embed


class Command(embed.Command):
    help = "Queue an extract job: entities and relationships from drawers not read yet."

    job_type = "extract"
