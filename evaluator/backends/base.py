"""The one small protocol every model backend implements."""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

from db.errors import EnvironmentFault


@dataclass(frozen=True)
class Query:
    """One prompt to a model: the text, the images (encoded bytes, e.g. JPEG/PNG), and the option letters offered.

    ``images`` is empty when the run is text-only. ``letters`` lets reference baselines answer without a model.
    """

    prompt: str
    images: tuple[bytes, ...] = ()
    letters: tuple[str, ...] = ()

    def pil_images(self):
        from PIL import Image

        out = []
        for data in self.images:
            img = Image.open(io.BytesIO(data))
            out.append(img.convert("RGB"))
        return out


@runtime_checkable
class Backend(Protocol):
    """Answers a batch of queries with texts; optionally scores candidate continuations."""

    spec: str

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> list[str]:
        """Greedy answers, one text per query, in order."""
        ...

    def describe(self) -> dict:
        """What to store with a run (no secrets): resolved settings, library versions."""
        ...


class ScoringBackend(Backend, Protocol):
    def score(self, queries: Sequence[Query], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        """Sum of token log-probabilities of each candidate continuation given its query's prompt."""
        ...


class BackendError(EnvironmentFault, RuntimeError):
    """A backend failed in a way the user should read (bad spec, unreachable server, model load error). Commands
    that can tell a bad spec from a failing model catch it and say which; elsewhere it is one line, exit 1."""
