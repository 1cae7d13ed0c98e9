"""Saved models: a short name for a model spec, kept in the workspace (migration 0006_models).

Secrets never enter the workspace: an `openai:` spec names the environment variable that holds its key
(`key_env=NAME`); a spec that carries something that looks like a key is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from db.catalog import now_iso
from db.errors import InvalidInput
from db.workspace import Workspace

# Query options that would carry a secret, and strings that look like one (OpenAI/Anthropic/HF style tokens).
_NAME = re.compile(r"^[\w][\w .@/+-]{0,63}$")  # no ":" — that marks a spec


@dataclass(frozen=True)
class SavedModel:
    id: int
    name: str
    spec: str
    note: str | None
    created_at: str

    @property
    def kind(self) -> str:
        return self.spec.partition(":")[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "spec": self.spec,
            "kind": self.kind,
            "note": self.note,
            "created_at": self.created_at,
        }


def add_model(ws: Workspace, name: str, spec: str, *, note: str | None = None) -> SavedModel:
    """Store a named spec. The caller has checked it (evaluator.engine.model_check.validate_spec refuses keys)."""
    name, spec = name.strip(), spec.strip()
    if not _NAME.match(name):
        raise InvalidInput(f"model name {name!r}: 1-64 letters, digits, spaces or . @ / + - _ (no colon)")
    if ":" not in spec:
        raise InvalidInput(f"model spec {spec!r}: expected hf:…, openai:… or baseline:…")
    with ws.db.atomic():
        if ws.conn.execute("SELECT 1 FROM models WHERE name = ?", (name,)).fetchone():
            raise InvalidInput(f"a model named {name!r} exists already (vlmdesk models remove {name!r} first)")
        ws.conn.execute(
            "INSERT INTO models (name, spec, note, created_at) VALUES (?, ?, ?, ?)", (name, spec, note, now_iso())
        )
    saved = get_model(ws, name)
    if saved is None:
        raise RuntimeError(f"model {name!r} was not stored")  # a bug, not the user's mistake
    return saved


def get_model(ws: Workspace, name: str) -> SavedModel | None:
    row = ws.conn.execute("SELECT id, name, spec, note, created_at FROM models WHERE name = ?", (name,)).fetchone()
    return SavedModel(*row) if row else None


def list_models(ws: Workspace) -> list[SavedModel]:
    return [SavedModel(*r) for r in ws.conn.execute("SELECT id, name, spec, note, created_at FROM models ORDER BY id")]


def remove_model(ws: Workspace, name: str) -> bool:
    """Forget a saved model (its runs keep their spec). False when there was none of that name."""
    with ws.db.atomic():
        return ws.conn.execute("DELETE FROM models WHERE name = ?", (name,)).rowcount > 0


def resolve_spec(ws: Workspace, name_or_spec: str) -> str:
    """A saved model's spec by name; anything with a scheme (hf:, openai:, baseline:) is a spec already."""
    found = get_model(ws, name_or_spec)
    return found.spec if found is not None else name_or_spec
