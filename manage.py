#!/usr/bin/env python
"""Django's command-line utility; `memcastle <command>` runs the same commands."""

from memcastle_project.cli import main

if __name__ == "__main__":
    main()
