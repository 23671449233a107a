"""What the project's commands share: a help formatter that shows each option's default."""

from __future__ import annotations

import argparse


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written (their line breaks are meant), and ``(default: X)`` after
    every option that has a default worth showing: not for flags (False), unset options (None,
    whose help says what happens then) or empty values."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("%(default)" not in text and action.option_strings
                and action.default not in (None, False, "", [], argparse.SUPPRESS)):
            text += " (default: %(default)s)"
        return text
