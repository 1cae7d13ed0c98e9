"""A run's summary figures kept as passes are stored (migration 0021, issue 34): the report read from the kept sums is
exactly the report counted from the passes — on generated runs in a real workspace, after every write the workspace
knows (passes added, changed, deleted; an item's key, groups, options changed or the item removed; the run's strategy
changed; the run deleted), after a rebuild and after the migration of an older workspace — and reading it costs the
same at any size."""

import itertools
import json
import random
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlite_utils import Database

from db import catalog, open_workspace, runs, schema
from evaluator.analysis import report
from evaluator.scoring import choices, pope
from tests.sqlite_steps import counting_steps

_names = itertools.count()

GROUPS = (None, "", "alpha", "beta", "(none)")
# Texts POPE's official parser reads in every way it can: sentences, commas, the three "no" words, near misses.
RESPONSE_WORDS = ("No", "no", "not", "NO", "No.", "no,", "nope", "Yes", "yes", "is", ".", ",", " ", "", "No,", "\n")


@st.composite
def generated(draw):
    strategy = draw(st.sampled_from(["circular", "vanilla", "pope"]))
    items = []
    for _ in range(draw(st.integers(1, 7))):
        n = 0 if strategy == "pope" else draw(st.integers(2, 4))
        keyed = draw(st.integers(0, 3)) > 0
        groups = tuple(draw(st.sampled_from(GROUPS)) for _ in range(3))
        passes = []
        for _ in range(draw(st.integers(0, n or 1))):
            reading = draw(st.sampled_from(["right", "wrong", "undecided", "Z", "any"]))
            response = "".join(draw(st.lists(st.sampled_from(RESPONSE_WORDS), max_size=6)))
            tokens = draw(st.sampled_from([None, 0, 7, 2**40])), draw(st.sampled_from([None, 3]))
            passes.append((reading, draw(st.integers(0, max(n - 1, 0))), response, draw(st.booleans()), tokens))
        items.append((n, keyed, groups, passes))
    # The order the passes are stored in: a run asks pass 0 first, an import or a resumed run need not.
    return strategy, draw(st.booleans()), draw(st.sampled_from([None, 100])), items, draw(st.randoms())


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    with open_workspace(tmp_path_factory.mktemp("kept-figures") / "ws.sqlite") as ws:
        yield ws


def _store(ws, strategy, full_passes, limit, items, shuffle: random.Random | None = None):
    """A benchmark with these items and a run with these passes, stored in the run's order or shuffled:
    (benchmark id, run id)."""
    with ws.db.atomic():
        bench_id = catalog.insert_benchmark(
            ws,
            name=f"gen-{next(_names)}",
            kind="yesno" if strategy == "pope" else "mcq",
            format="jsonl",
            source="gen",
            source_sha256=f"sha-{next(_names)}",
            meta={"setting": "random"} if strategy == "pope" else {},
        )
        rows = []
        for position, (n, keyed, (category, l2, split), _) in enumerate(items):
            answer = (choices.YES_NO[position % 2] if n == 0 else choices.LETTERS[position % n]) if keyed else None
            options = json.dumps([f"option {j}" for j in range(n)])
            rows.append((bench_id, position, position, f"q{position}", None, options, answer, category, l2, split))
        catalog.insert_items(ws, [(*r, "en", None, 0, "{}") for r in rows])
    config = {"full_passes": full_passes, **({"limit": limit} if limit else {})}
    run_id = runs.create_run(
        ws,
        benchmark_id=bench_id,
        model_spec="baseline:first",
        strategy=strategy,
        prompt_template="{}",
        extractor="rules",
        config=config,
        config_key=f"k{next(_names)}",
        versions={},
        git_revision=None,
        seed=0,
    )
    predictions = []
    for item, (n, _, _, passes) in zip(catalog.list_items(ws, bench_id), items, strict=True):
        for k, (reading, pick, response, likelihood, (prompt_tokens, completion_tokens)) in enumerate(passes):
            order = choices.rotation(n, k) if n else ()
            answer = choices.displayed_answer(item.answer, order)
            keys = choices.answer_keys(n)
            wrong = next((a for a in keys if a != answer), keys[0])
            choice = {"right": answer, "wrong": wrong, "undecided": None, "Z": "Z", "any": keys[pick % len(keys)]}
            picked = choice[reading] if answer is not None or reading in ("undecided", "Z") else keys[pick % len(keys)]
            # A likelihood pass stores the candidate it scored highest (yes or no) as its choice.
            likelihood = likelihood and strategy == "pope" and picked in choices.YES_NO
            stage = "likelihood" if likelihood else ("rules" if picked else "none")
            predictions.append(
                runs.Prediction(
                    *(run_id, item.id, k, order, "prompt", response, answer, picked, stage, None),
                    choices.pass_correct(picked, answer),
                    1.0,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                )
            )
    if shuffle is not None:
        shuffle.shuffle(predictions)
    runs.add_predictions(ws, predictions)
    return bench_id, run_id


def _counted_tokens(ws, run_id):
    """The token usage as the passes say it (prediction_from_row reads a count outside the door's bounds as none)."""
    passes = runs.predictions_of(ws, run_id)
    prompts = [p.prompt_tokens for p in passes if p.prompt_tokens is not None]
    completions = [p.completion_tokens for p in passes if p.completion_tokens is not None]
    said = sum(1 for p in passes if p.prompt_tokens is not None or p.completion_tokens is not None)
    return runs.TokenUsage(said, sum(prompts) if prompts else None, sum(completions) if completions else None)


def assert_kept(ws, run_id):
    """The kept report is the counted one, to the byte of its JSON; and the runs list's line follows from it."""
    kept, counted = report.run_report(ws, run_id), report._report(ws, run_id, None, kept=False)
    assert kept is not None and counted is not None
    assert kept.to_json() == counted.to_json()
    assert json.dumps(kept.to_json()) == json.dumps(counted.to_json())
    usage = _counted_tokens(ws, run_id)
    assert runs.token_usage(ws, run_id) == usage
    assert kept.tokens == (usage if usage.passes else None)
    return kept


def _kept_tables(ws):
    return {
        table: sorted(ws.conn.execute(f"SELECT * FROM {table}"), key=repr)
        for table in ("run_item_figures", "run_figures", "run_group_figures", "benchmark_groups", "run_counts")
    }


def _without_empty_rows(tables):
    """The kept tables less the group rows a removal left at zero (a rebuild does not make them)."""
    sums = {"run_group_figures": 4, "benchmark_groups": 3}  # where a row's counts begin
    return {table: [r for r in rows if table not in sums or any(r[sums[table] :])] for table, rows in tables.items()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=generated())
def test_the_kept_report_is_the_report_counted_from_the_passes(ws, case):
    strategy, full_passes, limit, items, shuffle = case
    _, run_id = _store(ws, strategy, full_passes, limit, items, shuffle)
    kept = assert_kept(ws, run_id)
    assert report.run_summary(ws, run_id).questions == kept.questions == len(items)


def test_the_generated_runs_reach_every_figure(ws):
    """Nothing kept is always zero on the generated runs: a circular full-passes run with consistent, inconsistent and
    unasked items, undecided passes, tokens, and POPE readings in every cell of both parsers' tables."""
    right = ("right", 0, "A", False, (5, 3))
    circular = [(3, True, ("c", "l", "s"), [right, right, right]), (3, True, (None, "", "s"), [right, right])]
    circular += [(2, True, ("c", "l", "t"), [right, ("any", 0, "", False, (None, 2))])]
    circular += [(2, False, ("d", "l", "t"), [("undecided", 0, "", False, (None, None))])]
    _, run_id = _store(ws, "circular", True, None, circular)
    sums = runs.kept_figures(ws, runs.get_run(ws, run_id)).sums
    assert all(sums[k] for k in ("vanilla", "circular", "unasked", "complete", "consistent", "undecided_vanilla"))
    assert sums["complete"] > sums["consistent"] and sums["token_passes"] == 7
    assert_kept(ws, run_id)
    yesno = [
        (0, True, ("c", "l", "s"), [(reading, 0, response, likelihood, (None, None))])
        for reading in ("right", "wrong", "undecided")
        for response in ("No, it is not.", "Yes. No", "There is no cat", "nope")
        for likelihood in (False, True)
    ]
    _, run_id = _store(ws, "pope", False, None, yesno * 2)
    sums = runs.kept_figures(ws, runs.get_run(ws, run_id)).sums
    assert all(sums[f"{p}_{c}"] for p in ("official", "strict") for c in ("tp", "fp", "tn", "fn"))
    assert sums["strict_unknown"]  # the official parser reads every text, and a likelihood pass always chose
    assert_kept(ws, run_id)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("Nonte ,.!\nY\u00a0ä"), max_size=24) | st.text(max_size=30))
def test_the_official_parser_in_sql_is_the_python_rule(text):
    conn = sqlite3.connect(":memory:")
    (reading,) = conn.execute(f"SELECT {schema.pope_official_sql(':t')}", {"t": text}).fetchone()
    assert reading == pope.parse_official(text)


def test_the_kept_figures_follow_every_write_to_passes_items_and_runs(ws):
    items = [
        (3, True, ("c", "l", "s"), [("right", 0, "", False, (1, 1))] * 3),
        (3, True, ("c", None, "s"), [("right", 0, "", False, (None, 4)), ("wrong", 0, "", False, (None, None))]),
        (2, True, ("d", "l", "t"), [("right", 0, "", False, (None, None))] * 2),
        (2, False, ("d", "l", "t"), [("undecided", 0, "", False, (None, None))]),
        (4, True, ("e", "m", "t"), []),
    ]
    bench_id, run_id = _store(ws, "circular", True, None, items)
    ids = [i.id for i in catalog.list_items(ws, bench_id)]
    writes = [
        # A pass read again (a re-reading stored in place): wrong → right, then undecided.
        "UPDATE predictions SET choice = 'A', correct = 1 WHERE run_id = {run} AND item_id = {i1} AND pass = 1",
        "UPDATE predictions SET choice = NULL, correct = 0, prompt_tokens = 9 WHERE run_id = {run} AND item_id = {i0}",
        # A pass taken away (right → pending), and a pass 0 taken away.
        "DELETE FROM predictions WHERE run_id = {run} AND item_id = {i2} AND pass = 1",
        "DELETE FROM predictions WHERE run_id = {run} AND item_id = {i1} AND pass = 0",
        # The key corrected, taken away and given; groups renamed; options changed.
        "UPDATE items SET answer = 'B' WHERE id = {i2}",
        "UPDATE items SET answer = NULL, category = 'x' WHERE id = {i0}",
        "UPDATE items SET answer = 'A', l2_category = '' WHERE id = {i3}",
        "UPDATE items SET split = 'u', category = NULL WHERE id = {i4}",
        'UPDATE items SET options = \'["a", "b"]\' WHERE id = {i1}',
        # An item removed, then the run asked as VanillaEval.
        "DELETE FROM items WHERE id = {i2}",
        "UPDATE runs SET strategy = 'vanilla' WHERE id = {run}",
    ]
    names = {"run": run_id, **{f"i{k}": item_id for k, item_id in enumerate(ids)}}
    for write in writes:
        with ws.db.atomic():
            ws.conn.execute(write.format(**names))
        assert_kept(ws, run_id)
    before = _without_empty_rows(_kept_tables(ws))
    with ws.db.atomic():
        schema.rebuild_run_results(ws.db)
        schema.rebuild_run_figures(ws.db)
    assert _kept_tables(ws) == before
    assert_kept(ws, run_id)
    with ws.db.atomic():  # the run deleted: its passes go, and its figures with them
        ws.conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
    for table in ("run_item_figures", "run_figures", "run_group_figures"):
        assert ws.conn.execute(f"SELECT count(*) FROM {table} WHERE run_id = ?", (run_id,)).fetchone()[0] == 0
    assert runs.token_usage(ws, run_id) == runs.TokenUsage(0, None, None)


def test_a_run_whose_limit_cuts_its_benchmark_is_counted_from_its_passes(ws):
    """The kept sums are over the whole benchmark; a run asked on a prefix of it is counted (and is small)."""
    items = [(2, True, ("c", "l", "s"), [("right", 0, "", False, (None, None))] * 2) for _ in range(5)]
    bench_id, run_id = _store(ws, "circular", False, 3, items)
    run = runs.get_run(ws, run_id)
    assert runs.kept_figures(ws, run) is None
    assert report.run_report(ws, run_id).questions == 3
    with ws.db.atomic():
        ws.conn.execute("DELETE FROM items WHERE benchmark_id = ? AND position >= 3", (bench_id,))
    assert runs.kept_figures(ws, run) is not None  # the limit no longer cuts anything: read as kept
    assert_kept(ws, run_id)


def _schema_of_0020() -> Database:
    """A workspace in memory as migration 0020 left it."""
    db = Database(memory=True)
    schema.migrations.apply(db, stop_before="0021_run_figures")
    return db


def _rewind_to_0020(db: Database) -> None:
    """Make a workspace one that migration 0020 left: the later migrations' tables, columns, indexes and triggers go,
    0020's triggers come back (0021 replaces some), and the later migrations are pending again."""
    objects = "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type = 'table'"
    old = _schema_of_0020()
    before = {name: sql for _, name, sql in old.execute(objects)}
    now = {name: (kind, sql) for kind, name, sql in db.execute(objects)}
    for name, (kind, sql) in now.items():
        if kind == "table" and name in before:  # columns a later migration added go
            kept = {c[1] for c in old.execute(f"PRAGMA table_info({name})")}
            for (column,) in db.execute(f"SELECT name FROM pragma_table_info('{name}')").fetchall():
                if column not in kept:
                    db.execute(f"ALTER TABLE {name} DROP COLUMN {column}")
        elif before.get(name) != sql and db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone():
            db.execute(f"DROP {kind.upper()} {name}")
    for kind, name, sql in old.execute(objects):
        if kind != "table" and now.get(name, ("", ""))[1] != sql:
            db.execute(sql)
    applied = [name for (name,) in old.execute("SELECT name FROM _sqlite_migrations")]
    db.execute(f"DELETE FROM _sqlite_migrations WHERE name NOT IN ({', '.join('?' for _ in applied)})", applied)
    db.execute(f"PRAGMA user_version = {len(applied)}")


def test_the_migration_derives_the_figures_of_an_older_workspace(tmp_path):
    path = tmp_path / "old.sqlite"
    right, wrong = ("right", 0, "No.", False, (3, 4)), ("wrong", 0, "not", False, (None, None))
    with open_workspace(path) as ws:
        made = [_store(ws, "circular", True, None, [(3, True, ("c", "l", "s"), [right, right, right])] * 3)]
        made.append(
            _store(ws, "vanilla", False, None, [(2, True, ("c", None, "s"), [wrong]), (2, False, GROUPS[:3], [])])
        )
        made.append(
            _store(ws, "pope", False, None, [(0, True, ("c", "l", "s"), [right]), (0, True, GROUPS[2:], [wrong])])
        )
        expected = {run_id: report._report(ws, run_id, None, kept=False).to_json() for _, run_id in made}
    db = Database(str(path))
    _rewind_to_0020(db)
    db.conn.commit()
    db.close()
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
        for _, run_id in made:
            assert runs.kept_figures(ws, runs.get_run(ws, run_id)) is not None
            assert report.run_report(ws, run_id).to_json() == expected[run_id]
            assert_kept(ws, run_id)
            # The migrated figures are kept on: a pass taken away and stored again.
            first = "SELECT rowid, * FROM predictions WHERE run_id = ? ORDER BY item_id, pass LIMIT 1"
            row = ws.conn.execute(first, (run_id,)).fetchone()
            with ws.db.atomic():
                ws.conn.execute("DELETE FROM predictions WHERE rowid = ?", (row[0],))
            assert_kept(ws, run_id)
            with ws.db.atomic():
                ws.conn.execute(f"INSERT INTO predictions VALUES ({', '.join('?' for _ in row[1:])})", row[1:])
            assert report.run_report(ws, run_id).to_json() == expected[run_id]


def _bulk_run(ws, n_items: int) -> int:
    """A finished circular run of n_items items over 6 categories, 3 L2 abilities and 2 splits: its id."""
    rows = [
        (f"c{k % 6}", f"l{k % 3}", f"s{k % 2}", [("right", 0, "", False, (None, None))] * (1 + k % 3))
        for k in range(n_items)
    ]
    _, run_id = _store(ws, "circular", False, None, [(3, True, (c, l2, s), passes) for c, l2, s, passes in rows])
    return run_id


def _steps(ws, read, run_id: int) -> int:
    with counting_steps(ws.conn, every=10) as steps:
        read(ws, run_id)
    return steps.count


def test_a_report_and_a_runs_list_line_cost_the_same_at_any_size(tmp_path):
    """Counted in SQLite virtual-machine steps (a deterministic figure, not a time): the report and the runs list's
    line of a run of 5,000 items take no more steps than those of a run of 500."""
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        small, large = _bulk_run(ws, 500), _bulk_run(ws, 5_000)
        for read in (report.run_report, report.run_summary):
            at_small, at_large = _steps(ws, read, small), _steps(ws, read, large)
            assert at_large <= 1.1 * at_small, (read.__name__, at_small, at_large)
        # The counted way grows with the run: the step count sees the difference.
        counted = [_steps(ws, lambda ws, r: report._report(ws, r, None, kept=False), r) for r in (small, large)]
        assert counted[1] > 5 * counted[0]
        assert_kept(ws, small)
        assert_kept(ws, large)


def _circular_run(path, stop_before: str | None = None) -> tuple[sqlite3.Connection, int, list[int]]:
    """A workspace of 4,000 four-option items (6 categories, 4 L2 abilities, 2 splits) and a CircularEval run on
    them, migrated up to `stop_before`: its connection (a workspace's pragmas), the run and the items in order."""
    db = Database(str(path))
    schema.migrations.apply(db, stop_before=stop_before)
    conn = db.conn
    conn.execute("PRAGMA foreign_keys = ON")
    with conn:
        conn.execute(
            "INSERT INTO benchmarks (name, kind, format, source, source_sha256, rows_read, imported_at) "
            "VALUES ('b', 'mcq', 'jsonl', 'gen', 'sha', 0, 'now')"
        )
        conn.executemany(
            "INSERT INTO items (benchmark_id, position, source_index, question, options, answer, category, "
            "l2_category, split) VALUES (1, ?, ?, 'q', ?, 'A', ?, ?, ?)",
            [(k, k, json.dumps(list("abcd")), f"c{k % 6}", f"l{k % 4}", f"s{k % 2}") for k in range(4_000)],
        )
        run_id = conn.execute(
            "INSERT INTO runs (benchmark_id, model_spec, strategy, prompt_template, extractor, config_key, status, "
            "created_at, updated_at) VALUES (1, 'baseline:first', 'circular', '{}', 'rules', 'k', 'running', 'now', "
            "'now')"
        ).lastrowid
    assert run_id is not None
    return conn, run_id, [r[0] for r in conn.execute("SELECT id FROM items ORDER BY position")]


def _store_steps(conn: sqlite3.Connection, run_id: int, ids: list[int]) -> float:
    """SQLite virtual-machine steps per pass of storing these items' passes as a CircularEval run asks them, wave by
    wave in one transaction, with the tokens a server says: one item in four wrong at pass 0, the others right on all
    four rotations."""
    rows = [
        (run_id, item, k, json.dumps([(j + k) % 4 for j in range(4)]), "A" if n % 4 else "B", int(n % 4 != 0))
        for k in range(4)
        for n, item in enumerate(ids)
        if k == 0 or n % 4
    ]
    with counting_steps(conn, every=1) as steps, conn:
        conn.executemany(
            "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, answer, choice, "
            "stage, correct, created_at, prompt_tokens, completion_tokens) "
            "VALUES (?, ?, ?, ?, 'p', 'A', 'A', ?, 'rules', ?, 'now', 120, 3)",
            rows,
        )
    return steps.count / len(rows)


def test_storing_a_pass_costs_what_it_cost_before_the_kept_figures_at_any_size(tmp_path):
    """Counted in SQLite virtual-machine steps (deterministic, not a time): a stored pass costs the same whether its
    run holds 200 items' passes or 2,000 (every kept figure is written by index seeks), and keeping the figures costs
    it at most 1.4× what migration 0020's kept results alone cost, measured here on the same passes (1.3× when this
    was written; the first kept figures cost 3.5×)."""
    new, run_id, ids = _circular_run(tmp_path / "new.sqlite")
    _store_steps(new, run_id, ids[:200])  # the statements are prepared outside the counts
    small = _store_steps(new, run_id, ids[200:400])
    _store_steps(new, run_id, ids[400:2_200])
    large = _store_steps(new, run_id, ids[2_200:2_400])
    assert large <= 1.1 * small, (small, large)
    old, run_id, ids = _circular_run(tmp_path / "old.sqlite", stop_before="0021_run_figures")
    _store_steps(old, run_id, ids[:200])
    before = _store_steps(old, run_id, ids[200:400])
    assert small <= 1.4 * before, (before, small)
    assert _kept_as_rebuilt(new)


def _kept_as_rebuilt(conn: sqlite3.Connection) -> bool:
    """The run's kept results and figures are those a rebuild derives."""
    tables = ("run_item_results", "run_item_figures", "run_group_figures", "run_counts")
    kept = {t: sorted(conn.execute(f"SELECT * FROM {t}")) for t in tables}
    with conn:
        schema.rebuild_run_figures(Database(conn))
    return kept == {t: sorted(conn.execute(f"SELECT * FROM {t}")) for t in tables}
