"""`vlmdesk import-predictions`: a VLMEvalKit or lmms-eval prediction file as a stored, finished run."""

from __future__ import annotations

import json
import sys

from evaluator.formats.prediction_import import PREDICTION_FORMATS


def register_import_predictions(add) -> None:
    p = add(
        description="Read a VLMEvalKit prediction file ({model}_{dataset}.xlsx, .tsv or .csv: the benchmark's rows "
        "and circular copies plus `prediction`) or lmms-eval's --log_samples JSON Lines (MMBench, POPE, open tasks) "
        "and store it as a finished run of BENCH: each row is matched to its item by index and to its CircularEval "
        "pass by the option order it shows; the raw output is read by vlmdesk's extractor. A file with circular "
        "copies (index + k*1,000,000) gives a CircularEval run, one without a VanillaEval run; onto an open "
        "benchmark (TextVQA, DocVQA, COCO captions…) VLMEvalKit's VQA predictions and lmms-eval's open-task samples "
        "(textvqa_val, docvqa_val, vqav2_val, ok_vqa_val2014, coco2017_cap_val…: docs named by index, question_id, "
        "questionId or doc_id, their question checked) give an open run, responses stored as given. All or nothing: "
        "a row naming no item, or showing options that are not a rotation of the item's, stops the import (unless "
        "--skip-bad). Importing the same file again finds the run already there.",
        examples="""
                vlmdesk import-predictions llava_v1.5_7b_MMBench_DEV_EN.xlsx --bench mmbench-dev-en --model llava-v1.5-7b
                vlmdesk import-predictions samples_pope_pop.jsonl --bench pope-popular --model llava --format lmms-eval
                vlmdesk import-predictions samples_textvqa_val.jsonl --bench textvqa_val --model llava
                vlmdesk import-predictions preds.tsv --bench demo --model mine --extractor 'rules+llm:openai:gpt-4o-mini' --json""",  # noqa: E501 (an example is one shell line, shown as written)
    )
    p.add_argument("path", help="the prediction file (.xlsx, .tsv, .csv, or .jsonl)")
    p.add_argument("--bench", required=True, help="the benchmark the predictions answer (vlmdesk benchmarks)")
    p.add_argument("--model", required=True, help="the model's name, stored as the run's model (one line)")
    p.add_argument(
        "--format",
        dest="fmt",
        choices=PREDICTION_FORMATS,
        help="vlmevalkit (.xlsx/.tsv/.csv) or lmms-eval (.jsonl); default: from the file name",
    )
    p.add_argument(
        "--extractor",
        default="rules",
        metavar="SPEC",
        help="how responses are read into choices: rules (default), llm:SPEC or rules+llm:SPEC",
    )
    p.add_argument("--skip-bad", action="store_true", help="import the good rows and report every skipped one")
    p.add_argument("--json", action="store_true", help='print {"run_id": N, …} as JSON')
    p.set_defaults(handler=cmd_import_predictions)


def cmd_import_predictions(args) -> int:
    from evaluator.formats.prediction_import import import_predictions
    from vlmdesk.cli import open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args) as ws:
        done = import_predictions(
            ws,
            args.path,
            bench_or_fail(ws, args.bench),
            args.model,
            fmt=args.fmt,
            extractor=args.extractor,
            skip_bad=args.skip_bad,
        )
    for err in done.skipped:
        print(f"skipped: {err}", file=sys.stderr)
    if done.skipped_count > len(done.skipped):
        print(f"skipped: … and {done.skipped_count - len(done.skipped)} more row(s)", file=sys.stderr)
    if args.json:
        print(json.dumps(done.to_json(), ensure_ascii=False))
    elif done.already_imported:
        print(f"{args.path} is already imported as run {done.run_id}; nothing to do")
    else:
        # An empty prediction is a pass never asked only in a multiple-choice file (what export-predictions writes for
        # passes early termination skipped); yes/no and open files keep it as an answer, scored as the reference does.
        unasked = f"{done.unasked} never asked, " if done.strategy in ("circular", "vanilla") else ""
        print(
            f"imported run {done.run_id} ({done.strategy}): {done.passes} passes of {done.items} items from "
            f"{done.rows_read} rows ({unasked}{done.skipped_count} skipped)"
        )
        for note in done.notes():
            print(f"note: {note}")
    return 0
