"""`vlmdesk official`: a run scored by its benchmark's official LLM-graded rule (issue 37) — MathVista's judge
extraction, MMVet's grader — stored so the report and the metrics read it without asking again."""

from __future__ import annotations

import json

from vlmdesk.args import model_spec, record_id

# The official figures that need a judge, by metric name: the function that scores a run with it.
_JUDGED = {
    "mathvista": "evaluator.scoring.official_mathvista:score_mathvista",
    "mmvet": "evaluator.scoring.official_mmvet:score_mmvet",
}


def register_official(add) -> None:
    p = add(
        description="Score a run by its benchmark's official rule where that rule asks an LLM: MathVista (the rule "
        "first, then the judge extracts the answer, as VLMEvalKit does) and MMVet (the grader's 0–1 score per "
        "answer, up to five tries). What the judge says is stored: running it again asks nothing, and vlmdesk "
        "report shows the official figure first. Other benchmarks' official figures (MMMU, OCRBench, "
        "HallusionBench) need no judge: the report computes them.",
        examples="""
                vlmdesk official 3 --judge openai:gpt-4o-mini
                vlmdesk official 3 --judge 'openai:Qwen/Qwen2.5-72B-Instruct@http://localhost:8000/v1' --json
                vlmdesk report 3""",
    )
    p.add_argument("run_id", type=record_id, metavar="RUN_ID", help="a run of MathVista or MMVet (vlmdesk runs)")
    p.add_argument(
        "--judge", required=True, type=model_spec, metavar="SPEC", help="the judge's model spec (a saved model's name)"
    )
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(handler=cmd_official)


def cmd_official(args) -> int:
    import dataclasses

    from db import catalog, models, runs
    from evaluator.analysis.metrics import official_metric
    from evaluator.registry import resolve
    from vlmdesk.cli import UsageError, open_from_args

    with open_from_args(args) as ws:
        run = runs.get_run(ws, args.run_id)
        if run is None:
            raise UsageError(f"no run {args.run_id} (vlmdesk runs)")
        bench = next(b for b in catalog.list_benchmarks(ws) if b.id == run.benchmark_id)
        entry = official_metric(bench.name, bench.meta.get("source_file"))
        if entry is None or entry.name not in _JUDGED:
            what = f"its official figure ({entry.name}) needs no judge" if entry else "it has no official figure"
            raise UsageError(f"run {run.id} is on {bench.name}: {what}; vlmdesk report {run.id}")
        result = resolve(_JUDGED[entry.name])(ws, run.id, models.resolve_spec(ws, args.judge))
        if args.json:
            print(json.dumps(dataclasses.asdict(result), ensure_ascii=False))
        else:
            from evaluator.analysis.report import official_figure

            figure = official_figure(ws, run, bench)  # as the report prints it: with its 95 % interval
            assert figure is not None  # the metric applies: it was just judged
            print(f"run {run.id}  {figure.line()}")
    return 0
