"""`vlmdesk reviews …`: a verdict on an item (`add`), and item verdicts between copies of a workspace (export /
import as JSON Lines).

`vlmdesk align export-labels|import-labels` and `vlmdesk qc export-decisions|import-decisions` do the same for
alignment labels and QC decisions; all three share `run_export` / `run_import` (the work is annotation/sync.py).
"""

from __future__ import annotations

import json
import sys

from vlmdesk.args import annotator, float_in


def verdicts_by_kind() -> str:
    """The verdicts that fit an item of each kind (annotation/item_kinds.py), as the help lists them."""
    from annotation import item_kinds as ik

    takes = {
        "mcq": "wrong_answer needs --answer, the right option's letter",
        "yesno": "wrong_answer needs --answer yes or no",
        "open": "wrong_answer needs --answer, the right answer as text; incomplete may name the missing answer",
    }
    return "\n".join(
        f"  {kind}{'' if ik.kind_words(kind) == kind else f' ({ik.kind_words(kind)})'}: "
        f"{', '.join(ik.VERDICTS_BY_KIND[kind])}\n    ({takes[kind]})"
        for kind in ik.KINDS
    )


def register_reviews(add) -> None:
    from annotation.names import MAX_NOTE_CHARS
    from annotation.reviews import UNDO, VERDICTS
    from vlmdesk.cli import add_command

    p = add(
        description="`add` records a verdict on an item, or withdraws yours (undo); it must fit the item's kind:\n"
        f"{verdicts_by_kind()}\n\n"
        "Annotators often work on their own copy of a workspace. `export` writes every verdict and "
        "undo as JSON Lines (id, benchmark, index, annotator, verdict, answer, note, seconds, at, "
        "withdraws); `import` merges such a file: records already present (same id) are skipped, so "
        "importing twice adds nothing and copies can exchange files both ways; a verdict that does not fit "
        "its item's kind (stored by an older vlmdesk) is left out and listed, and the rest merges. What stands "
        "is each annotator's latest verdict not withdrawn, by time.",
        examples="""
                vlmdesk reviews add --bench demo --item 3 --verdict wrong_answer --answer C --annotator ana
                vlmdesk reviews export --bench demo --annotator ana --out ana.jsonl
                vlmdesk --workspace lead.sqlite reviews import ana.jsonl
                vlmdesk reviews import ana.jsonl --skip-bad --json""",
    )
    sub = p.add_subparsers(dest="reviews_command", metavar="ACTION", required=True)

    def action(name, help, handler, examples, description=None):
        return add_command(sub, name, help=help, handler=handler, examples=examples, description=description)

    q = action(
        "add",
        "record a verdict on an item (one that fits its kind), or withdraw yours",
        cmd_add,
        """
               vlmdesk reviews add --bench demo --item 3 --verdict ok --annotator ana
               vlmdesk reviews add --bench demo-pope --item 12 --verdict wrong_answer --answer no --annotator ana
               vlmdesk reviews add --bench demo-open --item 1 --verdict incomplete --answer tabby --annotator ana
               vlmdesk reviews add --bench demo --item 3 --verdict undo --annotator ana""",
        description="Record a verdict on an item, as the app's Review does; one that does not fit the item's "
        "kind is refused in one line (exit 2), nothing written. The verdicts of each kind:\n"
        f"{verdicts_by_kind()}\n"
        "undo withdraws your standing verdict on the item (every kind).",
    )
    q.add_argument("--bench", required=True, help="the benchmark's name")
    q.add_argument("--item", required=True, metavar="INDEX", help="the item's index in its benchmark")
    q.add_argument(
        "--verdict", required=True, choices=[*VERDICTS, UNDO], metavar="VERDICT", help="one that fits the item (above)"
    )
    q.add_argument("--answer", metavar="TEXT", help="the corrected answer of wrong_answer (or incomplete: open items)")
    q.add_argument("--annotator", required=True, metavar="NAME", type=annotator, help="your name")
    q.add_argument("--note", help=f"a note with the verdict (at most {MAX_NOTE_CHARS:,} characters)")
    q.add_argument("--seconds", type=float_in(0, 1e7, "a number of seconds"), help="time spent on the item (optional)")

    q = action(
        "export",
        "write verdicts and undos as JSON Lines, oldest first",
        cmd_export,
        """
               vlmdesk reviews export --out all.jsonl
               vlmdesk reviews export --bench demo --annotator ana > ana.jsonl""",
    )
    q.add_argument("--bench", help="only this benchmark's items")
    q.add_argument("--annotator", metavar="NAME", type=annotator, help="only this annotator's records")
    add_export_output(q)

    q = action(
        "import",
        "merge verdicts exported from another copy of the workspace",
        cmd_import,
        """
               vlmdesk reviews import ana.jsonl
               vlmdesk reviews import ana.jsonl --skip-bad --json""",
    )
    add_import_arguments(q, "verdicts")


def add_export_output(q) -> None:
    q.add_argument(
        "--out",
        metavar="FILE",
        help="write to FILE instead of standard output (a new file, or a regular file replaced whole once "
        "written; never a workspace, folder, FIFO or device; a symlink is written through)",
    )


def add_import_arguments(q, what: str) -> None:
    q.add_argument("file", metavar="FILE", help=f"a JSON Lines file of {what} written by the matching export")
    q.add_argument(
        "--skip-bad",
        action="store_true",
        help="import the good lines and list the bad ones (default: a bad line stops the import, nothing written)",
    )
    q.add_argument("--json", action="store_true", help="print the import report as JSON")


def run_export(ws, kind: str, out: str | None, **filters) -> int:
    from annotation import sync
    from vlmdesk.cli import output_file

    records = sync.export_records(ws, kind, **filters)
    if out is None:
        sync.write_jsonl(records, sys.stdout)
        return 0
    path = output_file(out)  # checked before the first record is read; export_to_file checks again
    n = sync.export_to_file(records, path)
    print(f"wrote {n} record(s) to {path}", file=sys.stderr)
    return 0


def run_import(args, kind: str, what: str) -> int:
    from annotation import sync
    from vlmdesk.cli import open_from_args

    with open_from_args(args, create=False) as ws:
        report = sync.import_records(ws, args.file, kind, skip_bad=args.skip_bad)
    for err in report.skipped:
        print(f"skipped: {err}", file=sys.stderr)
    if report.skipped_count > len(report.skipped):
        print(f"skipped: … and {report.skipped_count - len(report.skipped)} more line(s)", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
        return 0
    by_table = ", ".join(f"{n} {table}" for table, n in report.added.items()) if len(report.added) > 1 else ""
    unfit = f" ({report.unfit} not fitting their item's kind)" if report.unfit else ""
    print(
        f"imported {sum(report.added.values())} new {what}{f' ({by_table})' if by_table else ''}; "
        f"{report.present} already present; {report.skipped_count} line(s) skipped{unfit}"
    )
    return 0


def cmd_add(args) -> int:
    from annotation import item_kinds, reviews
    from vlmdesk.cli import UsageError, open_from_args
    from vlmdesk.cmd_data import bench_or_fail, item_or_fail

    with open_from_args(args, create=False) as ws:
        bench = bench_or_fail(ws, args.bench)
        item = item_or_fail(ws, bench, args.item)
        kind = item_kinds.kind_of(bench.kind)
        if args.verdict == reviews.UNDO:
            if args.answer is not None or args.note is not None:
                raise UsageError("undo takes no --answer or --note")
            withdrawn = reviews.undo_last(ws, args.annotator, item_id=item.id)
            if withdrawn is None:
                print(f"{bench.name} #{item.index}: nothing of yours stands on this item")
                return 0
            said = item_kinds.verdict_label(withdrawn.verdict, kind)
            print(f"{bench.name} #{item.index}: withdrew {said}")
            return 0
        review = reviews.add_review(
            ws,
            item.id,
            args.annotator,
            args.verdict,
            corrected_answer=args.answer,
            note=args.note,
            seconds=args.seconds,
        )
    said = item_kinds.verdict_label(review.verdict, kind)
    print(
        f"{bench.name} #{item.index}: {said}{f' → {review.corrected_answer}' if review.corrected_answer else ''} saved"
    )
    return 0


def export_by_benchmark(args, kind: str) -> int:
    """An export command filtered by --bench (checked first) and --annotator: reviews, QC decisions, votes, verdicts."""
    from vlmdesk.cli import open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args, create=False) as ws:
        if args.bench is not None:
            bench_or_fail(ws, args.bench)
        return run_export(ws, kind, args.out, benchmark=args.bench, annotator=args.annotator)


def cmd_export(args) -> int:
    return export_by_benchmark(args, "reviews")


def cmd_import(args) -> int:
    return run_import(args, "reviews", "record(s)")
