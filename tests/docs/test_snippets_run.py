"""The README's and docs' blocks marked ``<!-- snippet: run -->``, run as written (harness/snippets.py): each in a
child process (``python -c`` or ``bash -c``) in an empty folder, this venv's ``python`` and ``checkpointfs`` first
on PATH, with the AWS variables of a shell pointing at the embedded S3 (``AWS_ENDPOINT_URL``, keys, region) and
every bucket the block names created there. The only text changed is :data:`PLACEHOLDERS`'s (a port the docs
cannot know). A ``given=NAME`` marker first runs the setup :data:`GIVEN` names. No Spark, no JVM."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from checkpointfs.spark.lines import DEFAULT_LINE
from checkpointfs.testing import EmbeddedS3
from harness.snippets import REPO, Snippet, marked

RUN_TIMEOUT_S = 120
BUCKET = re.compile(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?=/|\"|'|\s|$)")


def placeholders(s3: EmbeddedS3) -> dict[str, str]:
    """Text of the docs that stands for a value only the reader knows, and what the run puts there."""
    return {"http://127.0.0.1:PORT": s3.endpoint_url, "http://127.0.0.1:<port>": s3.endpoint_url,
            "endpoint_url=...": f"endpoint_url={s3.endpoint_url!r}"}


@dataclass(frozen=True)
class Prepared:
    """What a setup leaves for the block: Python run before it (``prelude``), or a command that runs the block
    where the setup put it (``command``; the block is then not run by itself)."""

    prelude: str = ""
    command: tuple[str, ...] = ()


def _spark_checkpoint(s3: EmbeddedS3, folder: Path, text: str) -> Prepared:
    """A stateful query's checkpoint and file sink written by the main line's Spark (tests/fixtures/), at
    ``s3://bucket/q`` and ``s3://bucket/out``, where docs/logs.md's example reads them."""
    fixture = REPO / "tests" / "fixtures" / f"spark-{DEFAULT_LINE.line}" / "stateful"
    client = s3.client(admin=True)
    for local, prefix in ((fixture / "checkpoint", "q"), (fixture / "output", "out")):
        for path in sorted(p for p in local.rglob("*") if p.is_file()):
            client.put_object(Bucket="bucket", Key=f"{prefix}/{path.relative_to(local)}", Body=path.read_bytes())
    return Prepared()


def _rows(s3: EmbeddedS3, folder: Path, text: str) -> Prepared:
    """The rows of one micro-batch that docs/logs.md's FileSink example writes (``batch_id``, ``rows``)."""
    return Prepared(prelude='batch_id = 0\nrows = [{"ts": "2024-05-01T10:00:00", "id": 1}, '
                            '{"ts": "2024-05-02T08:00:00", "id": 2}]\n')


def _conftest(s3: EmbeddedS3, folder: Path, text: str) -> Prepared:
    """The block as a user's ``conftest.py``, beside a test that takes the ``embedded_s3`` fixture and writes to it;
    run by pytest."""
    (folder / "conftest.py").write_text(text)
    (folder / "test_user.py").write_text(
        "from checkpointfs import DirectWriteManager\n\n"
        "def test_user(embedded_s3):\n"
        "    manager = DirectWriteManager(**embedded_s3.manager_options())\n"
        "    with manager.create_atomic(embedded_s3.uri('q/offsets/0')) as out:\n"
        "        out.write(b'v1')\n"
        "    with manager.open(embedded_s3.uri('q/offsets/0')) as f:\n"
        "        assert f.read() == b'v1'\n")
    return Prepared(command=(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)))


GIVEN: dict[str, Callable[[EmbeddedS3, Path, str], Prepared]] = {
    "spark-checkpoint": _spark_checkpoint, "rows": _rows, "conftest": _conftest}
"""The setups a ``run given=NAME`` marker may name."""


def _env(s3: EmbeddedS3) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "PYTHONPATH"}
    env.update({"AWS_ENDPOINT_URL": s3.endpoint_url, "AWS_ACCESS_KEY_ID": s3.access_key,
                "AWS_SECRET_ACCESS_KEY": s3.secret_key, "AWS_DEFAULT_REGION": s3.region,
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    return env


def test_there_are_blocks_to_run() -> None:
    assert marked("run"), "no block of the docs is marked run"


@pytest.mark.parametrize("snippet", marked("run"), ids=lambda s: s.id)
def test_snippet_runs(snippet: Snippet, embedded_s3: EmbeddedS3, tmp_path: Path) -> None:
    text = snippet.text
    for placeholder, value in placeholders(embedded_s3).items():
        text = text.replace(placeholder, value)
    admin = embedded_s3.client(admin=True)
    existing = {b["Name"] for b in admin.list_buckets()["Buckets"]}
    for bucket in sorted(set(BUCKET.findall(text)) - existing):
        admin.create_bucket(Bucket=bucket)
    name = snippet.argument.removeprefix("given=")
    assert not snippet.argument or name in GIVEN, f"{snippet.id}: no setup {name!r} (known: {', '.join(GIVEN)})"
    prepared = GIVEN[name](embedded_s3, tmp_path, text) if snippet.argument else Prepared()
    if prepared.command:
        command: list[str] = list(prepared.command)
    elif snippet.language in ("python", "py"):
        command = [sys.executable, "-c", prepared.prelude + text]
    else:
        command = [shutil.which("bash") or "bash", "-euo", "pipefail", "-c", text]
    done = subprocess.run(command, cwd=tmp_path, env=_env(embedded_s3), capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{snippet.id} failed ({done.returncode}):\n{text}\n{done.stdout}\n{done.stderr}"
