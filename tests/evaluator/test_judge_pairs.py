"""`vlmdesk judge-pairs` (evaluator/scoring/pair_judge.py, annotation/pair_judge.py) and `vlmdesk judge --with-image`
against scripted OpenAI-compatible servers: verdicts read by rule, mapped back to the pair's sides, stored per
judgement set and resumed, the image sent only when asked (and then another set), keys and huge replies kept out."""

from __future__ import annotations

import base64
import json
import sqlite3

import pytest

from db import open_judgements, open_workspace
from db import pair_judgements as store
from evaluator.scoring import open_judge
from evaluator.scoring.pair_judge import BLIND, SEES_IMAGE, judge_prompt, parse_verdict
from tests.annotation.test_pair_alignment import cli, first_judge, make_pairs_ws
from tests.factories import png_bytes
from tests.servers import Step, first_then


def content_of(request: dict) -> list:
    content = request["body"]["messages"][-1]["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def prompt_of(request: dict) -> str:
    return next(p["text"] for p in content_of(request) if p["type"] == "text")


def images_of(request: dict) -> list[bytes]:
    return [
        base64.b64decode(p["image_url"]["url"].split(",", 1)[1])
        for p in content_of(request)
        if p["type"] == "image_url"
    ]


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ("A is more precise.\n[[A]]", "first"),
        ("[[B]]", "second"),
        ("Both equally fine. [[C]]", "tie"),
        ("Neither answers it.\n[[D]]", "bothbad"),
        ("My final verdict is tie: [[A=B]]", "tie"),  # WildVision-Bench's labels
        ("[[B>>A]]", "second"),
        ("[[A>B]] and again [[A]]", "first"),  # every tag says the same
        ("[[ tie ]]", "tie"),
        ("[[both bad]]", "bothbad"),
        ("Reasoning...\nVerdict: B", "second"),  # no tag: a last line that is only a verdict
        ("Reasoning...\n**Answer A is better.**", "first"),
        ("Reasoning...\nTie", "tie"),
        ("Reasoning...\nboth bad", "bothbad"),
        # Never guessed: two verdicts, a tag naming nothing, no last-line verdict, an empty reply.
        ("[[A]] if A is better, [[B]] if B is better", None),
        ("[[E]]", None),
        ("I prefer A because it is longer.", None),
        ("A\nmore text", None),
        ("", None),
    ],
)
def test_a_verdict_is_read_only_when_the_reply_commits_to_one(reply, said):
    assert parse_verdict(reply) == said


def test_the_prompt_says_whether_the_image_is_shown_and_bounds_the_answers():
    blind = judge_prompt("What is it?", "a cat", "y" * (open_judge.MAX_ANSWER_CHARS + 5), with_image=False)
    assert BLIND in blind and SEES_IMAGE not in blind and "You do not see the image" in blind
    assert "[The start of answer A]\na cat\n[The end of answer A]" in blind
    assert "[…cut: 5 more characters]\n[The end of answer B]" in blind
    seeing = judge_prompt("What is it?", "a", "b", with_image=True)
    assert SEES_IMAGE in seeing and BLIND not in seeing


def test_both_orders_store_verdicts_on_the_pairs_sides_and_a_rerun_asks_nothing(tmp_path, serve, capsys):
    ws_path = make_pairs_ws(tmp_path, serve, capsys, items=3, per_item=2)
    judge = serve(respond=first_judge)
    spec = f"openai:first@{judge.url}?retries=0"
    args = ["judge-pairs", "--bench", "o", "--judge", spec, "--both-orders", "--json"]
    code, out, err = cli(capsys, ws_path, *args)
    assert code == 0, err
    found = json.loads(out)
    assert found["calls"] == judge.count == 12 and found["judgements"] == 12
    assert found["verdicts"] == {"left": 6, "right": 6, "tie": 0, "bothbad": 0, "undecided": 0}
    # The first shown answer won every time: the pair's left in order 0, its right when swapped.
    with open_workspace(ws_path) as ws:
        rows = store.judgements_of(ws, found["set"])
    assert {(r.swapped, r.verdict) for r in rows} == {(False, "left"), (True, "right")}
    # Swapped: answer A is the right run's answer.
    with open_workspace(ws_path) as ws:
        from annotation import arena

        pair = arena.pairs(ws)[0]
        shown = arena.shown(ws, pair)
    asked = [prompt_of(r) for r in judge.requests]
    assert any(f"answer A]\n{shown.left_answer}\n" in p and f"answer B]\n{shown.right_answer}\n" in p for p in asked)
    assert any(f"answer A]\n{shown.right_answer}\n" in p and f"answer B]\n{shown.left_answer}\n" in p for p in asked)
    code, out, _ = cli(capsys, ws_path, *args)
    assert code == 0 and json.loads(out)["calls"] == 0 and judge.count == 12
    # One order first, then both: only the swapped order is asked (orders are rows of one set, not two sets).
    other = serve(respond=first_judge)
    spec2 = f"openai:second@{other.url}?retries=0"
    one = json.loads(cli(capsys, ws_path, "judge-pairs", "--bench", "o", "--judge", spec2, "--json")[1])
    assert other.count == 6 and one["left"] == 0
    two = json.loads(
        cli(capsys, ws_path, "judge-pairs", "--bench", "o", "--judge", spec2, "--both-orders", "--json")[1]
    )
    assert other.count == 12 and two["set"] == one["set"] and two["judgements"] == 12


def test_an_interrupted_judging_resumes_asking_only_what_is_missing(tmp_path, serve, capsys, monkeypatch):
    from annotation import pair_judge

    monkeypatch.setattr(pair_judge, "CHUNK", 4)
    ws_path = make_pairs_ws(tmp_path, serve, capsys, items=5, per_item=2)  # 10 pairs, 20 (pair, order)s
    judge = serve(respond=first_then(6, first_judge, lambda text: Step(503, {"error": {"message": "overloaded"}})))
    spec = f"openai:j@{judge.url}?retries=0&concurrency=1"
    args = ["judge-pairs", "--bench", "o", "--judge", spec, "--both-orders"]
    code, out, err = cli(capsys, ws_path, *args)
    assert code == 1 and "run the same command again" in err and out == ""
    with open_workspace(ws_path) as ws:
        kept = {(r.pair_id, r.swapped) for r in store.judgements_of(ws, store.sets_of(ws, 1)[0].key)}
    assert len(kept) == 4  # the first chunk, stored whole; the second failed on its third request
    before = judge.count
    judge.respond = first_judge
    code, out, err = cli(capsys, ws_path, *args, "--json")
    found = json.loads(out)
    assert code == 0, err
    assert judge.count - before == found["calls"] == 16  # exactly the 20 - 4 missing
    assert found["judgements"] == 20 and found["left"] == 0
    asked_again = judge.requests[before:]
    assert len(asked_again) == 16


def test_unreadable_replies_are_asked_once_more_then_stored_undecided_and_counted(tmp_path, serve, capsys):
    ws_path = make_pairs_ws(tmp_path, serve, capsys, items=2, per_item=1)
    judge = serve(respond=lambda text: "[[A]] or [[B]], I cannot decide" if "must end" not in text else "hmm")
    code, out, err = cli(capsys, ws_path, "judge-pairs", "--bench", "o", "--judge", f"openai:j@{judge.url}?retries=0")
    assert code == 0, err
    assert "undecided 2" in out and judge.count == 4  # two pairs, each asked with the reminder once
    assert "must end with a line" in prompt_of(judge.requests[-1])
    with open_workspace(ws_path) as ws:
        rows = store.judgements_of(ws, store.sets_of(ws, 1)[0].key)
    assert [(r.verdict, r.attempts, r.raw) for r in rows] == [(None, 2, "hmm")] * 2


def test_with_image_sends_the_image_and_is_another_judgement_set(tmp_path, serve, capsys):
    ws_path = make_pairs_ws(tmp_path, serve, capsys, items=2, per_item=1)
    blind, seeing = serve(respond=first_judge), serve(respond=first_judge)
    base = ["judge-pairs", "--bench", "o", "--json"]
    # The same judge identity (one spec) asked blind, then shown the image: two sets.
    spec = f"openai:j@{blind.url}?retries=0"
    a = json.loads(cli(capsys, ws_path, *base, "--judge", spec)[1])
    assert all(images_of(r) == [] for r in blind.requests)
    assert all("You do not see the image" in prompt_of(r) for r in blind.requests)
    b = json.loads(cli(capsys, ws_path, *base, "--judge", spec, "--with-image")[1])
    assert a["set"] != b["set"] and b["with_image"] is True and b["calls"] == 2
    assert all(images_of(r) == [png_bytes()] for r in blind.requests[2:])
    assert all(SEES_IMAGE in prompt_of(r) for r in blind.requests[2:])
    assert seeing.count == 0
    with open_workspace(ws_path) as ws:
        sets = {s.key: s for s in store.sets_of(ws, 1)}
    assert sets[a["set"]].with_image is False and sets[b["set"]].with_image is True


def test_a_key_the_judge_echoes_and_a_huge_reply_are_kept_out_of_the_workspace(tmp_path, serve, capsys, monkeypatch):
    ws_path = make_pairs_ws(tmp_path, serve, capsys, items=2, per_item=1)
    secret = "plain-looking-judge-key-77"
    monkeypatch.setenv("VLMDESK_PAIR_KEY", secret)
    judge = serve(respond=lambda text: f"my key is {secret} " + "x" * 300_000 + "\n[[A]]")
    spec = f"openai:j@{judge.url}?retries=0&key_env=VLMDESK_PAIR_KEY"
    code, out, err = cli(capsys, ws_path, "judge-pairs", "--bench", "o", "--judge", spec, "--json")
    assert code == 0, err
    assert judge.requests[0]["headers"]["authorization"] == f"Bearer {secret}"
    assert secret not in out + err
    with sqlite3.connect(ws_path) as conn:
        raws = [r[0] for r in conn.execute("SELECT raw FROM pair_judgements")]
        dump = "\n".join(conn.iterdump())
    assert secret not in dump and all(len(r) <= store.RAW_MAX for r in raws)
    # The door cut the reply before its tag: no verdict is read into what was never seen whole.
    assert json.loads(out)["verdicts"]["undecided"] == 2


def test_the_open_answer_judge_shown_the_image_sends_it_and_keeps_the_blind_sets_identity(tmp_path, serve, capsys):
    from tests.evaluator.test_open_judge import make_open_run, scripted

    ws_path = make_open_run(tmp_path, capsys, referenced=3)
    server = serve(respond=scripted)
    judge = f"openai:judge@{server.url}?retries=0"
    blind = json.loads(cli(capsys, ws_path, "judge", "1", "--judge", judge, "--json")[1])
    assert blind["rubric_sha256"] == open_judgements.rubric_sha256(open_judge.DEFAULT_RUBRIC)  # as before
    assert all(images_of(r) == [] for r in server.requests)
    before = server.count
    code, out, err = cli(capsys, ws_path, "judge", "1", "--judge", judge, "--with-image", "--json")
    assert code == 0, err
    seen = json.loads(out)
    assert seen["calls"] == server.count - before == 3  # another set: every answer asked anew
    assert seen["rubric_sha256"] != blind["rubric_sha256"]
    assert seen["rubric_sha256"] == open_judgements.rubric_sha256(
        open_judge.with_image_rubric(open_judge.DEFAULT_RUBRIC)
    )
    for r in server.requests[before:]:
        assert images_of(r) == [png_bytes()]
        text = prompt_of(r)
        assert "You do not see the image" not in text and open_judge.IMAGE_NOTE in text
    with open_workspace(ws_path) as ws:
        sets = open_judgements.judgement_sets(ws, 1)
        assert {s.rubric_sha256 for s in sets} == {blind["rubric_sha256"], seen["rubric_sha256"]}
        assert open_judge.sees_image(open_judgements.rubric_text(ws, seen["rubric_sha256"]))
        assert not open_judge.sees_image(open_judgements.rubric_text(ws, blind["rubric_sha256"]))
    text = cli(capsys, ws_path, "judge", "1", "--judge", judge, "--with-image")[1]
    assert "(shown the image)" in text and "0 judge calls now" in text
