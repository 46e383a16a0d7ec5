#!/usr/bin/env python
"""Django's command-line utility: `memcastle`'s commands with the same words, and Django's own
`help`, which lists every command Django has."""

from memcastle_project.cli import manage

if __name__ == "__main__":
    manage()
