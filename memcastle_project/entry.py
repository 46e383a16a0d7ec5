"""The `memcastle` console script.

`memcastle --version` answers before anything else is imported: the command line's plumbing
(`memcastle_project.cli`) loads Django, httpx and rich, about 0.2 s, for a question whose answer
is one constant. Everything else is `memcastle_project.cli.main`.
"""

from __future__ import annotations

import sys

from kernel import __version__


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(f"memcastle {__version__}\n")
        return
    from memcastle_project.cli import main as command_line

    command_line()
