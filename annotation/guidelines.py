"""Annotation guidelines: per benchmark, Markdown kept in the workspace, versioned (migration 0014_guidelines).

Saving a changed text appends version n + 1 — the old versions stay, so every verdict can be read against the
guideline it was given under: `reviews.guideline_version` is the benchmark's latest version when the verdict was
stored (annotation/reviews.py writes it in the same statement). Saving the same text again adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotation.names import annotator_name
from db.catalog import now_iso
from db.errors import InvalidInput
from db.workspace import Workspace
from evaluator.formats.importers.common import text_problem

MAX_GUIDELINE_CHARS = 200_000  # a long handbook fits; a pasted file of megabytes is a mistake


@dataclass(frozen=True)
class Guideline:
    benchmark_id: int
    version: int
    markdown: str
    author: str
    created_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "markdown": self.markdown,
            "author": self.author,
            "created_at": self.created_at,
        }


_COLUMNS = "benchmark_id, version, markdown, author, created_at"


def current(ws: Workspace, benchmark_id: int) -> Guideline | None:
    """The benchmark's latest guideline, or None when it has none."""
    row = ws.conn.execute(
        f"SELECT {_COLUMNS} FROM guidelines WHERE benchmark_id = ? ORDER BY version DESC LIMIT 1", (benchmark_id,)
    ).fetchone()
    return Guideline(*row) if row else None


def versions(ws: Workspace, benchmark_id: int) -> list[Guideline]:
    """Every version, oldest first."""
    rows = ws.conn.execute(
        f"SELECT {_COLUMNS} FROM guidelines WHERE benchmark_id = ? ORDER BY version", (benchmark_id,)
    )
    return [Guideline(*r) for r in rows]


def check_markdown(text: object) -> str:
    """The guideline text as stored: a text of at most MAX_GUIDELINE_CHARS without a NUL or a lone surrogate."""
    if not isinstance(text, str):
        raise InvalidInput(f"a guideline is text, got {type(text).__name__}")
    if len(text) > MAX_GUIDELINE_CHARS:
        raise InvalidInput(f"a guideline of {len(text):,} characters; at most {MAX_GUIDELINE_CHARS:,}")
    problem = text_problem(text)
    if problem:
        raise InvalidInput(f"the guideline contains {problem}")
    return text


def save(ws: Workspace, benchmark_id: int, markdown: str, author: str) -> Guideline:
    """Store `markdown` as the benchmark's next version (signed by `author`); the same text as the latest version
    adds nothing and returns that version."""
    text, who = check_markdown(markdown), annotator_name(author)
    with ws.db.atomic():
        if ws.conn.execute("SELECT 1 FROM benchmarks WHERE id = ?", (benchmark_id,)).fetchone() is None:
            raise InvalidInput(f"no benchmark with id {benchmark_id}")
        latest = current(ws, benchmark_id)
        if latest is not None and latest.markdown == text:
            return latest
        version = (latest.version if latest else 0) + 1
        created = now_iso()
        ws.conn.execute(
            "INSERT INTO guidelines (benchmark_id, version, markdown, author, created_at) VALUES (?, ?, ?, ?, ?)",
            (benchmark_id, version, text, who, created),
        )
    return Guideline(benchmark_id, version, text, who, created)


def verdicts_per_version(ws: Workspace, benchmark_id: int) -> dict[int | None, int]:
    """How many verdicts (undo rows left out) were given under each version (None: before any guideline)."""
    rows = ws.conn.execute(
        "SELECT r.guideline_version, count(*) FROM reviews r JOIN items i ON i.id = r.item_id "
        "WHERE i.benchmark_id = ? AND r.verdict != 'undo' GROUP BY r.guideline_version",
        (benchmark_id,),
    )
    return {version: count for version, count in rows}


def read_file(path: str | Path) -> str:
    """A guideline file's text: a regular file (never a FIFO or device) of at most MAX_GUIDELINE_CHARS × 4 bytes,
    UTF-8; the text is then checked like any guideline."""
    from evaluator.formats.importers.common import open_regular

    try:
        with open_regular(Path(path), 4 * MAX_GUIDELINE_CHARS, "size limit of a guideline") as f:
            raw = f.read(4 * MAX_GUIDELINE_CHARS + 1)
    except OSError as exc:  # missing, unreadable, a folder: the user's path, not a bug
        raise InvalidInput(f"{path}: {exc.strerror or exc}") from None
    try:
        return check_markdown(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text (byte {exc.start})") from None
