"""Item listing for browsing: filtered, searched, paged by keyset. Never selects image bytes.

Filters that depend on derived state (review status, QC decisions) arrive as id sets computed by annotation/;
this module only knows the item columns, the search texts and their full-text index (migration 0010:
question, hint and option texts) and the stored passes of a run.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from db import catalog, runs
from db.workspace import Workspace

RUN_RESULTS = ("right", "wrong", "pending", "unscored", "none")
"""Per item and run: every needed pass right / a pass wrong / passes missing / no answer key / not run. The rule
is evaluator/choices.py's run_result; the SQL below computes the same for paging and QC (db/ cannot import
evaluator/), and tests/db/test_run_result_sql.py checks the two agree on generated runs."""

# Scripts written without spaces, which the unicode61 tokenizer keeps as one token per run of characters: CJK
# ideographs (evaluator/choices.py's CJK_IDEOGRAPHS; a test keeps this class a superset), kana and hangul. A
# tokenizer rule, not a language rule: Japanese and Korean need the substring search as much as Chinese does.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ebef]")
_WORD = re.compile(r"[^\W_]+")  # letters and digits: what the unicode61 tokenizer keeps ("_" separates)
MAX_SEARCH_CHARS = 1000
"""What a search reads of what was typed (a pasted page would make a huge FTS or LIKE pattern)."""


@dataclass(frozen=True)
class ItemFilter:
    text: str = ""
    category: str | None = None
    l2_category: str | None = None
    split: str | None = None
    run_id: int | None = None  # the run whose per-item result is listed (and filtered by run_result)
    run_result: str | None = None  # one of RUN_RESULTS
    only_ids: frozenset[int] | None = None  # keep only these items (review-status / QC filters)
    exclude_ids: frozenset[int] | None = None


@dataclass(frozen=True)
class ItemRow:
    id: int
    position: int
    index: int | str
    category: str | None
    l2_category: str | None
    split: str | None
    answer: str | None
    options: int
    image_sha256: str | None
    question: str
    run_result: str  # one of RUN_RESULTS


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _ascii_lower(text: str) -> str:
    """Lower-case as SQLite's lower() does (ASCII only), so the substring search ignores the case of Latin letters."""
    return text.translate(_ASCII_LOWER)


def fts_query(text: str) -> str | None:
    """The FTS5 MATCH expression for what a user typed: every word, as a prefix, all required. None: no words.

    Each word is quoted, so nothing typed is read as FTS syntax (quotes, NEAR, AND, *, -, ^, column filters).
    """
    words = _WORD.findall(text)
    return " ".join(f'"{w}"*' for w in words) or None


def _where(ws: Workspace, benchmark_id: int, f: ItemFilter) -> tuple[str, list]:
    sql = ["i.benchmark_id = ?"]
    params: list = [benchmark_id]
    for column, value in (("category", f.category), ("l2_category", f.l2_category), ("split", f.split)):
        if value is not None:
            sql.append(f"coalesce(i.{column}, '') = ?")
            params.append(value)
    text = f.text[:MAX_SEARCH_CHARS].strip()
    if text:
        match = None if _UNSPACED.search(text) else fts_query(text)
        if match:
            sql.append("i.id IN (SELECT rowid FROM item_search WHERE item_search MATCH ?)")
            params.append(match)
        else:  # CJK (one unicode61 token per run of characters) or punctuation only: substring search
            # over the same texts as the index (the view), never over the JSON that stores the options. instr,
            # not LIKE: LIKE reads its pattern up to a NUL, so "\0" would match everything.
            sql.append("EXISTS (SELECT 1 FROM item_search_texts t WHERE t.id = i.id AND (instr(lower(t.question), ?) "
                       "OR instr(lower(coalesce(t.hint, '')), ?) OR instr(lower(coalesce(t.options, '')), ?)))")
            params += [_ascii_lower(text)] * 3
    if f.only_ids is not None:
        sql.append("i.id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(f.only_ids)))
    if f.exclude_ids:
        sql.append("i.id NOT IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(f.exclude_ids)))
    if f.run_result is not None:
        sql.append(f"{_run_result_sql(ws, f.run_id)} = ?")
        params.append(f.run_result)
    return " AND ".join(sql), params


def _result_case(need: str) -> str:
    """The verdict over the passes `p` of one item of one run, needing `need` right passes (see RUN_RESULTS)."""
    return (f"CASE WHEN count(*) = 0 THEN 'none' WHEN sum(p.correct = 0) > 0 THEN 'wrong' "
            f"WHEN sum(p.correct IS NULL) > 0 THEN 'unscored' WHEN sum(p.correct = 1) >= {need} THEN 'right' "
            f"ELSE 'pending' END")


def _need(strategy: str) -> str:
    """Passes needed right (evaluator/choices.py passes_needed): every rotation under CircularEval, else one."""
    return "json_array_length(i.options)" if strategy == "circular" else "1"


def _run_result_sql(ws: Workspace, run_id: int | None) -> str:
    if run_id is None:
        return "'none'"
    run = runs.get_run(ws, run_id)
    need = _need(run.strategy if run is not None else "")
    return f"(SELECT {_result_case(need)} FROM predictions p WHERE p.run_id = {int(run_id)} AND p.item_id = i.id)"


def run_results(ws: Workspace, run_ids: list[int]) -> dict[int, dict[int, str]]:
    """item id -> {run id: one of RUN_RESULTS} for every item a run has a stored pass of (the run's own scoring)."""
    found: dict[int, dict[int, str]] = {}
    for run_id in run_ids:
        run = runs.get_run(ws, run_id)
        if run is None:
            continue
        rows = ws.conn.execute(
            f"SELECT p.item_id, {_result_case(_need(run.strategy))} FROM predictions p JOIN items i ON i.id = p.item_id "
            f"WHERE p.run_id = ? GROUP BY p.item_id ORDER BY p.item_id", (run_id,))
        for item_id, result in rows:
            found.setdefault(item_id, {})[run_id] = result
    return found


def count_items(ws: Workspace, benchmark_id: int, f: ItemFilter = ItemFilter()) -> int:
    where, params = _where(ws, benchmark_id, f)
    return ws.conn.execute(f"SELECT count(*) FROM items i WHERE {where}", params).fetchone()[0]


def item_page(ws: Workspace, benchmark_id: int, f: ItemFilter = ItemFilter(), *, after: tuple[int, int] | None = None,
              limit: int = 200) -> list[ItemRow]:
    """Up to `limit` rows in file order, starting after (position, id) `after` — keyset paging stays fast at depth."""
    where, params = _where(ws, benchmark_id, f)
    if after is not None:
        where += " AND (i.position, i.id) > (?, ?)"
        params += list(after)
    sql = (f"SELECT i.id, i.position, i.source_index, i.category, i.l2_category, i.split, i.answer, "
           f"json_array_length(i.options), i.image_sha256, i.question, {_run_result_sql(ws, f.run_id)} "
           f"FROM items i WHERE {where} ORDER BY i.position, i.id LIMIT ?")
    return [ItemRow(*r) for r in ws.conn.execute(sql, params + [limit])]


def facet_values(ws: Workspace, benchmark_id: int) -> dict[str, list[str]]:
    """The distinct categories, L2 categories and splits of a benchmark ('' stands for none)."""
    out = {}
    for column in ("category", "l2_category", "split"):
        rows = ws.conn.execute(f"SELECT DISTINCT coalesce({column}, '') FROM items WHERE benchmark_id = ? "
                               f"ORDER BY 1", (benchmark_id,))
        out[column] = [r[0] for r in rows]
    return out


def item_by_id(ws: Workspace, item_id: int) -> catalog.Item | None:
    row = ws.conn.execute(f"SELECT {catalog.ITEM_COLUMNS} FROM items WHERE id = ?", (item_id,)).fetchone()
    return catalog._item(row) if row else None


def runs_of_benchmark(ws: Workspace, benchmark_id: int) -> list[runs.Run]:
    """Runs of one benchmark, newest first."""
    return [r for r in reversed(runs.list_runs(ws)) if r.benchmark_id == benchmark_id]


def item_predictions(ws: Workspace, item_id: int, runs_by_id: dict[int, runs.Run] | None = None
                     ) -> list[tuple[runs.Run, list[runs.Prediction]]]:
    """Every run's stored passes for one item, newest run first, passes in order. `runs_by_id` saves re-reading
    the runs (each read counts its predictions) when a caller already holds them."""
    rows = ws.conn.execute(
        "SELECT run_id, item_id, pass, option_order, prompt, response, answer, choice, stage, reason, correct, "
        "latency_ms FROM predictions WHERE item_id = ? ORDER BY run_id DESC, pass", (item_id,)).fetchall()
    by_run: dict[int, list[runs.Prediction]] = {}
    for r in rows:
        by_run.setdefault(r[0], []).append(runs.Prediction(
            r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6], r[7], r[8], r[9],
            None if r[10] is None else bool(r[10]), r[11]))
    known = runs_by_id or {}
    return [(known.get(run_id) or runs.get_run(ws, run_id), passes) for run_id, passes in by_run.items()]
