"""The closed vocabularies of runs and their results, written once as `Literal` types.

The tuples beside them are the same values at run time (for argparse choices, validation and loops); each is
derived from its Literal so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Literal, get_args

from db.runs import RunStatus as RunStatus  # the stored columns' values are defined with the Run row
from db.runs import Strategy as Strategy

STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
McqStrategy = Literal["circular", "vanilla"]
"""The strategies a user chooses for a multiple-choice benchmark (yes/no benchmarks are always `pope`)."""
MCQ_STRATEGIES: tuple[McqStrategy, ...] = get_args(McqStrategy)

RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)

Stage = Literal["rules", "llm", "likelihood", "none", "human"]
"""Which reader decided an extraction (`none`: undecided). A re-scoring that keeps the run's own reading stores
`run:<stage>`, so a stored stage is `Stage | str`."""
STAGES: tuple[Stage, ...] = get_args(Stage)

PopeParser = Literal["official", "strict"]
"""How a yes/no answer is read: POPE's evaluate.py exactly, or yes / no / unknown."""
POPE_PARSERS: tuple[PopeParser, ...] = get_args(PopeParser)

PopeSetting = Literal["random", "popular", "adversarial"]
"""How a POPE set's absent objects were sampled."""
POPE_SETTINGS: tuple[PopeSetting, ...] = get_args(PopeSetting)

YesNo = Literal["yes", "no"]
YesNoReading = Literal["yes", "no", "unknown"]

ProgressEventName = Literal["start", "progress", "wait", "done"]
"""The `event` of a `vlmdesk run --json-progress` line."""
