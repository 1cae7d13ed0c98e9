"""Open benchmarks, open runs, the arena's pairs and votes, their merge between copies, and `vlmdesk arena`."""

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from sqlite_utils import Database

from annotation import arena, sync
from db import catalog, runs, schema
from db.workspace import open_workspace
from evaluator.formats.importers import InputError, import_benchmark
from tests.factories import png_bytes
from vlmdesk.cli import main

pytestmark = pytest.mark.base  # also run in the base install (.ci/base-install)

MODELS = ("baseline:first", "baseline:random", "baseline:frequent")


def write_open(path: Path, n: int = 6) -> Path:
    (path.parent / "img.png").write_bytes(png_bytes())
    lines = [
        {
            "index": i,
            "question": f"Describe picture {i}.",
            "image": "img.png",
            **({"answer": f"ref {i}"} if i % 2 else {}),
        }
        for i in range(1, n + 1)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def cli(capsys, ws_path, *args) -> tuple[int, str, str]:
    code = main(["--workspace", str(ws_path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def open_ws(tmp_path, capsys):
    """A workspace with an open benchmark `o` (6 items) and three finished baseline runs on it (ids 1-3)."""
    ws_path = tmp_path / "ws.sqlite"
    src = write_open(tmp_path / "o.jsonl")
    assert cli(capsys, ws_path, "import", str(src), "--name", "o")[0] == 0
    for model in MODELS:
        assert cli(capsys, ws_path, "run", "--bench", "o", "--model", model, "--json")[0] == 0
    return ws_path


# ------------------------------------------------------------------------------------------------ migration
def test_migration_0012_keeps_every_row_and_lets_a_benchmark_be_open(tmp_path):
    path = tmp_path / "old.sqlite"
    db = Database(str(path))
    schema.migrations.apply(db, stop_before="0012_arena")
    old = len(schema.migrations.applied(db))
    db.execute(f"PRAGMA user_version = {old}")
    db.conn.commit()
    db.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA foreign_keys = ON")
    with conn:
        conn.execute(
            "INSERT INTO benchmarks (id, name, kind, format, source, source_sha256, rows_read, imported_at) "
            "VALUES (1, 'old', 'mcq', 'jsonl', 'old.jsonl', 'abc', 1, '2024-01-01')"
        )
        conn.execute(
            "INSERT INTO items (id, benchmark_id, position, source_index, question, options, answer) "
            "VALUES (1, 1, 1, 7, 'Old?', '[\"x\", \"y\"]', 'B')"
        )
        conn.execute(
            "INSERT INTO runs (id, benchmark_id, model_spec, strategy, prompt_template, extractor, config_key, "
            "status, created_at, updated_at) VALUES (1, 1, 'baseline:first', 'vanilla', '{}', 'rules', 'k', "
            "'finished', 'now', 'now')"
        )
        conn.execute(
            "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, stage, created_at) "
            "VALUES (1, 1, 0, '[0, 1]', 'p', 'A', 'rules', 'now')"
        )
        conn.execute("INSERT INTO reviews (item_id, annotator, verdict, created_at) VALUES (1, 'ann', 'ok', 'now')")
    conn.close()
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
        assert "0012_arena" in [m.name for m in schema.migrations.applied(ws.db)]
        # Nothing that pointed at the rebuilt table cascaded away, and the keys still hold and still cascade.
        for table, n in (("benchmarks", 1), ("items", 1), ("runs", 1), ("predictions", 1), ("reviews", 1)):
            assert ws.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == n, table
        assert ws.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert ws.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert ws.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        with ws.db.atomic():
            ws.conn.execute(
                "INSERT INTO benchmarks (name, kind, format, source, source_sha256, rows_read, imported_at) "
                "VALUES ('new', 'open', 'jsonl', 'n.jsonl', 'def', 0, 'now')"
            )
        with pytest.raises(sqlite3.IntegrityError):
            ws.conn.execute(
                "INSERT INTO benchmarks (name, kind, format, source, source_sha256, rows_read, imported_at) "
                "VALUES ('bad', 'essay', 'jsonl', 'b.jsonl', 'ghi', 0, 'now')"
            )
        ws.conn.rollback()
        with ws.db.atomic():
            ws.conn.execute("DELETE FROM benchmarks WHERE name = 'old'")
        assert ws.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 0  # ON DELETE CASCADE still works


# ------------------------------------------------------------------------------------------- open benchmarks
def test_a_jsonl_without_options_imports_as_an_open_benchmark_with_references(tmp_path):
    src = write_open(tmp_path / "open.jsonl", 3)
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        report = import_benchmark(ws, src)  # the format is recognised without --format
        assert (report.kind, report.format, report.questions) == ("open", "jsonl", 3)
        bench = catalog.benchmark_by_name(ws, "open")
        assert bench is not None and bench.kind == "open"
        items = catalog.list_items(ws, bench.id)
        assert [(i.options, i.answer) for i in items] == [((), None)] * 3  # a reference is no answer key
        assert [i.references for i in items] == [("ref 1",), (), ("ref 3",)]


def test_a_file_mixing_open_and_multiple_choice_lines_is_refused_whole(tmp_path):
    src = write_open(tmp_path / "mixed.jsonl", 2)
    with open(src, "a") as f:
        f.write(json.dumps({"index": 9, "question": "Which?", "options": ["a", "b"], "image": "img.png"}) + "\n")
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        with pytest.raises(InputError) as caught:
            import_benchmark(ws, src)
        assert str(caught.value).startswith(f"{src}:3: options: given, but this file's first question (line 1)")
        assert catalog.list_benchmarks(ws) == []


def test_an_open_run_generates_free_answers_that_are_neither_extracted_nor_scored(tmp_path, capsys, tiny_llava_dir):
    ws_path = tmp_path / "ws.sqlite"
    src = write_open(tmp_path / "o.jsonl", 3)
    assert cli(capsys, ws_path, "import", str(src), "--name", "o")[0] == 0
    code, out, err = cli(capsys, ws_path, "run", "--bench", "o", "--model", f"hf:{tiny_llava_dir}", "--json")
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    with open_workspace(ws_path) as ws:
        run = runs.get_run(ws, run_id)
        assert run is not None and run.strategy == "open" and run.config["max_new_tokens"] == 256
        preds = runs.predictions_of(ws, run_id)
        assert len(preds) == 3 and {p.pass_ for p in preds} == {0}
        assert {(p.choice, p.stage, p.correct, p.option_order) for p in preds} == {(None, "none", None, ())}
        assert all(p.prompt.startswith("Describe picture") for p in preds)  # asked as written: no option lines
        assert any(p.response.strip() for p in preds)  # a random-weight model still says something
    code, out, _ = cli(capsys, ws_path, "report", str(run_id))
    assert code == 0 and "exact_match" in out and "undecided" not in out
    assert "left out: 1 answer(s) without references" in out  # items 1 and 3 have a reference, 2 has none
    code, out, _ = cli(capsys, ws_path, "report", str(run_id), "--json")
    found = json.loads(out)
    assert code == 0 and found["strategy"] == "open" and found["unreferenced"] == 1
    assert set(found["metrics"]) == {
        "exact_match",
        "word_match",
        "anls",
        "cider",
    }  # one reference each: no VQA accuracy
    assert set(found["metric_items"].values()) == {2}
    code, _, err = cli(capsys, ws_path, "run", "--bench", "o", "--model", f"hf:{tiny_llava_dir}", "--likelihood")
    assert code == 2 and "no candidates to score" in err


# ----------------------------------------------------------------------------------------------------- pairs
def test_pairs_are_drawn_per_item_over_model_pairs_with_recorded_sides(open_ws, capsys, tmp_path):
    copy = tmp_path / "copy.sqlite"
    shutil.copy(open_ws, copy)
    code, out, err = cli(capsys, open_ws, "arena", "pairs", "--bench", "o", "--runs", "1", "2", "3", "--per-item", "2")
    assert code == 0, err
    drawn = json.loads(
        cli(capsys, copy, "arena", "pairs", "--bench", "o", "--runs", "1", "2", "3", "--per-item", "2", "--json")[1]
    )
    assert drawn["drawn"] == 12 and drawn["queue"] == 12
    with open_workspace(open_ws) as ws:
        queue = arena.pairs(ws)
        assert [p.position for p in queue] == list(range(1, 13))
        by_item = Counter(p.item_id for p in queue)
        assert set(by_item.values()) == {2}
        for item_id in by_item:
            mine = [frozenset((p.left_run_id, p.right_run_id)) for p in queue if p.item_id == item_id]
            assert len(set(mine)) == 2  # two different model pairs per item
        # The same seed draws the same pairs and sides on a copy; both sides occur for some run.
        assert [(p.item_id, p.left_run_id, p.right_run_id) for p in queue] == [
            (p["item_id"], p["left_run"], p["right_run"]) for p in drawn["pairs"]
        ]
        assert {p.left_run_id for p in queue} == {1, 2, 3}
        shown = arena.shown(ws, queue[0])
        assert {shown.left_model, shown.right_model} <= set(MODELS) and shown.left_answer == "A"
    # More pairs append to the queue.
    code, out, _ = cli(capsys, open_ws, "arena", "pairs", "--bench", "o", "--runs", "1", "3", "--seed", "5")
    assert code == 0 and "the queue holds 18" in out


def test_pairs_refuse_one_model_twice_unknown_runs_and_bad_counts(open_ws, capsys, tmp_path):
    with open_workspace(open_ws) as ws:
        runs.create_run(
            ws,
            benchmark_id=1,
            model_spec="baseline:first",
            strategy="open",
            prompt_template="{}",
            extractor="rules",
            config={},
            config_key="other",
            versions={},
            git_revision=None,
            seed=0,
        )
    code, _, err = cli(capsys, open_ws, "arena", "pairs", "--bench", "o", "--runs", "1", "4")
    assert code == 2 and err.startswith("error: runs 1 and 4 are both 'baseline:first'")
    code, _, err = cli(capsys, open_ws, "arena", "pairs", "--bench", "o", "--runs", "1", "99")
    assert code == 2 and "no run 99" in err
    with pytest.raises(SystemExit) as exited:
        cli(capsys, open_ws, "arena", "pairs", "--bench", "o", "--runs", "1", "2", "--per-item", "0")
    assert exited.value.code == 2 and "--per-item: must be at least 1" in capsys.readouterr().err
    with open_workspace(open_ws) as ws:
        assert arena.pairs(ws) == []


# ----------------------------------------------------------------------------------------------------- votes
def test_votes_append_and_undo_withdraws_and_a_newer_vote_corrects(open_ws, capsys):
    assert cli(capsys, open_ws, "arena", "pairs", "--bench", "o", "--runs", "1", "2", "3")[0] == 0
    with open_workspace(open_ws) as ws:
        first, second = arena.pairs(ws)[:2]
        assert arena.progress(ws, 1, "ana") == {"pairs": 6, "voted": 0, "left": 6}
        arena.add_vote(ws, first.id, "ana", "left", note="clearer", seconds=4.0)
        arena.add_vote(ws, first.id, "ana", "tie")  # a correction
        arena.add_vote(ws, second.id, "ana", "bothbad")
        arena.add_vote(ws, second.id, "bo", "right")
        withdrawn = arena.undo_last(ws, "ana")
        assert withdrawn is not None and withdrawn.pair_id == second.id
        standing = arena.standing_votes(ws, annotator="ana")
        assert [(v.pair_id, v.vote) for v in standing] == [(first.id, "tie")]
        assert arena.progress(ws, 1, "ana") == {"pairs": 6, "voted": 1, "left": 5}
        assert [p.id for p in arena.left_for(ws, 1, "ana")][0] == second.id
        assert [v.vote for v in arena.history(ws, second.id, "ana")] == ["bothbad", "undo"]  # never bo's
        assert ws.conn.execute("SELECT count(*) FROM arena_votes").fetchone()[0] == 5  # nothing erased
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            ws.conn.execute("UPDATE arena_votes SET vote = 'left'")
        ws.conn.rollback()
        battles = arena.battles(ws, 1)
        models = {r.id: r.model_spec for r in runs.list_runs(ws)}
        assert [(b.model_a, b.model_b, b.winner) for b in battles] == [
            (models[first.left_run_id], models[first.right_run_id], "tie"),
            (models[second.left_run_id], models[second.right_run_id], "model_b"),
        ]
        with pytest.raises(ValueError):
            arena.add_vote(ws, first.id, "ana", "both")  # type: ignore[arg-type]
        # Deleting a run would cascade to its pairs: a pair with votes stops it, so no vote goes with them.
        with pytest.raises(sqlite3.IntegrityError, match="votes are kept"):
            ws.conn.execute("DELETE FROM runs WHERE id = ?", (first.left_run_id,))
        ws.conn.rollback()
        assert ws.conn.execute("SELECT count(*) FROM arena_votes").fetchone()[0] == 5


def test_votes_made_on_a_copy_merge_back_and_are_rated(open_ws, capsys, tmp_path):
    assert cli(capsys, open_ws, "arena", "pairs", "--bench", "o", "--runs", "1", "2", "3", "--per-item", "3")[0] == 0
    copy = tmp_path / "ana.sqlite"
    shutil.copy(open_ws, copy)
    with open_workspace(copy) as ws:
        queue = arena.pairs(ws)
        models = {r.id: r.model_spec for r in runs.list_runs(ws)}
        for p in queue:  # ana prefers baseline:first, then random
            rank = {"baseline:first": 0, "baseline:random": 1, "baseline:frequent": 2}
            left, right = rank[models[p.left_run_id]], rank[models[p.right_run_id]]
            arena.add_vote(ws, p.id, "ana", "left" if left < right else "right")
        arena.undo_last(ws, "ana")
        arena.add_vote(ws, queue[-1].id, "ana", "tie")
    out_file = tmp_path / "ana.jsonl"
    code, _, err = cli(capsys, copy, "arena", "export-votes", "--annotator", "ana", "--out", str(out_file))
    assert code == 0, err
    lines = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert len(lines) == 18 + 2 and set(lines[0]) == {
        "id",
        "pair",
        "annotator",
        "vote",
        "note",
        "seconds",
        "at",
        "withdraws",
    }
    code, out, _ = cli(capsys, open_ws, "arena", "import-votes", str(out_file), "--json")
    assert code == 0 and json.loads(out)["added"] == 20
    code, out, _ = cli(capsys, open_ws, "arena", "import-votes", str(out_file), "--json")
    assert json.loads(out)["added"] == 0 and json.loads(out)["present"] == 20
    with open_workspace(open_ws) as ws:
        assert len(arena.standing_votes(ws)) == 18
    code, out, err = cli(capsys, open_ws, "arena", "ratings", "--bench", "o", "--bootstrap", "100", "--json")
    assert code == 0, err
    board = json.loads(out)
    assert board["battles"] == 18 and [m["model"] for m in board["models"]][0] == "baseline:first"
    assert board["models"][-1]["model"] == "baseline:frequent"
    for m in board["models"]:
        assert m["lower"] <= m["rating"] <= m["upper"] and m["votes"] == m["wins"] + m["ties"] + m["losses"]
        assert "elo" in m
    # A vote on a pair that this copy never drew is one line of error, and nothing is written.
    stranger = dict(lines[0], id="00000000-0000-4000-8000-000000000000", pair="11111111-1111-4111-8111-111111111111")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(stranger) + "\n")
    code, _, err = cli(capsys, open_ws, "arena", "import-votes", str(bad))
    assert code == 2 and err.startswith(f"error: {bad}:1: pair: no arena pair")


def test_ratings_of_a_battle_file_in_chatbot_arenas_shape(tmp_path, capsys):
    votes = tmp_path / "battles.jsonl"
    rows = [
        {"model_a": "A", "model_b": "B", "winner": "model_a", "judge": "x", "conversation_a": [{"role": "user"}]},
        {"model_a": "B", "model_b": "A", "winner": "model_b"},
        {"model_a": "A", "model_b": "B", "winner": "model_b"},
    ]
    votes.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plot, matrix = tmp_path / "board.png", tmp_path / "matrix.png"
    code, out, err = cli(
        capsys,
        tmp_path / "unused.sqlite",
        "arena",
        "ratings",
        "--votes",
        str(votes),
        "--json",
        "--plot",
        str(plot),
        "--matrix-plot",
        str(matrix),
    )
    assert code == 0, err
    board = json.loads(out)
    assert [(m["model"], m["rating"], m["rank"]) for m in board["models"]] == [("A", 1060.206, 1), ("B", 939.794, 1)]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and matrix.stat().st_size > 1000
    assert not (tmp_path / "unused.sqlite").exists()  # a file of battles needs no workspace
    votes.write_text(json.dumps({"model_a": "A", "model_b": "B", "winner": "left"}) + "\n")
    code, _, err = cli(capsys, tmp_path / "unused.sqlite", "arena", "ratings", "--votes", str(votes))
    assert (
        code == 2
        and err.strip() == f"error: {votes}:1: winner: 'left' is not one of model_a, model_b, tie, tie (bothbad)"
    )
    with pytest.raises(SystemExit) as exited:
        cli(capsys, tmp_path / "unused.sqlite", "arena", "ratings", "--votes", str(votes), "--bootstrap", "5")
    assert exited.value.code == 2 and "--bootstrap: must be at least 100" in capsys.readouterr().err


def test_the_sync_module_knows_votes():
    assert "votes" in sync.KINDS


def test_an_open_run_exports_its_free_answers_beside_the_references(open_ws, capsys, tmp_path):
    out = tmp_path / "preds.csv"
    code, _, err = cli(capsys, open_ws, "export-predictions", "1", "--out", str(out))
    assert code == 0, err
    lines = out.read_text().splitlines()
    assert lines[0] == "index,question,hint,answer,category,split,prediction"
    assert lines[1] == "1,Describe picture 1.,,ref 1,,,A" and len(lines) == 7
    code, _, err = cli(capsys, open_ws, "rescore", "1", "--extractor", "rules")
    assert code == 2 and "no options to read its answers as" in err


def test_check_names_a_pair_whose_answer_is_gone_and_the_arena_shows_it_missing(open_ws, capsys):
    from db.check import check_workspace

    assert cli(capsys, open_ws, "arena", "pairs", "--bench", "o", "--runs", "1", "2")[0] == 0
    assert all(r.ok for r in check_workspace(open_ws).results)
    with open_workspace(open_ws) as ws:
        pair = arena.pairs(ws)[0]
        with ws.db.atomic():
            ws.conn.execute(
                "DELETE FROM predictions WHERE run_id = ? AND item_id = ?", (pair.left_run_id, pair.item_id)
            )
        assert arena.shown(ws, pair).left_answer == arena.MISSING_ANSWER
    found = {r.name: r for r in check_workspace(open_ws).results}
    assert found["arena_pairs"].problems == [
        f"arena pair {pair.id} ({pair.uuid}): a run of another benchmark, or an answer that is not stored"
    ]


# ------------------------------------------------------------------------------------------- reveal and order
def test_an_items_pairs_come_apart_and_its_models_are_named_after_my_vote_on_every_one(open_ws, capsys):
    """Two pairs per item: the queue is offered round by round (every item's first pair, then every second), the
    next pair is never of the item just shown while another item has one, and the models of an item's pairs are
    named to an annotator only once all of them have this annotator's vote (the same run answers in both)."""
    args = ("arena", "pairs", "--bench", "o", "--runs", "1", "2", "3", "--per-item", "2", "--seed", "5")
    assert cli(capsys, open_ws, *args)[0] == 0
    with open_workspace(open_ws) as ws:
        queue = arena.pairs(ws, 1)
        left = arena.left_for(ws, 1, "ana")
        items = [p.item_id for p in left]
        assert len(queue) == len(left) == 12
        assert items[:6] == items[6:] == sorted(set(items))  # round by round, in queue order
        assert all(a != b for a, b in zip(items, items[1:]))
        first = left[0]
        sibling = next(p for p in queue if p.item_id == first.item_id and p.id != first.id)
        arena.add_vote(ws, first.id, "ana", "left")
        assert not arena.models_revealed(ws, first, "ana") and not arena.models_revealed(ws, sibling, "ana")
        # Only the sibling left of its item, and it is not offered right after its item: the other items are.
        rest = arena.left_for(ws, 1, "ana")
        assert arena.next_pair(rest, after_item=first.item_id).item_id != first.item_id
        only = [sibling]
        assert arena.next_pair(only, after_item=first.item_id) == sibling  # nothing else left: it comes
        assert arena.next_pair(rest, later=[p.id for p in rest[:-1]]) == rest[-1]  # skipped ones last
        arena.add_vote(ws, sibling.id, "bo", "tie")  # someone else's vote reveals nothing to ana
        assert not arena.models_revealed(ws, first, "ana")
        arena.add_vote(ws, sibling.id, "ana", "right")
        assert arena.models_revealed(ws, first, "ana") and arena.models_revealed(ws, sibling, "ana")
        arena.undo_last(ws, "ana")  # withdrawn: hidden again
        assert not arena.models_revealed(ws, first, "ana")


def test_arena_runs_are_every_run_on_an_open_benchmark_whatever_its_strategy(open_ws, capsys):
    with open_workspace(open_ws) as ws:
        assert [r.id for r in arena.arena_runs(ws)] == [1, 2, 3]
        ws.conn.execute("UPDATE runs SET strategy = 'vanilla' WHERE id = 3")  # as an imported run reads
        ws.conn.commit()
        assert 3 in {r.id for r in arena.arena_runs(ws, 1)} and arena.arena_runs(ws, 99) == []
    assert cli(capsys, open_ws, "arena", "pairs", "--bench", "o", "--runs", "1", "3")[0] == 0


def test_the_next_pair_by_index_is_the_next_pair_of_the_whole_queue(open_ws, capsys):
    """arena.next_left (an index walk from the pair just shown, migration 0020's item rank) offers what next_pair
    picks of left_for (the whole queue read) to a voter going through the queue — skips, undos and another voter's
    votes included — and reads no more than a few index entries per pair."""
    import random

    args = ("arena", "pairs", "--bench", "o", "--runs", "1", "2", "3", "--per-item", "2", "--seed", "3")
    assert cli(capsys, open_ws, *args)[0] == 0
    with open_workspace(open_ws) as ws:
        ranks = {r[0]: r[1] for r in ws.conn.execute("SELECT id, item_rank FROM arena_pairs")}
        assert sorted(Counter(ranks.values()).items()) == [(0, 6), (1, 6)]
        rng = random.Random(4)
        shown, skipped, offered = None, [], []
        while True:
            expected = arena.next_pair(
                arena.left_for(ws, 1, "ana"), after_item=shown.item_id if shown else None, later=skipped
            )
            statements: list[str] = []
            ws.conn.set_trace_callback(statements.append)
            found = arena.next_left(ws, 1, "ana", after=shown, later=skipped)
            ws.conn.set_trace_callback(None)
            assert found == expected
            assert not any("SCAN p" in r[-1] for s in statements for r in ws.conn.execute("EXPLAIN QUERY PLAN " + s))
            if found is None:
                break
            offered.append(found.id)
            shown = found
            if rng.random() < 0.25 and found.id not in skipped:
                skipped.append(found.id)
                continue
            arena.add_vote(ws, found.id, "ana", "left")
            if found.id in skipped:
                skipped.remove(found.id)
            arena.add_vote(ws, found.id, "bo", "right")  # another voter's votes leave ana's queue as it is
        assert set(offered) == set(ranks) and arena.progress(ws, 1, "ana") == {"pairs": 12, "voted": 12, "left": 0}
        arena.undo_last(ws, "ana")
        assert arena.progress(ws, 1, "ana")["left"] == 1 and arena.next_left(ws, 1, "ana") is not None


def test_migration_0020_ranks_the_pairs_of_an_existing_queue(open_ws, capsys, tmp_path):
    args = ("arena", "pairs", "--bench", "o", "--runs", "1", "2", "3", "--per-item", "3", "--seed", "1")
    assert cli(capsys, open_ws, *args)[0] == 0
    old = tmp_path / "old.sqlite"
    shutil.copy(open_ws, old)
    db = Database(str(old))
    for statement in (
        "DROP INDEX arena_pairs_queue",
        "DROP TRIGGER arena_pairs_rank_ai",
        "DROP TRIGGER arena_pairs_rank_ad",
    ):
        db.execute(statement)
    db.execute("ALTER TABLE arena_pairs DROP COLUMN item_rank")
    db.execute("ALTER TABLE benchmark_counts DROP COLUMN arena_pairs")
    db.execute("DROP TABLE run_item_results")
    db.execute("DROP TABLE run_counts")
    for name in (
        "predictions_result_ai",
        "predictions_result_au",
        "predictions_result_ad",
        "items_result_au",
        "runs_result_au",
    ):
        db.execute(f"DROP TRIGGER {name}")
    db.execute("DELETE FROM _sqlite_migrations WHERE name = '0020_run_results'")
    db.execute(f"PRAGMA user_version = {schema.migration_names().index('0020_run_results')}")
    db.conn.commit()
    db.close()
    with open_workspace(old) as ws:
        ranks = {}
        for pair in arena.pairs(ws, 1):
            ranks[pair.id] = sum(1 for p in arena.item_pairs(ws, pair.item_id) if p.position < pair.position)
        assert dict(ws.conn.execute("SELECT id, item_rank FROM arena_pairs")) == ranks
        assert sorted(set(ranks.values())) == [0, 1, 2]
        assert arena.progress(ws, 1, "ana") == {"pairs": 18, "voted": 0, "left": 18}  # the kept count, filled
        assert ws.conn.execute("SELECT count(*) FROM run_item_results").fetchone()[0] == 3 * 6  # three runs' items
