"""`vlmdesk guidelines …`, `vlmdesk annotators` and `vlmdesk team …`: a study's annotation guidelines (versioned
Markdown per benchmark), its annotators' statistics, and how a team shares the work (assignment plans and gold items:
vlmdesk/cmd_team_plan.py; a shared folder that syncs: vlmdesk/cmd_team_sync.py). The work is annotation/."""

from __future__ import annotations

import json
import sys

from vlmdesk.args import annotator, int_in


def register_guidelines(add) -> None:
    from vlmdesk.cli import add_command

    p = add(
        description="Guidelines tell annotators how to judge a benchmark's items. They are Markdown kept in the "
        "workspace per benchmark; `set` stores a new version (the same text again adds nothing), and every "
        "verdict records the version it was given under.",
        examples="""
                vlmdesk guidelines set demo rules.md --author lead
                vlmdesk guidelines show demo
                vlmdesk guidelines show demo --version 1 --json""",
    )
    sub = p.add_subparsers(dest="guidelines_command", metavar="ACTION", required=True)

    def action(name, help, handler, examples):
        return add_command(sub, name, help=help, handler=handler, examples=examples)

    q = action(
        "show",
        "print a benchmark's guideline (the latest version unless --version)",
        cmd_show,
        "vlmdesk guidelines show demo\nvlmdesk guidelines show demo --version 2 --json",
    )
    q.add_argument("bench", metavar="BENCH", help="benchmark name")
    q.add_argument("--version", type=int_in(1, 2**31 - 1, "a version number"), help="this version (1, 2, …)")
    q.add_argument("--json", action="store_true", help="print {version, markdown, author, created_at} as JSON")
    q = action(
        "set",
        "store a Markdown file as the benchmark's next guideline version",
        cmd_set,
        "vlmdesk guidelines set demo rules.md --author lead",
    )
    q.add_argument("bench", metavar="BENCH", help="benchmark name")
    q.add_argument("file", metavar="FILE", help="a UTF-8 Markdown file (at most 200,000 characters)")
    q.add_argument("--author", type=annotator, default=None, help="who wrote it (default: the login name)")


def register_team(add) -> None:
    from vlmdesk import cmd_team_plan, cmd_team_sync
    from vlmdesk.cli import add_command

    p = add(
        description="A team of annotators: who judges which items (an assignment plan, with gold items whose key the "
        "lead confirmed), and a shared folder through which each workspace's records reach the others.",
        examples="""
                vlmdesk team plan --bench demo --annotators ana,ben,cara --overlap 2 --gold 5 --seed 1
                vlmdesk team sync /mnt/share/study""",
    )
    sub = p.add_subparsers(dest="team_command", metavar="ACTION", required=True)

    def action(name, help, handler, examples):
        return add_command(sub, name, help=help, handler=handler, examples=examples)

    cmd_team_plan.add_actions(action)
    cmd_team_sync.add_actions(action)


def register_annotators(add) -> None:
    p = add(
        description="For each annotator of the benchmark, from the standing verdicts: verdicts by kind, items "
        "judged, items per hour (from the time stored with each verdict), Cohen's κ with each other annotator "
        "over the items both judged (skips left out) and its mean, and the conflicts they are part of; for the "
        "benchmark, Krippendorff's α over every annotator. While an assignment plan stands (vlmdesk team plan), "
        "agreement counts only the verdicts it asked for: each pair's κ over the items the plan gave both.",
        examples="""
                vlmdesk annotators demo
                vlmdesk annotators demo --json""",
    )
    p.add_argument("bench", metavar="BENCH", help="benchmark name")
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")
    p.set_defaults(handler=cmd_annotators)


def cmd_show(args) -> int:
    from annotation import guidelines
    from vlmdesk.cli import UsageError, open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args) as ws:
        bench = bench_or_fail(ws, args.bench)
        found = guidelines.versions(ws, bench.id)
        wanted = args.version or (found[-1].version if found else None)
        chosen = next((g for g in found if g.version == wanted), None)
    if chosen is None:
        raise UsageError(
            f"{args.bench}: no guideline version {args.version}" if args.version else f"{args.bench}: no guideline yet"
        )
    if args.json:
        print(json.dumps(chosen.to_json(), ensure_ascii=False))
    else:
        print(f"# version {chosen.version} by {chosen.author}, {chosen.created_at}", file=sys.stderr)
        print(chosen.markdown)
    return 0


def cmd_set(args) -> int:
    import getpass

    from annotation import guidelines
    from annotation.names import annotator_name
    from vlmdesk.cli import open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    text = guidelines.read_file(args.file)  # read and checked before the workspace is opened for writing
    with open_from_args(args) as ws:
        bench = bench_or_fail(ws, args.bench)
        before = guidelines.current(ws, bench.id)
        saved = guidelines.save(ws, bench.id, text, args.author or annotator_name(getpass.getuser()))
    same = before is not None and before.version == saved.version
    print(f"{args.bench}: guideline version {saved.version}" + (" (unchanged)" if same else " stored"))
    return 0


def cmd_annotators(args) -> int:
    from annotation import annotator_stats
    from vlmdesk.cli import open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args) as ws:
        stats = annotator_stats.benchmark_stats(ws, bench_or_fail(ws, args.bench).id)
    if args.json:
        print(json.dumps(stats.to_json(), ensure_ascii=False))
        return 0

    def num(v, digits=2):
        return "–" if v is None else f"{v:.{digits}f}"

    print(
        f"{stats.reviewed_items} of {stats.total_items} items judged · {stats.conflicts} conflict(s) · "
        f"Krippendorff's α {num(stats.alpha)}"
        + (" · agreement on the planned overlap (vlmdesk team progress)" if stats.planned else "")
    )
    for a in stats.annotators:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(a.verdicts.items()))
        print(
            f"{a.annotator}: {a.items} items ({kinds}) · {num(a.items_per_hour, 1)} items/h · mean κ "
            f"{num(a.mean_kappa)} · {a.disagreements} to discuss"
        )
    return 0
