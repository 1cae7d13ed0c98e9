"""The LLM extractor: exact prompts, strict reply parsing, reminders, the workspace cache (proved by counting requests
at a fault server), errors, rules+llm, `vlmdesk extract`, and end to end against `transformers serve` and hf:."""

from __future__ import annotations

import json

import pytest

from db import open_workspace
from db.extractions import cache_size
from evaluator.backends import BackendError, load_backend
from evaluator.backends.openai_backend import OpenAIBackend
from evaluator.scoring.llm_extraction import (
    LLMExtractor,
    RulesThenLLM,
    load_extractor,
    parse_extractor_spec,
    parse_reply,
    render_prompt,
)
from tests.servers import Step, ok, text_of, transformers_serve
from vlmdesk.cli import main

OPTS = {"A": "cat", "B": "dog", "C": "bird"}


@pytest.fixture
def ws(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as w:
        yield w


def llm(url: str, ws=None, **kw) -> LLMExtractor:
    backend = OpenAIBackend("judge", url, retries=1, backoff=0.001, timeout=10, concurrency=4)
    return LLMExtractor(backend, ws=ws, **kw)


# ---- the prompt -----------------------------------------------------------------------------------------


def test_english_prompt_exact():
    assert render_prompt("Which animal is shown?", OPTS, "  I think it's a dog.\n") == (
        "You read a model's answer to a multiple-choice question and report which option the answer chose.\n"
        "Judge only what the answer literally says: the option it names or whose content it states. Do not solve "
        "the question yourself and do not judge whether the answer is right.\n"
        "If the answer chooses none of the options, several of them, refuses, or cannot be matched to exactly one "
        "option, reply Z.\n"
        "Reply with a single letter: A, B, C or Z. Nothing else.\n\n"
        "Question: Which animal is shown?\n"
        "Options:\nA. cat\nB. dog\nC. bird\n"
        "Answer: I think it's a dog.\n"
        "Your reply (one letter):"
    )


def test_chinese_prompt_exact_with_reminder():
    text = render_prompt("图中是什么动物？", {"B": "狗", "A": "猫"}, "是狗。", reminder=True)
    assert text == (
        "你将阅读一个模型对选择题的回答，并指出该回答选择了哪个选项。\n"
        "只按回答的字面内容判断：它说出的选项，或它所陈述的内容对应的选项。不要自己解题，也不要判断回答是否正确。\n"
        "如果回答没有选择任何选项、选择了多个选项、拒绝回答，或无法对应到唯一一个选项，请回复 Z。\n"
        "只回复一个字母：A、B 或 Z，不要有其他内容。\n\n"
        "问题：图中是什么动物？\n"
        "选项：\nA. 猫\nB. 狗\n"
        "回答：是狗。\n"
        "你的回复（一个字母）：\n"
        "（你上一次的回复不是单个字母。请只回复一个字母：A、B 或 Z。）"
    )


def test_english_reminder_and_language_override():
    text = render_prompt("Q?", {"A": "x", "B": "y"}, "r", reminder=True)
    assert text.endswith(
        "Your reply (one letter):\n"
        "(Your previous reply was not a single letter. Reply with exactly one letter: A, B or Z.)"
    )
    assert render_prompt("Q?", {"A": "x", "B": "y"}, "r", language="zh").startswith("你将阅读")


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("B", "B"),
        (" B\n", "B"),
        ("B.", "B"),
        ("(B)", "B"),
        ("**B**", "B"),
        ("`B`", "B"),
        ("「B」", "B"),
        ("Ｂ", "B"),
        ("Z", "Z"),
        ("z", None),
        ("b", None),
        ("D", None),
        ("B C", None),
        ("B or C", None),
        ("The answer is B", None),
        ("答案是B", None),
        ("", None),
        ("BB", None),
        ("B1", None),
    ],
)
def test_reply_parsing_is_strict(reply, expected):
    assert parse_reply(reply, tuple(OPTS)) == expected


@pytest.mark.parametrize(
    "spec, parsed",
    [
        ("rules", ("rules", None)),
        ("llm:openai:gpt-4o-mini", ("llm", "openai:gpt-4o-mini")),
        ("rules+llm:hf:./m", ("rules+llm", "hf:./m")),
    ],
)
def test_extractor_specs(spec, parsed):
    assert parse_extractor_spec(spec) == parsed


@pytest.mark.parametrize("spec", ["", "llm", "llm:", "llm:gpt-4o", "gpt", "rules+llm", "human"])
def test_bad_extractor_specs(spec):
    with pytest.raises(ValueError):
        parse_extractor_spec(spec)


# ---- against the fault server ---------------------------------------------------------------------------


def test_cache_first_extraction_pays_n_requests_second_pays_none(serve, ws):
    server = serve([ok("B")])
    inputs = [(f"Question {i}?", OPTS, f"response {i}") for i in range(5)]
    first = llm(server.url, ws).extract_many(inputs + [inputs[0]])  # a repeat in the same call is asked once
    assert server.count == 5
    assert [e.choice for e in first] == ["B"] * 6 and {e.stage for e in first} == {"llm"}
    assert cache_size(ws) == 5
    again = llm(server.url, ws).extract_many(list(reversed(inputs)))  # a fresh extractor: the cache is the workspace
    assert server.count == 5
    assert [e.choice for e in again] == ["B"] * 5
    # Another response, or the same input under another extractor model, is not a cache hit.
    llm(server.url, ws).extract_many([("Question 0?", OPTS, "response 0 changed")])
    assert server.count == 6
    other = LLMExtractor(OpenAIBackend("another-judge", server.url, retries=0), ws=ws)
    other.extract_many(inputs[:1])
    assert server.count == 7


def test_request_is_the_prompt_with_option_letters(serve):
    server = serve([ok("A")])
    llm(server.url).extract_many([("Which animal?", OPTS, "A cat.")])
    body = server.requests[0]["body"]
    assert text_of(body) == render_prompt("Which animal?", OPTS, "A cat.")
    assert body["max_tokens"] == 8 and body["temperature"] == 0


def test_malformed_reply_is_retried_with_the_reminder(serve, ws):
    server = serve([ok("The answer is B."), ok("B")])
    (e,) = llm(server.url, ws).extract_many([("Which animal?", OPTS, "It barks.")])
    assert (e.choice, e.stage) == ("B", "llm")
    assert server.count == 2
    assert text_of(server.requests[1]["body"]) == render_prompt("Which animal?", OPTS, "It barks.", reminder=True)
    raw = ws.conn.execute("SELECT raw, attempts FROM extractions").fetchone()
    assert json.loads(raw[0]) == ["The answer is B.", "B"] and raw[1] == 2


@pytest.mark.parametrize("reply", ["maybe", "D", "B or C", ""])
def test_no_valid_letter_after_all_attempts_is_undecided_never_a_guess(serve, ws, reply):
    server = serve([ok(reply)])
    (e,) = llm(server.url, ws).extract_many([("Which animal?", OPTS, "hmm")])
    assert e.choice is None and e.stage == "none"
    assert "3 attempts" in e.reason
    assert server.count == 3
    llm(server.url, ws).extract_many([("Which animal?", OPTS, "hmm")])
    assert server.count == 3  # undecided is a result too: cached


def test_z_reply_is_none_of_the_options(serve):
    server = serve([ok("Z")])
    (e,) = llm(server.url).extract_many([("Which animal?", OPTS, "I cannot see an animal.")])
    assert (e.choice, e.stage) == ("Z", "llm")


def test_server_error_then_ok_is_retried_by_the_backend(serve, ws):
    server = serve([Step(500, {"error": {"message": "busy"}}), ok("C")])
    (e,) = llm(server.url, ws).extract_many([("Which animal?", OPTS, "tweet")])
    assert e.choice == "C" and server.count == 2


@pytest.mark.parametrize(
    "step",
    [
        Step(400, {"error": {"message": "no such model"}}),
        Step(503, {"error": {"message": "down"}}),
        Step(200, "<html>proxy</html>"),
    ],
)
def test_errors_raise_and_cache_nothing(serve, ws, step):
    server = serve([step])
    with pytest.raises(BackendError):
        llm(server.url, ws).extract_many([("Which animal?", OPTS, "tweet")])
    assert cache_size(ws) == 0


def test_results_of_earlier_chunks_stay_cached_when_a_later_chunk_fails(serve, ws):
    server = serve([ok("A"), ok("A"), Step(400, {"error": {"message": "quota"}})])
    inputs = [(f"Q{i}?", OPTS, f"r{i}") for i in range(3)]
    with pytest.raises(BackendError):
        LLMExtractor(OpenAIBackend("judge", server.url, retries=0, concurrency=1), ws=ws, chunk=2).extract_many(inputs)
    assert cache_size(ws) == 2


def test_rules_then_llm_sends_only_rules_undecided(serve, ws):
    server = serve([ok("C")])
    extractor = RulesThenLLM(llm(server.url, ws))
    out = extractor.extract_many(
        [
            ("Which animal?", OPTS, "B"),
            ("Which animal?", OPTS, "It sings in trees."),
            ("Which animal?", OPTS, "I cannot tell."),
        ]
    )
    assert [(e.choice, e.stage) for e in out] == [("B", "rules"), ("C", "llm"), ("Z", "rules")]
    assert server.count == 1
    assert out[1].reason.startswith("rules: ")
    assert extractor.name.startswith(f"rules+llm:openai:judge@{server.url}")


# ---- vlmdesk extract ------------------------------------------------------------------------------------


def _write(path, records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in records))
    return path


def test_extract_command_rules(tmp_path, capsys):
    src = _write(
        tmp_path / "in.jsonl",
        [
            {"id": 1, "question": "Which?", "options": {"A": "cat", "B": "dog"}, "response": "A dog."},
            {"id": "x", "question": "哪个？", "options": {"A": "猫", "B": "狗"}, "response": "答案是B"},
            {"id": 3, "question": "Which?", "options": {"A": "cat", "B": "dog"}, "response": "maybe"},
            "",
        ],
    )
    assert main(["extract", "--input", str(src)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["id"], r["choice"], r["stage"]) for r in lines] == [
        (1, "B", "rules"),
        ("x", "B", "rules"),
        (3, None, "none"),
    ]
    assert all(r["reason"] for r in lines)


@pytest.mark.parametrize(
    "bad, field",
    [
        ("{not json", "line"),
        ({"question": "q", "options": {"A": "a"}, "response": "r"}, "id"),
        ({"id": 1, "options": {"A": "a"}, "response": "r"}, "question"),
        ({"id": 1, "question": "q", "options": ["a", "b"], "response": "r"}, "options"),
        ({"id": 1, "question": "q", "options": {"a": "x"}, "response": "r"}, "options"),
        ({"id": 1, "question": "q", "options": {"Z": "x"}, "response": "r"}, "options"),
        ({"id": 1, "question": "q", "options": {"A": "x"}, "response": None}, "response"),
    ],
)
def test_extract_command_bad_line_is_one_error_line_and_no_output(tmp_path, capsys, bad, field):
    good = {"id": 0, "question": "q", "options": {"A": "x", "B": "y"}, "response": "A"}
    src = _write(tmp_path / "in.jsonl", [good, bad])
    assert main(["extract", "--input", str(src)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith(f"error: {src}:2: {field}: ") and out.err.count("\n") == 1


def test_extract_command_llm_through_fault_server_uses_the_workspace_cache(tmp_path, capsys, serve):
    server = serve([ok("A")])
    src = _write(
        tmp_path / "in.jsonl",
        [
            {"id": 1, "question": "Which?", "options": {"A": "cat", "B": "dog"}, "response": "B"},
            {"id": 2, "question": "Which?", "options": {"A": "cat", "B": "dog"}, "response": "meow, I guess"},
        ],
    )
    args = [
        "--workspace",
        str(tmp_path / "ws.sqlite"),
        "extract",
        "--input",
        str(src),
        "--extractor",
        f"rules+llm:openai:judge@{server.url}?retries=0",
    ]
    for _ in range(2):
        assert main(args) == 0
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [(r["choice"], r["stage"]) for r in lines] == [("B", "rules"), ("A", "llm")]
    assert server.count == 1


def test_extract_command_unknown_extractor(tmp_path, capsys):
    src = _write(tmp_path / "in.jsonl", [])
    assert main(["extract", "--input", str(src), "--extractor", "gpt"]) == 2
    assert "unknown extractor" in capsys.readouterr().err


# ---- real models ----------------------------------------------------------------------------------------


class CountingBackend:
    def __init__(self, backend):
        self.backend, self.spec, self.prompts = backend, backend.spec, 0

    def describe(self):
        return self.backend.describe()

    def generate(self, queries, max_new_tokens):
        self.prompts += len(queries)
        return self.backend.generate(queries, max_new_tokens)


GIBBERISH_INPUTS = [
    ("Which animal is shown?", OPTS, "It is hard to say."),
    ("图中是什么动物？", {"A": "猫", "B": "狗"}, "不好说"),
]


def test_transformers_serve_with_tiny_text_model_end_to_end(tiny_text_lm_dir, tmp_path, capsys):
    """A random-weight model replies gibberish: strictly parsed, re-asked, then undecided — and cached."""
    with transformers_serve(tiny_text_lm_dir, tmp_path) as server, open_workspace(tmp_path / "ws.sqlite") as ws:
        base_url, model = server.running()
        backend = CountingBackend(OpenAIBackend(model, base_url, retries=1, backoff=0.1, timeout=60))
        out = LLMExtractor(backend, ws=ws).extract_many(GIBBERISH_INPUTS)
        raws = [json.loads(r[0]) for r in ws.conn.execute("SELECT raw FROM extractions ORDER BY rowid")]
        assert len(raws) == 2 and all(len(r) == 3 and all(isinstance(t, str) for t in r) for r in raws), raws
        for e, raw in zip(out, raws):
            assert all(parse_reply(t, "AB") is None for t in raw)  # the premise: no reply was a valid letter
            assert (e.choice, e.stage) == (None, "none")
        assert backend.prompts == 6
        LLMExtractor(backend, ws=ws).extract_many(GIBBERISH_INPUTS)
        assert backend.prompts == 6
        # The command, on the same server, through the same cache.
        src = _write(
            tmp_path / "in.jsonl",
            [{"id": i, "question": q, "options": o, "response": r} for i, (q, o, r) in enumerate(GIBBERISH_INPUTS)],
        )
        spec = f"llm:openai:{model}@{base_url}?retries=1&timeout=60"
        assert (
            main(["--workspace", str(tmp_path / "ws.sqlite"), "extract", "--input", str(src), "--extractor", spec]) == 0
        )
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [(r["id"], r["choice"], r["stage"]) for r in lines] == [(0, None, "none"), (1, None, "none")]


def test_local_hf_text_model_as_extractor(tiny_text_lm_dir, ws):
    backend = CountingBackend(load_backend(f"hf:{tiny_text_lm_dir}"))
    out = LLMExtractor(backend, ws=ws).extract_many(GIBBERISH_INPUTS)
    assert [(e.choice, e.stage) for e in out] == [(None, "none"), (None, "none")]
    assert backend.prompts == 6
    assert isinstance(load_extractor(f"rules+llm:hf:{tiny_text_lm_dir}", ws), RulesThenLLM)
