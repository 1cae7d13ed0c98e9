"""`vlmdesk qc …`: quality control — text-only and consensus stages, the review queue, decisions, curated export."""

from __future__ import annotations

import getpass
import itertools
import json
import os
import sys

from annotation import qc
from evaluator.formats.registry import format_names
from vlmdesk.args import annotator, positive_int, record_id, seed
from vlmdesk.cli import model_specs_help

ANNOTATOR_ENV = "VLMDESK_ANNOTATOR"


def register_qc(add) -> None:
    p = add(
        description="Quality control in two stages, then human decisions. text-only: models answer without the "
        "image under CircularEval; an item more than half of them get right is a 'text-answerable' "
        "candidate. consensus: over VLM runs you choose, an item no run gets right is a 'possibly "
        "flawed' candidate. Every candidate waits in a review queue until people confirm or reject "
        "it; export writes the benchmark without the confirmed-removed items and with corrected "
        "answers. See docs/quality-control.md.",
        examples="""
                vlmdesk qc text-only --bench demo --model baseline:first --model baseline:frequent
                vlmdesk qc consensus --bench demo --run 3 --run 4
                vlmdesk qc list --bench demo --status pending
                vlmdesk qc decide demo 7 --confirm --reason wrong_answer --answer C --note 'key says B'
                vlmdesk qc export demo --out demo-curated.jsonl
                vlmdesk qc summary --json
                vlmdesk qc export-decisions --out mine.jsonl && vlmdesk qc import-decisions theirs.jsonl""",
    )
    sub = p.add_subparsers(dest="qc_command", metavar="STEP", required=True)
    step = _stepper(sub)

    s = step(
        "text-only",
        "run language models without the image and flag what most of them answer",
        "Runs each model on the benchmark under CircularEval with the image withheld (ordinary runs: see "
        "vlmdesk runs / report; an interrupted command continues when run again, finished runs are reused), "
        "then flags every item answered correctly in every pass by more than half of the runs. Replaces the "
        "stage's previous flags; decisions already given stay.\n\n" + model_specs_help(),
        """
             vlmdesk qc text-only --bench mmbench-dev-en --model hf:Qwen/Qwen2.5-1.5B-Instruct \\
                 --model 'openai:gpt-4o-mini@https://api.openai.com/v1?key_env=OPENAI_API_KEY'
             vlmdesk qc text-only --bench demo --model baseline:first --model baseline:frequent --json""",
    )
    s.add_argument("--bench", required=True, help="benchmark name")
    s.add_argument(
        "--model",
        action="append",
        required=True,
        metavar="SPEC",
        help="a saved model's name or a model spec (repeat for several models)",
    )
    s.add_argument("--batch-size", type=positive_int, default=8, help="prompts per model call (default 8)")
    s.add_argument("--limit", type=positive_int, help="only the first N items of the benchmark")
    s.add_argument("--seed", type=seed, default=0, help="seed for baseline:random (default 0)")
    s.add_argument("--json", action="store_true", help="print the stage result as JSON")
    s.set_defaults(handler=cmd_text_only)

    s = step(
        "consensus",
        "flag the items no chosen VLM run answers correctly",
        "Over finished CircularEval runs of the benchmark that saw the images, flags every item that no run "
        "answers correctly (possibly a wrong answer key, ambiguous options or an unreadable image). Replaces "
        "the stage's previous flags; decisions already given stay.",
        """
             vlmdesk qc consensus --bench mmbench-dev-en --run 3 --run 4 --run 9
             vlmdesk qc consensus --bench demo --run 2 --json""",
    )
    s.add_argument("--bench", required=True, help="benchmark name")
    s.add_argument(
        "--run",
        action="append",
        type=record_id,
        required=True,
        metavar="ID",
        dest="run_ids",
        help="a run id (repeat for several runs)",
    )
    s.add_argument("--json", action="store_true", help="print the stage result as JSON")
    s.set_defaults(handler=cmd_consensus)

    s = step(
        "list",
        "the review queue: candidates with their status, runs and decisions",
        "Lists QC candidates, pending first, then disputed, confirmed, rejected. Status comes from each "
        "reviewer's latest decision: the outcome (keep / remove / correct to X) with the most votes; a tie "
        "is 'disputed'.",
        """
             vlmdesk qc list
             vlmdesk qc list --bench demo --stage consensus --status pending
             vlmdesk qc list --disagreements --json""",
    )
    s.add_argument("--bench", help="only this benchmark")
    s.add_argument("--stage", choices=qc.STAGES, help="only this stage")
    s.add_argument("--status", choices=qc.STATUSES, help="only this status")
    s.add_argument("--disagreements", action="store_true", help="only candidates whose reviewers disagree")
    s.add_argument("--all", action="store_true", help="include flags withdrawn by a later computation of the stage")
    s.add_argument("--json", action="store_true", help="print a JSON array")
    s.set_defaults(handler=cmd_list)

    s = step(
        "decide",
        "confirm or reject a candidate (appends a decision)",
        "Records your decision on an item's flag; decisions are never edited, a new one supersedes your "
        "earlier one. A confirmation needs a reason (default: text_answerable in the text-only stage, "
        "wrong_answer when --answer is given); wrong_answer needs --answer, the corrected key.",
        """
             vlmdesk qc decide demo 7 --confirm
             vlmdesk qc decide demo 7 --confirm --reason ambiguous --note 'B and C both fit' --stage consensus
             vlmdesk qc decide demo 12 --confirm --answer C
             vlmdesk qc decide demo 12 --reject --annotator alice""",
    )
    s.add_argument("bench", help="benchmark name")
    s.add_argument("index", help="the item's index")
    which = s.add_mutually_exclusive_group(required=True)
    which.add_argument("--confirm", dest="decision", action="store_const", const="confirm", help="the flag is right")
    which.add_argument("--reject", dest="decision", action="store_const", const="reject", help="the flag is wrong")
    s.add_argument(
        "--reason",
        type=lambda v: v.replace("-", "_"),
        choices=qc.REASONS,
        help="why it is confirmed: " + ", ".join(f"{k} ({v})" for k, v in qc.REASON_TEXT.items()),
    )
    s.add_argument("--note", help="free text kept with the decision")
    s.add_argument("--answer", help="the corrected answer key (a letter, or yes/no)")
    s.add_argument("--stage", choices=qc.STAGES, help="which flag, when the item has both")
    s.add_argument("--annotator", type=annotator, help=f"your name (default: ${ANNOTATOR_ENV}, else your user name)")
    s.add_argument("--json", action="store_true", help="print the decision as JSON")
    s.set_defaults(handler=cmd_decide)

    s = step(
        "export",
        "write the curated benchmark and its change log",
        "Writes the benchmark without the items whose removal was confirmed and with corrected answer keys, "
        "in the format it came from (VLMEvalKit TSV re-expanded for CircularEval, POPE JSONL, vlmdesk JSONL), "
        "and FILE.changes.jsonl: one line per changed item (what, why, who). Disputed flags and conflicting "
        "corrections change nothing and are logged as not_applied.",
        """
             vlmdesk qc export mmbench-dev-en --out MMBench_DEV_EN_curated.tsv
             vlmdesk qc export demo --out curated.jsonl --with-reviews --json""",
    )
    s.add_argument("bench", help="benchmark name")
    s.add_argument("--out", required=True, metavar="FILE", help="the curated file to write")
    s.add_argument("--format", dest="fmt", choices=format_names(), help="output format (default: the benchmark's own)")
    s.add_argument(
        "--with-reviews",
        action="store_true",
        help="also apply standing item reviews (vlmdesk reviews): wrong_answer corrects (an open item's corrected "
        "reference becomes its only one), incomplete adds the answer it names to an open item's references, "
        "ambiguous / text_answerable / bad_image remove",
    )
    s.add_argument("--json", action="store_true", help="print the export report as JSON")
    s.set_defaults(handler=cmd_export)

    s = step(
        "summary",
        "candidates, confirmed, rejected, pending: per stage and per category",
        "Counts per benchmark and stage: candidates, pending, disputed, confirmed, rejected, disagreements, "
        "withdrawn flags; confirmed per reason; per item category.",
        """
             vlmdesk qc summary
             vlmdesk qc summary --bench demo --json""",
    )
    s.add_argument("--bench", help="only this benchmark")
    s.add_argument("--json", action="store_true", help="print a JSON array (one object per benchmark)")
    s.set_defaults(handler=cmd_summary)

    from vlmdesk.cmd_reviews import add_export_output, add_import_arguments

    s = step(
        "export-decisions",
        "write QC decisions and their undos as JSON Lines, oldest first",
        "Writes every decision (and every undo of one) for merging into another copy of the workspace: id, "
        "benchmark, index, stage, annotator, decision, reason, answer, old_answer, note, at, withdraws.",
        """
             vlmdesk qc export-decisions --bench demo --out demo-decisions.jsonl
             vlmdesk qc export-decisions --annotator ana > ana-decisions.jsonl""",
    )
    s.add_argument("--bench", help="only this benchmark's items")
    s.add_argument("--annotator", metavar="NAME", type=annotator, help="only this reviewer's decisions")
    add_export_output(s)
    s.set_defaults(handler=cmd_export_decisions)

    s = step(
        "import-decisions",
        "merge QC decisions exported from another copy of the workspace",
        "Merges a file written by export-decisions: a decision already present (same id) is skipped, so "
        "importing twice adds nothing. A bad line stops the import with nothing written, unless --skip-bad.",
        """
             vlmdesk qc import-decisions ana-decisions.jsonl
             vlmdesk qc import-decisions ana-decisions.jsonl --skip-bad --json""",
    )
    add_import_arguments(s, "QC decisions")
    s.set_defaults(handler=cmd_import_decisions)


def _stepper(sub):
    from vlmdesk.cli import add_command

    def step(name: str, help: str, description: str, examples: str):
        return add_command(sub, name, help=help, description=description, examples=examples)

    return step


def _usage(exc: Exception):
    from vlmdesk.cli import UsageError

    return UsageError(str(exc))


def default_annotator() -> str:
    return os.environ.get(ANNOTATOR_ENV) or getpass.getuser()


def _print_stage(args, bench, result: qc.StageResult, ws, extra: dict | None = None) -> None:
    index = {i.id: i.index for i in _items(ws, bench.id)}
    if args.json:
        print(
            json.dumps(
                {
                    "benchmark": bench.name,
                    "stage": result.stage,
                    "stage_run_id": result.stage_run_id,
                    "runs": list(result.run_ids),
                    **(extra or {}),
                    "items_evaluated": result.items_evaluated,
                    "candidates": [index[i] for i in result.candidates],
                    "added": [index[i] for i in result.added],
                    "withdrawn": [index[i] for i in result.withdrawn],
                },
                ensure_ascii=False,
            )
        )
        return
    print(
        f"{result.stage}: {len(result.candidates)} {qc.CATEGORY[result.stage]} candidate(s) among "
        f"{result.items_evaluated} items over runs {', '.join(map(str, result.run_ids))} "
        f"({len(result.added)} new, {len(result.withdrawn)} withdrawn); review: vlmdesk qc list --bench {bench.name}"
    )


def _items(ws, bench_id):
    from db import catalog

    return catalog.list_items(ws, bench_id)


def cmd_text_only(args) -> int:
    from tqdm import tqdm

    from db.platform_io import cancel_interrupts
    from evaluator.backends import BackendError
    from evaluator.backends.secrets import redact
    from evaluator.engine.launch import prepare_run, resolve_model, run_or_resume
    from evaluator.engine.prompts import default_template
    from evaluator.engine.runner import RunSettings
    from vlmdesk.cli import UsageError, open_from_args
    from vlmdesk.cmd_data import bench_or_fail
    from vlmdesk.cmd_run import human_progress

    with open_from_args(args) as ws:
        # Every model (a saved model's name or a spec) is checked before the first one runs.
        specs = {model: resolve_model(ws, model) for model in args.model}
        if len(set(specs.values())) != len(args.model):
            raise UsageError("a model is named twice")
        bench = bench_or_fail(ws, args.bench)
        settings = RunSettings(strategy="circular", limit=args.limit, text_only=True, seed=args.seed)
        template = default_template(bench.kind)
        run_ids: dict[str, int] = {}
        with cancel_interrupts():
            try:
                for model, spec in specs.items():
                    launch = prepare_run(ws, bench, spec, settings, template, batch_size=args.batch_size)
                    run = launch.run
                    if launch.finished:
                        print(f"{model}: run {run.id} already finished, reused", file=sys.stderr)
                        run_ids[model] = run.id
                        continue
                    bar = tqdm(desc=f"run {run.id} {model}", unit="pass", file=sys.stderr, disable=None, leave=False)

                    try:
                        run_or_resume(ws, launch, on_progress=human_progress(bar, run.id))
                    except BackendError as exc:
                        print(
                            f"error: run {run.id} ({model}) failed: {redact(str(exc), spec)}; run the same command "
                            "again to continue",
                            file=sys.stderr,
                        )
                        return 1
                    finally:
                        bar.close()
                    print(f"{model}: run {run.id} finished", file=sys.stderr)
                    run_ids[model] = run.id
            except KeyboardInterrupt:
                print("interrupted; run the same command again to continue", file=sys.stderr)
                return 130
        try:
            result = qc.compute_stage(ws, bench.id, "text-only", list(run_ids.values()))
        except qc.QCError as exc:
            raise _usage(exc) from None
        _print_stage(args, bench, result, ws, {"models": run_ids})
    return 0


def cmd_consensus(args) -> int:
    from vlmdesk.cli import open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args) as ws:
        bench = bench_or_fail(ws, args.bench)
        try:
            result = qc.compute_stage(ws, bench.id, "consensus", args.run_ids)
        except qc.QCError as exc:
            raise _usage(exc) from None
        _print_stage(args, bench, result, ws)
    return 0


def cmd_list(args) -> int:
    from vlmdesk.cli import open_from_args, write_json_array
    from vlmdesk.cmd_data import bench_or_fail

    # Streamed: each candidate is written as it is read, in constant memory (a million flags list at once).
    with open_from_args(args) as ws:
        bench_id = bench_or_fail(ws, args.bench).id if args.bench else None
        found = qc.iter_queue(
            ws,
            benchmark_id=bench_id,
            stage=args.stage,
            status=args.status,
            include_withdrawn=args.all,
            disagreements_only=args.disagreements,
        )
        if args.json:
            write_json_array(c.to_json() for c in found)
            return 0
        first = next(found, None)
        if first is None:
            print("no QC candidates match (vlmdesk qc text-only / qc consensus make them)")
            return 0
        print(f"{'benchmark':<18} {'index':>8}  {'stage':<9} {'status':<9} {'outcome':<10} {'runs':<12} decisions")
        for c in itertools.chain([first], found):
            _print_candidate(c)
    return 0


def _print_candidate(c: qc.Candidate) -> None:
    r = c.resolution
    outcome = {"correct": f"key→{r.answer}", None: "-"}.get(r.action, r.action)
    votes = ", ".join(f"{d.annotator}:{d.decision}" + (f"/{d.reason}" if d.reason else "") for d in r.votes)
    mark = " (disagree)" if r.disagreement else ""
    withdrawn = "" if c.active else " [withdrawn]"
    print(
        f"{c.benchmark[:18]:<18} {str(c.index):>8}  {c.stage:<9} {c.status:<9} {outcome:<10} "
        f"{','.join(map(str, c.run_ids))[:12]:<12} {votes or '-'}{mark}{withdrawn}"
    )


def cmd_decide(args) -> int:
    from vlmdesk.cli import UsageError, open_from_args
    from vlmdesk.cmd_data import bench_or_fail, item_or_fail

    with open_from_args(args) as ws:
        bench = bench_or_fail(ws, args.bench)
        item = item_or_fail(ws, bench, args.index)
        index = item.index
        stages = qc.flag_stages(ws, item.id)
        stage = args.stage
        if stage is None:
            if len(stages) != 1:
                raise UsageError(
                    f"item {index!r} is not a QC candidate"
                    if not stages
                    else f"item {index!r} is flagged in both stages; say which with --stage"
                )
            stage = stages[0]
        try:
            decision = qc.decide(
                ws,
                item.id,
                stage,
                args.annotator or default_annotator(),
                args.decision,
                reason=args.reason,
                note=args.note,
                answer=args.answer,
            )
        except qc.QCError as exc:
            raise UsageError(f"item {index!r}: {exc}") from None
        status = next(
            c for c in qc.queue(ws, benchmark_id=bench.id, stage=stage, include_withdrawn=True) if c.item_id == item.id
        ).resolution
    if args.json:
        print(
            json.dumps(
                {**decision.to_json(), "index": index, "status": status.status, "disagreement": status.disagreement},
                ensure_ascii=False,
            )
        )
        return 0
    change = f" (answer {decision.old_answer} → {decision.new_answer})" if decision.new_answer else ""
    print(
        f"saved: {decision.annotator} {decision.decision}s {bench.name} #{index} ({stage})"
        f"{' as ' + decision.reason if decision.reason else ''}{change}; status now {status.status}"
        f"{' — reviewers disagree' if status.disagreement else ''}"
    )
    return 0


def cmd_export(args) -> int:
    from annotation.curation import changes_path, export_curated
    from evaluator.formats.exporters import ExportError
    from vlmdesk.cli import UsageError, open_from_args, output_file
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args) as ws:
        bench = bench_or_fail(ws, args.bench)
        out = output_file(args.out)
        try:
            report, changes = export_curated(ws, bench, out, fmt=args.fmt, with_reviews=args.with_reviews)
        except ExportError as exc:
            raise UsageError(str(exc)) from None
    actions = ("removed", "answer_corrected", "references_added", "not_applied")
    counts = {a: sum(1 for c in changes if c.action == a) for a in actions}
    if args.json:
        print(
            json.dumps(
                {
                    "benchmark": bench.name,
                    "path": str(report.path),
                    "format": report.format,
                    "questions": report.questions,
                    "rows": report.rows,
                    "images": report.images,
                    "changes_path": str(changes_path(out)),
                    **counts,
                },
                ensure_ascii=False,
            )
        )
        return 0
    print(
        f"wrote {report.path} ({report.format}): {report.questions} questions in {report.rows} rows; "
        f"{counts['removed']} removed, {counts['answer_corrected']} answers corrected, "
        + (f"{counts['references_added']} with references added, " if counts["references_added"] else "")
        + f"{counts['not_applied']} not applied; change log {changes_path(out)}"
    )
    return 0


def cmd_summary(args) -> int:
    from vlmdesk.cli import open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args) as ws:
        bench_id = bench_or_fail(ws, args.bench).id if args.bench else None
        found = qc.summary(ws, bench_id)
    if args.json:
        print(json.dumps(found, ensure_ascii=False))
        return 0
    if not found:
        print("no QC candidates yet (vlmdesk qc text-only / qc consensus)")
        return 0
    for bench in found:
        print(bench["benchmark"])
        print(f"  {'':<28} {'cand.':>6} {'pending':>8} {'disputed':>9} {'confirmed':>10} {'rejected':>9}")
        for stage, s in bench["stages"].items():
            rows = [(f"{stage} ({s['category']})", s)] + [(f"  {k}", v) for k, v in s["by_item_category"].items()]
            for label, c in rows:
                print(
                    f"  {label[:28]:<28} {c['candidates']:>6} {c['pending']:>8} {c['disputed']:>9} "
                    f"{c['confirmed']:>10} {c['rejected']:>9}"
                )
            if s["by_reason"]:
                print("    confirmed by reason: " + ", ".join(f"{k} {v}" for k, v in s["by_reason"].items()))
        t = bench["total"]
        print(
            f"  {'total':<28} {t['candidates']:>6} {t['pending']:>8} {t['disputed']:>9} {t['confirmed']:>10} "
            f"{t['rejected']:>9}"
        )
    return 0


def cmd_export_decisions(args) -> int:
    from vlmdesk.cmd_reviews import export_by_benchmark

    return export_by_benchmark(args, "qc")


def cmd_import_decisions(args) -> int:
    from vlmdesk.cmd_reviews import run_import

    return run_import(args, "qc", "decision(s)")
