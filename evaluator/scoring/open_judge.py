"""An LLM judge of open answers: a judge model reads the question, the reference answer(s) and a run's answer under a
rubric, and gives a verdict — right, partly or wrong — with its reason (docs/adr/0035).

Any backend spec judges (`openai:…`, a local `hf:` text model), loaded through the door, so a key a server echoes is
redacted before anything is stored. The rubric is the judge's instructions (DEFAULT_RUBRIC, or a user's file of at
most MAX_RUBRIC_BYTES); the item follows it in fixed sections, each bounded. A reply is read by `parse_verdict`: the
first word after its last `[Verdict]` marker (or a reply that is nothing but a verdict word); an unreadable reply is
asked again with a reminder (ATTEMPTS in all), then stored as undecided with its raw text — never guessed.

Verdicts are stored per (run, item, pass, judge spec identity, rubric sha256) chunk by chunk (db/open_judgements.py):
asking again asks only what is not stored under that judge and rubric — a cancelled or failed judging resumes where
it stopped, and another rubric asks anew. Scores: right 1, partly 0.5, wrong 0; an item's score is the mean over its
judged passes, the run's the mean over items with a verdict (undecided answers are counted, not scored).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from db import catalog, runs
from db import open_judgements as store
from db.errors import InvalidInput, NotFound
from db.workspace import ReadOnlyWorkspace, Workspace
from evaluator.backends import Backend, Query, run_identity
from evaluator.scoring.asking import ask_until_read

if TYPE_CHECKING:
    from evaluator.scoring.open_metrics import OpenAnswer

ATTEMPTS = 3  # the first ask and two reminders
MAX_NEW_TOKENS = 256
CHUNK = 16  # answers asked (and stored, in one transaction) at once
MAX_RUBRIC_BYTES = 32 * 1024
# What of an item the judge is shown, at most: a long answer is cut (and says so), so one answer cannot blow the
# judge's context or the workspace.
MAX_QUESTION_CHARS = 2000
MAX_REFERENCE_CHARS = 1000
MAX_REFERENCES = 20
MAX_ANSWER_CHARS = 4000
VALUES = {"right": 1.0, "partly": 0.5, "wrong": 0.0}

DEFAULT_RUBRIC = """Please act as an impartial judge of a vision-language model's answer to an open question about \
an image. You do not see the image: judge the answer against the reference answers, which are correct.

Give one of three verdicts:
- right: the answer says what a reference answer says. Wording, length, or extra detail that does not contradict \
the references do not matter.
- partly: the answer gets part of a reference right but misses or gets wrong another part of it, or it hedges \
between a right and a wrong answer.
- wrong: the answer contradicts the references, answers another question, refuses, or is empty.
When there are several reference answers, agreeing with any one of them is enough.

Reply in exactly this format:
[Reason] one or two sentences
[Verdict] right, partly or wrong
"""
# `--with-image`: the judge is shown the item's image(s) with the prompt. What it is told is its rubric: the default
# one's "You do not see the image" becomes a request to look, and any rubric ends with IMAGE_NOTE — so the rubric's
# sha256, and with it the judgement set's identity, differs from the same judge's blind set (whose identity stays).
IMAGE_NOTE = "[The image(s) of the question are shown with this prompt.]"
_BLIND = "You do not see the image: judge the answer against the reference answers, which are correct."
_SEEING = "Look at the image: judge the answer against it and against the reference answers, which are correct."


def with_image_rubric(rubric: str) -> str:
    """The rubric a judge shown the image is asked with (see IMAGE_NOTE)."""
    return f"{rubric.replace(_BLIND, _SEEING).rstrip()}\n\n{IMAGE_NOTE}\n"


def sees_image(rubric: str) -> bool:
    """Was a set judged with the image shown? Its stored rubric says so (with_image_rubric)."""
    return rubric.rstrip().endswith(IMAGE_NOTE)


REMINDER = "\n\nYour reply must end with a line `[Verdict] right`, `[Verdict] partly` or `[Verdict] wrong`."

_WORDS = {
    "right": "right",
    "correct": "right",
    "partly": "partly",
    "partial": "partly",
    "partially": "partly",
    "wrong": "wrong",
    "incorrect": "wrong",
}
# A verdict (reason) marker: `[Verdict]` anywhere, or `Verdict` opening a line (`**Verdict:**`, `## Verdict -`).
_MARK = re.compile(r"(?:\[\s*verdict\s*\]|^[ \t>#*_-]*verdict\b)[*_ \t]*[:：\-–—=]?", re.IGNORECASE | re.MULTILINE)
_REASON = re.compile(
    r"(?:\[\s*(?:reason|explanation)\s*\]|^[ \t>#*_-]*(?:reason|explanation)\b)[*_ \t]*[:：\-–—]?",
    re.IGNORECASE | re.MULTILINE,
)
_FIRST_WORD = re.compile(
    r"^[\s*_`\"'(\[【「]*(?:(?:the\s+)?answer\s+is\s+|it\s+is\s+)?([a-z]+)(?![a-z])[\s*_`\"')\]】」.,;:!。]*",
    re.IGNORECASE,
)


def _read_line(line: str, *, bare: bool) -> str | None:
    """The verdict a line gives: its first word (after decoration and an optional "the answer is"), when nothing
    after it on the line names another verdict; `bare`: the word must be all there is."""
    match = _FIRST_WORD.match(line)
    verdict = _WORDS.get(match.group(1).lower()) if match else None
    if match is None or verdict is None:
        return None
    rest = line[match.end() :]
    if bare and rest.strip():
        return None
    if verdict != "partly":  # "partly right" is one verdict; "right, or maybe wrong" is none
        if {_WORDS[w.lower()] for w in re.findall(r"[A-Za-z]+", rest) if w.lower() in _WORDS} - {verdict}:
            return None
    return verdict


def parse_verdict(reply: str) -> str | None:
    """right | partly | wrong, read from a judge's reply; None when it gives none it can be held to.

    After each `[Verdict]` marker (`Verdict:` or `**Verdict:**` opening a line too), the first word of the rest of
    its line — an optional "the answer is" before it —, with correct / incorrect / partial(ly) read as right /
    wrong / partly; without a marker, a reply that is nothing but one such word. Anything else is undecided: no
    marker, another word first, a verdict the rest of its line or another marker contradicts. A judge's hedge is
    never turned into a verdict."""
    text = unicodedata.normalize("NFKC", reply or "")
    marks = list(_MARK.finditer(text))
    if not marks:
        line = text.strip()
        return None if "\n" in line else _read_line(line, bare=True)
    found = {_read_line(text[m.end() :].split("\n", 1)[0].strip(), bare=False) for m in marks}
    found.discard(None)
    return found.pop() if len(found) == 1 else None


def reason_of(reply: str) -> str:
    """The judge's stated reason: the text after its `[Reason]` marker up to the next verdict marker, else the text
    before its first verdict marker; one line, bounded; "(no reason given)" when there is none."""
    text = unicodedata.normalize("NFKC", reply or "")
    reason = _REASON.search(text)
    if reason is not None:
        text = text[reason.end() :]
    verdict = _MARK.search(text)
    if verdict is not None:
        text = text[: verdict.start()]
    elif reason is None:
        text = ""  # a bare verdict word: no reason
    one = " ".join(text.split())
    if not one:
        return "(no reason given)"
    return one if len(one) <= store.REASON_MAX else one[: store.REASON_MAX - 1] + "…"


def _bounded(text: str, limit: int) -> str:
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]} […cut: {len(text) - limit:,} more characters]"


def judge_prompt(rubric: str, item: catalog.Item, answer: str, *, reminder: bool = False) -> str:
    """The rubric, then the item in fixed sections: question, reference answers (one a line), the model's answer."""
    references = item.references[:MAX_REFERENCES]
    more = len(item.references) - len(references)
    lines = [rubric.rstrip(), "", "[Question]", _bounded(item.question, MAX_QUESTION_CHARS), "", "[Reference answers]"]
    lines += [f"- {_bounded(r, MAX_REFERENCE_CHARS)}" for r in references]
    if more:
        lines.append(f"(and {more} more)")
    lines += ["", "[Model's answer]", _bounded(answer, MAX_ANSWER_CHARS) or "(empty)"]
    return "\n".join(lines) + (REMINDER if reminder else "")


def read_rubric(path: str | Path) -> str:
    """A rubric file's text: a regular file (never a FIFO or device) of at most MAX_RUBRIC_BYTES, UTF-8, not blank."""
    from evaluator.formats.importers.common import Refused, open_regular

    try:
        with open_regular(Path(path), MAX_RUBRIC_BYTES, "size limit of a rubric") as f:
            raw = f.read(MAX_RUBRIC_BYTES + 1)
    except Refused as exc:
        raise InvalidInput(f"{path}: rubric: {str(exc).removeprefix(f'{path} ').removeprefix(f'{path}: ')}") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: rubric: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_RUBRIC_BYTES:
        raise InvalidInput(f"{path}: rubric: more than {MAX_RUBRIC_BYTES // 1024} KiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: rubric: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise InvalidInput(f"{path}: rubric: the file is empty")
    if "\x00" in text:
        raise InvalidInput(f"{path}: rubric: holds a NUL character (not a text file)")
    return text


def item_images(ws: Workspace, item: catalog.Item) -> tuple[bytes, ...]:
    """An item's images in order, for a judge shown them; a lone image missing from the workspace is left out (asked
    without it, as a run asks), one of several missing is InvalidInput (the others would shift)."""
    out = []
    for n, sha in enumerate(item.images, start=1):
        found = catalog.image_bytes(ws, sha)
        if found is None:
            if len(item.images) == 1:
                return ()
            raise InvalidInput(f"item {str(item.index)[:40]}: image {n} ({sha[:12]}…) is not in the workspace")
        out.append(found[0])
    return tuple(out)


@dataclass(frozen=True)
class OpenJudgeScore:
    """A run's judge score under one judge and rubric: the mean of item scores (None when no item has a verdict);
    answers judged per verdict (undecided: none readable), answers still to judge, items with no reference answer
    (never asked), and judge calls made now."""

    run_id: int
    judge: str
    rubric_sha256: str
    score: float | None
    items_scored: int
    answers: int
    verdicts: dict[str, int]
    left: int
    no_reference: int
    calls: int = 0
    item_scores: dict[int, float] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "judge": self.judge,
            "rubric_sha256": self.rubric_sha256,
            "score": self.score,
            "items_scored": self.items_scored,
            "answers": self.answers,
            "verdicts": self.verdicts,
            "left": self.left,
            "no_reference": self.no_reference,
            "calls": self.calls,
        }


def _open_run(ws: Workspace, run_id: int) -> runs.Run:
    run = runs.get_run(ws, run_id)
    if run is None:
        raise NotFound(f"no run {run_id} in {ws.path}")
    if run.strategy != "open":
        raise InvalidInput(f"run {run_id} is a {run.strategy} run: the judge reads answers to open questions")
    return run


def _answers(ws: Workspace, run: runs.Run) -> tuple[dict[int, catalog.Item], list[runs.Prediction], int]:
    """The run's items by id, the passes a judge reads (answers to items with references), and how many answered
    items have no reference (nothing to judge against)."""
    items = {i.id: i for i in catalog.list_items(ws, run.benchmark_id)}
    passes, no_reference = [], set()
    for p in runs.predictions_of(ws, run.id):
        item = items.get(p.item_id)
        if item is None:
            continue
        if item.references:
            passes.append(p)
        else:
            no_reference.add(p.item_id)
    return items, passes, len(no_reference)


def item_scores(ws: Workspace, run_id: int, judge: str, rubric_sha256: str) -> dict[int, float]:
    """item id -> the mean verdict value (right 1, partly 0.5, wrong 0) over its judged passes; items with no
    verdict (undecided or not judged) are absent."""
    per_item: dict[int, list[float]] = {}
    for j in store.judgements_of(ws, run_id, judge, rubric_sha256):
        if j.verdict is not None:
            per_item.setdefault(j.item_id, []).append(VALUES[j.verdict])
    return {i: sum(v) / len(v) for i, v in per_item.items()}


def judge_scores(ws: Workspace, run_id: int, answers: Sequence[OpenAnswer]) -> dict[int, float]:
    """The open metric `judge` (evaluator/open_metrics): the item scores of the run's judgement set stored last
    (judge_set says which), for the items among `answers`; {} when the run was never judged."""
    sets = store.judgement_sets(ws, run_id)
    if not sets:
        return {}
    wanted = {a.item_id for a in answers}
    scores = item_scores(ws, run_id, sets[0].judge, sets[0].rubric_sha256)
    return {i: s for i, s in scores.items() if i in wanted}


def judge_set(ws: Workspace, run_id: int) -> dict[str, Any] | None:
    """Which judgement set the metric `judge` reads (the one stored last), its verdict counts, and the run's other
    sets; None when the run was never judged."""
    sets = store.judgement_sets(ws, run_id)
    if not sets:
        return None

    def described(s: store.JudgementSet) -> dict[str, Any]:
        counts = {**{v: s.counts.get(v, 0) for v in store.VERDICTS}, "undecided": s.counts.get(None, 0)}
        return {"judge": s.judge, "rubric_sha256": s.rubric_sha256, "verdicts": counts}

    return {**described(sets[0]), "other_sets": [described(s) for s in sets[1:]]}


def open_judge_score(ws: Workspace, run_id: int, judge: str, rubric_sha256: str, *, calls: int = 0) -> OpenJudgeScore:
    """What is stored of a run under (judge spec identity, rubric sha256), summed up; nothing is asked."""
    run = _open_run(ws, run_id)
    _, passes, no_reference = _answers(ws, run)
    stored = {(j.item_id, j.pass_): j for j in store.judgements_of(ws, run_id, judge, rubric_sha256)}
    counts = Counter(stored[(p.item_id, p.pass_)].verdict for p in passes if (p.item_id, p.pass_) in stored)
    scores = item_scores(ws, run_id, judge, rubric_sha256)
    return OpenJudgeScore(
        run_id,
        judge,
        rubric_sha256,
        sum(scores.values()) / len(scores) if scores else None,
        len(scores),
        len(passes),
        {**{v: counts.get(v, 0) for v in store.VERDICTS}, "undecided": counts.get(None, 0)},
        sum(1 for p in passes if (p.item_id, p.pass_) not in stored),
        no_reference,
        calls,
        scores,
    )


def judge_open_run(
    ws: Workspace,
    run_id: int,
    judge: str,
    *,
    rubric: str = DEFAULT_RUBRIC,
    backend: Backend | None = None,
    attempts: int = ATTEMPTS,
    max_new_tokens: int = MAX_NEW_TOKENS,
    limit: int | None = None,
    with_image: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> OpenJudgeScore:
    """Ask `judge` (a checked model spec; `backend` when already built) about every answer of the open run not yet
    judged under this judge's identity and `rubric` (the first `limit` of them), storing verdicts chunk by chunk
    (with the rubric's text), and return the run's score. `with_image`: the judge is shown each item's image(s)
    and asked under with_image_rubric(rubric), another judgement set. `on_progress(done, todo)` after each stored
    chunk. A KeyboardInterrupt (SIGTERM in the command) or a BackendError between chunks keeps every chunk stored
    before."""
    if attempts < 1:
        raise InvalidInput("attempts must be at least 1")
    if not rubric.strip():
        raise InvalidInput("the rubric is empty")
    run = _open_run(ws, run_id)
    identity = run_identity(judge)
    if with_image:
        rubric = with_image_rubric(rubric)
    sha = store.rubric_sha256(rubric)
    items, passes, _ = _answers(ws, run)
    done = {(j.item_id, j.pass_) for j in store.judgements_of(ws, run_id, identity, sha)}
    todo = [p for p in passes if (p.item_id, p.pass_) not in done]
    if limit is not None:
        todo = todo[:limit]
    calls = 0
    if todo:
        if ws.read_only:  # said before a judge is paid for answers that could not be stored
            raise ReadOnlyWorkspace(f"{ws.path}: workspace is read-only: {len(todo)} answer(s) to judge")
        if backend is None:
            from evaluator.backends import load_backend

            backend = load_backend(judge)
        for start in range(0, len(todo), CHUNK):
            chunk = todo[start : start + CHUNK]
            shown = [(items[p.item_id], p) for p in chunk]
            # with_images: an item's second image on (list_items reads the first only).
            images = (
                [item_images(ws, i) for i in catalog.with_images(ws, [i for i, _ in shown])] if with_image else None
            )
            found, asked = _ask(backend, rubric, shown, attempts, max_new_tokens, images)
            calls += asked
            rows = [store.OpenJudgement(p.run_id, p.item_id, p.pass_, identity, sha, *f) for p, f in zip(chunk, found)]
            store.store_judgements(ws, rows, rubric)
            if on_progress is not None:
                on_progress(start + len(chunk), len(todo))
    return open_judge_score(ws, run_id, identity, sha, calls=calls)


Found = tuple[str | None, str, int, str]  # verdict, reason, attempts, last raw reply


def _ask(
    backend: Backend,
    rubric: str,
    answers: Sequence[tuple[catalog.Item, runs.Prediction]],
    attempts: int,
    max_new_tokens: int,
    images: Sequence[tuple[bytes, ...]] | None = None,
) -> tuple[list[Found], int]:
    got = ask_until_read(
        backend,
        len(answers),
        lambda i, reminder: Query(
            prompt=judge_prompt(rubric, answers[i][0], answers[i][1].response, reminder=reminder),
            images=images[i] if images is not None else (),
        ),
        parse_verdict,
        attempts=attempts,
        max_new_tokens=max_new_tokens,
    )
    replies, tries, calls = got.last, got.tries, got.calls
    verdicts = {i: v for i, v in enumerate(got.read) if v is not None}
    out: list[Found] = []
    for i, raw in enumerate(replies):
        if i in verdicts:
            out.append((verdicts[i], reason_of(raw), tries[i], raw))
        else:
            last = " ".join(raw.split())
            last = last if len(last) <= 80 else last[:79] + "…"
            plural = "s" if tries[i] != 1 else ""
            out.append(
                (None, f"no readable verdict in {tries[i]} attempt{plural} (last reply {last!r})", tries[i], raw)
            )
    return out, calls
