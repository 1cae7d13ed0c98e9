"""The standing rule, one home for every kind of human record: verdicts, alignment labels, adjudications, QC decisions.

Records are appended, never edited, and each carries a uuid made where it was given. A withdrawal (undo) is a
record of its own that names, by uuid, the record it withdraws. The standing record per (item, who) — per (item,
stage, who) for QC — is the latest record that no withdrawal names, ordered by created_at (UTC, milliseconds) then
id: logs merged from several machines order by time, and a withdrawal works wherever its target was made
(docs/adr/0010).
"""

from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass
from typing import Final

WITHDRAWAL: Final = "undo"
"""The value (verdict, choice or decision) of a withdrawal row, in every kind."""


@dataclass(frozen=True)
class Kind:
    table: str
    value: str  # the column holding the verdict / choice / decision; WITHDRAWAL marks a withdrawal
    who: str  # annotator / adjudicator
    scope: tuple[str, ...]  # what a record is about, besides who gave it


REVIEWS = Kind("reviews", "verdict", "annotator", ("item_id",))
LABELS = Kind("labels", "choice", "annotator", ("item_id",))
ADJUDICATIONS = Kind("adjudications", "choice", "adjudicator", ("item_id",))
UNCLEAR: Final = "unclear"
"""The choice of a label or an adjudication that cannot tell which option the response means."""
QC_DECISIONS = Kind("qc_decisions", "decision", "annotator", ("item_id", "stage"))
ARENA_VOTES = Kind("arena_votes", "vote", "annotator", ("pair_id",))
OPEN_VERDICTS = Kind("open_verdicts", "verdict", "annotator", ("run_id", "item_id", "role"))

ORDER = "created_at, id"
"""The order of a log (history, merges): by time, then by local insertion."""


def new_uuid() -> str:
    return str(_uuid.uuid4())


def live(kind: Kind, alias: str) -> str:
    """SQL condition: row `alias` of kind.table is a record (not a withdrawal) that no withdrawal names."""
    return (
        f"{alias}.{kind.value} != '{WITHDRAWAL}' AND NOT EXISTS "
        f"(SELECT 1 FROM {kind.table} w WHERE w.withdraws = {alias}.uuid)"
    )


def standing_sql(kind: Kind, columns: str, where: str = "1 = 1") -> str:
    """A SELECT of `columns` of the standing records of `kind`, ordered by time. `where` filters the table (alias
    t) before the rule applies, so it must only narrow by scope or who (item, stage, annotator, benchmark)."""
    partition = ", ".join((*(f"t.{c}" for c in kind.scope), f"t.{kind.who}"))
    return (
        f"SELECT {columns} FROM (SELECT t.*, row_number() OVER (PARTITION BY {partition} "
        f"ORDER BY t.created_at DESC, t.id DESC) AS standing_rank FROM {kind.table} t "
        f"WHERE ({where}) AND {live(kind, 't')}) WHERE standing_rank = 1 ORDER BY {ORDER}"
    )
