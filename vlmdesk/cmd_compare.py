"""`vlmdesk compare RUN_A RUN_B`: two runs of one benchmark, item by item (evaluator/analysis/compare.py).

A light command: what it imports at start is the standard library and this file; the comparison (numpy, scipy)
is imported when it runs."""

from __future__ import annotations

import json

from vlmdesk.args import record_id


def register_compare(add) -> None:
    p = add(
        description="Two runs of one benchmark compared on the items both asked that have an answer key (only "
        "those one run asked are counted and named). Two multiple-choice runs: VanillaEval, and CircularEval "
        "when both are CircularEval runs; two POPE runs: accuracy and F1 under the official parser; two open "
        "runs: each open metric both have. A right/wrong figure (VanillaEval, CircularEval, POPE accuracy) gives "
        "A, B and the paired difference A−B = (right in A only − right in B only) / n with Newcombe's hybrid "
        "score 95 % interval (method 10) and McNemar's exact test on the discordant items (binomial, p = 0.5, "
        "two-sided); an item whose CircularEval result a run has not decided (a pass still to ask) is left out "
        "and counted. A graded figure (an open metric's mean, POPE's F1) gives the paired difference with a "
        "percentile bootstrap interval over items (2,000 resamples, seed 0) and no p-value. Then the items that "
        "flipped: right in A only, right in B only (graded: scored higher). See docs/guide/results.md.",
        examples="""
                vlmdesk compare 3 5
                vlmdesk compare 3 5 --json
                vlmdesk compare 3 5 --flipped
                vlmdesk compare 3 5 --flipped --figure VanillaEval
                vlmdesk compare 3 5 --scoring human""",
    )
    p.add_argument("run_a", type=record_id, metavar="RUN_A", help="run A (vlmdesk runs): differences read A − B")
    p.add_argument("run_b", type=record_id, metavar="RUN_B", help="run B, of the same benchmark")
    p.add_argument(
        "--scoring",
        metavar="NAME",
        help="compare a stored re-scoring of both runs (vlmdesk rescore) instead of each run's own: e.g. rules, "
        "rules+llm:SPEC, human",
    )
    p.add_argument(
        "--flipped",
        action="store_true",
        help="also print the flipped items (index and question): right in A only, then right in B only",
    )
    p.add_argument(
        "--figure",
        metavar="NAME",
        help="--flipped: the figure whose flipped items to print (default the first: CircularEval, VanillaEval, "
        "POPE accuracy, or the first open metric)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the comparison as JSON: the runs, the items only one asked, each figure with its interval, "
        "p-value and flipped items",
    )
    p.set_defaults(handler=cmd_compare)


def cmd_compare(args) -> int:
    from evaluator.analysis.compare import compare_runs, format_comparison
    from vlmdesk.cli import UsageError, open_from_args

    if args.figure is not None and not args.flipped:
        raise UsageError("--figure goes with --flipped")
    with open_from_args(args) as ws:
        comparison = compare_runs(ws, args.run_a, args.run_b, scoring=args.scoring)
    if args.json:
        print(json.dumps(comparison.to_json(), ensure_ascii=False))
        return 0
    figure = args.figure
    if args.flipped and figure is None and comparison.headline is not None:
        figure = comparison.headline.name
    print(format_comparison(comparison, flipped=figure))
    return 0
