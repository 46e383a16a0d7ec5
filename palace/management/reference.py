"""The command tree, read from the commands' own parsers: the one source of `memcastle --help`,
the shell completions and the reference in docs/cli.md, so none of them can drift.

`python -m palace.management.reference` rewrites the generated part of docs/cli.md; a test
fails when the file differs from what this module generates.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from django.core.management import get_commands, load_command_class

from palace.management import base

APPS = ("palace", "graph", "jobs", "sources", "memcastle_project")
PROG = "memcastle"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
BEGIN = "<!-- BEGIN GENERATED: python -m palace.management.reference -->"
END = "<!-- END GENERATED -->"
GLOBAL_FLAGS = (*(name for names, _ in base.GLOBAL_FLAGS for name in names), "-h", "--help")


@dataclass(frozen=True)
class Argument:
    names: tuple[str, ...]
    help: str
    metavar: str | None
    choices: tuple[str, ...]
    positional: bool
    required: bool

    @property
    def synopsis(self) -> str:
        if self.positional:
            return self.metavar or ""
        shown = self.names[-1] + (f" {self.metavar}" if self.metavar else "")
        return shown if self.required else f"[{shown}]"


@dataclass(frozen=True)
class Node:
    """A command or one of its actions."""

    path: tuple[str, ...]
    help: str
    arguments: tuple[Argument, ...] = ()
    children: tuple[Node, ...] = field(default=())

    @property
    def name(self) -> str:
        return " ".join(self.path)

    @property
    def usage(self) -> str:
        parts = [PROG, *self.path]
        if self.children:
            parts.append("{" + "|".join(child.path[-1] for child in self.children) + "}")
        parts += [argument.synopsis for argument in self.arguments if argument.synopsis]
        return " ".join(parts)

    def walk(self) -> list[Node]:
        return [self, *(node for child in self.children for node in child.walk())]


def _argument(action: argparse.Action) -> Argument:
    metavar = action.metavar if isinstance(action.metavar, str) else None
    if metavar is None and action.choices and action.nargs != 0:
        metavar = "{" + "|".join(str(choice) for choice in action.choices) + "}"
    if action.option_strings and action.nargs != 0 and metavar is None:
        metavar = action.dest.upper()
    if not action.option_strings and metavar is None:
        metavar = action.dest.upper()
        if action.nargs in ("*", "+"):
            metavar += "..."
        if action.nargs in ("?", "*"):
            metavar = f"[{metavar}]"
    return Argument(
        names=tuple(action.option_strings),
        help="" if action.help in (None, argparse.SUPPRESS) else str(action.help),
        metavar=metavar,
        choices=tuple(str(choice) for choice in action.choices or ()),
        positional=not action.option_strings,
        required=bool(action.required),
    )


def _node(path: tuple[str, ...], help: str, parser: argparse.ArgumentParser) -> Node:
    arguments: list[Argument] = []
    children: list[Node] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            children += [
                _node((*path, name), helps.get(name, ""), sub)
                for name, sub in action.choices.items()
            ]
        elif not set(action.option_strings) & set(GLOBAL_FLAGS):
            arguments.append(_argument(action))
    return Node(path, help, tuple(arguments), tuple(children))


def command_names() -> list[str]:
    return sorted(name for name, app in get_commands().items() if app in APPS)


def tree() -> list[Node]:
    """Every MemCastle command with its actions and arguments."""
    nodes = []
    for name in command_names():
        command = load_command_class(get_commands()[name], name)
        parser = command.create_parser(PROG, name)
        nodes.append(_node((parser.prog.split()[-1],), command.help, parser))
    return nodes


def overview() -> str:
    nodes = tree()
    width = max(len(node.name) for node in nodes)
    lines = [
        f"usage: {PROG} [--json] [--mode MODE] [--config FILE] [--palace PATH] [-v] COMMAND ...",
        "",
        "MemCastle, a memory daemon for AI agents. Every command but serve, migrate, worker and",
        "completions talks to the running daemon. `memcastle COMMAND --help` tells more.",
        "",
        "commands:",
        *(f"  {node.name:<{width}}  {node.help.split('. ')[0].rstrip('.')}" for node in nodes),
        "",
        "aliases: wake_up = wake-up, jobs = job, wings = wing, rooms = room, drawers = drawer",
        "",
    ]
    return "\n".join(lines)


def reference() -> str:
    """The generated part of docs/cli.md: one section per command and action."""
    lines: list[str] = []
    for command in tree():
        for node in command.walk():
            heading = "###" if len(node.path) == 1 else "####"
            summary = node.help[:1].upper() + node.help[1:]
            lines += [f"{heading} `{node.name}`", "", summary, "", "```", node.usage, "```", ""]
            if node.arguments:
                lines += [
                    f"- `{' / '.join(argument.names) or argument.metavar}`: {argument.help}"
                    for argument in node.arguments
                ]
                lines.append("")
    return "\n".join(lines)


def rewrite_docs(path: Path = DOCS) -> bool:
    """Replace the generated part of the docs; whether anything changed."""
    text = path.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    updated = f"{head}{BEGIN}\n\n{reference()}{END}{tail}"
    if updated == text:
        return False
    path.write_text(updated, encoding="utf-8")
    return True


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memcastle_project.settings")
    import django

    django.setup()
    sys.stdout.write(f"{'rewrote' if rewrite_docs() else 'unchanged'}: {DOCS}\n")
