"""`vlmdesk align …`: the extractor–human alignment study from the terminal (sample, label, adjudicate, report)."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING

from evaluator.scoring.llm_extraction import EXTRACTOR_HELP
from vlmdesk.args import annotator, count, positive_int, record_id, record_ids, seed

if TYPE_CHECKING:
    from annotation.alignment import AlignmentReport
    from annotation.open_alignment import OpenAlignmentReport
    from annotation.pair_alignment import PairAlignmentReport


def register_align(add) -> None:
    from vlmdesk.cli import add_command

    p = add(
        description="The extractor–human alignment study. `sample` builds an adjudication set from runs; `label` "
        "is a blind terminal labelling loop; `adjudicate` lists annotator disagreements and records "
        "final labels; `report` gives alignment rates (Wilson 95 %), Cohen's κ, confusion matrices "
        "and inter-annotator agreement. See docs/extraction-and-alignment.md. For open answers: people "
        "judge them right / partly / wrong (the app's Queues › Open answers page, or `open-verdict`), and "
        "`open` reports how far each open metric agrees with them; `pairs`, how far a judge's verdicts on the arena's "
        "pairs (vlmdesk judge-pairs) agree with people's votes.",
        examples="""
                vlmdesk align sample --run 3 --run 4 --extractor 'rules+llm:openai:gpt-4o-mini' --size 50 --seed 1 --name s1
                vlmdesk align label --set s1 --annotator ana
                vlmdesk align adjudicate --set s1
                vlmdesk align adjudicate --set s1 --item 17 --label B --adjudicator lead
                vlmdesk align report --set s1 --json
                vlmdesk align export-labels --set s1 --out s1-ana.jsonl && vlmdesk align import-labels s1-ana.jsonl
                vlmdesk align open --bench demo-open --runs 4,5 --json
                vlmdesk align pairs --bench demo-open --set 3f2a9c1b0e4d7a65""",  # noqa: E501 (an example is one shell line, shown as written)
    )
    sub = p.add_subparsers(dest="align_command", metavar="ACTION", required=True)

    def action(name, help, handler, example):
        return add_command(sub, name, help=help, handler=handler, examples=example)

    q = action(
        "sample",
        "build an adjudication set: extractor disagreements, rules-undecided, plus a seeded sample",
        cmd_sample,
        "vlmdesk align sample --run 3 --run 4 --extractor 'rules+llm:openai:gpt-4o-mini' --size 50 --seed 1 --name s1",
    )
    q.add_argument("--run", type=record_id, action="append", required=True, metavar="RUN_ID", help="repeatable")
    q.add_argument(
        "--extractor",
        action="append",
        default=[],
        metavar="SPEC",
        help=f"repeatable; rules is always included ({EXTRACTOR_HELP})",
    )
    q.add_argument("--size", type=positive_int, required=True, help="how many of the remaining responses to sample")
    q.add_argument("--seed", type=seed, default=0, help="seed of the random sample and of the shown order (default 0)")
    q.add_argument("--name", required=True, help="the set's name")
    q.add_argument("--json", action="store_true", help="print the new set as JSON")

    q = action(
        "label",
        "label a set blind: type the option the response chose, Z, unclear, or q to stop",
        cmd_label,
        "vlmdesk align label --set s1 --annotator ana",
    )
    q.add_argument("--set", required=True, dest="set_name", metavar="NAME", help="the adjudication set to label")
    q.add_argument(
        "--annotator", required=True, metavar="NAME", type=annotator, help="your name, stored with every label"
    )

    q = action(
        "adjudicate",
        "list annotator disagreements, or record a final label with --item and --label",
        cmd_adjudicate,
        "vlmdesk align adjudicate --set s1 --item 17 --label B --adjudicator lead",
    )
    q.add_argument("--set", required=True, dest="set_name", metavar="NAME", help="the adjudication set")
    q.add_argument("--item", type=record_id, metavar="ITEM_ID", help="the disagreement to settle (ids as listed)")
    q.add_argument("--label", metavar="LETTER|Z|unclear", help="the final label for --item")
    q.add_argument("--adjudicator", metavar="NAME", type=annotator, help="who settles it (stored with the label)")
    q.add_argument("--note", help="why (optional)")
    q.add_argument("--json", action="store_true", help="print JSON")

    q = action(
        "report",
        "alignment per extractor, inter-annotator agreement, open disagreements",
        cmd_report,
        "vlmdesk align report --set s1 --json",
    )
    q.add_argument("--set", dest="set_name", metavar="NAME", help="default: every set")
    q.add_argument("--json", action="store_true", help="print the report as JSON")

    from vlmdesk.cmd_reviews import add_export_output, add_import_arguments

    q = action(
        "export-labels",
        "write a set's labels, adjudications and their undos as JSON Lines, oldest first",
        cmd_export_labels,
        "vlmdesk align export-labels --set s1 --annotator ana --out ana-labels.jsonl",
    )
    q.add_argument("--set", required=True, dest="set_name", metavar="NAME", help="the adjudication set")
    q.add_argument(
        "--annotator", metavar="NAME", type=annotator, help="only this annotator's (or adjudicator's) records"
    )
    add_export_output(q)

    q = action(
        "import-labels",
        "merge labels and adjudications exported from another copy of the workspace",
        cmd_import_labels,
        "vlmdesk align import-labels ana-labels.jsonl --skip-bad",
    )
    add_import_arguments(q, "labels and adjudications")

    q = action(
        "open",
        "each open metric against people's verdicts on the same answers: accuracy, κ, Spearman, intervals",
        cmd_open,
        "vlmdesk align open --bench demo-open --runs 4,5 --json",
    )
    q.add_argument("--bench", required=True, help="an open benchmark")
    q.add_argument("--runs", type=record_ids, required=True, metavar="R1,R2", help="the runs, comma-separated")
    q.add_argument(
        "--bootstrap",
        type=count,
        default=2000,
        metavar="N",
        help="resamples of the percentile bootstrap interval of κ (default 2000)",
    )
    q.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap (default 0)")
    q.add_argument("--json", action="store_true", help="print the report as JSON")

    q = action(
        "pairs",
        "a judge's verdicts on arena pairs against people's votes: accuracy, κ, position bias, rank correlation",
        cmd_pairs,
        "vlmdesk align pairs --bench demo-open --judge 'openai:gpt-4o' --json",
    )
    q.add_argument("--bench", required=True, metavar="NAME", help="an open benchmark with arena pairs and votes")
    who = q.add_mutually_exclusive_group(required=True)
    who.add_argument("--judge", metavar="SPEC", help="the judge (as given to judge-pairs; its set under this prompt)")
    who.add_argument("--set", dest="set_key", metavar="KEY", help="a judgement set's key, as judge-pairs prints it")
    q.add_argument("--with-image", action="store_true", help="with --judge: the set judged with the image shown")
    q.add_argument(
        "--bootstrap",
        type=count,
        default=2000,
        metavar="N",
        help="resamples of the percentile bootstrap intervals of κ (default 2000)",
    )
    q.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap (default 0)")
    q.add_argument("--json", action="store_true", help="print the report as JSON")

    q = action(
        "open-verdict",
        "record a verdict (right, partly, wrong), an adjudication, or withdraw one, on a run's answer to an item",
        cmd_open_verdict,
        "vlmdesk align open-verdict --run 4 --item 17 --verdict partly --annotator ana",
    )
    q.add_argument("--run", type=record_id, required=True, metavar="RUN_ID", help="the run that gave the answer")
    q.add_argument("--item", type=record_id, required=True, metavar="ITEM_ID", help="the item it answered")
    q.add_argument(
        "--verdict",
        choices=["right", "partly", "wrong", "undo"],
        required=True,
        help="undo withdraws your standing verdict (or, with --adjudicate, adjudication) on the answer",
    )
    q.add_argument("--annotator", required=True, metavar="NAME", type=annotator, help="your name")
    q.add_argument(
        "--adjudicate",
        action="store_true",
        help="the final word on an answer whose annotators disagree (it stands over their majority)",
    )
    q.add_argument("--note", help="why (optional)")

    q = action(
        "export-open",
        "write the verdicts on open answers (and their undos) as JSON Lines, oldest first",
        cmd_export_open,
        "vlmdesk align export-open --bench demo-open --annotator ana --out ana-open.jsonl",
    )
    q.add_argument("--bench", metavar="NAME", help="only verdicts on this benchmark's answers")
    q.add_argument("--annotator", metavar="NAME", type=annotator, help="only this annotator's records")
    add_export_output(q)

    q = action(
        "import-open",
        "merge verdicts on open answers exported from another copy of the workspace",
        cmd_import_open,
        "vlmdesk align import-open ana-open.jsonl",
    )
    add_import_arguments(q, "verdicts on open answers")


def cmd_open(args) -> int:
    from annotation.open_alignment import open_alignment, stored_scores
    from vlmdesk.cli import open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args, create=False) as ws:
        bench = bench_or_fail(ws, args.bench)
        report = open_alignment(ws, bench, args.runs, stored_scores, resamples=args.bootstrap, seed=args.seed)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        print(format_open(report))
    return 0


def _ci(ci) -> str:
    return "-" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def format_open(r: OpenAlignmentReport) -> str:
    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    lab = r.labels
    lines = [
        f"benchmark {r.benchmark}  runs {','.join(map(str, r.runs))}  answers {r.answers}, judged {r.judged} "
        f"(right {lab['right']}, partly {lab['partly']}, wrong {lab['wrong']}; {r.ties} ties left out, "
        f"{r.adjudicated} adjudicated)",
        f"rule: {r.rule}",
        f"{'metric':<14} {'n':>4} {'threshold':>9} {'accuracy':>8} {'95% Wilson':>16} {'kappa':>7} "
        f"{'95% bootstrap':>16} {'spearman':>8}",
    ]
    for name, m in r.metrics.items():
        threshold = "none" if m.n and m.threshold is None else fmt(m.threshold)  # none: no answer counts as right
        lines.append(
            f"{name[:14]:<14} {m.n:>4} {threshold:>9} {_pct(m.accuracy):>8} {_ci(m.wilson_95):>16} "
            f"{fmt(m.cohen_kappa):>7} {_ci(m.kappa_95):>16} {fmt(m.spearman):>8}"
        )
    if not r.metrics:
        lines.append("(no metric scores stored for these runs: score them first)")
    a = r.annotators
    lines.append(
        f"bootstrap: {next(iter(r.metrics.values())).bootstrap if r.metrics else 0} resamples, seed {r.seed}; "
        f"annotators {', '.join(a.names) or '-'}: answers with ≥2 verdicts {a.answers_with_two_or_more}, agreement "
        f"{_pct(a.percent_agreement).strip()}, Cohen's kappa {fmt(a.cohen_kappa)}, Krippendorff's alpha "
        f"{fmt(a.krippendorff_alpha)}"
    )
    open_ = [(run, item) for run, item, _, adjudicated in r.disagreements if adjudicated is None]
    if open_:
        run, item = open_[0]
        lines.append(
            f"{len(open_)} disagreement(s) to adjudicate (--json lists them): vlmdesk align open-verdict --run {run} "
            f"--item {item} --verdict right|partly|wrong --annotator NAME --adjudicate"
        )
    return "\n".join(lines)


def cmd_pairs(args) -> int:
    from annotation.pair_alignment import pair_alignment
    from vlmdesk.cli import open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args, create=False) as ws:
        bench = bench_or_fail(ws, args.bench)
        key = args.set_key
        if key is None:
            from annotation.pair_judge import identity
            from evaluator.engine.launch import resolve_model

            key = identity(resolve_model(ws, args.judge), args.with_image)[1]
        report = pair_alignment(ws, bench, key, resamples=args.bootstrap, seed=args.seed)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        print(format_pairs(report))
    return 0


def format_pairs(r: PairAlignmentReport) -> str:
    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    def share(f) -> str:
        if f is None or f.value is None or f.wilson_95 is None:
            return "-"
        low, high = f.wilson_95
        return f"{100 * f.value:.1f} % [{100 * low:.1f}, {100 * high:.1f}] ({f.k}/{f.n})"

    s = r.judge_set
    lines = [
        f"benchmark {r.benchmark}  judge {s.judge}{' (shown the image)' if s.with_image else ''}  set {s.key}  "
        f"prompt {s.prompt_version}  {'both orders' if r.both_orders else 'one order'}",
        f"pairs {r.pairs}, voted {r.voted} ({r.votes} votes; {r.human_ties} with tied votes), judged {r.judged} "
        f"({r.judge_undecided} undecided), compared {r.n}",
        "people: "
        + ", ".join(f"{k} {v}" for k, v in r.human_labels.items())
        + "   judge: "
        + ", ".join(f"{k} {v}" for k, v in r.judge_labels.items()),
        f"accuracy (4-way)  {share(r.accuracy)}   Cohen's kappa {fmt(r.kappa)} {_ci(r.kappa_95)}",
        f"decisive pairs    {share(r.decisive)}   Cohen's kappa {fmt(r.decisive_kappa)} {_ci(r.decisive_kappa_95)}",
        f"position bias     chose the first shown {share(r.first_choices)}, binomial p vs 0.5 "
        f"{'-' if r.first_binomial_p is None else f'{r.first_binomial_p:.3g}'}",
    ]
    if r.consistency is not None:
        lines.append(
            f"                  consistent across orders {share(r.consistency)}; of the inconsistent, chose the "
            f"first shown both times {share(r.inconsistent_first)}"
        )
    lines.append(f"ratings (Bradley-Terry)  Spearman rho {fmt(r.spearman)}  ({r.spearman_note})")
    lines.append(f"  {'model':<40} {'judge':>8} {'votes':>8}")
    for m in r.models:
        lines.append(f"  {m.model[:40]:<40} {fmt(m.judge)[:8]:>8} {fmt(m.votes)[:8]:>8}")
    lines.append(f"bootstrap: {r.bootstrap} resamples, seed {r.seed}; rule: {r.rule}")
    return "\n".join(lines)


def cmd_open_verdict(args) -> int:
    from annotation import open_verdicts as ov
    from vlmdesk.cli import open_from_args

    role: ov.Role = "adjudication" if args.adjudicate else "verdict"
    with open_from_args(args, create=False) as ws:
        if args.verdict == "undo":
            withdrawn = ov.undo_verdict(ws, args.run, args.item, args.annotator, role=role)
            print(f"withdrew {withdrawn.verdict}" if withdrawn else "nothing of yours stands on this answer")
            return 0
        ov.add_verdict(ws, args.run, args.item, args.annotator, args.verdict, note=args.note, role=role)
    print(f"run {args.run}, item {args.item}: {args.verdict} saved")
    return 0


def cmd_export_open(args) -> int:
    from vlmdesk.cmd_reviews import export_by_benchmark

    return export_by_benchmark(args, "open")


def cmd_import_open(args) -> int:
    from vlmdesk.cmd_reviews import run_import

    return run_import(args, "open", "verdict(s)")


def cmd_sample(args) -> int:
    from annotation.alignment import build_set
    from evaluator.backends import BackendError
    from evaluator.scoring.llm_extraction import load_extractor, parse_extractor_spec
    from vlmdesk.cli import open_from_args

    for spec in args.extractor:
        parse_extractor_spec(spec)
    with open_from_args(args) as ws:
        try:
            extractors = [load_extractor(spec, ws) for spec in args.extractor]
            s = build_set(ws, args.name, args.run, extractors, size=args.size, seed=args.seed)
        except BackendError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    out = {
        "set": s.name,
        "items": s.items,
        "by_why": s.by_why,
        "runs": list(s.run_ids),
        "extractors": list(s.extractors),
        "seed": s.seed,
        "sample_size": s.sample_size,
    }
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(
            f"set {s.name!r}: {s.items} responses to label ({s.by_why['undecided']} rules-undecided, "
            f"{s.by_why['disagree']} extractor disagreements, {s.by_why['sample']} sampled); "
            f"vlmdesk align label --set {s.name} --annotator NAME"
        )
    return 0


def cmd_label(args) -> int:
    """The loop: show an item, read a label, commit it, and only then show what the extractors said."""
    from annotation.alignment import add_label, next_for, reveal
    from db.errors import InvalidInput
    from vlmdesk.cli import open_from_args

    with open_from_args(args) as ws:
        task = next_for(ws, args.set_name, args.annotator)
        if task is None:
            print(f"nothing left to label in {args.set_name!r} for {args.annotator}")
            return 0
        while task is not None:
            print(f"\n[{task.done + 1}/{task.total}] item {task.item_id}")
            print(f"Question: {task.question}")
            for letter, text in task.options.items():
                print(f"  {letter}. {text}")
            print("Response:")
            for line in (task.response or "(empty)").splitlines() or [""]:
                print(f"  {line}")
            shown = time.monotonic()
            while True:
                print(f"label ({', '.join(task.options)}, Z = none of them, unclear, q = quit)> ", end="", flush=True)
                line = sys.stdin.readline()
                if not line or line.strip().lower() == "q":
                    print("\nstopped; labels so far are saved")
                    return 0
                try:
                    label = add_label(
                        ws, task.item_id, args.annotator, line.strip(), seconds=round(time.monotonic() - shown, 3)
                    )
                    break
                except InvalidInput as exc:  # a typo: ask again
                    print(f"not saved: {exc}")
            print(f"saved: {label.choice}")
            for name, e in reveal(ws, task.item_id, args.annotator).items():
                mark = "=" if (e.choice or "") == label.choice else "≠"
                print(f"  {mark} {name}: {e.choice or 'undecided'} ({e.reason})")
            task = next_for(ws, args.set_name, args.annotator)
    print(f"\nall of {args.set_name!r} labelled by {args.annotator}")
    return 0


def cmd_adjudicate(args) -> int:
    from annotation.alignment import adjudicate, disagreements, item_texts
    from vlmdesk.cli import UsageError, open_from_args, write_json_array

    with open_from_args(args) as ws:
        if args.item is not None or args.label is not None:
            if args.item is None or not args.label or not args.adjudicator:
                raise UsageError("recording a final label needs --item, --label and --adjudicator")
            adjudicate(ws, args.item, args.adjudicator, args.label, note=args.note)
            print(f"item {args.item}: final label {args.label.strip()} recorded")
            return 0
        # Streamed: each disagreement is written as it is read, with its texts.
        found = ((d, item_texts(ws, d.item_id)) for d in disagreements(ws, args.set_name))
        if args.json:
            write_json_array(
                {
                    "item_id": d.item_id,
                    "labels": d.labels,
                    "adjudicated": d.adjudicated,
                    "question": t.question,
                    "options": t.options,
                    "response": t.response,
                }
                for d, t in found
            )
            return 0
        shown = 0
        for d, t in found:
            shown += 1
            labels = ", ".join(f"{a}: {c}" for a, c in d.labels.items())
            state = f"adjudicated {d.adjudicated}" if d.adjudicated else "open"
            print(
                f"item {d.item_id} [{state}]  {labels}\n  Q: {t.question}\n  "
                + "  ".join(f"{k}. {v}" for k, v in t.options.items())
                + f"\n  response: {t.response}"
            )
        if not shown:
            print("no disagreements between annotators")
    return 0


def cmd_report(args) -> int:
    from annotation.alignment import alignment_report, list_sets
    from vlmdesk.cli import UsageError, open_from_args

    with open_from_args(args) as ws:
        names = [args.set_name] if args.set_name else [s.name for s in list_sets(ws)]
        reports = [alignment_report(ws, n) for n in names]
    if not reports:
        raise UsageError("no adjudication sets yet: vlmdesk align sample --run ID --size N --name SET")
    if args.json:
        found = [r.to_json() for r in reports]
        print(json.dumps(found[0] if args.set_name else found, ensure_ascii=False))
        return 0
    for r in reports:
        print(format_alignment(r))
    return 0


def _pct(x) -> str:
    return "    -" if x is None else f"{100 * x:5.1f}%"


def format_alignment(r: AlignmentReport) -> str:
    fin = r.final
    lines = [
        f"set {r.set_name}  runs {list(r.runs)}  items {r.items} ({r.by_why['undecided']} undecided, "
        f"{r.by_why['disagree']} disagree, {r.by_why['sample']} sampled)",
        f"labelled {r.labelled}   final labels {fin.decided} (+{fin.unclear} unclear, {fin.ties} ties, "
        f"{fin.adjudicated} adjudicated)",
        f"{'extractor':<40} {'n':>4} {'aligned':>8} {'95% Wilson':>17} {'kappa':>7}",
    ]
    for name, e in r.extractors.items():
        ci = e.overall.wilson_95
        ci_text = f"[{_pct(ci[0]).strip()}, {_pct(ci[1]).strip()}]" if ci else "-"
        kappa = "-" if e.cohen_kappa is None else f"{e.cohen_kappa:.3f}"
        lines.append(f"{name[:40]:<40} {e.overall.n:>4} {_pct(e.overall.rate):>8} {ci_text:>17} {kappa:>7}")
    inter = r.inter_annotator

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    lines.append(
        f"annotators {', '.join(inter.annotators) or '-'}: items with ≥2 labels "
        f"{inter.items_with_two_or_more}, agreement {_pct(inter.percent_agreement).strip()}, "
        f"Cohen's kappa {fmt(inter.cohen_kappa)}, Krippendorff's alpha {fmt(inter.krippendorff_alpha)}"
    )
    open_ = [d for d in r.disagreements if d.adjudicated is None]
    if open_:
        lines.append(f"{len(open_)} disagreement(s) to adjudicate: vlmdesk align adjudicate --set {r.set_name}")
    return "\n".join(lines)


def cmd_export_labels(args) -> int:
    from annotation.alignment import get_set
    from vlmdesk.cli import UsageError, open_from_args
    from vlmdesk.cmd_reviews import run_export

    with open_from_args(args, create=False) as ws:
        if get_set(ws, args.set_name) is None:
            raise UsageError(f"no adjudication set named {args.set_name!r}")
        return run_export(ws, "labels", args.out, set_name=args.set_name, annotator=args.annotator)


def cmd_import_labels(args) -> int:
    from vlmdesk.cmd_reviews import run_import

    return run_import(args, "labels", "record(s)")
