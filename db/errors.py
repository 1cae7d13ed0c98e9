"""The two kinds of expected failure every layer may raise; the `vlmdesk` command catches each once.

A bug is neither: it is any other exception, reported as an internal error with its traceback in a log file.
"""

from __future__ import annotations


class UserError(Exception):
    """Something the user gave or chose cannot be used (bad input, a file we refuse, an unknown name): one line,
    exit status 2, nothing written."""


class EnvironmentFault(Exception):
    """The machine failed the work, not the input (disk full, I/O error, a lock held too long): one line, exit
    status 1; trying again later may succeed."""


class InvalidInput(UserError, ValueError):
    """A value the user gave cannot be used (a spec, a name, a setting, a file's content); the message says which
    and why. Also a ValueError, as Python's own checks of values are, so callers that validate by ValueError keep
    working; the command line catches it as a UserError only."""


class NotFound(UserError, LookupError):
    """Something the user named does not exist (a run, a scoring, an adjudication set or item)."""


class MissingExtra(UserError):
    """What was asked needs an optional part of vlmdesk that is not installed (the hf extra: torch, transformers,
    accelerate); the message names the pip command that installs it (docs/adr/0041)."""
