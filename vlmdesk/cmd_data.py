"""Commands over benchmarks: import, benchmarks, items, show."""

from __future__ import annotations

import json
import sys

from vlmdesk.args import int_in, positive_int
from vlmdesk.cli import add_command

MAX_IMAGE_MB_CEILING = 4096


def register_import(add) -> None:
    from evaluator.formats.importers.common import DEFAULT_MAX_IMAGE_MB
    from evaluator.formats.registry import format_names
    from vlmdesk.cmd_fetch import add_download_options

    p = add(
        description="Import a benchmark into the workspace: all of it, or nothing (also when interrupted). Images "
        "are stored once, by SHA-256. MMBench's circular copies (index + k*1,000,000) are checked "
        "and folded into their question. Re-importing the same file does nothing. Image files must "
        "be regular files inside the file's folder (or --images), of at most --max-image-mb. Open benchmarks "
        "(VLMEvalKit's TextVQA, DocVQA, ChartQA, OCRVQA, COCO_VAL TSVs: vqa-tsv; lmms-lab's VQA parquet: vqa-parquet) "
        "keep each item's reference answers; a VLMEvalKit answer list such as \"['a', 'b']\" is parsed, never "
        "evaluated.",
        examples="""
                vlmdesk import MMBench_DEV_EN.tsv
                vlmdesk import SEEDBench_IMG.tsv --name seed --skip-bad
                vlmdesk import coco_pope_adversarial.json --format pope --images val2014/
                vlmdesk import mine.jsonl --format jsonl --json
                vlmdesk import TextVQA_VAL.tsv             # open questions, ten reference answers each
                vlmdesk import textvqa_val                 # lmms-lab's parquet by name: indexed by question_id
                vlmdesk import shared.jsonl --allow-outside --max-image-mb 200
                vlmdesk import MMBench_DEV_EN.tsv --json-progress
                vlmdesk import MMBench_DEV_EN              # a catalog name: fetched (vlmdesk fetch), then imported
                vlmdesk import POPE --setting adversarial  # POPE by name: one benchmark per setting (POPE_random…)""",
    )
    p.add_argument("path", help="the file to import, or a benchmark's name in the catalog (vlmdesk fetch --list)")
    p.add_argument("--name", help="benchmark name (default: from the file name, e.g. mmbench-dev-en)")
    p.add_argument("--format", dest="fmt", choices=sorted(format_names()), help="file format (default: detected)")
    p.add_argument("--images", metavar="DIR", help="folder that image paths / POPE image names are relative to")
    p.add_argument(
        "--setting", choices=("random", "popular", "adversarial"), help="POPE setting (default: from the file name)"
    )
    p.add_argument("--skip-bad", action="store_true", help="import the good rows and report every skipped one")
    p.add_argument(
        "--max-image-mb",
        type=int_in(1, MAX_IMAGE_MB_CEILING),
        default=DEFAULT_MAX_IMAGE_MB,
        metavar="N",
        help=f"refuse images (files or inline) over N MB (default {DEFAULT_MAX_IMAGE_MB}, "
        f"at most {MAX_IMAGE_MB_CEILING})",
    )
    p.add_argument(
        "--allow-outside",
        action="store_true",
        help="read image paths that leave the file's folder (or --images): '..', absolute paths, symlinks",
    )
    p.add_argument(
        "--json-progress",
        action="store_true",
        help="print progress as JSON lines on stdout: start, progress (rows read), done (the report)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the import report as JSON (a catalog name that makes several benchmarks: an array of them)",
    )
    add_download_options(p)
    p.set_defaults(handler=cmd_import)


def register_demo(add) -> None:
    p = add(
        description="Import the demo: 30 MMBench-style questions ('demo'), 48 POPE questions ('demo-pope') and "
        "8 open questions ('demo-open') over 12 photographs that ship with vlmdesk. The app does this on its first "
        "start; this command is for other workspaces and for the command line. Running it twice does nothing.",
        examples="""
                vlmdesk demo
                vlmdesk --workspace /tmp/try.sqlite demo && vlmdesk --workspace /tmp/try.sqlite run --bench demo --model baseline:random""",  # noqa: E501 (an example is one shell line, shown as written)
    )
    p.set_defaults(handler=cmd_demo)


def register_benchmarks(add) -> None:
    from evaluator.analysis.groups import GROUPS

    p = add(
        description="List benchmarks: name, kind (mcq, yesno or open), distinct questions, rows read, images, and "
        "their capability groups (LVLM-eHub's six; `benchmarks tag` sets them, `report --groups` uses them).",
        examples="""
                vlmdesk benchmarks
                vlmdesk benchmarks --json
                vlmdesk benchmarks tag ScienceQA_TEST --group reasoning""",
    )
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(handler=cmd_benchmarks)
    sub = p.add_subparsers(dest="benchmarks_command", metavar="ACTION")
    q = add_command(
        sub,
        "tag",
        help="set a benchmark's capability groups (LVLM-eHub's six)",
        description="Set the benchmark's capability groups to exactly those given: "
        f"{', '.join(f'{k} ({v.lower()})' for k, v in GROUPS.items())}. "
        "A benchmark may be in several. --clear removes them all. POPE benchmarks are object hallucination "
        "until tagged otherwise; `vlmdesk import NAME` stores the catalog's groups (ScienceQA_TEST: reasoning).",
        handler=cmd_tag,
        examples="""
                vlmdesk benchmarks tag mmbench-dev-en --group perception --group reasoning
                vlmdesk benchmarks tag demo-pope --group hallucination
                vlmdesk benchmarks tag mine --clear""",
    )
    q.add_argument("bench", help="benchmark name")
    q.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="GROUP",
        help=f"a capability group ({', '.join(GROUPS)}); repeat for several",
    )
    q.add_argument("--clear", action="store_true", help="remove every group (the benchmark is in none)")
    q.add_argument("--json", action="store_true", help="print the benchmark's name and groups as JSON")


def register_items(add) -> None:
    p = add(
        description="List a benchmark's items in file order. --json gives index, question, hint, options, "
        "answer, category, l2_category, split, language, image_sha256 for each.",
        examples="""
                vlmdesk items demo
                vlmdesk items mmbench-dev-en --json --limit 5""",
    )
    p.add_argument("bench", help="benchmark name")
    p.add_argument("--limit", type=positive_int, help="at most N items")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(handler=cmd_items)


def register_show(add) -> None:
    p = add(
        description="Print one item of a benchmark in full.",
        examples="""
                vlmdesk show demo 3
                vlmdesk show mmbench-dev-en 241 --image-out /tmp/q241.jpg""",
    )
    p.add_argument("bench", help="benchmark name")
    p.add_argument("index", help="the item's index in its source file")
    p.add_argument("--image-out", metavar="FILE", help="write the item's image to FILE")
    p.add_argument("--json", action="store_true", help="print the item as JSON")
    p.set_defaults(handler=cmd_show)


def bench_or_fail(ws, name: str):
    from db import catalog
    from vlmdesk.cli import UsageError

    bench = catalog.benchmark_by_name(ws, name)
    if bench is None:
        known = ", ".join(b.name for b in catalog.list_benchmarks(ws)) or "none"
        raise UsageError(f"no benchmark named {name!r} in {ws.path} (known: {known})")
    return bench


def item_or_fail(ws, bench, index_text: str):
    from db import catalog
    from evaluator.formats.importers.common import index_for_lookup
    from vlmdesk.cli import UsageError

    index = index_for_lookup(index_text)
    item = catalog.item_by_index(ws, bench.id, index)
    if item is None:
        raise UsageError(f"benchmark {bench.name!r} has no item with index {index!r}")
    return item


def _emit(event: dict) -> None:
    print(json.dumps(event, ensure_ascii=False), flush=True)


def cmd_import(args) -> int:
    from pathlib import Path

    from db.platform_io import cancel_interrupts
    from evaluator.formats.importers import import_benchmark
    from evaluator.formats.importers.common import ReadLimits
    from vlmdesk.cli import open_from_args

    if not Path(args.path).exists():
        from evaluator.formats.importers.catalog import find

        entry = find(args.path)
        if entry is not None:
            return _import_by_name(args, entry)
        if "/" not in args.path and "." not in args.path:  # looks like a name, not a file
            from vlmdesk.cli import UsageError

            raise UsageError(f"{args.path}: no such file, nor a benchmark in the catalog (vlmdesk fetch --list)")
    try:
        # Cancel and Ctrl+C interrupt once: the import then removes what it stored; a second must not cut that short.
        with cancel_interrupts(once=True), open_from_args(args) as ws:
            report = import_benchmark(
                ws,
                args.path,
                fmt=args.fmt,
                name=args.name,
                images_dir=args.images,
                setting=args.setting,
                skip_bad=args.skip_bad,
                progress=not args.json_progress,
                limits=ReadLimits(max_image_bytes=args.max_image_mb * 2**20, allow_outside=args.allow_outside),
                on_event=_emit if args.json_progress else None,
            )
    except KeyboardInterrupt:
        print(f"import of {args.path} interrupted; nothing was imported", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    _say(args, report, args.path)
    return 0


def _say(args, report, source: str) -> None:
    for err in report.skipped:
        print(f"skipped: {err}", file=sys.stderr)
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json or args.json_progress:
        pass  # printed as JSON, or the "done" event holds the report
    elif report.already_imported:
        print(f"{source} is already imported as {report.name!r} (same content); nothing to do")
    else:
        print(
            f"imported {report.name!r} ({report.kind}): {report.questions} questions from {report.rows_read} rows"
            f" ({report.rows_folded} circular copies folded, {len(report.skipped)} skipped), "
            f"{report.images} images ({report.images_new} new)"
        )


def _import_by_name(args, entry) -> int:
    """`vlmdesk import NAME`: the catalog's file fetched (or found in the cache), then imported as its entry says:
    benchmark NAME (or --name); POPE by name: one benchmark per setting (NAME_random…), or --setting's only."""
    from db.platform_io import cancel_interrupts
    from evaluator.formats.importers import import_benchmark
    from evaluator.formats.importers.catalog import POPE_SETTINGS
    from evaluator.formats.importers.common import ReadLimits
    from vlmdesk.cli import UsageError, open_from_args
    from vlmdesk.cmd_fetch import Progress, fetch_entry

    if args.fmt is not None and args.fmt != entry.format:
        raise UsageError(f"{entry.name} is a catalog benchmark in format {entry.format}; leave out --format")
    if args.images:
        raise UsageError(f"{entry.name} holds its images; leave out --images")
    targets = entry.benchmark_names(args.name)
    if args.setting is not None:
        if entry.settings:
            targets = {args.setting: targets[args.setting]} if args.setting in targets else {}
        elif entry.setting != args.setting:  # another setting's entry, or not a POPE benchmark
            targets = {}
        if not targets:
            raise UsageError(f"{entry.name} has no POPE setting {args.setting!r} ({', '.join(POPE_SETTINGS)})")
    progress = Progress(args.json_progress)
    try:
        fetched = fetch_entry(entry, args, progress)
    except KeyboardInterrupt:
        print(f"fetch of {entry.name} interrupted; nothing was imported (the next fetch resumes it)", file=sys.stderr)
        return 130
    if args.json_progress:
        progress(fetched.to_json())
    elif not fetched.cached:
        print(f"{entry.name}: downloaded and checked, at {fetched.path}", file=sys.stderr)
    reports = []
    try:
        with cancel_interrupts(once=True), open_from_args(args) as ws:
            for setting, name in targets.items():
                reports.append(
                    import_benchmark(
                        ws,
                        fetched.path,
                        fmt=entry.format,
                        name=name,
                        setting=setting,
                        skip_bad=args.skip_bad,
                        progress=not args.json_progress,
                        limits=ReadLimits(max_image_bytes=args.max_image_mb * 2**20, allow_outside=args.allow_outside),
                        on_event=_emit if args.json_progress else None,
                        groups=entry.groups,
                    )
                )
    except KeyboardInterrupt:
        done = ", ".join(repr(r.name) for r in reports)
        print(
            f"import of {entry.name} interrupted; {'only ' + done + ' imported' if done else 'nothing was imported'}",
            file=sys.stderr,
        )
        return 130
    if args.json:
        shown = [r.to_json() for r in reports]
        print(json.dumps(shown[0] if len(shown) == 1 else shown, ensure_ascii=False))
    for report in reports:
        _say(args, report, entry.name)
    return 0


def cmd_demo(args) -> int:
    from db.platform_io import cancel_interrupts
    from vlmdesk.cli import open_from_args
    from vlmdesk.demo import import_demo

    try:
        with cancel_interrupts(once=True), open_from_args(args) as ws:
            reports = import_demo(ws)
    except KeyboardInterrupt:
        print("import of the demo interrupted; what was not finished was not imported", file=sys.stderr)
        return 130
    for report in reports:
        state = "already there" if report.already_imported else "imported"
        print(f"{report.name}: {state} ({report.questions} questions, {report.images} images)")
    return 0


def cmd_benchmarks(args) -> int:
    from db import catalog
    from evaluator.analysis.groups import benchmark_groups
    from vlmdesk.cli import open_from_args

    if getattr(args, "benchmarks_command", None) == "tag":
        return cmd_tag(args)

    with open_from_args(args) as ws:
        benches = catalog.list_benchmarks(ws)
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "name": b.name,
                        "kind": b.kind,
                        "format": b.format,
                        "questions": b.questions,
                        "rows_read": b.rows_read,
                        "rows_folded": b.rows_folded,
                        "rows_skipped": b.rows_skipped,
                        "images": b.images,
                        "imported_at": b.imported_at,
                        "source": b.source,
                        "setting": b.meta.get("setting"),
                        "groups": list(benchmark_groups(b)),
                    }
                    for b in benches
                ],
                ensure_ascii=False,
            )
        )
        return 0
    if not benches:
        print("no benchmarks yet: vlmdesk import FILE (or vlmdesk demo for the bundled demo)")
        return 0
    print(f"{'name':<28} {'kind':<6} {'questions':>9} {'rows':>7} {'images':>7}  {'imported':<19}  groups")
    for b in benches:
        print(
            f"{b.name:<28} {b.kind:<6} {b.questions:>9} {b.rows_read:>7} {b.images:>7}  {b.imported_at[:19]:<19}  "
            + (", ".join(benchmark_groups(b)) or "-")
        )
    return 0


def cmd_tag(args) -> int:
    from evaluator.analysis.groups import tag_benchmark
    from vlmdesk.cli import UsageError, open_from_args

    if args.clear == bool(args.group):
        raise UsageError("benchmarks tag needs --group GROUP (one or more) or --clear")
    with open_from_args(args) as ws:
        stored = tag_benchmark(ws, args.bench, args.group)
    if args.json:
        print(json.dumps({"name": args.bench, "groups": list(stored)}, ensure_ascii=False))
    else:
        print(f"{args.bench}: {', '.join(stored) if stored else 'no capability group'}")
    return 0


def cmd_items(args) -> int:
    from db import catalog
    from vlmdesk.cli import open_from_args, write_json_array

    # Streamed: each item is written as it is read, so a million-item listing starts at once in constant memory.
    with open_from_args(args) as ws:
        items = catalog.iter_items(ws, bench_or_fail(ws, args.bench).id, limit=args.limit)
        if args.json:
            write_json_array(i.to_json() for i in items)
            return 0
        for i in items:
            question = i.question.replace("\n", " ")
            print(
                f"{str(i.index):>8}  {i.answer or '-':<3} {(i.category or '')[:28]:<28} "
                f"{question[:70]}{'…' if len(question) > 70 else ''}"
            )
    return 0


def cmd_show(args) -> int:
    from db import catalog
    from evaluator.formats.outfiles import write_file
    from vlmdesk.cli import UsageError, open_from_args, output_file

    with open_from_args(args) as ws:
        bench = bench_or_fail(ws, args.bench)
        item = item_or_fail(ws, bench, args.index)
        image = catalog.image_bytes(ws, item.image_sha256) if item.image_sha256 else None
        # Every image's type and size, for the listing (the first one's bytes are what --image-out writes).
        shown = [(sha, catalog.image_info(ws, sha)) for sha in item.images[1:]] if not args.json else []
    if args.image_out:
        if image is None:
            raise UsageError(f"item {item.index!r} has no image")
        try:
            write_file(output_file(args.image_out), lambda f: f.write(image[0]), binary=True)
        except OSError as exc:
            raise UsageError(f"{args.image_out}: {exc.strerror or exc}") from None
    if args.json:
        print(json.dumps(item.to_json(), ensure_ascii=False))
        return 0
    from evaluator.scoring.choices import LETTERS

    print(f"{bench.name} #{item.index}   {item.category or ''} / {item.l2_category or ''}   split {item.split or '-'}")
    if item.hint:
        print(f"hint: {item.hint}")
    print(f"question: {item.question}")
    for letter, text in zip(LETTERS, item.options):
        mark = "*" if letter == item.answer else " "
        print(f" {mark} {letter}. {text}")
    if not item.options:
        print(f"answer: {item.answer}")
    if image:
        label = "image" if not shown else f"image 1 of {len(item.images)}"
        print(
            f"{label}: {item.image_sha256[:12]}… ({image[1]}, {len(image[0])} bytes)"
            + (f" written to {args.image_out}" if args.image_out else "")
        )
    for n, (sha, found) in enumerate(shown, start=2):
        what = f"{found[0]}, {found[1]} bytes" if found else "missing: vlmdesk check"
        print(f"image {n} of {len(item.images)}: {sha[:12]}… ({what})")
    return 0
