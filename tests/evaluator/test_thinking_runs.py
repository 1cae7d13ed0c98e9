"""Thinking models end to end (issue 36): scripted servers on 127.0.0.1 answer the way vLLM and SGLang with a reasoning
parser do, and inline; the run reads the answers only, keeps each thought, counts truncated passes apart and resumes
without asking anything twice."""

from __future__ import annotations

import json
import re
import threading

import pytest

from db import extractions, open_workspace, runs
from tests.factories import mmbench_rows, write_tsv
from tests.server_process import completion
from tests.servers import Step
from vlmdesk.cli import main

HEADER = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "image", "source", "l2-category"]


def reply(text: str | None, *, thought: str | None = None, finish: str = "stop", reasoning_tokens: int | None = None):
    body = completion(text)
    body["choices"][0]["finish_reason"] = finish
    if thought is not None:
        body["choices"][0]["message"]["reasoning_content"] = thought
    if reasoning_tokens is not None:
        body["usage"]["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return Step(200, body)


@pytest.fixture
def bench(tmp_path):
    """Four two-to-four option questions in a workspace; their keys, by question number."""
    rows = list(mmbench_rows(4, circular=False))
    path = write_tsv(tmp_path / "four.tsv", rows, header=HEADER)
    ws_path = tmp_path / "w.vlmdesk"
    assert main(["--workspace", str(ws_path), "import", str(path), "--name", "four"]) == 0
    keys = {int(r["index"]): r["answer"] for r in rows}
    return ws_path, keys


def wrong_of(key: str) -> str:
    return "A" if key != "A" else "B"


def thinking_server(keys):
    """(a) item 0: the budget ends inside the thought (content null, reasoning_content, finish_reason length);
    (b) item 1: reasoning_content and a short answer; (c) item 2: an inline thought naming a wrong letter before the
    right one; (d) item 3: a lone closing tag. Counts each question's answers."""
    asked: dict[int, int] = {}
    lock = threading.Lock()

    def respond(text: str) -> Step:
        n = int(re.search(r"Question (\d+):", text).group(1))
        with lock:
            asked[n] = asked.get(n, 0) + 1
        key, wrong = keys[n], wrong_of(keys[n])
        if n == 0:
            return reply(
                None, thought=f"The answer is {wrong}? Let me count again", finish="length", reasoning_tokens=64
            )
        if n == 1:
            return reply(key, thought=f"The answer is {wrong}. No: it is {key}.", reasoning_tokens=12)
        if n == 2:
            return reply(f"<think>\nThe answer is {wrong}\n</think>\n\n{key}")
        return reply(f"The answer is {wrong}? Hmm, no.</think>{key}")

    return respond, asked


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def passes(ws_path, run_id: int) -> dict[int, runs.Prediction]:
    with open_workspace(ws_path) as ws:
        index = {i: int(n) for i, n in ws.conn.execute("SELECT id, source_index FROM items")}
        return {index[p.item_id]: p for p in runs.predictions_of(ws, run_id)}


def test_thinking_answers_are_read_apart_from_their_thoughts_and_truncated_passes_counted(serve, bench, capsys):
    ws_path, keys = bench
    respond, asked = thinking_server(keys)
    server = serve(respond=respond)
    spec = f"openai:m@{server.url}?concurrency=1&retries=0"
    code, out, err = cli(
        capsys, "--workspace", ws_path, "run", "--bench", "four", "--model", spec, "--strategy", "vanilla",
        "--max-new-tokens", "4096", "--json",
    )  # fmt: skip
    assert code == 0, err
    run_id = json.loads(out.strip().splitlines()[-1])["run_id"]
    got = passes(ws_path, run_id)
    order = sorted(got)
    # (a) cut inside the thought: no answer, its own outcome, the thought kept, never read as a letter.
    a = got[order[0]]
    assert (a.response, a.stage, a.choice, a.correct, a.finish_reason) == ("", "truncated", None, False, "length")
    assert a.thought.startswith("The answer is") and a.reasoning_tokens == 64
    # (b)-(d): the answers only are read, and each is the key, though each thought named a wrong letter first.
    for n in order[1:]:
        p = got[n]
        assert p.choice == p.answer and p.correct, (n, p.response, p.thought, p.reason)
        assert wrong_of(keys[n]) in p.thought and "</think>" not in p.response and "<think>" not in p.response
    assert got[order[1]].reasoning_tokens == 12 and got[order[1]].response == keys[1]
    assert got[order[2]].response == keys[2]
    assert got[order[2]].thought == f"The answer is {wrong_of(keys[2])}"
    assert got[order[3]].response == keys[3] and got[order[3]].thought == f"The answer is {wrong_of(keys[3])}? Hmm, no."
    with open_workspace(ws_path) as ws:
        truncation = runs.truncation(ws, run_id)
        usage = runs.token_usage(ws, run_id)
    assert (truncation.truncated, truncation.in_thought, truncation.passes) == (1, 1, 4)
    assert truncation.line() == "truncated: 1 of 4 (1 inside the thought)"
    assert usage.reasoning == 64 + 12
    assert asked == {0: 1, 1: 1, 2: 1, 3: 1}  # nothing retried: a truncated pass is an answer, not a failure

    # A re-scoring reads the answers again, never the thoughts; the pass cut inside its thought stays truncated.
    code, out, err = cli(capsys, "--workspace", ws_path, "rescore", run_id, "--extractor", "rules", "--json")
    assert code == 0, err
    with open_workspace(ws_path) as ws:
        (scoring,) = extractions.scorings_of(ws, run_id)
        rescored = {p.item_id: p for p in extractions.scored_passes(ws, scoring.id)}
    assert rescored[a.item_id].stage == "truncated" and rescored[a.item_id].correct is False
    assert all(rescored[got[n].item_id].correct for n in order[1:])

    # The same run asked again finds it finished: nothing is asked twice.
    code, _, err = cli(
        capsys, "--workspace", ws_path, "run", "--bench", "four", "--model", spec, "--strategy", "vanilla",
        "--max-new-tokens", "4096",
    )  # fmt: skip
    assert code == 0 and "already finished" in err
    assert asked == {0: 1, 1: 1, 2: 1, 3: 1}

    # --reasoning off is another run, and it reads the inline thought as the answer: the wrong letter it named first.
    code, out, err = cli(
        capsys, "--workspace", ws_path, "run", "--bench", "four", "--model", spec, "--strategy", "vanilla",
        "--max-new-tokens", "4096", "--reasoning", "off", "--json",
    )  # fmt: skip
    assert code == 0, err
    off = passes(ws_path, json.loads(out.strip().splitlines()[-1])["run_id"])
    assert off[order[2]].thought is None and off[order[2]].choice == wrong_of(keys[2])
    assert off[order[1]].thought is not None  # a server's own thought is never the answer, whatever the rule


def test_an_interrupted_thinking_run_resumes_asking_only_what_is_missing(serve, bench, capsys):
    ws_path, keys = bench
    respond, asked = thinking_server(keys)
    down = {"on": False}

    def flaky(text: str) -> Step:
        if down["on"]:
            return Step(503, {"error": {"message": "overloaded"}})
        step = respond(text)
        if sum(asked.values()) == 2:
            down["on"] = True  # after two answers the server fails every request
        return step

    server = serve(respond=flaky)
    spec = f"openai:m@{server.url}?concurrency=1&retries=0"
    code, out, err = cli(
        capsys, "--workspace", ws_path, "run", "--bench", "four", "--model", spec, "--strategy", "vanilla",
        "--max-new-tokens", "4096", "--json",
    )  # fmt: skip
    assert code != 0 and "interrupted" in err, err
    with open_workspace(ws_path) as ws:
        (run,) = runs.list_runs(ws)
        assert run.status == "interrupted" and runs.truncation(ws, run.id).passes == 2
    down["on"] = False
    code, _, err = cli(capsys, "--workspace", ws_path, "run", "--resume", run.id)
    assert code == 0, err
    got = passes(ws_path, run.id)
    assert len(got) == 4 and sum(p.stage == "truncated" for p in got.values()) == 1
    assert asked == {0: 1, 1: 1, 2: 1, 3: 1}  # each question answered once in all: the resume asked only the rest


def test_the_chat_setup_reaches_the_server_and_names_the_run(serve, bench, capsys, tmp_path):
    ws_path, keys = bench
    server = serve(respond=lambda text: "A")
    spec = f"openai:m@{server.url}?concurrency=1&top_p=0.9&seed=7&max_pixels=200704"
    system = tmp_path / "system.txt"
    system.write_text("You are a careful visual assistant.\n", encoding="utf-8")
    base = ["--workspace", ws_path, "run", "--bench", "four", "--model", spec, "--strategy", "vanilla", "--limit", "1"]
    code, out, err = cli(
        capsys, *base, "--system", system, "--chat-template-kwargs", '{ "enable_thinking" : true }',
        "--thinking-budget", "1000", "--max-new-tokens", "2048", "--json",
    )  # fmt: skip
    assert code == 0, err
    body = server.requests[-1]["body"]
    assert body["messages"][0] == {"role": "system", "content": "You are a careful visual assistant."}
    assert body["messages"][-1]["role"] == "user"
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    assert (body["thinking_token_budget"], body["max_tokens"], body["top_p"], body["seed"]) == (1000, 2048, 0.9, 7)
    assert body["mm_processor_kwargs"] == {"max_pixels": 200704}
    with open_workspace(ws_path) as ws:
        (run,) = runs.list_runs(ws)
    assert run.config["system"] == "You are a careful visual assistant."
    assert run.config["chat_template_kwargs"] == '{"enable_thinking":true}'
    assert run.config["thinking_budget"] == 1000
    # The same settings typed another way are the same run; a different one is another run.
    code, _, err = cli(
        capsys, *base, "--system", "You are a careful visual assistant.", "--chat-template-kwargs",
        '{"enable_thinking":true}', "--thinking-budget", "1000", "--max-new-tokens", "2048",
    )  # fmt: skip
    assert code == 0 and "already finished" in err
    code, _, err = cli(
        capsys, *base, "--chat-template-kwargs", '{"enable_thinking": false}', "--max-new-tokens", "2048"
    )
    assert code == 0 and "already finished" not in err
    with open_workspace(ws_path) as ws:
        assert len(runs.list_runs(ws)) == 2


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--reasoning", "<think>"], "--reasoning: expected auto, off or OPEN,CLOSE"),
        (["--chat-template-kwargs", "[1, 2]"], "--chat-template-kwargs: a JSON object"),
        (["--chat-template-kwargs", "{nope"], "--chat-template-kwargs: not JSON"),
        (["--thinking-budget", "64"], "thinking_budget: 64 must be at least 1 and below max_new_tokens (32)"),
        (["--max-new-tokens", "40000"], "--max-new-tokens: must be at most 32768"),
        (["--system", "   "], "--system: the system prompt is empty"),
    ],
)
def test_bad_chat_settings_are_refused_in_one_line_and_nothing_is_stored(bench, capsys, flags, message):
    ws_path, _ = bench
    try:
        code, out, err = cli(
            capsys,
            "--workspace",
            ws_path,
            "run",
            "--bench",
            "four",
            "--model",
            "openai:m@http://127.0.0.1:9/v1",
            *flags,
        )
    except SystemExit as exc:  # argparse's own refusal of a value out of range
        code, err = exc.code, capsys.readouterr().err
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) <= 2, err
    with open_workspace(ws_path) as ws:
        assert runs.list_runs(ws) == []


def test_openai_reasoning_models_get_what_openai_accepts():
    from evaluator.backends import Chat, Query
    from evaluator.backends.base import BackendError
    from evaluator.backends.openai_backend import parse_openai_spec

    o3 = parse_openai_spec("o3-mini")._request_body(Query("q", chat=Chat(system="s")), 100)
    assert o3["max_completion_tokens"] == 100 and "max_tokens" not in o3 and "temperature" not in o3
    assert o3["messages"][0] == {"role": "system", "content": "s"}
    gpt = parse_openai_spec("gpt-4o-mini?top_p=0.5")._request_body(Query("q"), 100)
    assert (gpt["max_completion_tokens"], gpt["temperature"], gpt["top_p"]) == (100, 0.0, 0.5)
    local = parse_openai_spec("m@http://127.0.0.1:8000/v1?top_k=20&repetition_penalty=1.05")._request_body(
        Query("q"), 9
    )
    assert (local["max_tokens"], local["top_k"], local["repetition_penalty"]) == (9, 20, 1.05)
    for refused in ("top_k=20", "max_pixels=1000", "repetition_penalty=1.1"):
        with pytest.raises(BackendError, match="not a setting of OpenAI's own API"):
            parse_openai_spec(f"gpt-4o?{refused}")
    with pytest.raises(BackendError, match="min_pixels must not be above max_pixels"):
        parse_openai_spec("m@http://h:1/v1?min_pixels=10&max_pixels=5")
    assert not parse_openai_spec("gpt-4o").takes_thinking_budget


def test_a_vlmevalkit_preset_brings_its_family_setup_unless_the_user_set_it(serve, bench, capsys):
    from evaluator.engine.prompt_presets import SETUPS

    ws_path, _ = bench
    server = serve(respond=lambda text: "A")
    base = ["--workspace", ws_path, "run", "--bench", "four", "--strategy", "vanilla", "--limit", "1", "--json"]
    qwen = SETUPS["qwen2_vl"]
    code, _, err = cli(capsys, *base, "--model", f"openai:m@{server.url}", "--prompt", "vlmevalkit:qwen2_vl")
    assert code == 0, err
    body = server.requests[-1]["body"]
    assert body["mm_processor_kwargs"] == {
        k: v for k, v in qwen.options_for(None).items() if k in ("min_pixels", "max_pixels")
    }
    assert (body["messages"][0]["role"] == "system") == (qwen.system is not None)
    code, _, err = cli(
        capsys, *base, "--model", f"openai:m@{server.url}?max_pixels=1000", "--prompt", "vlmevalkit:gemma3",
        "--system", "Mine.",
    )  # fmt: skip
    assert code == 0, err
    body = server.requests[-1]["body"]
    assert body["messages"][0] == {"role": "system", "content": "Mine."}  # the user's --system wins
    assert body["mm_processor_kwargs"] == {"max_pixels": 1000}
    code, _, err = cli(capsys, *base, "--model", f"openai:m@{server.url}", "--prompt", "vlmevalkit:gemma3")
    assert code == 0, err
    assert server.requests[-1]["body"]["messages"][0] == {"role": "system", "content": SETUPS["gemma3"].system}
