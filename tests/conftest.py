"""Shared test setup: Qt renders offscreen, and no test touches the user's real workspace or the network hub."""
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_workspace(tmp_path, monkeypatch):
    # A test that forgets --workspace must not write into the user's data directory.
    monkeypatch.setenv("VLMDESK_WORKSPACE", str(tmp_path / "default-workspace.sqlite"))
