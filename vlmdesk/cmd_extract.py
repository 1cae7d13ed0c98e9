"""Commands over choice extraction: extract (JSONL in, JSONL out) and rescore (a stored run, no model calls)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from evaluator.scoring.llm_extraction import EXTRACTOR_HELP
from vlmdesk.args import record_id

_LETTER = re.compile(r"^[A-Y]$")


def register_extract(add) -> None:
    p = add(
        description="Read JSONL answers and print, per line, the option each one chose. Input lines: "
        '{"id": …, "question": "…", "options": {"A": "…", "B": "…"}, "response": "…"}. Output '
        'lines (stdout): {"id": …, "choice": "B" | "Z" | null, "stage": "rules" | "llm" | "none", '
        '"reason": "…"}. Z = the response chose none of the options (or refused); null = undecided. '
        "The whole file is checked before anything is extracted. LLM results are cached in the "
        f"workspace.\n\nextractors: {EXTRACTOR_HELP}",
        examples="""
                vlmdesk extract --input answers.jsonl
                vlmdesk extract --input answers.jsonl --extractor 'rules+llm:openai:gpt-4o-mini'
                vlmdesk extract --input answers.jsonl --extractor 'llm:openai:qwen2.5-7b@http://localhost:8000/v1'
                vlmdesk extract --input answers.jsonl --extractor llm:hf:./Qwen2.5-0.5B-Instruct""",
    )
    p.add_argument("--input", required=True, metavar="FILE.jsonl", help="one JSON object per line")
    p.add_argument("--extractor", default="rules", metavar="SPEC", help=f"{EXTRACTOR_HELP} (default rules)")
    p.set_defaults(handler=cmd_extract)


def register_rescore(add) -> None:
    p = add(
        description="Read every stored pass of a multiple-choice run again — the evaluated model is not called — "
        "and store the result as a scoring of the run named by the extractor spec (re-scoring with "
        "the same name replaces it). `human` uses the final human labels of the alignment study "
        "where a response has one and the run's own reading elsewhere. A CircularEval pass the run "
        "never asked (an earlier pass was wrong under its own extractor) stays unasked: the report "
        "counts it as wrong and says how many items that affects.\n\n"
        f"extractors: {EXTRACTOR_HELP} | human",
        examples="""
                vlmdesk rescore 3 --extractor 'rules+llm:openai:gpt-4o-mini'
                vlmdesk rescore 3 --extractor human
                vlmdesk report 3 --scoring human --json""",
    )
    p.add_argument("run_id", type=record_id, metavar="RUN_ID", help="a finished multiple-choice run (vlmdesk runs)")
    p.add_argument("--extractor", required=True, metavar="SPEC", help=f"{EXTRACTOR_HELP} | human")
    p.add_argument("--json", action="store_true", help="print the scoring's summary as JSON")
    p.set_defaults(handler=cmd_rescore)


# A line is one question, its options and one response (a stored response is at most 64 K characters); the file is
# held in memory whole.
MAX_INPUT_LINE_BYTES = 2**20
MAX_INPUT_BYTES = 256 * 2**20


def read_inputs(path: str) -> list[tuple[object, str, dict[str, str], str]]:
    """(id, question, options, response) per line; InputError at the first bad line (blank lines are skipped)."""
    from evaluator.formats.importers import InputError
    from evaluator.formats.importers.common import decoded_lines, json_loads, open_input

    out: list[tuple[object, str, dict[str, str], str]] = []
    with open_input(path, MAX_INPUT_BYTES, "limit for an extract input", "file") as raw:
        lines = list(decoded_lines(raw, Path(path), max_line=MAX_INPUT_LINE_BYTES))
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json_loads(line)  # depth-bounded: 100,000 nested brackets are an error, not a RecursionError
        except ValueError as exc:
            raise InputError(path, n, "line", f"not JSON ({getattr(exc, 'msg', exc)})") from None
        if not isinstance(rec, dict):
            raise InputError(path, n, "line", "expected a JSON object")
        if "id" not in rec or not isinstance(rec["id"], (str, int)) or isinstance(rec["id"], bool):
            raise InputError(path, n, "id", "required: a string or an integer")
        for field in ("question", "response"):
            if not isinstance(rec.get(field), str):
                raise InputError(path, n, field, "required: a string")
        options = rec.get("options")
        if not isinstance(options, dict) or not options:
            raise InputError(path, n, "options", 'required: an object such as {"A": "cat", "B": "dog"}')
        for letter, text in options.items():
            if not _LETTER.match(letter):
                raise InputError(path, n, "options", f"{letter!r} is not an option letter (A–Y; Z means none)")
            if not isinstance(text, str) or not text.strip():
                raise InputError(path, n, "options", f"option {letter} needs a non-empty text")
        out.append((rec["id"], rec["question"], options, rec["response"]))
    return out


def cmd_extract(args) -> int:
    from evaluator.backends import BackendError
    from evaluator.scoring.llm_extraction import load_extractor, parse_extractor_spec
    from vlmdesk.cli import open_from_args

    kind, _ = parse_extractor_spec(args.extractor)
    records = read_inputs(args.input)
    inputs = [(q, o, r) for _, q, o, r in records]
    try:
        if kind == "rules":
            results = load_extractor(args.extractor).extract_many(inputs)
        else:
            with open_from_args(args) as ws:  # the workspace holds the LLM cache
                results = load_extractor(args.extractor, ws).extract_many(inputs)
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for (rid, *_), e in zip(records, results):
        print(json.dumps({"id": rid, "choice": e.choice, "stage": e.stage, "reason": e.reason}, ensure_ascii=False))
    return 0


def cmd_rescore(args) -> int:
    from evaluator.backends import BackendError
    from evaluator.scoring.llm_extraction import load_extractor, parse_extractor_spec
    from evaluator.scoring.rescoring import rescore
    from vlmdesk.cli import open_from_args

    spec = args.extractor.strip()
    with open_from_args(args) as ws:
        try:
            if spec == "human":
                from annotation.alignment import HumanLabels

                scoring = rescore(ws, args.run_id, HumanLabels(ws), fallback_to_run=True)
            else:
                parse_extractor_spec(spec)
                scoring = rescore(ws, args.run_id, load_extractor(spec, ws), name=spec)
        except BackendError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps({"run_id": args.run_id, "scoring": scoring.name, **scoring.summary}, ensure_ascii=False))
    else:
        s = scoring.summary
        print(
            f"run {args.run_id} re-scored as {scoring.name!r}: {s['passes']} passes, {s['changed_from_run']} read "
            f"differently from the run, {s['undecided']} undecided (vlmdesk report {args.run_id} "
            f"--scoring '{scoring.name}')"
        )
    return 0
