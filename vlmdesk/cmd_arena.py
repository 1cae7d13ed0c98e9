"""`vlmdesk arena …`: pairs of two runs' free answers to open questions, votes on them, ratings from the votes.

The work is annotation/arena.py (pairs, votes), annotation/sync.py (votes between copies) and
evaluator/analysis/ratings.py
(Bradley–Terry, bootstrap, Elo).
"""

from __future__ import annotations

import json
import sys

from evaluator.analysis.ratings import DEFAULT_ROUNDS, MAX_ROUNDS, MIN_ROUNDS
from evaluator.engine.live import MAX_QUESTION_CHARS
from vlmdesk.args import annotator, int_in, record_id, seed

per_item = int_in(1, 1000, "a number of pairs per item (1..1000)")
rounds = int_in(MIN_ROUNDS, MAX_ROUNDS, f"a number of bootstrap rounds ({MIN_ROUNDS}..{MAX_ROUNDS})")


def register_arena(add) -> None:
    from vlmdesk.cli import add_command
    from vlmdesk.cmd_reviews import add_export_output, add_import_arguments

    p = add(
        description="The arena compares runs on an open benchmark (questions without options): `pairs` draws, for "
        "each item, pairs of two runs' answers with a random side each (the queue lives in the workspace); "
        "annotators vote in the app's Arena tab (left, right, tie, both bad); `ask` holds a live battle (two "
        "saved models drawn by matchmaking answer a new question about an image; stored as the live-arena "
        "benchmark's item, runs and pair); `ratings` fits Bradley–Terry "
        "as Chatbot Arena does, with bootstrap intervals and online Elo beside it, from the workspace's "
        "votes or from a file of battles; `export-votes` / `import-votes` move votes between copies.",
        examples="""
                vlmdesk arena pairs --bench demo-open --runs 4 5 6 --per-item 2 --seed 1
                vlmdesk arena ask --image photo.jpg --question "What is unusual here?"
                vlmdesk arena ratings --bench demo-open --json
                vlmdesk arena ratings --votes battles.jsonl --bootstrap 1000 --plot leaderboard.png
                vlmdesk arena export-votes --annotator ana --out ana-votes.jsonl""",
    )
    sub = p.add_subparsers(dest="arena_command", metavar="ACTION", required=True)

    def action(name, help, handler, examples):
        return add_command(sub, name, help=help, handler=handler, examples=examples)

    q = action(
        "pairs",
        "draw pairs of runs' answers for each item of an open benchmark and append them to its arena queue",
        cmd_pairs,
        """
               vlmdesk arena pairs --bench demo-open --runs 4 5 6
               vlmdesk arena pairs --bench demo-open --runs 4 5 6 --per-item 3 --seed 7 --json""",
    )
    q.add_argument("--bench", required=True, help="an open benchmark (vlmdesk benchmarks)")
    q.add_argument(
        "--runs",
        type=record_id,
        nargs="+",
        required=True,
        metavar="RUN_ID",
        help="two or more runs on the benchmark, one per model (made here or imported)",
    )
    q.add_argument(
        "--per-item",
        type=per_item,
        default=1,
        metavar="K",
        help="pairs drawn per item, uniformly over the pairs of models that answered it (default 1)",
    )
    q.add_argument("--seed", type=seed, default=0, help="seed of the draw and of the sides (default 0)")
    q.add_argument("--json", action="store_true", help="print the pairs drawn as JSON")

    q = action(
        "ask",
        "a live battle: two models drawn by matchmaking answer a question about an image, anonymously",
        cmd_ask,
        """
               vlmdesk arena ask --image photo.jpg --question "What is unusual here?"
               vlmdesk arena ask --image photo.jpg --question "Count the cups." --models tiny-a tiny-b --seed 3
               vlmdesk arena ask --image photo.jpg --question "What is it?" --vote left --annotator ana --json""",
    )
    q.add_argument("--image", required=True, metavar="PATH", help="the image to ask about (PNG, JPEG, …)")
    q.add_argument("--question", required=True, help=f"what to ask (at most {MAX_QUESTION_CHARS} characters)")
    q.add_argument(
        "--models",
        nargs="+",
        metavar="MODEL",
        help="the models matchmaking draws from: saved models' names or specs (default: every saved model)",
    )
    q.add_argument("--seed", type=seed, default=0, help="seed of the matchmaking draw and the sides (default 0)")
    q.add_argument(
        "--vote",
        choices=("left", "right", "tie", "bothbad"),
        help="vote at once (needs --annotator); without it the battle waits in live-arena's queue (the Arena tab)",
    )
    q.add_argument("--annotator", metavar="NAME", type=annotator, help="who votes (with --vote)")
    q.add_argument("--json", action="store_true", help="print the battle as JSON")

    q = action(
        "answer",
        "one model's answer to a question about an image, as JSON lines, storing nothing (the app's worker)",
        cmd_answer,
        """
               vlmdesk arena answer --model tiny-a --image photo.jpg --question 'What is it?'""",
    )
    q.add_argument("--model", required=True, help="a saved model's name or a model spec")
    q.add_argument("--image", required=True, metavar="PATH", help="the image to ask about")
    q.add_argument("--question", required=True, help=f"what to ask (at most {MAX_QUESTION_CHARS} characters)")

    q = action(
        "ratings",
        "Bradley–Terry ratings with bootstrap 95 % intervals, ranks, tallies and online Elo",
        cmd_ratings,
        """
               vlmdesk arena ratings --bench demo-open
               vlmdesk arena ratings --votes battles.jsonl --bootstrap 200 --seed 3 --json
               vlmdesk arena ratings --plot leaderboard.png --matrix-plot win-rates.png""",
    )
    q.add_argument("--bench", help="only the votes on this benchmark's pairs (default: every standing vote)")
    q.add_argument(
        "--votes",
        metavar="FILE",
        help="rate the battles of a file in Chatbot Arena's shape, JSON Lines or a JSON array like FastChat's "
        "clean_battle_*.json (model_a, model_b, winner: model_a, model_b, tie or 'tie (bothbad)'), instead of the "
        "workspace's votes",
    )
    q.add_argument(
        "--bootstrap",
        type=rounds,
        default=DEFAULT_ROUNDS,
        metavar="N",
        help=f"bootstrap rounds for the intervals (default {DEFAULT_ROUNDS}; {MIN_ROUNDS}..{MAX_ROUNDS})",
    )
    q.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap (default 0)")
    q.add_argument("--json", action="store_true", help="print the leaderboard as JSON")
    q.add_argument("--plot", metavar="FILE", help="save the leaderboard with interval whiskers (.png, .svg, .pdf)")
    q.add_argument("--matrix-plot", metavar="FILE", help="save the pairwise win-rate matrix (.png, .svg, .pdf)")

    q = action(
        "export-votes",
        "write arena votes and undos as JSON Lines, oldest first",
        cmd_export_votes,
        """
               vlmdesk arena export-votes --out votes.jsonl
               vlmdesk arena export-votes --bench demo-open --annotator ana > ana.jsonl""",
    )
    q.add_argument("--bench", help="only votes on this benchmark's pairs")
    q.add_argument("--annotator", metavar="NAME", type=annotator, help="only this annotator's votes")
    add_export_output(q)

    q = action(
        "import-votes",
        "merge arena votes exported from another copy of the workspace",
        cmd_import_votes,
        """
               vlmdesk arena import-votes ana.jsonl
               vlmdesk arena import-votes ana.jsonl --skip-bad --json""",
    )
    add_import_arguments(q, "arena votes")


def cmd_pairs(args) -> int:
    from annotation import arena
    from vlmdesk.cli import open_from_args
    from vlmdesk.cmd_data import bench_or_fail

    with open_from_args(args, create=False) as ws:
        bench = bench_or_fail(ws, args.bench)
        drawn = arena.draw_pairs(ws, bench, args.runs, per_item=args.per_item, seed=args.seed)
        total = arena.pair_count(ws, bench.id)
    if args.json:
        print(
            json.dumps(
                {"benchmark": bench.name, "drawn": len(drawn), "queue": total, "pairs": [p.to_json() for p in drawn]}
            )
        )
        return 0
    items = len({p.item_id for p in drawn})
    print(f"drew {len(drawn)} pair(s) over {items} item(s) of {bench.name}; the queue holds {total}")
    return 0


def cmd_ratings(args) -> int:
    from annotation import arena
    from evaluator.analysis.plots import leaderboard_figure, save_figure, win_rate_figure
    from evaluator.analysis.ratings import leaderboard, win_rates
    from vlmdesk.cli import UsageError, open_from_args, output_file
    from vlmdesk.cmd_data import bench_or_fail

    if args.votes is not None:
        if args.bench is not None:
            raise UsageError("--bench rates the workspace's votes; --votes rates a file: give one of them")
        battles = arena.read_battles(args.votes)
    else:
        with open_from_args(args, create=False) as ws:
            bench_id = bench_or_fail(ws, args.bench).id if args.bench is not None else None
            battles = arena.battles(ws, bench_id)
        if not battles:
            raise UsageError("no arena votes yet (vote in the app's Arena tab, or vlmdesk arena import-votes)")
    outputs = [output_file(p) for p in (args.plot, args.matrix_plot) if p is not None]  # refused before the work
    board = leaderboard(battles, args.bootstrap, args.seed)
    if args.plot is not None:
        save_figure(leaderboard_figure(board), outputs[0])
    if args.matrix_plot is not None:
        models, matrix = win_rates(battles, [m.model for m in board.models])
        save_figure(win_rate_figure(models, matrix), outputs[-1])
    if args.json:
        print(json.dumps(board.to_json(), ensure_ascii=False))
        return 0
    print(f"{board.battles} vote(s), {board.rounds} bootstrap rounds (seed {board.seed})")
    print(f"{'rank':>4}  {'model':<40} {'rating':>8} {'95% interval':>19} {'votes':>6} {'W/T/L':>11} {'elo':>8}")
    for m in board.models:
        print(
            f"{m.rank:>4}  {m.model[:40]:<40} {m.rating:8.1f} {f'{m.lower:.1f} – {m.upper:.1f}':>19} {m.votes:>6} "
            f"{f'{m.wins}/{m.ties}/{m.losses}':>11} {m.elo:8.1f}"
        )
    for path in outputs:
        print(f"chart written to {path}", file=sys.stderr)
    return 0


def cmd_export_votes(args) -> int:
    from vlmdesk.cmd_reviews import export_by_benchmark

    return export_by_benchmark(args, "votes")


def cmd_import_votes(args) -> int:
    from vlmdesk.cmd_reviews import run_import

    return run_import(args, "votes", "vote(s)")


def cmd_ask(args) -> int:
    from annotation import arena, live_arena
    from evaluator.engine.live import ask
    from vlmdesk.cli import UsageError, open_from_args

    if (args.vote is None) != (args.annotator is None):
        raise UsageError("--vote and --annotator go together: who votes, and how")
    question = live_arena.check_question(args.question)
    image = live_arena.read_image(args.image)
    with open_from_args(args, create=False) as ws:
        left, right = live_arena.match(ws, args.seed, args.models)
        answers = [ask(spec, image, question) for spec in (left, right)]  # a failure stores nothing
        battle = live_arena.record_battle(ws, image, question, *answers, seed=args.seed)
        if args.vote is not None:
            arena.add_vote(ws, battle.pair.id, args.annotator, args.vote)
    named = args.vote is not None  # the models are named only after a vote (the blind rule)
    if args.json:
        out = {
            "benchmark": live_arena.LIVE_BENCH,
            "pair": battle.pair.uuid,
            "pair_id": battle.pair.id,
            "item_id": battle.item_id,
            "left": {"answer": battle.left.text, **({"model": battle.left.model} if named else {})},
            "right": {"answer": battle.right.text, **({"model": battle.right.model} if named else {})},
            "vote": args.vote,
        }
        print(json.dumps(out, ensure_ascii=False))
        return 0
    for side, answer in (("left", battle.left), ("right", battle.right)):
        print(f"{side}{f' ({answer.model})' if named else ''}: {answer.text}")
    after = (
        f"voted {args.vote}"
        if named
        else f"models hidden until a vote: vote on it in the Arena tab ({live_arena.LIVE_BENCH})"
    )
    print(f"stored as pair {battle.pair.id} of {live_arena.LIVE_BENCH}; {after}", file=sys.stderr)
    return 0


def cmd_answer(args) -> int:
    from annotation import live_arena
    from evaluator.engine.launch import resolve_model
    from evaluator.engine.live import ask
    from evaluator.formats.importers.common import sha256_bytes
    from vlmdesk.cli import open_from_args

    question = live_arena.check_question(args.question)
    image = live_arena.read_image(args.image)
    with open_from_args(args, create=False) as ws:  # read for a saved model's name; nothing is written
        spec = resolve_model(ws, args.model)

    def say(event: dict) -> None:
        print(json.dumps(event, ensure_ascii=False), flush=True)

    answer = ask(
        spec,
        image,
        question,
        on_text=lambda text: say({"event": "text", "text": text}),
        on_loaded=lambda streams: say({"event": "loaded", "streams": streams}),
    )
    # The image's hash: the app stores the battle only when the image it read is the one the model was shown.
    say({**answer.to_json(), "image_sha256": sha256_bytes(image)})
    return 0
