"""`vlmdesk judge`: an LLM judge's verdicts on an open run's answers (evaluator/scoring/open_judge.py,
docs/adr/0035)."""

from __future__ import annotations

import json
import sys

from vlmdesk.args import positive_int, record_id


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
        "What servers say back is redacted of keys before it is stored.",
        examples="""
                vlmdesk judge 7 --judge 'openai:gpt-4o-mini' --json
                vlmdesk judge 7 --judge 'openai:qwen2.5-7b@http://localhost:8000/v1' --rubric strict.txt
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
    print(
        f"run {args.run_id}, judge {score.judge}: judge score {value} over {score.items_scored} items (right "
        f"{v['right']}, partly {v['partly']}, wrong {v['wrong']}, undecided {v['undecided']}; {score.left} left; "
        f"{score.no_reference} items without a reference; rubric {score.rubric_sha256[:12]}; {score.calls} judge "
        "calls now)"
    )
    return 0
