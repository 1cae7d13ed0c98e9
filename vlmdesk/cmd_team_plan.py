"""`vlmdesk team plan|progress|export-plans|import-plans`: who judges which items (an assignment plan, with gold items
whose key the lead confirmed), how far each person is and how they do on gold, and plans between copies of a
workspace. The work is annotation/team_plans.py (the rule) and annotation/sync.py (plans as JSON Lines)."""

from __future__ import annotations

import json

from vlmdesk.args import annotator, float_in, int_in


def add_actions(action) -> None:
    from annotation.team_plans import GOLD_THRESHOLD, MAX_ANNOTATORS
    from vlmdesk.cmd_reviews import add_export_output, add_import_arguments

    q = action(
        "plan",
        "store a deterministic assignment plan: each item to OVERLAP annotators, balanced, gold items to everyone",
        cmd_plan,
        """
               vlmdesk team plan --bench demo --annotators ana,ben,cara --overlap 2 --seed 1
               vlmdesk team plan --bench demo --annotators ana,ben,cara --overlap 2 --gold 5 --seed 1 --json
               vlmdesk team plan --bench demo --annotators ana,ben --overlap 2 --gold-file gold.csv --seed 7""",
    )
    q.description = (
        "Store an assignment plan for a benchmark; it stands (Review's next item, the Annotators tab) until a newer "
        "plan for the benchmark supersedes it. The same inputs always give the same plan: the items that are not "
        "gold are shuffled by the seed, and each goes to the OVERLAP annotators with the fewest items so far (every "
        "count within 1 of the others'), preferring among them those that have shared the fewest items (so every "
        "pair of annotators shares items for agreement), ties drawn by the seed. Gold items go to every annotator, "
        "spread evenly through each one's queue and unmarked in Review; after each verdict on one, the annotator "
        "sees whether it matched the key. Gold keys are the lead's: --gold N draws N (by the seed) from the items "
        "whose key quality control confirmed (every flag of the item resolved to keep it, or to correct its key), "
        "--gold-file gives them."
    )
    q.add_argument("--bench", required=True, help="the benchmark's name")
    q.add_argument(
        "--annotators",
        required=True,
        metavar="NAMES",
        help=f"the annotators, comma-separated, in order (at most {MAX_ANNOTATORS}; names as every record stores them)",
    )
    q.add_argument(
        "--overlap",
        required=True,
        type=int_in(1, MAX_ANNOTATORS, "a number of annotators"),
        help="how many annotators judge each item that is not gold (1 .. the number of annotators)",
    )
    gold = q.add_mutually_exclusive_group()
    gold.add_argument(
        "--gold",
        type=int_in(0, 2**31 - 1, "a number of items"),
        default=0,
        metavar="N",
        help="N gold items drawn by the seed from the items whose key the lead confirmed in quality control",
    )
    gold.add_argument(
        "--gold-file",
        metavar="FILE",
        help='gold items and their keys: JSON Lines of {"index": …, "answer": …}, or a .csv with the header '
        "index,answer (at most 16 MB)",
    )
    q.add_argument("--seed", required=True, type=int_in(0, 2**63 - 1, "a seed"), help="the seed of every draw")
    q.add_argument("--author", type=annotator, default=None, help="who made the plan (default: the login name)")
    q.add_argument(
        "--json",
        action="store_true",
        help="print the plan: per annotator their items in queue order and which are gold — the lead's view: it "
        "reveals the gold items, keep it from the annotators",
    )

    q = action(
        "progress",
        "per annotator of the standing plan: items planned, done and left, accuracy on gold with its interval",
        cmd_progress,
        """
               vlmdesk team progress --bench demo
               vlmdesk team progress --bench demo --gold-threshold 0.9 --json""",
    )
    q.add_argument("--bench", required=True, help="the benchmark's name")
    q.add_argument(
        "--gold-threshold",
        type=float_in(0, 1, "an accuracy"),
        default=GOLD_THRESHOLD,
        help=f"flag a person whose gold accuracy is below this (default {GOLD_THRESHOLD}); accuracy counts each "
        "person's first verdict on each gold item, with its Wilson 95%% interval",
    )
    q.add_argument("--json", action="store_true", help="print the progress as JSON (it names no gold item)")

    q = action(
        "export-plans",
        "write assignment plans as JSON Lines (a plan line, its gold items, its assignments), oldest first",
        cmd_export,
        """
               vlmdesk team export-plans --bench demo --out plans.jsonl""",
    )
    q.add_argument("--bench", help="only this benchmark's plans")
    q.add_argument("--annotator", metavar="NAME", type=annotator, help="only the plans this person made")
    add_export_output(q)

    q = action(
        "import-plans",
        "merge assignment plans exported from another copy of the workspace (by plan id; a plan stored whole)",
        cmd_import,
        """
               vlmdesk team import-plans plans.jsonl
               vlmdesk team import-plans plans.jsonl --skip-bad --json""",
    )
    add_import_arguments(q, "assignment plans")


def cmd_plan(args) -> int:
    import getpass

    from annotation import team_plans
    from annotation.names import annotator_name
    from vlmdesk.cli import UsageError, open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    names = team_plans.parse_annotators(args.annotators)  # checked before the workspace is opened for writing
    if args.overlap > len(names):
        raise UsageError(f"--overlap {args.overlap}: more than the {len(names)} annotator(s) named")
    with open_from_args(args) as ws:
        bench = bench_or_fail(ws, args.bench)
        gold_from, gold = "none", {}
        if args.gold_file is not None:
            gold_from, gold = "file", team_plans.read_gold_file(ws, bench, args.gold_file)
        elif args.gold:
            confirmed = team_plans.confirmed_keys(ws, bench.id)
            gold_from, gold = "qc", team_plans.draw_gold(confirmed, args.gold, args.seed, bench=bench.name)
        before = team_plans.standing_plan(ws, bench.id)
        plan = team_plans.make_plan(
            ws,
            bench,
            names,
            args.overlap,
            args.seed,
            gold=gold,
            gold_from=gold_from,
            author=args.author or annotator_name(getpass.getuser()),
        )
        if args.json:
            print(json.dumps(team_plans.plan_json(ws, plan), ensure_ascii=False))
            return 0
        lengths = {name: team_plans.queue_length(ws, plan.id, name) for name in names}
    stood = before is not None and before.uuid == plan.uuid
    print(
        f"{bench.name}: plan {plan.uuid} {'already stands' if stood else 'stored'} — {len(names)} annotator(s), "
        f"overlap {plan.overlap}, "
        f"{len(gold)} gold item(s); queues: " + ", ".join(f"{n} {k}" for n, k in lengths.items())
    )
    return 0


def cmd_progress(args) -> int:
    from annotation import team_plans
    from vlmdesk.cli import UsageError, open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args, create=False) as ws:
        bench = bench_or_fail(ws, args.bench)
        found = team_plans.progress(ws, bench.id, threshold=args.gold_threshold)
    if found is None:
        raise UsageError(f"{bench.name}: no assignment plan (vlmdesk team plan --bench {bench.name} …)")
    if args.json:
        print(json.dumps(found.to_json(), ensure_ascii=False))
        return 0
    print(
        f"{bench.name}: plan of {found.plan.created_at[:16]} by {found.plan.author} — overlap {found.plan.overlap}, "
        f"{found.gold_items} gold item(s); flagged: gold accuracy below {found.threshold:g}"
    )
    for p in found.people:
        gold = (
            f"gold {p.gold_matched}/{p.gold} = {p.accuracy:.2f} [{p.interval[0]:.2f}, {p.interval[1]:.2f}]"
            if p.interval is not None and p.accuracy is not None
            else "gold –"
        )
        print(f"{p.annotator}: {p.done} of {p.planned} done, {p.left} left · {gold}{'  FLAGGED' if p.flagged else ''}")
    return 0


def cmd_export(args) -> int:
    from vlmdesk.cmd_reviews import export_by_benchmark

    return export_by_benchmark(args, "plans")


def cmd_import(args) -> int:
    from vlmdesk.cmd_reviews import run_import

    return run_import(args, "plans", "plan line(s)")
