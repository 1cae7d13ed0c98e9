"""Hostile input for `arena ratings --votes FILE` and `arena import-votes`, and degenerate ratings."""

import json
import math

import pytest

from annotation import arena
from db.workspace import open_workspace
from evaluator.analysis.ratings import Battle, bradley_terry, leaderboard
from evaluator.formats.importers import InputError
from tests.annotation.test_arena import MODELS, cli, write_open


def battle(a="A", b="B", winner="model_a", **more):
    return {"model_a": a, "model_b": b, "winner": winner, **more}


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def refused(path) -> tuple[int, str, str]:
    with pytest.raises(InputError) as caught:
        arena.read_battles(path)
    return caught.value.line, caught.value.field, str(caught.value)


def test_a_json_array_as_fastchat_publishes_clean_battles_is_read_streamed(tmp_path, monkeypatch):
    rows = [battle(), battle("B", "A", "tie (bothbad)", tstamp=1.5), battle("A", "C", "model_b", turn=1)]
    pretty = tmp_path / "clean_battle_20240101.json"
    pretty.write_text(json.dumps(rows, indent=2))
    monkeypatch.setattr(arena, "_CHUNK", 7)  # objects cut across reads
    assert arena.read_battles(pretty) == [
        Battle("A", "B", "model_a"),
        Battle("B", "A", "tie (bothbad)"),
        Battle("A", "C", "model_b"),
    ]
    (tmp_path / "one.json").write_text(json.dumps(rows))
    assert len(arena.read_battles(tmp_path / "one.json")) == 3
    (tmp_path / "bad.json").write_text('[\n{"model_a": "A", "model_b": "B", "winner": "model_a"},\n{"model_a": 1}\n]')
    assert refused(tmp_path / "bad.json")[:2] == (3, "model_a")
    (tmp_path / "open.json").write_text('[\n{"model_a": "A", "model_b": "B", "winner": "model_a"},\n')
    assert refused(tmp_path / "open.json")[1] == "element"
    (tmp_path / "trail.json").write_text(json.dumps(rows) + "\n{}")
    assert refused(tmp_path / "trail.json")[:2] == (2, "array")
    (tmp_path / "list.json").write_text("[[1, 2]]")
    assert refused(tmp_path / "list.json")[1] == "element"
    (tmp_path / "empty.json").write_text("[]")
    assert refused(tmp_path / "empty.json")[1] == "votes"


def test_deep_nesting_is_refused_in_lines_and_in_arrays(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "deep.jsonl").write_text('{"model_a": "A", "model_b": "B", "winner": "model_a", "x": ' + deep + "}\n")
    assert refused(tmp_path / "deep.jsonl")[1:2] == ("line",)
    (tmp_path / "deep.json").write_text('[{"model_a": "A", "x": ' + deep + "}]")
    line, field, message = refused(tmp_path / "deep.json")
    assert (line, field) == (1, "element") and "nested too deep" in message


@pytest.mark.parametrize(
    ("name", "field", "says"),
    [
        ("sk-" + "a1B2c3D4e5F6g7H8i9J0k", "model_a", "seems to contain an API key"),
        ("gpt\x1b[2J", "model_a", "unprintable character U+001B"),
        ("two\nlines", "model_a", "unprintable character U+000A"),
        ("nul\x00", "model_a", "unprintable character U+0000"),
        ("lone \ud800", "model_a", "unprintable character U+D800"),
        ("evil\u202egpj.exe", "model_a", "unprintable character U+202E"),  # issue 22: shown reversed
        ("zero\u200bwidth", "model_a", "unprintable character U+200B"),
        (" padded", "model_a", "starts or ends with white space"),
        ("", "model_a", "empty"),
        ("x" * 101, "model_a", "101 characters; at most 100"),
        (7, "model_a", "expected a model name"),
    ],
)
def test_model_names_that_would_leak_a_key_or_forge_the_terminal_are_refused(tmp_path, name, field, says):
    path = tmp_path / "v.jsonl"
    path.write_text(json.dumps(battle(name)) + "\n")
    line, got, message = refused(path)
    assert (line, got) == (1, field) and says in message
    assert "a1B2c3D4" not in message


def test_a_battle_giving_a_key_twice_is_refused_as_sync_files_are(tmp_path):
    """json keeps the last of two `winner`s silently; annotation/sync.py's rule (common.no_duplicate_keys) refuses."""
    twice = '{"model_a": "A", "model_b": "B", "winner": "model_a", "winner": "model_b"}'
    (tmp_path / "v.jsonl").write_text(json.dumps(battle()) + "\n" + twice + "\n")
    line, field, message = refused(tmp_path / "v.jsonl")
    assert (line, field) == (2, "winner") and "given twice in one battle" in message
    (tmp_path / "v.json").write_text(
        "[\n" + json.dumps(battle()) + ",\n" + twice.replace('"model_b": "B"', '"model_b": "B", "model_b": "C"') + "]"
    )
    line, field, message = refused(tmp_path / "v.json")
    assert (line, field) == (3, "model_b") and "given twice" in message


def test_unicode_names_are_kept_whole(tmp_path):
    path = jsonl(tmp_path / "v.jsonl", [battle("模型-α", "🤖 bot"), battle("🤖 bot", "模型-α", "tie")])
    assert {m.model for m in leaderboard(arena.read_battles(path), rounds=100).models} == {"模型-α", "🤖 bot"}


def test_self_battles_unknown_winners_and_non_objects_name_their_line(tmp_path):
    cases = [
        (battle("A", "A"), "model_b", "the same model as model_a"),
        (battle(winner="A"), "winner", "'A' is not one of"),
        (battle(winner=None), "winner", "'None' is not one of"),
        (["A", "B", "model_a"], "line", "expected a JSON object"),
    ]
    for row, field, says in cases:
        path = jsonl(tmp_path / "v.jsonl", [battle(), row])
        line, got, message = refused(path)
        assert (line, got) == (2, field) and says in message, message


def test_a_battle_cap_refuses_more_battles_than_it_reads(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(arena, "MAX_BATTLES", 3)
    path = jsonl(tmp_path / "v.jsonl", [battle()] * 4)
    assert refused(path)[:2] == (4, "votes")
    code, out, err = cli(capsys, tmp_path / "unused.sqlite", "arena", "ratings", "--votes", str(path))
    assert code == 2 and out == "" and err == f"error: {path}:4: votes: more than 3 battles; rate a sample\n"


def test_a_fifo_and_a_missing_file_are_refused_at_the_door(tmp_path):
    import os

    os.mkfifo(tmp_path / "fifo")
    assert refused(tmp_path / "fifo")[:2] == (0, "path")
    assert refused(tmp_path / "nothing.jsonl")[:2] == (0, "path")


# ------------------------------------------------------------------------------------------ degenerate ratings
def test_a_model_that_won_every_vote_gets_a_finite_top_rating():
    battles = [Battle("A", "B", "model_a")] * 5 + [Battle("C", "A", "model_b")] * 3 + [Battle("B", "C", "tie")] * 2
    board = leaderboard(battles, rounds=100, seed=0)
    assert board.models[0].model == "A"
    for m in board.models:
        assert all(math.isfinite(x) for x in (m.rating, m.lower, m.upper, m.elo))


def test_disconnected_models_are_rated_within_their_own_group_around_1000():
    battles = [Battle("A", "B", "model_a"), Battle("B", "A", "model_b"), Battle("A", "B", "model_b")]
    battles += [Battle("C", "D", "model_a"), Battle("C", "D", "tie")]
    ratings = bradley_terry(battles)
    assert ratings["A"] + ratings["B"] == pytest.approx(2000) and ratings["C"] + ratings["D"] == pytest.approx(2000)
    assert ratings["A"] == pytest.approx(1060.206, abs=1e-3) and ratings["C"] == pytest.approx(1095.424, abs=1e-3)


def test_no_votes_is_a_message_not_a_crash(tmp_path, capsys):
    ws_path = tmp_path / "ws.sqlite"
    assert cli(capsys, ws_path, "import", str(write_open(tmp_path / "o.jsonl")), "--name", "o")[0] == 0
    code, out, err = cli(capsys, ws_path, "arena", "ratings", "--json")
    assert code == 2 and out == "" and "no arena votes yet" in err
    assert leaderboard([]).models == ()


# ------------------------------------------------------------------------------------------ import-votes
@pytest.fixture
def voted(tmp_path, capsys):
    """A workspace with an open benchmark, three runs, pairs and one vote; its export."""
    ws_path = tmp_path / "ws.sqlite"
    assert cli(capsys, ws_path, "import", str(write_open(tmp_path / "o.jsonl")), "--name", "o")[0] == 0
    for model in MODELS:
        assert cli(capsys, ws_path, "run", "--bench", "o", "--model", model, "--json")[0] == 0
    assert cli(capsys, ws_path, "arena", "pairs", "--bench", "o", "--runs", "1", "2", "3")[0] == 0
    with open_workspace(ws_path) as ws:
        arena.add_vote(ws, arena.pairs(ws)[0].id, "ana", "left")
    out = tmp_path / "votes.jsonl"
    assert cli(capsys, ws_path, "arena", "export-votes", "--out", str(out))[0] == 0
    return ws_path, json.loads(out.read_text().splitlines()[0])


def votes_in(ws_path) -> int:
    with open_workspace(ws_path) as ws:
        return int(ws.conn.execute("SELECT count(*) FROM arena_votes").fetchone()[0])


def test_import_votes_refuses_bad_records_whole(voted, tmp_path, capsys):
    ws_path, vote = voted
    other = {**vote, "id": "0f0e0d0c-0b0a-4098-8765-432100000001"}
    cases = [
        ({**other, "pair": "0f0e0d0c-0b0a-4098-8765-432100000009"}, "pair"),  # a pair of another workspace
        ({**other, "vote": "model_a"}, "vote"),
        ({**other, "vote": "undo", "withdraws": "0f0e0d0c-0b0a-4098-8765-432100000007"}, "withdraws"),
        ({**other, "annotator": "ana\x1b[2J"}, "annotator"),
    ]
    for bad, field in cases:
        path = jsonl(tmp_path / "in.jsonl", [other | {"id": "0f0e0d0c-0b0a-4098-8765-432100000002"}, bad])
        code, _, err = cli(capsys, ws_path, "arena", "import-votes", str(path))
        assert code == 2 and err.startswith(f"error: {path}:2: {field}:"), (field, err)
        assert votes_in(ws_path) == 1  # nothing half-written


def test_import_votes_treats_a_known_uuid_as_already_there_and_a_changed_one_as_a_conflict(voted, tmp_path, capsys):
    ws_path, vote = voted
    same = jsonl(tmp_path / "same.jsonl", [vote, vote])
    code, _, err = cli(capsys, ws_path, "arena", "import-votes", str(same))
    assert code == 0, err
    assert votes_in(ws_path) == 1
    changed = jsonl(tmp_path / "changed.jsonl", [{**vote, "vote": "right"}])
    code, _, err = cli(capsys, ws_path, "arena", "import-votes", str(changed))
    assert code == 2 and "id" in err
    assert votes_in(ws_path) == 1


def test_a_vote_whose_run_was_deleted_is_left_out_of_the_ratings_and_named_by_check(voted, capsys):
    # No command deletes a run that has answers; a run removed by hand (sqlite3 leaves foreign keys off, so its
    # pairs and votes stay) must not crash the ratings, and `check` names the pair.
    import sqlite3

    from db.check import check_workspace

    ws_path, _ = voted
    code, out, err = cli(capsys, ws_path, "arena", "ratings", "--json", "--bootstrap", "100")
    assert code == 0, err
    assert set(json.loads(out)["models"][0]) == {
        "model", "rating", "lower", "upper", "rank", "votes", "wins", "ties", "losses", "elo"
    }  # fmt: skip
    with open_workspace(ws_path) as ws:
        pair = arena.pairs(ws)[0]
    conn = sqlite3.connect(ws_path)
    with conn:
        conn.execute("DELETE FROM runs WHERE id = ?", (pair.left_run_id,))
    conn.close()
    code, out, err = cli(capsys, ws_path, "arena", "ratings", "--json", "--bootstrap", "100")
    assert code == 2 and "no arena votes yet" in err  # the only vote was on that pair
    assert votes_in(ws_path) == 1  # and it is kept
    problems = [p for r in check_workspace(ws_path).results for p in r.problems]
    assert any("arena_pairs" in p for p in problems), problems  # the foreign-key check names the table
