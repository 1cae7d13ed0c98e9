"""A key can never reach the workspace: specs that seem to hold one are refused on every path, without echoing it."""

import sqlite3

import pytest

from evaluator.backends import BackendError, load_backend
from evaluator.backends.secrets import check_no_secret
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

KEYED = [
    "openai:m@https://sk-SECRETuserinfokey123456@127.0.0.1:9/v1",
    "openai:sk-SECRETmodelnamekey123456@https://127.0.0.1:9/v1",
    "openai:m@https://gsk_SECRETtokentokentoken12@127.0.0.1:9/v1",
    "openai:m@https://user:SECRETPASSWORD@127.0.0.1:9/v1",
    "openai:m@https://127.0.0.1:9/v1#SECRETFRAG",
    "openai:m@https://127.0.0.1:9/v1?key_env=sk_live_SECRETSECRETSECRET1",
    "openai:m@https://127.0.0.1:9/v1?key_env=my_secret_value",
    "openai:m@https://127.0.0.1:9/v1?api_key=SECRETVALUE",
    "hf:org/model?token=SECRETVALUE",
]


@pytest.mark.parametrize("spec", KEYED)
def test_specs_holding_a_key_are_refused_without_echoing_it(spec):
    with pytest.raises(BackendError) as err:
        load_backend(spec)
    assert "SECRET" not in str(err.value)


@pytest.mark.parametrize(
    "spec",
    [
        "openai:gpt-4o-mini@https://api.example.test/v1?key_env=OPENAI_API_KEY",
        "hf:llava-hf/llava-1.5-7b-hf",
        "hf:/models/checkpoint-12000?dtype=bfloat16",
        "openai:Qwen/Qwen2-VL-7B@http://localhost:8000/v1?concurrency=64",
    ],
)
def test_ordinary_specs_pass(spec):
    check_no_secret(spec)


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--bench", "demo", "--model", KEYED[0]],
        ["run", "--bench", "demo", "--model", "baseline:first", "--extractor", f"rules+llm:{KEYED[1]}"],
        ["qc", "text-only", "--bench", "demo", "--model", KEYED[2]],
        ["models", "add", "mine", KEYED[5]],
    ],
)
def test_no_command_stores_or_prints_a_key(tmp_path, capsys, args):
    from db import open_workspace

    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    capsys.readouterr()
    assert main(["--workspace", str(path), *args]) == 2
    out, err = capsys.readouterr()
    assert "SECRET" not in out + err and err.startswith("error: ")
    dump = "\n".join(sqlite3.connect(path).iterdump())
    assert "SECRET" not in dump


# -- what servers say back is redacted before it is stored or printed (issue 12, item 4) -------------------------

from evaluator.backends.secrets import REDACTED, redact  # noqa: E402


def test_redact_removes_the_named_variables_value_and_anything_key_shaped(monkeypatch):
    monkeypatch.setenv("MY_KEY_VAR", "plain-looking-value-42")
    monkeypatch.setenv("OPENAI_API_KEY", "another-default-key-7")
    text = (
        "bad key plain-looking-value-42; also another-default-key-7, sk-proj-AbCdEfGhIjKlMnOpQrSt, "
        "hf_abcdefghijklmnopqrstu and Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9x"
    )
    out = redact(text, "openai:m@http://h/v1?key_env=MY_KEY_VAR")
    for secret in ("plain-looking-value-42", "another-default-key-7", "sk-proj-", "hf_abc", "eyJhbGciOi"):
        assert secret not in out
    assert out.count(REDACTED) == 5 and out.startswith("bad key [redacted]")
    assert redact("choose option B (no key here)") == "choose option B (no key here)"


@pytest.mark.parametrize("key", ["sk-live-KEYSECRET0123456789abcdef", "plainKEYSECRETvalue42"])
@pytest.mark.parametrize("status, retries", [(401, 0), (500, 1)])
def test_a_server_echoing_the_key_never_gets_it_stored_or_printed(tmp_path, key, status, retries):
    import os
    import subprocess
    import sys

    from db import open_workspace
    from tests.servers import FaultServer, Step

    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    server = FaultServer([Step(status, {"error": {"message": f"Incorrect API key provided: {key}. Bearer {key}"}})])
    try:
        spec = f"openai:m@{server.url}?key_env=VLMDESK_TEST_KEY&retries={retries}&backoff=0"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "vlmdesk",
                "--workspace",
                str(path),
                "run",
                "--bench",
                "demo",
                "--model",
                spec,
                "--limit",
                "2",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "VLMDESK_TEST_KEY": key},
        )
    finally:
        server.close()
    assert server.requests and server.requests[0]["headers"]["authorization"] == f"Bearer {key}"  # it was sent
    assert done.returncode == 1 and f"HTTP {status}" in done.stderr and REDACTED in done.stderr, done.stderr
    assert "KEYSECRET" not in done.stdout + done.stderr
    error = sqlite3.connect(path).execute("SELECT status, error FROM runs").fetchone()
    # A server that keeps failing (5xx) interrupts the run (resumable: ServersDown); a refusal (4xx) fails it.
    assert error[0] == ("interrupted" if status >= 500 else "failed") and REDACTED in error[1]
    for file in tmp_path.glob("ws.sqlite*"):  # the database, its WAL and shared-memory files
        assert b"KEYSECRET" not in file.read_bytes(), file
