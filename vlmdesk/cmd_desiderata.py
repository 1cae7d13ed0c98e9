"""`vlmdesk desiderata`: ChEF's six desiderata from stored runs, ECE of a file of confidences, and a judge's language
scores of a run (evaluator/analysis/desiderata.py, evaluator/analysis/desiderata_language.py)."""

from __future__ import annotations

import json

from vlmdesk.args import int_in, positive_int

FIGURES = ("radar", "reliability", "robustness")


def register_desiderata(add) -> None:
    p = add(
        description="Three forms. `desiderata RUN…`: one report over the given runs — per model, each "
        "dimension's figure (calibration: ECE of likelihood runs — those with ChEF's score, --likelihood-score "
        "chef, where given — naming the confidence it used; instruction following: MR and accuracy over "
        "label maps; robustness: RRM/RR per corruption kind; in-context learning: RIAM of 1-3 shots; language: a "
        "judge's 0-10 score of chain-of-thought runs; hallucination: POPE per setting), the runs it came from, and "
        "the command that starts each run still missing. Variant runs are compared with the plain run of the same "
        "model and benchmark (given, else the workspace's latest). `desiderata ece --input FILE.jsonl`: ECE of "
        '`{"confidence", "correct"}` lines. `desiderata language RUN --judge SPEC`: ask a judge model about the '
        "run's answers (stored; asked once per pass and judge).",
        examples="""
                vlmdesk desiderata 3 4 5 6 --json
                vlmdesk desiderata 3 4 5 --plot radar.png
                vlmdesk desiderata 3 --figure reliability --binning equal-width --plot reliability.png
                vlmdesk desiderata ece --input confidences.jsonl --bins 10 --binning equal-count --json
                vlmdesk desiderata language 7 --judge 'openai:gpt-4o-mini' --json""",
    )
    p.add_argument(
        "targets",
        nargs="+",
        metavar="RUN|ece|language",
        help="run ids (vlmdesk runs); or `ece` (with --input); or `language RUN` (with --judge)",
    )
    p.add_argument("--input", metavar="FILE", help='ece: JSON Lines of {"confidence": 0..1, "correct": bool}')
    p.add_argument("--bins", type=int_in(1, 1000, "a number of bins"), default=10, help="ECE bins, 1-1000 (default 10)")
    p.add_argument(
        "--binning",
        choices=("equal-count", "equal-width"),
        default="equal-count",
        help="equal-count (ChEF: sorted by confidence, the first N mod B bins one item more) or equal-width "
        "((0, .1], (.1, .2]…)",
    )
    p.add_argument("--judge", metavar="SPEC", help="language: the judge's model spec or saved model name")
    p.add_argument(
        "--limit", type=positive_int, help="language: judge at most this many passes not judged yet (default all)"
    )
    p.add_argument(
        "--max-new-tokens", type=positive_int, default=512, help="language: the judge's reply length (default 512)"
    )
    p.add_argument(
        "--figure",
        choices=FIGURES,
        default="radar",
        help="with --plot on a report: the radar of the six dimensions (default), the reliability diagram of the "
        "first likelihood run, or RRM per corruption and severity",
    )
    p.add_argument("--plot", metavar="FILE", help="save the figure as PNG, SVG or PDF")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_desiderata)


def _run_ids(texts: list[str]) -> list[int]:
    from vlmdesk.args import record_id
    from vlmdesk.cli import UsageError

    ids = []
    for text in texts:
        try:
            ids.append(record_id(text))
        except Exception as exc:  # argparse.ArgumentTypeError: a one-line message
            raise UsageError(f"vlmdesk desiderata: {text[:40]!r}: not a run id ({exc})") from None
    return ids


def cmd_desiderata(args) -> int:
    from vlmdesk.cli import UsageError

    head, rest = args.targets[0], args.targets[1:]
    if head != "ece" and args.input is not None:
        raise UsageError("vlmdesk desiderata: --input belongs to `desiderata ece`")
    if head != "language" and args.judge is not None:
        raise UsageError("vlmdesk desiderata: --judge belongs to `desiderata language RUN`")
    if head == "ece":
        if rest or args.input is None:
            raise UsageError("vlmdesk desiderata ece: give --input FILE.jsonl (and no run ids)")
        return _ece(args)
    if head == "language":
        if len(rest) != 1 or args.judge is None:
            raise UsageError("vlmdesk desiderata language: give one RUN and --judge SPEC")
        return _language(args, _run_ids(rest)[0])
    return _report(args, _run_ids(args.targets))


def _ece(args) -> int:
    from evaluator.analysis import plots
    from evaluator.analysis.desiderata import read_confidences
    from evaluator.analysis.desiderata_metrics import ece
    from vlmdesk.cli import output_file

    plot = output_file(args.plot) if args.plot else None
    confidences, correct = read_confidences(args.input)
    found = ece(confidences, correct, bins=args.bins, binning=args.binning)
    if plot is not None:
        plots.save_figure(plots.reliability_figure(found, title=str(args.input)), plot)
    if args.json:
        print(json.dumps(found.to_json()))
        return 0
    print(f"ECE {'—' if found.ece is None else f'{found.ece:.6f}'} over {found.n} items ({args.binning}, {args.bins})")
    for b in found.bins:
        print(f"  {b.count:>8}  confidence {b.confidence:.4f}  accuracy {b.accuracy:.4f}")
    return 0


def _report(args, run_ids: list[int]) -> int:
    from db.errors import InvalidInput
    from evaluator.analysis import plots
    from evaluator.analysis.desiderata import desiderata_report, format_report, run_reliability
    from vlmdesk.cli import open_from_args, output_file

    plot = output_file(args.plot) if args.plot else None
    with open_from_args(args) as ws:
        report = desiderata_report(ws, run_ids, bins=args.bins, binning=args.binning)
        if plot is not None:
            if args.figure == "radar":
                fig = plots.radar_figure(report)
            elif args.figure == "robustness":
                fig = plots.robustness_figure(report)
            else:
                used = [r for m in report.models for r in m.dimensions["calibration"].runs]
                found = run_reliability(ws, used[0], bins=args.bins, binning=args.binning) if used else None
                if found is None:
                    raise InvalidInput(
                        "no likelihood run with stored option scores among these: no reliability diagram"
                    )
                fig = plots.reliability_figure(found, title=f"run {used[0]}")
            plots.save_figure(fig, plot)
    print(json.dumps(report.to_json(), ensure_ascii=False) if args.json else format_report(report))
    return 0


def _language(args, run_id: int) -> int:
    from evaluator.analysis.desiderata_language import judge_run
    from evaluator.engine.launch import resolve_model
    from vlmdesk.cli import open_from_args

    with open_from_args(args) as ws:
        judge = resolve_model(ws, args.judge)
        score = judge_run(ws, run_id, judge, max_new_tokens=args.max_new_tokens, limit=args.limit)
    if args.json:
        print(json.dumps(score.to_json()))
        return 0
    value = "—" if score.score is None else f"{score.score:.2f} / 10"
    print(
        f"run {run_id}, judge {judge}: language score {value} over {score.items_scored} items "
        f"({score.passes_judged} passes judged, {score.passes_missing} unreadable, {score.passes_left} left; "
        f"{score.calls} judge calls now)"
    )
    return 0
