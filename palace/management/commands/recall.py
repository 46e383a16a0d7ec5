"""`memcastle recall QUERY`: search whole wings, with search's options but --room."""

from __future__ import annotations

from django.core.management.base import CommandParser

from palace.management.commands import search


class Command(search.Command):
    help = "Recall: search whole wings (search's options, without --room)."

    route = "/api/recall"

    def add_arguments(self, parser: CommandParser) -> None:
        search.add_search_arguments(parser, room=False)
