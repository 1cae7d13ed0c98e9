"""The live arena from the command line: `vlmdesk arena ask` with two tiny local VLMs saved as models, a battle
stored whole (item, one-pass open runs, pair), the vote in `arena ratings` and `export-votes`, a failing model or bad
input storing nothing."""

import json

import pytest

from annotation import arena, live_arena
from db import catalog, runs
from db.workspace import open_workspace
from evaluator.engine.live import LiveAnswer
from tests.factories import png_bytes
from vlmdesk.cli import main


def cli(capsys, ws_path, *args):
    code = main(["--workspace", str(ws_path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def live_ws(tmp_path):
    path = tmp_path / "live.sqlite"
    with open_workspace(path):
        pass
    (tmp_path / "photo.png").write_bytes(png_bytes())
    return path


def _stored(path):
    with open_workspace(path) as ws:
        return {
            "items": ws.conn.execute("SELECT count(*) FROM items").fetchone()[0],
            "runs": ws.conn.execute("SELECT count(*) FROM runs").fetchone()[0],
            "pairs": ws.conn.execute("SELECT count(*) FROM arena_pairs").fetchone()[0],
            "predictions": ws.conn.execute("SELECT count(*) FROM predictions").fetchone()[0],
        }


def test_arena_ask_with_two_tiny_models(capsys, live_ws, tiny_llava_dir, tiny_idefics3_dir):
    llava, idefics = f"hf:{tiny_llava_dir}?device=cpu", f"hf:{tiny_idefics3_dir}?device=cpu"
    assert cli(capsys, live_ws, "models", "add", "tiny-llava", llava)[0] == 0
    assert cli(capsys, live_ws, "models", "add", "tiny-idefics", idefics)[0] == 0
    image = live_ws.parent / "photo.png"
    code, out, err = cli(capsys, live_ws, "arena", "ask", "--image", str(image), "--question", "What is shown?")
    assert code == 0, err
    assert out.startswith("left: ") and "\nright: " in out
    assert "tiny" not in out and "hf:" not in out  # anonymous until a vote
    assert "stored as pair 1 of live-arena" in err
    code, out, err = cli(
        capsys,
        live_ws,
        "arena",
        "ask",
        "--image",
        str(image),
        "--question",
        "Is there a cat?",
        "--seed",
        "5",
        "--vote",
        "right",
        "--annotator",
        "ana",
        "--json",
    )
    assert code == 0, err
    battle = json.loads(out)
    assert {battle["left"]["model"], battle["right"]["model"]} == {llava, idefics}
    with open_workspace(live_ws) as ws:
        bench = live_arena.live_benchmark(ws)
        assert bench is not None and bench.kind == "open" and bench.name == "live-arena"
        items = catalog.list_items(ws, bench.id)
        assert [i.question for i in items] == ["What is shown?", "Is there a cat?"]
        assert items[0].image_sha256 == items[1].image_sha256  # stored once, by content hash
        live_runs = runs.list_runs(ws)
        # One open run per model, each battle a pass of it: 2 runs, 2 passes each.
        assert sorted(r.model_spec for r in live_runs) == sorted([llava, idefics])
        assert all(r.strategy == "open" and r.status == "finished" and r.predictions == 2 for r in live_runs)
        pair = arena.get_pair(ws, battle["pair_id"])
        shown = arena.shown(ws, pair)
        assert (shown.left_answer, shown.right_answer) == (battle["left"]["answer"], battle["right"]["answer"])
        assert shown.left_model == battle["left"]["model"]
        assert len(arena.left_for(ws, bench.id, "ana")) == 1  # the first battle waits for a vote
    code, out, err = cli(capsys, live_ws, "arena", "ratings", "--json", "--bootstrap", "100")
    assert code == 0, err
    board = json.loads(out)
    assert board["battles"] == 1
    winner = battle["right"]["model"]
    assert board["models"][0]["model"] == winner and board["models"][0]["wins"] == 1
    code, out, _ = cli(capsys, live_ws, "arena", "export-votes", "--bench", "live-arena")
    assert code == 0 and json.loads(out.splitlines()[0])["pair"] == battle["pair"]


def test_a_failing_model_stores_nothing(capsys, live_ws, tmp_path):
    assert cli(capsys, live_ws, "models", "add", "coin", "baseline:random")[0] == 0
    assert cli(capsys, live_ws, "models", "add", "broken", f"hf:{tmp_path / 'no-such-model'}")[0] == 0
    before = _stored(live_ws)
    code, out, err = cli(
        capsys, live_ws, "arena", "ask", "--image", str(live_ws.parent / "photo.png"), "--question", "What?"
    )
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and "no-such-model" in err
    assert _stored(live_ws) == before


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--question", "   "], "question: empty"),
        (["--question", "x" * 2001], "over the limit of 2000"),
        (["--question", "ok", "--models", "coin"], "two different models"),
        (["--question", "ok", "--vote", "left"], "--vote and --annotator go together"),
    ],
)
def test_bad_input_is_one_line_and_nothing_is_written(capsys, live_ws, args, says):
    assert cli(capsys, live_ws, "models", "add", "coin", "baseline:random")[0] == 0
    before = _stored(live_ws)
    code, out, err = cli(capsys, live_ws, "arena", "ask", "--image", str(live_ws.parent / "photo.png"), *args)
    assert code == 2 and out == "" and says in err and len(err.strip().splitlines()) == 1, err
    assert _stored(live_ws) == before


def test_not_an_image_is_refused(capsys, live_ws):
    bad = live_ws.parent / "notes.png"
    bad.write_text("not an image")
    code, _, err = cli(capsys, live_ws, "arena", "ask", "--image", str(bad), "--question", "What?")
    assert code == 2 and "notes.png" in err and "not an image" in err


def test_a_battle_needs_two_different_models(live_ws):
    same = LiveAnswer("baseline:first", "A", 1.0, {}, False)
    with open_workspace(live_ws) as ws, pytest.raises(ValueError, match="two different models"):
        live_arena.record_battle(ws, png_bytes(), "What?", same, same)
    assert _stored(live_ws)["items"] == 0


def test_a_saved_name_twice_for_one_spec_is_one_model(capsys, live_ws):
    assert cli(capsys, live_ws, "models", "add", "coin", "baseline:random")[0] == 0
    assert cli(capsys, live_ws, "models", "add", "coin2", "baseline:random")[0] == 0
    with open_workspace(live_ws) as ws, pytest.raises(ValueError, match="two different models; the workspace has 1"):
        live_arena.match(ws, 0)


# ---- servers stream ------------------------------------------------------------------------------------------
SECRET = "sk-live-arena-test-key-0123456789abcdef"


def sse(*pieces: str) -> str:
    events = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def test_a_server_streams_its_answer_as_it_grows_redacted(serve, monkeypatch):
    from evaluator.engine.live import ask
    from tests.servers import Step

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server = serve([Step(200, sse("A red ", "motorcycle ", f"(key {SECRET}) ", "in a garage."))])
    seen, loaded = [], []
    answer = ask(f"openai:m@{server.url}", png_bytes(), "What is it?", on_text=seen.append, on_loaded=loaded.append)
    assert loaded == [True] and answer.streamed
    assert answer.text == "A red motorcycle (key [redacted]) in a garage."
    assert seen[-1] == answer.text and len(seen) >= 3
    assert all(answer.text.startswith(s) for s in seen)  # it grows, never shows a key (not even a piece)
    assert not any("sk-" in s for s in seen)
    sent = server.requests[0]["body"]
    assert sent["stream"] is True and sent["messages"][0]["content"][-1]["text"] == "What is it?"


def test_a_server_that_does_not_stream_answers_once(serve):
    from evaluator.engine.live import ask
    from tests.servers import ok

    server = serve([ok("A plain answer.")])
    seen = []
    answer = ask(f"openai:m@{server.url}", png_bytes(), "What?", on_text=seen.append)
    assert answer.text == "A plain answer." and seen[-1] == answer.text and server.count == 1


def test_a_server_error_is_one_line(serve, capsys, live_ws):
    from tests.servers import Step

    server = serve([Step(400, {"error": {"message": "model m does not take images"}})])
    code, out, err = cli(
        capsys,
        live_ws,
        "arena",
        "answer",
        "--model",
        f"openai:m@{server.url}",
        "--image",
        str(live_ws.parent / "photo.png"),
        "--question",
        "What?",
    )
    assert code != 0 and "HTTP 400" in err and "does not take images" in err and len(err.strip().splitlines()) == 1
    assert [json.loads(line)["event"] for line in out.splitlines()] == ["loaded"]


def test_arena_answer_prints_the_text_as_it_grows(serve, capsys, live_ws):
    from tests.servers import Step

    server = serve([Step(200, sse("one ", "two ", "three"))])
    image = live_ws.parent / "photo.png"
    code, out, err = cli(
        capsys,
        live_ws,
        "arena",
        "answer",
        "--model",
        f"openai:m@{server.url}",
        "--image",
        str(image),
        "--question",
        "Q",
    )
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0] == {"event": "loaded", "streams": True}
    assert [e["text"] for e in events if e["event"] == "text"][-1] == "one two three"
    last = events[-1]
    assert last["event"] == "answer" and last["text"] == "one two three" and last["streamed"] is True
    assert last["image_sha256"] == live_arena.sha256_bytes(png_bytes())
