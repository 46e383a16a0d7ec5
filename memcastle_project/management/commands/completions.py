"""`memcastle completions SHELL`: a completion script for bash, zsh or fish, generated from the
commands' parsers.

Each script maps a command path (`""`, `wing`, `wing list`) to the words that may follow it,
and an option to its choices; the path is the longest run of known words typed so far.
"""

from __future__ import annotations

import shlex
from typing import Any

from django.core.management.base import CommandParser

from memcastle_project.cli import GLOBAL_FLAG_NAMES, PROG, MemCastleCommand, tree

SHELLS = ("bash", "zsh", "fish")
GLOBAL_CHOICES = {"--mode": "full read_only disabled"}


def vocabulary() -> tuple[dict[str, str], dict[str, str]]:
    """(words after each path, choices of each option)."""
    nodes = tree()
    words = {"": " ".join([*(node.name for node in nodes), *GLOBAL_FLAG_NAMES])}
    choices = dict(GLOBAL_CHOICES)
    for node in (each for command in nodes for each in command.walk()):
        following = [child.path[-1] for child in node.children]
        for argument in node.arguments:
            following += argument.names if argument.names else argument.choices
            if argument.names and argument.choices:
                for name in argument.names:
                    choices[name] = " ".join(argument.choices)
        words[node.name] = " ".join([*following, *GLOBAL_FLAG_NAMES])
    return words, choices


def _pairs(table: dict[str, str], quote: Any) -> str:
    return "\n".join(f"  [{quote(key)}]={quote(value)}" for key, value in table.items())


def bash(words: dict[str, str], choices: dict[str, str]) -> str:
    return f"""# bash completion for {PROG}; load with: source <({PROG} completions bash)
declare -gA _memcastle_words=(
{_pairs(words, shlex.quote)}
)
declare -gA _memcastle_choices=(
{_pairs(choices, shlex.quote)}
)
_memcastle() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} cmdpath="" i candidate
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ ${{COMP_WORDS[i]}} == -* ]] && continue
    candidate="${{cmdpath:+$cmdpath }}${{COMP_WORDS[i]}}"
    [[ -n ${{_memcastle_words[$candidate]+set}} ]] && cmdpath=$candidate
  done
  if [[ -n ${{_memcastle_choices[$prev]+set}} ]]; then
    COMPREPLY=($(compgen -W "${{_memcastle_choices[$prev]}}" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "${{_memcastle_words[$cmdpath]}}" -- "$cur"))
  fi
}}
complete -o default -F _memcastle {PROG}
"""


def zsh(words: dict[str, str], choices: dict[str, str]) -> str:
    return f"""#compdef {PROG}
# zsh completion for {PROG}; load with: source <({PROG} completions zsh)
typeset -gA _memcastle_words _memcastle_choices
_memcastle_words=(
{_pairs(words, shlex.quote).replace("  [", "  ").replace("]=", " ")}
)
_memcastle_choices=(
{_pairs(choices, shlex.quote).replace("  [", "  ").replace("]=", " ")}
)
_memcastle() {{
  local cmdpath="" candidate i
  for ((i = 2; i < CURRENT; i++)); do
    [[ ${{words[i]}} == -* ]] && continue
    candidate="${{cmdpath:+$cmdpath }}${{words[i]}}"
    (( ${{+_memcastle_words[$candidate]}} )) && cmdpath=$candidate
  done
  if (( ${{+_memcastle_choices[${{words[CURRENT-1]}}]}} )); then
    compadd -- ${{=_memcastle_choices[${{words[CURRENT-1]}}]}}
  else
    compadd -- ${{=_memcastle_words[$cmdpath]}}
  fi
}}
compdef _memcastle {PROG}
"""


def fish(words: dict[str, str], choices: dict[str, str]) -> str:
    paths = " ".join(shlex.quote(path) for path in words if path)
    lines = [
        f"# fish completion for {PROG}; load with: {PROG} completions fish | source",
        "function __memcastle_path",
        "    set -l typed (commandline -opc)",
        "    set -l cmdpath ''",
        "    for word in $typed[2..-1]",
        "        string match -q -- '-*' $word; and continue",
        '        set -l candidate (string trim -- "$cmdpath $word")',
        f"        contains -- $candidate {paths}; and set cmdpath $candidate",
        "    end",
        "    echo $cmdpath",
        "end",
        "function __memcastle_at",
        '    test (__memcastle_path | string collect) = "$argv[1]"',
        "end",
        "function __memcastle_after",
        '    test (commandline -opc)[-1] = "$argv[1]"',
        "end",
        f"complete -c {PROG} -f",
    ]
    for path, following in words.items():
        lines.append(
            f"complete -c {PROG} -n {shlex.quote(f'__memcastle_at {shlex.quote(path)}')} "
            f"-a {shlex.quote(following)}"
        )
    for option, values in choices.items():
        lines.append(
            f"complete -c {PROG} -n {shlex.quote(f'__memcastle_after {option}')} "
            f"-a {shlex.quote(values)}"
        )
    return "\n".join(lines) + "\n"


class Command(MemCastleCommand):
    help = "Print a shell completion script for bash, zsh or fish."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")

    def handle(self, *args: Any, **options: Any) -> None:
        render = {"bash": bash, "zsh": zsh, "fish": fish}[options["shell"]]
        self.stdout.write(render(*vocabulary()), ending="")
