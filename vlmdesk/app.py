"""`vlmdesk` with no command: the default workspace (with the demo on first start), then the app."""

from __future__ import annotations

from pathlib import Path

from db.workspace import default_workspace_path


def start(args) -> int:
    from vlmdesk.cmd_gui import start_gui

    explicit = getattr(args, "workspace", None)
    # The demo is added to the default workspace only; a workspace named on the command line opens as it is.
    return start_gui(
        Path(explicit) if explicit else default_workspace_path(),
        first_start=explicit is None,
        read_only=getattr(args, "read_only", False),
    )
