"""The ``checkpointfs`` command line answers the same way in every subcommand: arguments checked before any store is
touched, exit 0 / 1 / 2 / 130 / 141, a readable --help, a quiet exit on a closed pipe, advice that works."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import cli as command_line

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "spark-4.3" / "stateful"


def test_top_level_help_reads_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        command_line.main(["--help"])
    assert stopped.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text and "Exit status: 0 fine, 1 found problems, 2 could not run" in text
    for command in ("s3-server", "ls-committed", "inspect", "verify", "doctor", "repair"):
        assert command in text


@pytest.mark.parametrize("value", ["0", "1", "-3", "many"])
def test_doctor_refuses_fewer_than_two_writers_before_touching_the_store(
        value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:  # argparse's refusal: no store was opened (none is reachable here)
        command_line.main(["doctor", "s3://no-such-bucket-anywhere/x", "--endpoint-url", "http://127.0.0.1:9",
                           "--writers", value])
    assert stopped.value.code == 2
    assert "argument --writers: must be" in capsys.readouterr().err


def test_a_missing_fault_file_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert command_line.main(["s3-server", "--faults", "no-such-faults.json"]) == 2
    err = capsys.readouterr().err
    assert "fault spec file no-such-faults.json does not exist" in err and "throttling" in err


def test_s3_server_without_the_test_extra_names_what_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "moto", None)  # import moto now raises ImportError, as without the extra
    assert command_line.main(["s3-server"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "'moto[server]>=" in err and "pip install" in err  # the extra's own requirements, installable anywhere


def test_interrupted_exits_130_with_one_line(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from checkpointfs.tools import commands

    def interrupted(args: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "inspect_checkpoint", lambda *a, **k: interrupted(a))
    assert command_line.main(["inspect", str(FIXTURE / "checkpoint")]) == 130
    assert capsys.readouterr().err == "checkpointfs inspect: interrupted\n"


@pytest.mark.parametrize("options", [[], ["--plain"], ["--json"]])
def test_a_closed_pipe_exits_quietly(options: list[str]) -> None:
    """``checkpointfs inspect ... | head``: the reader is gone before the output is written: exit 141, nothing on
    stderr (rich's console would exit 1, which reads as "problems found")."""
    child = subprocess.Popen([sys.executable, "-m", "checkpointfs.cli", "inspect", str(FIXTURE / "checkpoint"),
                              *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read()
    assert child.wait(timeout=120) == 141
    assert err == b""

