"""The extractor–human alignment study: adjudication sets, blind labels, adjudication, final labels, figures.

An adjudication set is built from one or more runs: every distinct (question, options as shown, response) where
the extractors disagree or the rules are undecided, plus a seeded random sample of the rest. What each extractor
said is stored with the set but handed to an annotator only after that annotator's label on the item is committed:
`next_for` returns question, options and response only; `reveal` refuses before a label exists.

Labels and adjudications are append-only (triggers), each with a uuid. A correction is a newer label; an undo is a
row (choice `undo`) naming the uuid of the label it withdraws. What stands per (item, annotator): annotation/
standing.py. The final label of an item: the newest standing adjudication, else the majority of the standing labels
(a tie has none).
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from annotation import agreement, standing
from annotation.names import annotator_name, record_note
from annotation.standing import ADJUDICATIONS, LABELS
from annotation.standing import UNCLEAR as UNCLEAR  # a label's "cannot tell", as the app's queues name it
from db.catalog import now_iso
from db.errors import InvalidInput, NotFound, UserError
from db.workspace import Workspace, inserted_id
from evaluator.scoring.extraction import REFUSAL, Extraction
from evaluator.scoring.llm_extraction import ExtractionInput, Extractor, RulesExtractor, response_key
from evaluator.scoring.rescoring import UNLABELLED, stored_passes

UNDECIDED = "undecided"  # how an extractor's "no choice" appears in confusion matrices
Why = Literal["undecided", "disagree", "sample"]
"""Why a response is in an adjudication set: the rules were undecided, extractors disagreed, or it was sampled."""
WHY: tuple[Why, ...] = get_args(Why)
FinalSource = Literal["adjudicated", "majority", "tie"]


class NotLabelledYet(UserError):
    """Extractor outputs are shown to an annotator only after their own label on the item is committed."""


@dataclass(frozen=True)
class AdjudicationSet:
    id: int
    name: str
    run_ids: tuple[int, ...]
    extractors: tuple[str, ...]
    sample_size: int
    seed: int
    created_at: str
    items: int
    by_why: dict[Why, int]


@dataclass(frozen=True)
class LabelTask:
    """What a labeller sees: never an extractor's output."""

    item_id: int
    set_name: str
    position: int
    question: str
    options: dict[str, str]
    response: str
    done: int  # items this annotator has labelled in the set
    total: int


@dataclass(frozen=True)
class Label:
    id: int
    item_id: int
    annotator: str
    choice: str
    seconds: float | None
    created_at: str
    uuid: str = ""
    withdraws: str | None = None  # on an undo row: the uuid of the label it withdraws


@dataclass(frozen=True)
class Adjudication:
    id: int
    item_id: int
    adjudicator: str
    choice: str
    note: str | None
    created_at: str
    uuid: str = ""
    withdraws: str | None = None  # on an undo row: the uuid of the adjudication it withdraws


_LABEL_COLUMNS = "id, item_id, annotator, choice, seconds, created_at, uuid, withdraws"
_ADJUDICATION_COLUMNS = "id, item_id, adjudicator, choice, note, created_at, uuid, withdraws"


@dataclass(frozen=True)
class FinalLabel:
    choice: str | None  # a letter, Z, "unclear"; None for a tie that awaits adjudication
    source: FinalSource


# --- building a set --------------------------------------------------------------------------------------


def build_set(
    ws: Workspace, name: str, run_ids: Sequence[int], extractors: Sequence[Extractor], *, size: int, seed: int
) -> AdjudicationSet:
    """Collect, de-duplicate, read with every extractor (rules always among them), select, store — one transaction."""
    name = name.strip()
    if not name:
        raise InvalidInput("an adjudication set needs a name")
    if ws.conn.execute("SELECT 1 FROM adjudication_sets WHERE name = ?", (name,)).fetchone():
        raise InvalidInput(f"an adjudication set named {name!r} exists already")
    if size < 0:
        raise InvalidInput("the sample size must be 0 or more")
    if not run_ids:
        raise InvalidInput("an adjudication set needs at least one run")
    readers = {e.name: e for e in [RulesExtractor(), *extractors]}
    distinct: dict[str, ExtractionInput] = {}
    sources: dict[str, list[list[int]]] = defaultdict(list)
    for run_id in dict.fromkeys(run_ids):
        for sp in stored_passes(ws, run_id):
            key = response_key(*sp.input)
            distinct.setdefault(key, sp.input)
            sources[key].append([run_id, sp.prediction.item_id, sp.prediction.pass_])
    keys = sorted(distinct)
    inputs = [distinct[k] for k in keys]
    outputs = {n: dict(zip(keys, e.extract_many(inputs))) for n, e in readers.items()}
    why: dict[str, str] = {}
    rest = []
    for k in keys:
        if outputs["rules"][k].choice is None:
            why[k] = "undecided"
        elif len({outputs[n][k].choice for n in readers}) > 1:
            why[k] = "disagree"
        else:
            rest.append(k)
    rng = random.Random(seed)
    for k in rng.sample(rest, min(size, len(rest))):
        why[k] = "sample"
    chosen = sorted(why)
    rng.shuffle(chosen)  # hard cases are not shown first: annotators must not guess why an item is there
    now = now_iso()
    with ws.db.atomic():
        set_id = inserted_id(
            ws.conn.execute(
                "INSERT INTO adjudication_sets (name, run_ids, extractors, sample_size, seed, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (name, json.dumps(list(dict.fromkeys(run_ids))), json.dumps(list(readers)), size, seed, now),
            )
        )
        for position, k in enumerate(chosen):
            question, options, response = distinct[k]
            item_id = inserted_id(
                ws.conn.execute(
                    "INSERT INTO adjudication_items (set_id, position, response_key, question, options, response, why, "
                    "sources) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        set_id,
                        position,
                        k,
                        question,
                        json.dumps(dict(sorted(options.items())), ensure_ascii=False),
                        response,
                        why[k],
                        json.dumps(sources[k]),
                    ),
                )
            )
            ws.conn.executemany(
                "INSERT INTO adjudication_outputs (item_id, extractor, choice, stage, reason) VALUES (?, ?, ?, ?, ?)",
                [(item_id, n, outputs[n][k].choice, outputs[n][k].stage, outputs[n][k].reason) for n in readers],
            )
    created = get_set(ws, name)
    if created is None:
        raise RuntimeError(f"adjudication set {name!r} was not stored")  # a bug, not the user's mistake
    return created


def get_set(ws: Workspace, name: str) -> AdjudicationSet | None:
    row = ws.conn.execute(
        "SELECT id, name, run_ids, extractors, sample_size, seed, created_at FROM adjudication_sets WHERE name = ?",
        (name,),
    ).fetchone()
    if row is None:
        return None
    whys = dict(
        ws.conn.execute(
            "SELECT why, count(*) FROM adjudication_items WHERE set_id = ? GROUP BY why", (row[0],)
        ).fetchall()
    )
    return AdjudicationSet(
        row[0],
        row[1],
        tuple(json.loads(row[2])),
        tuple(json.loads(row[3])),
        row[4],
        row[5],
        row[6],
        sum(whys.values()),
        {w: whys.get(w, 0) for w in WHY},
    )


def list_sets(ws: Workspace) -> list[AdjudicationSet]:
    found = [get_set(ws, n) for (n,) in ws.conn.execute("SELECT name FROM adjudication_sets ORDER BY id")]
    return [s for s in found if s is not None]


def _set_or_fail(ws: Workspace, name: str) -> AdjudicationSet:
    found = get_set(ws, name)
    if found is None:
        raise NotFound(f"no adjudication set named {name!r}")
    return found


# --- blind labelling -------------------------------------------------------------------------------------


# The one query behind "N left for you" and the next task, so a page and its list always agree: the set's items
# on which the annotator has no standing label.
_UNLABELLED = (
    f"FROM adjudication_items i WHERE i.set_id = ? AND NOT EXISTS (SELECT 1 FROM labels l "
    f"WHERE l.item_id = i.id AND l.annotator = ? AND {standing.live(LABELS, 'l')})"
)


def remaining_for(ws: Workspace, set_name: str, annotator: str) -> int:
    """How many items of the set are left for this annotator (no standing label of theirs)."""
    s = _set_or_fail(ws, set_name)
    return int(ws.conn.execute(f"SELECT count(*) {_UNLABELLED}", (s.id, _annotator(annotator))).fetchone()[0])


def remaining_items(ws: Workspace, set_name: str, annotator: str) -> list[int]:
    """The adjudication item ids left for this annotator, in the order they are shown (same query as the count)."""
    s = _set_or_fail(ws, set_name)
    return [
        r[0] for r in ws.conn.execute(f"SELECT i.id {_UNLABELLED} ORDER BY i.position", (s.id, _annotator(annotator)))
    ]


def next_for(ws: Workspace, set_name: str, annotator: str) -> LabelTask | None:
    """The next item of the set this annotator has not labelled (question, options, response only)."""
    s = _set_or_fail(ws, set_name)
    annotator = _annotator(annotator)
    left = remaining_for(ws, set_name, annotator)
    row = ws.conn.execute(
        f"SELECT i.id, i.position, i.question, i.options, i.response {_UNLABELLED} ORDER BY i.position LIMIT 1",
        (s.id, annotator),
    ).fetchone()
    if row is None:
        return None
    return LabelTask(row[0], s.name, row[1], row[2], json.loads(row[3]), row[4], s.items - left, s.items)


def add_label(ws: Workspace, item_id: int, annotator: str, choice: str, *, seconds: float | None = None) -> Label:
    """Commit an annotator's reading of a response: an option letter, Z (none of the options) or "unclear". Giving
    a label again (after the reveal, too) is a correction: the newest stands, both stay in the log."""
    annotator = _annotator(annotator)
    choice = _valid_choice(ws, item_id, choice)
    return _append_label(ws, item_id, annotator, choice, seconds, None)


def undo_label(ws: Workspace, item_id: int, annotator: str) -> Label | None:
    """Withdraw the annotator's standing label on the item (it is left for them again). Returns the withdrawn one."""
    annotator = _annotator(annotator)
    found = ws.conn.execute(
        standing.standing_sql(LABELS, _LABEL_COLUMNS, "t.item_id = ? AND t.annotator = ?"), (item_id, annotator)
    ).fetchone()
    if found is None:
        return None
    withdrawn = Label(*found)
    _append_label(ws, item_id, annotator, standing.WITHDRAWAL, None, withdrawn.uuid)
    return withdrawn


def _append_label(
    ws: Workspace, item_id: int, annotator: str, choice: str, seconds: float | None, withdraws: str | None
) -> Label:
    created, uid = now_iso(), standing.new_uuid()
    with ws.db.atomic():
        label_id = inserted_id(
            ws.conn.execute(
                "INSERT INTO labels (item_id, annotator, choice, seconds, created_at, uuid, withdraws) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (item_id, annotator, choice, seconds, created, uid, withdraws),
            )
        )
    return Label(label_id, item_id, annotator, choice, seconds, created, uid, withdraws)


def label_history(ws: Workspace, item_id: int) -> list[Label]:
    """Every label and undo on an adjudication item, in time order."""
    return [
        Label(*r)
        for r in ws.conn.execute(
            f"SELECT {_LABEL_COLUMNS} FROM labels WHERE item_id = ? ORDER BY {standing.ORDER}", (item_id,)
        )
    ]


def has_standing_label(ws: Workspace, item_id: int, annotator: str) -> bool:
    return (
        ws.conn.execute(
            f"SELECT 1 FROM labels l WHERE l.item_id = ? AND l.annotator = ? AND {standing.live(LABELS, 'l')}",
            (item_id, annotator),
        ).fetchone()
        is not None
    )


def reveal(ws: Workspace, item_id: int, annotator: str) -> dict[str, Extraction]:
    """What the extractors said about an item — only to an annotator whose label on it stands."""
    annotator = _annotator(annotator)
    if not has_standing_label(ws, item_id, annotator):
        raise NotLabelledYet(
            f"{annotator} has not labelled item {item_id}; extractor outputs are shown only after "
            "the label is committed"
        )
    return _outputs(ws, item_id)


@dataclass(frozen=True)
class ItemTexts:
    """What an adjudication item asks about: the question, the options as shown and the response."""

    question: str
    options: dict[str, str]
    response: str


def item_texts(ws: Workspace, item_id: int) -> ItemTexts:
    row = ws.conn.execute(
        "SELECT question, options, response FROM adjudication_items WHERE id = ?", (item_id,)
    ).fetchone()
    if row is None:
        raise NotFound(f"no adjudication item {item_id}")
    return ItemTexts(row[0], json.loads(row[1]), row[2])


def _outputs(ws: Workspace, item_id: int) -> dict[str, Extraction]:
    rows = ws.conn.execute(
        "SELECT extractor, choice, stage, reason FROM adjudication_outputs WHERE item_id = ? ORDER BY rowid", (item_id,)
    )
    return {r[0]: Extraction(r[1], r[2], r[3]) for r in rows}


def _annotator(name: str) -> str:
    return annotator_name(name)  # raises BadName, an InvalidInput


def _valid_choice(ws: Workspace, item_id: int, choice: str) -> str:
    row = ws.conn.execute("SELECT options FROM adjudication_items WHERE id = ?", (item_id,)).fetchone()
    if row is None:
        raise NotFound(f"no adjudication item {item_id}")
    options = json.loads(row[0])
    text = (choice or "").strip()
    if text.lower() == UNCLEAR:
        return UNCLEAR
    if text.upper() in options or text.upper() == REFUSAL:
        return text.upper()
    raise InvalidInput(f"{choice!r} is not a label: one of {', '.join(options)}, Z (none of them) or unclear")


# --- standing labels, disagreements, adjudication, final labels -----------------------------------------


_IN_SET = "t.item_id IN (SELECT id FROM adjudication_items WHERE set_id = ?)"


def latest_label_item(ws: Workspace, set_name: str, annotator: str) -> int | None:
    """The item of the annotator's newest standing label in the set (what Ctrl+Z takes back in a new session)."""
    s = _set_or_fail(ws, set_name)
    rows = ws.conn.execute(
        standing.standing_sql(LABELS, "item_id", f"{_IN_SET} AND t.annotator = ?"), (s.id, _annotator(annotator))
    ).fetchall()
    return int(rows[-1][0]) if rows else None


def standing_labels(ws: Workspace, set_name: str) -> dict[int, dict[str, str]]:
    """Per item of the set: annotator → their standing label."""
    s = _set_or_fail(ws, set_name)
    out: dict[int, dict[str, str]] = defaultdict(dict)
    for item_id, annotator, choice in ws.conn.execute(
        standing.standing_sql(LABELS, "item_id, annotator, choice", _IN_SET), (s.id,)
    ):
        out[item_id][annotator] = choice
    return dict(out)


def _adjudicated(ws: Workspace, set_id: int) -> dict[int, str]:
    """Per item: the newest standing adjudication, whoever gave it."""
    rows = ws.conn.execute(standing.standing_sql(ADJUDICATIONS, "item_id, choice", _IN_SET), (set_id,))
    return dict(rows.fetchall())  # in time order: the newest wins


@dataclass(frozen=True)
class Disagreement:
    item_id: int
    position: int
    labels: dict[str, str]  # annotator -> standing label
    adjudicated: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def disagreements(ws: Workspace, set_name: str) -> list[Disagreement]:
    """Items whose annotators' standing labels differ (adjudicated or not)."""
    s = _set_or_fail(ws, set_name)
    adjudicated = _adjudicated(ws, s.id)
    positions = dict(
        ws.conn.execute("SELECT id, position FROM adjudication_items WHERE set_id = ?", (s.id,)).fetchall()
    )
    return [
        Disagreement(item, positions[item], labels, adjudicated.get(item))
        for item, labels in sorted(standing_labels(ws, set_name).items(), key=lambda kv: positions[kv[0]])
        if len(set(labels.values())) > 1
    ]


def adjudicate(ws: Workspace, item_id: int, adjudicator: str, choice: str, *, note: str | None = None) -> Adjudication:
    """Record the final label of an item (a newer adjudication, by anyone, supersedes an older one)."""
    adjudicator = _annotator(adjudicator)
    choice = _valid_choice(ws, item_id, choice)
    return _append_adjudication(ws, item_id, adjudicator, choice, record_note(note), None)


def undo_adjudication(ws: Workspace, item_id: int, adjudicator: str) -> Adjudication | None:
    """Withdraw this adjudicator's standing adjudication of the item. Returns the withdrawn one."""
    adjudicator = _annotator(adjudicator)
    found = ws.conn.execute(
        standing.standing_sql(ADJUDICATIONS, _ADJUDICATION_COLUMNS, "t.item_id = ? AND t.adjudicator = ?"),
        (item_id, adjudicator),
    ).fetchone()
    if found is None:
        return None
    withdrawn = Adjudication(*found)
    _append_adjudication(ws, item_id, adjudicator, standing.WITHDRAWAL, None, withdrawn.uuid)
    return withdrawn


def _append_adjudication(
    ws: Workspace, item_id: int, adjudicator: str, choice: str, note: str | None, withdraws: str | None
) -> Adjudication:
    created, uid = now_iso(), standing.new_uuid()
    with ws.db.atomic():
        row_id = inserted_id(
            ws.conn.execute(
                "INSERT INTO adjudications (item_id, adjudicator, choice, note, created_at, uuid, withdraws) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (item_id, adjudicator, choice, note, created, uid, withdraws),
            )
        )
    return Adjudication(row_id, item_id, adjudicator, choice, note, created, uid, withdraws)


def adjudication_history(ws: Workspace, item_id: int) -> list[Adjudication]:
    """Every adjudication and undo of an item, in time order."""
    return [
        Adjudication(*r)
        for r in ws.conn.execute(
            f"SELECT {_ADJUDICATION_COLUMNS} FROM adjudications WHERE item_id = ? ORDER BY {standing.ORDER}", (item_id,)
        )
    ]


def final_labels(ws: Workspace, set_name: str) -> dict[int, FinalLabel]:
    """Per labelled (or adjudicated) item: the adjudicated label, else the majority of standing labels."""
    s = _set_or_fail(ws, set_name)
    adjudicated = _adjudicated(ws, s.id)
    out: dict[int, FinalLabel] = {item: FinalLabel(choice, "adjudicated") for item, choice in adjudicated.items()}
    for item, labels in standing_labels(ws, set_name).items():
        if item in out:
            continue
        (top, n), *others = Counter(labels.values()).most_common()
        out[item] = FinalLabel(None, "tie") if others and others[0][1] == n else FinalLabel(top, "majority")
    return out


def final_labels_by_response(ws: Workspace) -> dict[str, str]:
    """response_key → final human label over every set (a later set's decided label wins over an earlier one's)."""
    out: dict[str, str] = {}
    for s in list_sets(ws):
        keys = dict(
            ws.conn.execute("SELECT id, response_key FROM adjudication_items WHERE set_id = ?", (s.id,)).fetchall()
        )
        for item, final in final_labels(ws, s.name).items():
            if final.choice is not None:
                out[keys[item]] = final.choice
    return out


class HumanLabels:
    """Re-scoring by people: the final label where a response has one; stage ``unlabelled`` elsewhere."""

    name = "human"

    def __init__(self, ws: Workspace):
        self.labels = final_labels_by_response(ws)

    def extract_many(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        out = []
        for question, options, response in inputs:
            label = self.labels.get(response_key(question, options, response))
            if label is None:
                out.append(Extraction(None, UNLABELLED, "no final human label"))
            elif label == UNCLEAR:
                out.append(Extraction(None, "human", "people could not tell which option"))
            else:
                out.append(Extraction(label, "human", "final human label"))
        return out


# --- figures ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    """How many of n readings agreed with the final human label, with the 95 % Wilson interval (None when n = 0)."""

    n: int
    agreed: int
    rate: float | None
    wilson_95: tuple[float, float] | None

    @classmethod
    def of(cls, agreed: int, n: int) -> Rate:
        return cls(n, agreed, agreed / n if n else None, agreement.wilson_interval(agreed, n))

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "agreed": self.agreed,
            "rate": self.rate,
            "wilson_95": list(self.wilson_95) if self.wilson_95 else None,
        }


@dataclass(frozen=True)
class ExtractorAlignment:
    """One extractor against the final human labels: its rate, Cohen's κ, confusion matrix and rate per why."""

    overall: Rate
    cohen_kappa: float | None
    confusion: agreement.Confusion
    by_why: dict[Why, Rate]

    def to_json(self) -> dict[str, Any]:
        return {
            **self.overall.to_json(),
            "cohen_kappa": self.cohen_kappa,
            "confusion": self.confusion.to_json(),
            "by_why": {why: rate.to_json() for why, rate in self.by_why.items()},
        }


@dataclass(frozen=True)
class FinalCounts:
    """The set's final labels: decided (a letter or Z), unclear, ties awaiting adjudication, adjudicated."""

    decided: int
    unclear: int
    ties: int
    adjudicated: int


@dataclass(frozen=True)
class InterAnnotator:
    annotators: tuple[str, ...]
    items_with_two_or_more: int
    percent_agreement: float | None
    cohen_kappa: float | None  # only with exactly two annotators
    krippendorff_alpha: float | None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "annotators": list(self.annotators)}


@dataclass(frozen=True)
class AlignmentReport:
    """`vlmdesk align report` for one set; `to_json()` is its `--json` object (keys in this order)."""

    set_name: str
    runs: tuple[int, ...]
    seed: int
    sample_size: int
    items: int
    by_why: dict[Why, int]
    labelled: int
    progress: dict[str, int]  # annotator -> items with their standing label
    final: FinalCounts
    extractors: dict[str, ExtractorAlignment]
    inter_annotator: InterAnnotator
    disagreements: tuple[Disagreement, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "set": self.set_name,
            "runs": list(self.runs),
            "seed": self.seed,
            "sample_size": self.sample_size,
            "items": self.items,
            "by_why": self.by_why,
            "labelled": self.labelled,
            "progress": self.progress,
            "final": asdict(self.final),
            "extractors": {n: e.to_json() for n, e in self.extractors.items()},
            "inter_annotator": self.inter_annotator.to_json(),
            "disagreements": [d.to_json() for d in self.disagreements],
        }


def alignment_report(ws: Workspace, set_name: str) -> AlignmentReport:
    """Per extractor: alignment with the final human labels (Wilson 95 %), Cohen's κ, confusion matrix; then
    inter-annotator agreement, the open disagreements and progress. Items whose final label is "unclear" or a tie
    are left out of the extractor figures (counted)."""
    s = _set_or_fail(ws, set_name)
    items = {r[0]: r[1] for r in ws.conn.execute("SELECT id, why FROM adjudication_items WHERE set_id = ?", (s.id,))}
    finals = final_labels(ws, set_name)
    readable = {i: f.choice for i, f in finals.items() if f.choice not in (None, UNCLEAR)}
    extractors = {}
    outputs = {i: _outputs(ws, i) for i in readable}
    for name in s.extractors:
        human = [readable[i] for i in sorted(readable)]
        said = [outputs[i][name].choice or UNDECIDED for i in sorted(readable)]
        by_why = {}
        for why in WHY:
            pairs = [(readable[i], outputs[i][name].choice or UNDECIDED) for i in sorted(readable) if items[i] == why]
            by_why[why] = Rate.of(sum(h == e for h, e in pairs), len(pairs))
        extractors[name] = ExtractorAlignment(
            Rate.of(sum(h == e for h, e in zip(human, said)), len(human)),
            agreement.cohen_kappa(human, said),
            agreement.confusion(human, said),
            by_why,
        )
    standing = standing_labels(ws, set_name)
    annotators = sorted({a for labels in standing.values() for a in labels})
    multi = [labels for labels in standing.values() if len(labels) >= 2]
    pair_kappa = None
    if len(annotators) == 2:
        both = [labels for labels in multi if set(labels) == set(annotators)]
        pair_kappa = agreement.cohen_kappa([b[annotators[0]] for b in both], [b[annotators[1]] for b in both])
    inter = InterAnnotator(
        tuple(annotators),
        len(multi),
        (sum(len(set(labels.values())) == 1 for labels in multi) / len(multi)) if multi else None,
        pair_kappa,
        agreement.krippendorff_alpha(list(standing.values())),
    )
    return AlignmentReport(
        s.name,
        s.run_ids,
        s.seed,
        s.sample_size,
        s.items,
        s.by_why,
        len(standing),
        {a: sum(a in labels for labels in standing.values()) for a in annotators},
        FinalCounts(
            len(readable),
            sum(f.choice == UNCLEAR for f in finals.values()),
            sum(f.source == "tie" for f in finals.values()),
            sum(f.source == "adjudicated" for f in finals.values()),
        ),
        extractors,
        inter,
        tuple(disagreements(ws, set_name)),
    )
