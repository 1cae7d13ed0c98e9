"""Item listing for browsing: filtered, searched, paged by keyset. Never selects image bytes.

Filters that depend on derived state (review status, QC decisions) arrive as id sets computed by annotation/;
this module only knows the item columns, the search texts and their full-text index (migration 0010:
question, hint and option texts) and the stored passes of a run.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from dataclasses import dataclass, replace

from db import catalog, runs, schema
from db.workspace import Workspace

RUN_RESULTS = ("right", "wrong", "pending", "unscored", "none")
"""Per item and run: every needed pass right / a pass wrong / passes missing / no answer key / not run. The rule
is evaluator/scoring/choices.py's run_result; triggers keep the same, per (run, item) with a stored pass, in
run_item_results (migration 0020: db/ cannot import evaluator/), which paging, filters and QC read, and
tests/db/test_run_result_sql.py checks the two agree on generated runs."""

# Scripts written without spaces between words (Thai, Lao, Myanmar, Khmer, kana, Chinese; and Hangul, whose words
# carry their particles): unicode61 makes one token of a whole run of them, so they are searched as substrings.
# A tokenizer rule, not a language rule; a superset of evaluator/scoring/choices.py's CJK_IDEOGRAPHS (a test checks it:
# db/ cannot import evaluator/).
_SPACELESS = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u19e0-\u19ff\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ebef]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
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
    # Items with no standing verdict (by anyone / by this annotator), asked per item of the kept table
    # review_standing (migration 0015): "next unreviewed" is an index walk from where the annotator is.
    without_any_verdict: bool = False
    without_verdict_by: str | None = None


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


def search_fold(text: str) -> str:
    """What search compares, of the texts and of what is typed alike: NFKC, then case folding ("Ｆｕｌｌ" is
    "full", "Straße" is "STRASSE"). The FTS index cannot fold so (unicode61 only lower-cases and drops
    diacritics), so the items whose words it would index otherwise are searched word by word here."""
    if text.isascii():
        return text.lower()
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    folded = text.casefold()
    return folded if unicodedata.is_normalized("NFKC", folded) else unicodedata.normalize("NFKC", folded)


def _without_marks(text: str) -> str:
    """Diacritics dropped, as unicode61's remove_diacritics does: "café" is searched as "cafe"."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


def _sql_fold(text: object) -> str:
    return search_fold(text if isinstance(text, str) else "" if text is None else str(text))


# Full-width and CJK punctuation: NFKC changes it, but it separates words before and after (as "，" and ",").
_FOLDED_PUNCTUATION = re.compile("[\u3000-\u3037\u303b-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]+")
# Whether an item's texts refold, by the hash of the texts: a search asks it of every item of the benchmark, and
# typing the next letter asks again. (A 64-bit hash collision would only hide one item from one search.)
_REFOLDS_SEEN: dict[int, bool] = {}
_REFOLDS_SEEN_MAX = 1 << 17


def _refolds(texts: object) -> bool:
    """True when folding changes the words of an item's texts (its columns, joined) beyond what the index folds
    itself (lower case, no diacritics): "Ｆｕｌｌ", "ﬁsh", "Straße"; not Chinese with full-width punctuation."""
    if not isinstance(texts, str):
        return False
    if texts.isascii():
        return "\\u" in texts  # a JSON escape in the options: what it stands for is not seen here
    key = hash(texts)
    seen = _REFOLDS_SEEN.get(key)
    if seen is None:
        if len(_REFOLDS_SEEN) >= _REFOLDS_SEEN_MAX:
            _REFOLDS_SEEN.clear()
        seen = _REFOLDS_SEEN[key] = _words_refold(texts)
    return seen


def _words_refold(texts: str) -> bool:
    if unicodedata.is_normalized("NFKC", texts) and texts.casefold() == texts.lower():
        return False
    rest = _FOLDED_PUNCTUATION.sub(" ", texts)
    if unicodedata.is_normalized("NFKC", rest) and rest.casefold() == rest.lower():
        return False
    return _WORD.findall(search_fold(rest)) != _WORD.findall(rest.lower())


def _has_words(words: str, *texts: object) -> int:
    """1 when every word (one per line) starts a word of the folded texts — the index's prefix search, folded."""
    found = set(_WORD.findall(_without_marks(search_fold("\n".join(t for t in texts if isinstance(t, str))))))
    return int(all(any(t.startswith(w) for t in found) for w in words.split("\n")))


# The last answer: (connection, benchmark, its item count and texts version) and the ids of the benchmark's items
# whose texts refold. Typing a search asks again at every letter; a change to the benchmark's texts (an item added,
# edited or removed, by any connection: migration 0019 keeps the version) makes the next search ask the items
# afresh — a verdict does not (at a million items, asking costs a second).
_REFOLDING: list[object] = [None, None]


def _refolding_items(ws: Workspace, benchmark_id: int) -> str:
    """The ids (a JSON array) of the benchmark's items that the index cannot find by folded words."""
    conn = ws.conn
    version = conn.execute(
        "SELECT items, texts_version FROM benchmark_counts WHERE benchmark_id = ?", (benchmark_id,)
    ).fetchone()
    key = (conn, benchmark_id, version)
    if _REFOLDING[0] != key:  # the connection itself is held, so its id cannot be reused by another one
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM items WHERE benchmark_id = ? "
                "AND vlmdesk_search_refolds(question || char(10) || coalesce(hint, '') || char(10) || options)",
                (benchmark_id,),
            )
        ]
        _REFOLDING[:] = [key, json.dumps(ids)]
    return str(_REFOLDING[1])


def _register_functions(conn: sqlite3.Connection) -> None:
    """Once per connection: SQLite refuses to redefine a function while one of its statements is unfinished."""
    try:
        conn.execute("SELECT vlmdesk_search_words('', '', '', '')").fetchone()
        return
    except sqlite3.OperationalError:
        pass
    conn.create_function("vlmdesk_search_fold", 1, _sql_fold, deterministic=True)
    conn.create_function("vlmdesk_search_refolds", 1, _refolds, deterministic=True)
    conn.create_function("vlmdesk_search_words", 4, _has_words, deterministic=True)


def _search_sql(ws: Workspace, benchmark_id: int, typed: str) -> tuple[str, list[object]]:
    """The condition on item i for a search: words by the index (plus the items it cannot fold), and text in
    scripts without spaces, or punctuation only, as a substring of the folded texts."""
    if _SURROGATE.search(typed):  # no stored text holds a lone surrogate (nor could SQLite be given one)
        return "0", []
    _register_functions(ws.conn)
    text = search_fold(typed)
    words = _WORD.findall(_without_marks(text))  # "İ" folds to "i" and a combining dot, which is no word break
    if words and not _SPACELESS.search(text):
        # Every word as a prefix, all required; each quoted, so nothing typed is read as FTS syntax (quotes, NEAR,
        # AND, *, -, ^, column filters). Over the same texts as the index (the view), never the options' JSON.
        return (
            "i.id IN (SELECT rowid FROM item_search WHERE item_search MATCH ? UNION ALL "
            "SELECT t.id FROM item_search_texts t WHERE t.id IN (SELECT value FROM json_each(?)) "
            "AND vlmdesk_search_words(?, t.question, t.hint, t.options))",
            [" ".join(f'"{w}"*' for w in words), _refolding_items(ws, benchmark_id), "\n".join(words)],
        )
    # instr, not LIKE: LIKE reads its pattern up to a NUL, so "\0" would match everything.
    return (
        "EXISTS (SELECT 1 FROM item_search_texts t WHERE t.id = i.id AND ("
        "instr(vlmdesk_search_fold(t.question), ?) OR instr(vlmdesk_search_fold(coalesce(t.hint, '')), ?) "
        "OR instr(vlmdesk_search_fold(coalesce(t.options, '')), ?)))",
        [text] * 3,
    )


def _where(ws: Workspace, benchmark_id: int, f: ItemFilter) -> tuple[str, list[object]]:
    # Given ids, the listing is read by them (rowid seeks), never by walking the benchmark's index: "+" keeps the
    # planner off the benchmark's index, which at a million items costs a million steps for a few thousand ids.
    sql = ["+i.benchmark_id = ?" if f.only_ids is not None else "i.benchmark_id = ?"]
    params: list[object] = [benchmark_id]
    for column, value in zip(schema.FACETS, (f.category, f.l2_category, f.split)):
        if value is not None:
            sql.append(f"coalesce(i.{column}, '') = ?")
            params.append(value)
    text = f.text[:MAX_SEARCH_CHARS].strip()
    if text:
        condition, values = _search_sql(ws, benchmark_id, text)
        sql.append(condition)
        params += values
    if f.only_ids is not None:
        sql.append("i.id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(f.only_ids)))
    if f.exclude_ids:
        sql.append("i.id NOT IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(f.exclude_ids)))
    if f.without_any_verdict:
        sql.append("NOT EXISTS (SELECT 1 FROM review_standing s WHERE s.item_id = i.id)")
    if f.without_verdict_by is not None:
        sql.append("NOT EXISTS (SELECT 1 FROM review_standing s WHERE s.item_id = i.id AND s.annotator = ?)")
        params.append(f.without_verdict_by)
    if f.run_result == "none":
        sql.append("NOT EXISTS (SELECT 1 FROM run_item_results k WHERE k.run_id = ? AND k.item_id = i.id)")
        params.append(_run_id(f))
    # Any other result: the listing is driven by the kept results (_from), which hold it per (run, item).
    return " AND ".join(sql), params


def _run_id(f: ItemFilter) -> int:
    return -1 if f.run_id is None else int(f.run_id)


def _from(f: ItemFilter) -> tuple[str, str, list[object]]:
    """(FROM clause, the (position, id) keyset columns, parameters). A run-result filter reads the run's kept results
    of that result in file order by their index (migration 0020): rare and common results list equally fast."""
    if f.run_result is None or f.run_result == "none":
        return "items i", "i.position, i.id", []
    return (
        "run_item_results k JOIN items i ON i.id = k.item_id AND k.run_id = ? AND k.result = ?",
        "k.position, k.item_id",
        [_run_id(f), f.run_result],
    )


def _run_result_sql(run_id: int | None) -> str:
    if run_id is None:
        return "'none'"
    return (
        f"coalesce((SELECT r.result FROM run_item_results r WHERE r.run_id = {int(run_id)} AND r.item_id = i.id), "
        "'none')"
    )


def run_results(ws: Workspace, run_ids: list[int]) -> dict[int, dict[int, str]]:
    """item id -> {run id: one of RUN_RESULTS} for every item a run has a stored pass of (the run's own scoring)."""
    found: dict[int, dict[int, str]] = {}
    for run_id in run_ids:
        rows = ws.conn.execute(
            "SELECT item_id, result FROM run_item_results WHERE run_id = ? ORDER BY item_id", (run_id,)
        )
        for item_id, result in rows:
            found.setdefault(item_id, {})[run_id] = result
    return found


def count_items(ws: Workspace, benchmark_id: int, f: ItemFilter = ItemFilter()) -> int:
    if f.exclude_ids and f.only_ids is None:
        # "Not reviewed (by me)": the items matching less the excluded ones matching. The excluded are the few
        # (verdicts), so with no other filter this is a kept count less an index read per excluded item.
        rest = replace(f, exclude_ids=None)
        return count_items(ws, benchmark_id, rest) - count_items(
            ws, benchmark_id, replace(rest, only_ids=f.exclude_ids)
        )
    no_text = not f.text[:MAX_SEARCH_CHARS].strip()
    if f == ItemFilter(run_id=f.run_id, text=f.text) and no_text:
        row = ws.conn.execute("SELECT items FROM benchmark_counts WHERE benchmark_id = ?", (benchmark_id,)).fetchone()
        return int(row[0]) if row else 0  # kept by triggers (migration 0015): a million items are not counted
    if f == ItemFilter(run_id=f.run_id, text=f.text, run_result=f.run_result) and no_text:
        # A run's items are its benchmark's: the kept results alone, an index range (migration 0020); the items it
        # never asked are the others.
        of_result = " AND result = ?" if f.run_result != "none" else ""  # an index range of (run, result)
        (run_rows,) = ws.conn.execute(
            f"SELECT count(*) FROM run_item_results WHERE run_id = ?{of_result} "
            "AND (SELECT benchmark_id FROM runs WHERE id = run_item_results.run_id) = ?",
            (_run_id(f), *([f.run_result] if of_result else []), benchmark_id),
        ).fetchone()
        if of_result:
            return int(run_rows)
        return count_items(ws, benchmark_id, ItemFilter()) - int(run_rows)
    where, params = _where(ws, benchmark_id, f)
    source, _, source_params = _from(f)
    return int(ws.conn.execute(f"SELECT count(*) FROM {source} WHERE {where}", source_params + params).fetchone()[0])


def item_page(
    ws: Workspace,
    benchmark_id: int,
    f: ItemFilter = ItemFilter(),
    *,
    after: tuple[int, int] | None = None,
    limit: int = 200,
) -> list[ItemRow]:
    """Up to `limit` rows in file order, starting after (position, id) `after` — keyset paging stays fast at depth."""
    where, params = _where(ws, benchmark_id, f)
    source, key, source_params = _from(f)
    if after is not None:
        where += f" AND ({key}) > (?, ?)"
        params += list(after)
    sql = (
        f"SELECT i.id, i.position, i.source_index, i.category, i.l2_category, i.split, i.answer, "
        f"json_array_length(i.options), i.image_sha256, i.question, {_run_result_sql(f.run_id)} "
        f"FROM {source} WHERE {where} ORDER BY {key} LIMIT ?"
    )
    return [ItemRow(*r) for r in ws.conn.execute(sql, source_params + params + [limit])]


def facet_values(ws: Workspace, benchmark_id: int) -> dict[str, list[str]]:
    """The distinct categories, L2 categories and splits of a benchmark ('' stands for none), in order. Each next
    value is one seek in the column's index (migration 0019): a million items with 20 categories cost 20 seeks."""
    out = {}
    for column in schema.FACETS:
        value = f"coalesce({column}, '')"
        rows = ws.conn.execute(
            f"WITH RECURSIVE f(v) AS (SELECT min({value}) FROM items WHERE benchmark_id = ?1 "
            f"UNION ALL SELECT (SELECT min({value}) FROM items WHERE benchmark_id = ?1 AND {value} > f.v) "
            f"FROM f WHERE f.v IS NOT NULL) SELECT v FROM f WHERE v IS NOT NULL",
            (benchmark_id,),
        )
        out[column] = [r[0] for r in rows]
    return out


def item_by_id(ws: Workspace, item_id: int) -> catalog.Item | None:
    row = ws.conn.execute(f"SELECT {catalog.ITEM_COLUMNS} FROM items WHERE id = ?", (item_id,)).fetchone()
    return catalog.with_images(ws, [catalog.item_from_row(row)])[0] if row else None


def runs_of_benchmark(ws: Workspace, benchmark_id: int) -> list[runs.Run]:
    """Runs of one benchmark, newest first."""
    return [r for r in reversed(runs.list_runs(ws)) if r.benchmark_id == benchmark_id]


def item_predictions(
    ws: Workspace, item_id: int, runs_by_id: dict[int, runs.Run] | None = None
) -> list[tuple[runs.Run, list[runs.Prediction]]]:
    """Every run's stored passes for one item, newest run first, passes in order. `runs_by_id` saves re-reading
    the runs (each read counts its predictions) when a caller already holds them."""
    rows = ws.conn.execute(
        f"SELECT {runs.PREDICTION_COLUMNS} FROM predictions WHERE item_id = ? ORDER BY run_id DESC, pass",
        (item_id,),
    ).fetchall()
    by_run: dict[int, list[runs.Prediction]] = {}
    for r in rows:
        by_run.setdefault(r[0], []).append(runs.prediction_from_row(r))
    known = runs_by_id or {}
    found = [(known.get(run_id) or runs.get_run(ws, run_id), passes) for run_id, passes in by_run.items()]
    return [(run, passes) for run, passes in found if run is not None]  # a run deleted since: nothing to show


def run_strategy(ws: Workspace, run_id: int) -> str | None:
    """The run's strategy ("open" for an open run), None for no such run: one primary-key read."""
    row = ws.conn.execute("SELECT strategy FROM runs WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else str(row[0])


def open_answers(ws: Workspace, run_id: int, item_ids: list[int]) -> dict[int, tuple[str, tuple[str, ...]]]:
    """item id -> (the run's answer, pass 0, the item's reference answers) for those of `item_ids` the run answered:
    a primary-key seek of the pass and of the item per id, whatever the run's size (Browse asks it per page)."""
    columns = ", ".join(f"i.{c}" for c in catalog.ITEM_COLUMNS.split(", "))
    rows = ws.conn.execute(
        # CROSS JOIN keeps the ids outermost: left to itself the planner walks every pass of the run instead.
        f"SELECT p.response, {columns} FROM json_each(?) j CROSS JOIN predictions p "
        "ON p.run_id = ? AND p.item_id = j.value AND p.pass = 0 CROSS JOIN items i ON i.id = p.item_id",
        (json.dumps(sorted(set(item_ids))), run_id),
    )
    found = {}
    for response, *item_row in rows:
        item = catalog.item_from_row(tuple(item_row))
        found[item.id] = (response, item.references)
    return found
