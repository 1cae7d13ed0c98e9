"""The blind rule: what one annotator may see of an item now. Its only home — every view and command asks here.

Two reasons to hide, independent of each other:

- **Blind mode** (the annotator's session toggle). For an item this annotator has not judged, nothing that could bias
  the verdict: its answer key, other annotators' verdicts, notes, labels and corrections, model responses,
  extracted choices, run correctness, scores. An item is judged by a standing verdict other than ``skip`` — a skip
  would otherwise be a way to peek — and an undo un-judges it. After the verdict the preference "reveal after my
  verdict" decides.
- **Blind adjudication**, whatever the toggle says: a response that is in an adjudication set stays hidden (the
  response and every reading of it, and the run result it decides) until this annotator has committed a label on
  it. Labels attach to the response key, so a label in any set counts, and the same response in any run is hidden.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from functools import cached_property

from annotation import reviews, standing
from db.workspace import Workspace
from evaluator.scoring.choices import shown_options
from evaluator.scoring.llm_extraction import response_key

NOT_A_JUDGEMENT = ("skip",)
HIDDEN_TEXT = "hidden in blind mode"
"""What a tab, column or cell shows in place of what the blind rule hides."""


def judged_item_ids(ws: Workspace, annotator: str, benchmark_id: int | None = None) -> set[int]:
    """Items with a standing verdict by this annotator that judges them (not a skip; an undone one does not count)."""
    if not annotator:
        return set()
    return {
        r.item_id
        for r in reviews.standing_reviews(ws, benchmark_id=benchmark_id, annotator=annotator)
        if r.verdict not in NOT_A_JUDGEMENT
    }


def _judged(ws: Workspace, item_id: int, annotator: str) -> bool:
    standing_verdicts = reviews.standing_reviews(ws, item_id=item_id, annotator=annotator)
    return bool(standing_verdicts) and standing_verdicts[0].verdict not in NOT_A_JUDGEMENT


def may_reveal(ws: Workspace, item_id: int, annotator: str, *, blind: bool, reveal_after_verdict: bool) -> bool:
    """May the blind-mode-hidden facts of this item be shown to this annotator? (Blind adjudication is separate:
    `adjudication_hidden_passes`.)"""
    if not blind:
        return True
    return reveal_after_verdict and bool(annotator) and _judged(ws, item_id, annotator)


def unlabelled_response_keys(ws: Workspace, annotator: str, keys: Iterable[str] | None = None) -> frozenset[str]:
    """Response keys in some adjudication set (of `keys`, when given) on which this annotator has no standing label
    in any set."""
    # A standing label (annotation/standing.py) commits the annotator's reading; a withdrawn one hides it again.
    sql = (
        "SELECT DISTINCT a.response_key FROM adjudication_items a WHERE NOT EXISTS (SELECT 1 FROM labels l "
        "JOIN adjudication_items b ON b.id = l.item_id WHERE b.response_key = a.response_key AND l.annotator = ? "
        f"AND {standing.live(standing.LABELS, 'l')})"
    )
    params: list[object] = [annotator or ""]
    if keys is not None:
        sql += " AND a.response_key IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(sorted(keys)))
    return frozenset(r[0] for r in ws.conn.execute(sql, params))


def adjudication_hidden_passes(
    ws: Workspace, annotator: str, *, benchmark_id: int | None = None, item_ids: Collection[int] | None = None
) -> frozenset[tuple[int, int, int]]:
    """(run_id, item_id, pass) of every stored pass whose response awaits this annotator's blind label."""
    # Only items whose question some adjudication item carries can have such a pass (the key hashes the question).
    if ws.conn.execute("SELECT max(id) FROM adjudication_items").fetchone()[0] is None:  # the b-tree's last entry
        return frozenset()  # no set at all: nothing to read of the benchmark's items
    params: list[object] = []
    if item_ids is not None:  # per item: an index read of adjudication_items by question (migration 0015)
        sql = (
            "SELECT id, question, options FROM items WHERE id IN (SELECT value FROM json_each(?)) "
            "AND EXISTS (SELECT 1 FROM adjudication_items a WHERE a.question = items.question)"
        )
        params.append(json.dumps(sorted(item_ids)))
    else:
        sql = (
            "SELECT id, question, options FROM items "
            "WHERE question IN (SELECT DISTINCT question FROM adjudication_items)"
        )
    if benchmark_id is not None:
        sql += " AND benchmark_id = ?"
        params.append(benchmark_id)
    items = {r[0]: (r[1], json.loads(r[2])) for r in ws.conn.execute(sql, params)}
    if not items:
        return frozenset()
    by_key: dict[str, list[tuple[int, int, int]]] = {}
    for run_id, item_id, pass_, order, response in ws.conn.execute(
        "SELECT run_id, item_id, pass, option_order, response FROM predictions "
        "WHERE item_id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(items)),),
    ):
        question, options = items[item_id]
        by_key.setdefault(response_key(question, shown_options(options, json.loads(order)), response), []).append(
            (run_id, item_id, pass_)
        )
    waiting = unlabelled_response_keys(ws, annotator, by_key) if by_key else frozenset()
    return frozenset(p for k in waiting for p in by_key[k])


@dataclass(frozen=True)
class Sight:
    """What one annotator may see now, computed once per listing or item shown."""

    annotator: str
    blind: bool
    reveal_after_verdict: bool
    judged: frozenset[int]  # items this annotator has judged (see judged_item_ids)
    hidden_passes: frozenset[tuple[int, int, int]]  # blind adjudication (see adjudication_hidden_passes)

    def reveals(self, item_id: int) -> bool:
        """Key, others' verdicts, responses, readings and run results of this item may show (blind mode)."""
        return not self.blind or (self.reveal_after_verdict and item_id in self.judged)

    def shows_pass(self, run_id: int, item_id: int, pass_: int) -> bool:
        return self.reveals(item_id) and (run_id, item_id, pass_) not in self.hidden_passes

    def shows_run_result(self, run_id: int | None, item_id: int) -> bool:
        """A run's verdict on an item follows from its passes: shown only when every pass of it may show."""
        return self.reveals(item_id) and (run_id, item_id) not in self._hidden_results

    @cached_property
    def _hidden_results(self) -> frozenset[tuple[int, int]]:
        return frozenset((r, i) for r, i, _ in self.hidden_passes)

    @property
    def shows_scores(self) -> bool:
        """Figures over many items (scores, charts, alignment) mix judged and unjudged items: hidden when blind."""
        return not self.blind

    def visible_history(self, item_id: int, history: Iterable[reviews.Review]) -> list[reviews.Review]:
        """The review log rows of an item this annotator may read: all, or only their own before their verdict."""
        return list(history) if self.reveals(item_id) else [r for r in history if r.annotator == self.annotator]


def resight(ws: Workspace, seen: Sight, item_id: int) -> Sight:
    """`seen` with one item's facts asked again (after a verdict, an undo or a label on it): the rule asked for that
    item alone, never for the benchmark."""
    one = sight(
        ws, seen.annotator, blind=seen.blind, reveal_after_verdict=seen.reveal_after_verdict, item_ids=[item_id]
    )
    return replace(
        seen,
        judged=(seen.judged - {item_id}) | one.judged,
        hidden_passes=frozenset(p for p in seen.hidden_passes if p[1] != item_id) | one.hidden_passes,
    )


def sight(
    ws: Workspace,
    annotator: str,
    *,
    blind: bool,
    reveal_after_verdict: bool = True,
    benchmark_id: int | None = None,
    item_ids: Collection[int] | None = None,
) -> Sight:
    if not blind:
        judged: frozenset[int] = frozenset()
    elif item_ids is not None:  # one item shown: read its own log, not the annotator's whole history
        judged = frozenset(i for i in item_ids if annotator and _judged(ws, i, annotator))
    else:
        judged = frozenset(judged_item_ids(ws, annotator, benchmark_id))
    return Sight(
        annotator,
        blind,
        reveal_after_verdict,
        judged,
        adjudication_hidden_passes(ws, annotator, benchmark_id=benchmark_id, item_ids=item_ids),
    )
