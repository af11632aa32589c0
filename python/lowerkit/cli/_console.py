"""The rich console every subcommand prints through.

In a terminal it takes the terminal's width; piped into a file or a CI log (where rich would
assume 80 columns and fold every table) it is wide enough for the stage tables.
"""

from __future__ import annotations

from rich.console import Console

PIPED_WIDTH = 160


def console() -> Console:
    return Console(width=None if Console().is_terminal else PIPED_WIDTH)
