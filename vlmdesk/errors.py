"""Unexpected exceptions (bugs): one line for the user, the traceback in a log file for the report."""

from __future__ import annotations

import datetime
import os
import re
import sys
import traceback
from pathlib import Path

LOG_DIR_ENV = "VLMDESK_LOG_DIR"
LOG_NAME = "vlmdesk.log"
# The log is kept to about this size: when it grows past it, it becomes vlmdesk.log.1 (one older copy is kept).
MAX_LOG_BYTES = 1_000_000
_MESSAGE_CHARS = 300


def log_dir() -> Path:
    """`$VLMDESK_LOG_DIR`, else the user's log directory (e.g. ~/.local/state/vlmdesk/log)."""
    env = os.environ.get(LOG_DIR_ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_log_path

    return user_log_path("vlmdesk", appauthor=False)


def one_line(text: str, limit: int = _MESSAGE_CHARS) -> str:
    """A message on one line, bounded: control characters shown escaped, long text cut with an ellipsis."""
    text = re.sub(r"[\x00-\x1f\x7f]+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def log_internal_error(exc: BaseException, *, command: str | None = None) -> Path:
    """Append exc's traceback to the log file and return its path; raises OSError when the log cannot be written."""
    from evaluator.backends.secrets import redact

    folder = log_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOG_NAME
    if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
        path.replace(folder / f"{LOG_NAME}.1")
    from vlmdesk import __version__

    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    # Arguments are not logged: a mistyped key could be among them.
    head = (
        f"--- {stamp} vlmdesk {__version__} pid {os.getpid()} command {command or '-'} "
        f"python {sys.version.split()[0]}\n"
    )
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    with open(path, "a", encoding="utf-8", errors="backslashreplace") as f:
        f.write(head + redact(text))
    return path


def internal_error_line(exc: BaseException, *, command: str | None = None) -> str:
    """The one line `vlmdesk` prints for a bug, after logging its traceback."""
    from evaluator.backends.secrets import redact

    what = one_line(redact(f"{type(exc).__name__}: {exc}"))
    try:
        where = f"traceback in {log_internal_error(exc, command=command)}"
    except OSError as log_exc:
        where = f"the traceback could not be written to {log_dir()} ({log_exc.strerror or log_exc})"
    return f"error: internal error: {what} — {where}"
