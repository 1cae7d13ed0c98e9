"""`vlmdesk judge`: an LLM judge's verdicts on an open run's answers (evaluator/scoring/open_judge.py,
docs/adr/0035)."""

from __future__ import annotations

import json
import sys

from vlmdesk.args import positive_int, record_id

SHOWN = " (shown the image)"


def register_judge(add) -> None:
    p = add(
        description="Ask a judge model about every answer of an open run whose item has reference answers: the "
        "rubric (the default one, or --rubric FILE), then the question, the reference answers and the model's "
        "answer. Its reply must end with `[Verdict] right|partly|wrong`; one it cannot be held to is asked again "
        "with a reminder (3 attempts), then stored as undecided with its raw text, never guessed. Verdicts are "
        "stored in the workspace per run, item, judge spec and rubric (the rubric's text with them): asking "
        "again asks only what is missing, another rubric asks anew, and an interrupted judging (Ctrl+C, the app's "
        "Cancel) keeps what was judged — run the same command again to continue. Score: right 1, partly 0.5, "
        "wrong 0, the mean per item and over the items; `vlmdesk report RUN --json` shows it as metric `judge`. "
        "What servers say back is redacted of keys before it is stored. The judge does not see the image unless "
        "--with-image (then the rubric says it is shown, and that judgement set is another one).",
        examples="""
                vlmdesk judge 7 --judge 'openai:gpt-4o-mini' --json
                vlmdesk judge 7 --judge 'openai:qwen2.5-7b@http://localhost:8000/v1' --rubric strict.txt
                vlmdesk judge 7 --judge 'openai:gpt-4o' --with-image
                vlmdesk judge --print-rubric > my-rubric.txt""",
    )
    p.add_argument("run_id", nargs="?", type=record_id, metavar="RUN", help="an open run (vlmdesk runs)")
    p.add_argument("--judge", metavar="SPEC", help="the judge's model spec or saved model name (a text model will do)")
    p.add_argument(
        "--rubric",
        metavar="FILE",
        help="the judge's instructions, UTF-8, at most 32 KiB (default: the built-in rubric, see --print-rubric); "
        "the question, references and answer follow it",
    )
    p.add_argument("--limit", type=positive_int, help="judge at most this many answers not judged yet (default all)")
    p.add_argument(
        "--with-image",
        action="store_true",
        help="show the judge each item's image(s) (a vision judge): its rubric then says so, and its verdicts are "
        "another judgement set than the same judge's without the image",
    )
    p.add_argument(
        "--max-new-tokens", type=positive_int, default=256, help="the judge's reply length in tokens (default 256)"
    )
    p.add_argument("--print-rubric", action="store_true", help="print the built-in rubric and exit")
    p.add_argument("--json", action="store_true", help="print the run's judge score and verdict counts as JSON")
    p.set_defaults(handler=cmd_judge)


def cmd_judge(args) -> int:
    from db.platform_io import cancel_interrupts
    from evaluator.backends import BackendError
    from evaluator.engine.launch import resolve_model
    from evaluator.scoring.open_judge import DEFAULT_RUBRIC, judge_open_run, read_rubric
    from vlmdesk.cli import INTERRUPTED, UsageError, open_from_args

    if args.print_rubric:
        print(DEFAULT_RUBRIC, end="")
        return 0
    if args.run_id is None or not args.judge:
        raise UsageError("vlmdesk judge: give one RUN and --judge SPEC (or --print-rubric)")
    rubric = read_rubric(args.rubric) if args.rubric else DEFAULT_RUBRIC
    with open_from_args(args) as ws:
        judge = resolve_model(ws, args.judge)

        def progress(done: int, todo: int) -> None:
            print(f"judged {done} of {todo} answers", file=sys.stderr, flush=True)

        # Cancel (QProcess.terminate, kill -TERM) and Ctrl+C end it between two SQLite statements: every chunk
        # stored before stays (one transaction each), and the same command continues.
        with cancel_interrupts():
            try:
                score = judge_open_run(
                    ws,
                    args.run_id,
                    judge,
                    rubric=rubric,
                    max_new_tokens=args.max_new_tokens,
                    limit=args.limit,
                    with_image=args.with_image,
                    on_progress=progress,
                )
            except KeyboardInterrupt:
                print(
                    f"judging run {args.run_id} interrupted; what was judged is kept; run the same command again to "
                    "continue",
                    file=sys.stderr,
                )
                return INTERRUPTED
            except BackendError as exc:
                print(
                    f"error: judging run {args.run_id} failed: {exc} (what was judged is kept; run the same command "
                    "again to continue)",
                    file=sys.stderr,
                )
                return 1
    if args.json:
        print(json.dumps(score.to_json(), ensure_ascii=False))
        return 0
    v = score.verdicts
    value = "—" if score.score is None else f"{score.score:.3f}"
    shown = SHOWN if args.with_image else ""
    print(
        f"run {args.run_id}, judge {score.judge}{shown}: judge score {value} over {score.items_scored} items (right "
        f"{v['right']}, partly {v['partly']}, wrong {v['wrong']}, undecided {v['undecided']}; {score.left} left; "
        f"{score.no_reference} items without a reference; rubric {score.rubric_sha256[:12]}; {score.calls} judge "
        "calls now)"
    )
    return 0


def register_judge_pairs(add) -> None:
    p = add(
        description="Ask a judge model the arena's question on a benchmark's stored pairs (`vlmdesk arena pairs`): "
        "the item's question, the two runs' answers (thoughts left out) as answer A (the pair's left) and answer B, "
        "and which is better — A, B, a tie, or both bad. The prompt follows MLLM-as-a-Judge's and WildVision-Bench's "
        "pairwise prompts; the reply must hold one verdict tag ([[A]], [[B]], [[C]] tie, [[D]] both bad) or end with "
        "a line that is only a verdict; one it cannot be held to is asked once more with a reminder, then stored as "
        "undecided with its raw text and counted. --both-orders asks each pair twice, the second time with the "
        "answers swapped, to expose position bias. Without --with-image the prompt says the judge does not see the "
        "image. Verdicts are stored on the pair's sides per judgement set (the judge's spec, the prompt's version, "
        "with or without the image): asking again asks only what is missing, and an interrupted judging (Ctrl+C, "
        "the app's Cancel) keeps what was judged. `vlmdesk align pairs` holds the set against people's votes.",
        examples="""
                vlmdesk judge-pairs --bench demo-open --judge 'openai:gpt-4o-mini' --both-orders
                vlmdesk judge-pairs --bench demo-open --judge 'openai:gpt-4o' --with-image --json
                vlmdesk judge-pairs --bench demo-open --judge 'openai:qwen2.5-vl@http://localhost:8000/v1' --limit 9""",
    )
    p.add_argument("--bench", required=True, metavar="NAME", help="an open benchmark with arena pairs")
    p.add_argument(
        "--judge", required=True, metavar="SPEC", help="the judge's model spec or saved model name (any chat model)"
    )
    p.add_argument(
        "--with-image",
        action="store_true",
        help="send the item's image(s) with each question (a vision judge); another judgement set than without",
    )
    p.add_argument(
        "--both-orders",
        action="store_true",
        help="ask each pair twice, the answers' order swapped the second time (position bias shows)",
    )
    p.add_argument("--limit", type=positive_int, help="ask at most this many (pair, order)s not judged yet")
    p.add_argument(
        "--max-new-tokens", type=positive_int, default=512, help="the judge's reply length in tokens (default 512)"
    )
    p.add_argument("--json", action="store_true", help="print the judgement set's counts as JSON")
    p.set_defaults(handler=cmd_judge_pairs)


def cmd_judge_pairs(args) -> int:
    from annotation.pair_judge import judge_pairs
    from db.platform_io import cancel_interrupts
    from evaluator.backends import BackendError
    from evaluator.engine.launch import resolve_model
    from vlmdesk.cli import INTERRUPTED, open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args) as ws:
        bench = bench_or_fail(ws, args.bench)
        judge = resolve_model(ws, args.judge)

        def progress(done: int, todo: int) -> None:
            print(f"judged {done} of {todo} pair judgements", file=sys.stderr, flush=True)

        with cancel_interrupts():
            try:
                found = judge_pairs(
                    ws,
                    bench,
                    judge,
                    with_image=args.with_image,
                    both_orders=args.both_orders,
                    limit=args.limit,
                    max_new_tokens=args.max_new_tokens,
                    on_progress=progress,
                )
            except KeyboardInterrupt:
                print(
                    f"judging the pairs of {bench.name} interrupted; what was judged is kept; run the same command "
                    "again to continue",
                    file=sys.stderr,
                )
                return INTERRUPTED
            except BackendError as exc:
                print(
                    f"error: judging the pairs of {bench.name} failed: {exc} (what was judged is kept; run the same "
                    "command again to continue)",
                    file=sys.stderr,
                )
                return 1
    if args.json:
        print(json.dumps(found.to_json(), ensure_ascii=False))
        return 0
    v = found.verdicts
    print(
        f"{found.benchmark}: judge {found.judge}{SHOWN if found.with_image else ''}, set {found.set_key}: "
        f"{found.judgements} judgements of {found.pairs} pairs (left {v['left']}, right {v['right']}, tie {v['tie']}, "
        f"both bad {v['bothbad']}, undecided {v['undecided']}; {found.left} left"
        + (f", {found.missing_answer} pairs without a stored answer" if found.missing_answer else "")
        + f"; {found.calls} judge calls now). Compare with people: vlmdesk align pairs --bench {found.benchmark} "
        f"--set {found.set_key}"
    )
    return 0
