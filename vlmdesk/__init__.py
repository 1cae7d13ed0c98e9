"""vlmdesk composition root: the `vlmdesk` command and default paths."""

__version__ = "0.1.0"
