"""`memcastle audit`: check the palace's consistency (an audit job; it changes nothing)."""

from __future__ import annotations

from palace.management.commands import embed


class Command(embed.Command):
    help = "Queue an audit job: orphan drawers, dangling provenance, stuck jobs, missing vectors."

    job_type = "audit"
    wing_field = "scope"
