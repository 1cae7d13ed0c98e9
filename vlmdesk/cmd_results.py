"""Commands over a run's results: its predictions in VLMEvalKit's format, and the items behind a report figure."""

from __future__ import annotations

import json

from vlmdesk.args import record_id


def register_export_predictions(add) -> None:
    p = add(
        description="VLMEvalKit's {model}_{dataset} prediction layout: the benchmark's columns (no image) plus "
        "`prediction`, the raw model output. CircularEval runs give the original rows and the "
        "expanded copies (index + k·1,000,000) with the options rotated as the model saw them in "
        "pass k and that pass's prediction (empty where the pass was never asked). --layout lmms-eval "
        "writes the same rows as lmms-eval's --log_samples JSON Lines (doc, target, resps, filtered_resps). "
        "vlmdesk import-predictions reads both back. See docs/gui.md#results.",
        examples="""
                vlmdesk export-predictions 3 --out llava-1.5-7b-hf_MMBench_DEV_EN.xlsx
                vlmdesk export-predictions 3 --out preds.csv --prediction choice
                vlmdesk export-predictions 3 --out samples_mmbench_en_dev.jsonl --layout lmms-eval""",
    )
    p.add_argument("run_id", type=record_id, metavar="RUN_ID", help="the run (vlmdesk runs)")
    p.add_argument("--out", required=True, metavar="FILE", help=".xlsx, .tsv or .csv (lmms-eval: .jsonl)")
    p.add_argument(
        "--layout",
        choices=("vlmevalkit", "lmms-eval"),
        default="vlmevalkit",
        help="VLMEvalKit's prediction file (default) or lmms-eval's sample JSON Lines",
    )
    p.add_argument(
        "--prediction",
        choices=("response", "choice"),
        default="response",
        help="the raw response (default, what VLMEvalKit stores) or the extracted letter",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_export_predictions)


def register_run_items(add) -> None:
    p = add(
        description="Each item of the group with whether the report counted it right under VanillaEval and "
        "CircularEval (POPE: under the official and the strict parser; an open run: each open metric's score, "
        "by leaf category). What the app lists when a bar is clicked.",
        examples="""
                vlmdesk run-items 3 --level l2 --group coarse_perception
                vlmdesk run-items 3 --level category --group image_style --json
                vlmdesk run-items 5 --json""",
    )
    p.add_argument("run_id", type=record_id, metavar="RUN_ID", help="the run (vlmdesk runs)")
    p.add_argument(
        "--level",
        choices=("l2", "category", "split", "all"),
        default="all",
        help="group by L2 ability, leaf category or split (default all: every item)",
    )
    p.add_argument(
        "--group",
        help="the ability / category / split name, as in `vlmdesk report --json` "
        "(L2 short codes such as CP or FP-S work too)",
    )
    p.add_argument("--scoring", metavar="NAME", help="a stored re-scoring instead of the run's own")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_run_items)


def cmd_export_predictions(args) -> int:
    from db.errors import NotFound
    from evaluator.formats.prediction_export import export_predictions
    from vlmdesk.cli import UsageError, open_from_args, output_file

    with open_from_args(args) as ws:
        try:
            done = export_predictions(
                ws, args.run_id, output_file(args.out), prediction=args.prediction, layout=args.layout
            )
        except NotFound as exc:
            raise UsageError(f"{exc} in {ws.path}") from None
    if args.json:
        print(
            json.dumps({"path": str(done.path), "run_id": done.run_id, "rows": done.rows, "predicted": done.predicted})
        )
    else:
        print(f"wrote {done.path}: {done.rows} rows, {done.predicted} with a prediction")
    return 0


def _open_items(ws, args) -> int:
    """An open run's answered items with each open metric's score (fractions; CIDEr its own scale)."""
    from evaluator.analysis.report import open_group_items
    from vlmdesk.cli import UsageError

    if args.level not in ("all", "category"):
        raise UsageError(f"an open run is grouped by leaf category only, not --level {args.level}")
    found = open_group_items(ws, args.run_id, group=args.group if args.level == "category" else None)
    if args.json:
        print(json.dumps([r.to_json() for r in found], ensure_ascii=False))
        return 0
    for r in found:
        scores = "  ".join(f"{name} {value:.2f}" for name, value in r.scores.items())
        print(f"{r.index:>10}  {scores}  {' '.join(r.question.split())[:50]}")
    print(f"{len(found)} items")
    return 0


def cmd_run_items(args) -> int:
    from db import runs
    from evaluator.analysis.report import group_items
    from vlmdesk.cli import UsageError, open_from_args

    if args.level != "all" and args.group is None:
        raise UsageError(f"--level {args.level} needs --group NAME")
    with open_from_args(args) as ws:
        run = runs.get_run(ws, args.run_id)
        if run is not None and run.strategy == "open":
            return _open_items(ws, args)
        found = group_items(ws, args.run_id, level=args.level, group=args.group, scoring=args.scoring)
    if args.json:
        print(json.dumps([r.to_json() for r in found], ensure_ascii=False))
        return 0
    mark = {True: "✓", False: "✗", None: "–"}
    for r in found:
        scores = (
            f"vanilla {mark[r.vanilla]}  circular {mark[r.circular]}"
            if r.official is None and r.strict is None
            else f"official {mark[r.official]}  strict {mark[r.strict]}"
        )
        print(f"{r.index:>10}  {scores}  {' '.join(r.question.split())[:70]}")
    print(f"{len(found)} items")
    return 0
