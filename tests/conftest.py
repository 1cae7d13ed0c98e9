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
    # Nor write tracebacks of internal errors into the user's log directory.
    monkeypatch.setenv("VLMDESK_LOG_DIR", str(tmp_path / "logs"))


# Tiny random-weight models on disk, built once per session and shared by every test that loads a model.
@pytest.fixture(scope="session")
def tiny_llava_dir(tmp_path_factory):
    from tests.tiny_models import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("tiny_llava"))


@pytest.fixture(scope="session")
def tiny_idefics3_dir(tmp_path_factory):
    from tests.tiny_models import build_tiny_idefics3

    return build_tiny_idefics3(tmp_path_factory.mktemp("tiny_idefics3"))


@pytest.fixture(scope="session")
def tiny_text_lm_dir(tmp_path_factory):
    from tests.tiny_models import build_tiny_text_lm

    return build_tiny_text_lm(tmp_path_factory.mktemp("tiny_text_lm"))


@pytest.fixture
def serve():
    """serve(script, **kw) starts a scripted local HTTP server (tests/servers.py) that is closed when the test ends."""
    from tests.servers import FaultServer

    servers = []

    def start(script=None, **kw) -> FaultServer:
        servers.append(FaultServer(script, **kw))
        return servers[-1]

    yield start
    for server in servers:
        server.close()
