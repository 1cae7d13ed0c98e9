"""Another process on the same workspace: the project's code in a second Python, as another vlmdesk would be."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_python(code: str) -> str:
    """Run `code` in another Python process with the project on its path; its standard output."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def notes_seen_elsewhere(path: Path) -> list[str]:
    """The notes of the workspace's verdicts, in the order stored, as a fresh connection elsewhere reads them."""
    out = run_python(
        f"import sqlite3\nc = sqlite3.connect({str(path)!r})\n"
        "print('\\n'.join(r[0] for r in c.execute('SELECT note FROM reviews WHERE note IS NOT NULL ORDER BY id')))\n"
        "c.close()\n"
    )
    return out.split()
