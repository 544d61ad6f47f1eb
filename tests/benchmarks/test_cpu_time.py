"""CPU time against wall time per batch (benchmarks/cpu_time.py): the arithmetic over the commit-log marks, and the
CPU time of a real process tree read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from benchmarks.cpu_time import cpu_s, per_batch, process_tree


def test_per_batch_takes_the_batches_between_the_first_and_last_commit() -> None:
    marks = [(10.0, {"driver": 1.0, "cluster": 5.0}), (12.0, {"driver": 1.5, "cluster": 6.0}),
             (16.0, {"driver": 2.0, "cluster": 8.0})]
    figures = per_batch(marks)
    assert figures is not None
    assert figures["batches"] == 2
    assert figures["wall_s_per_batch"] == 3.0  # (16 - 10) / 2
    assert figures["cpu_s_per_batch"] == {"driver": 0.5, "cluster": 1.5}
    assert figures["cpu_s_per_batch_total"] == 2.0
    assert figures["cpu_over_wall"] == pytest.approx(2.0 / 3.0, abs=1e-3)
    assert per_batch(marks[:1]) is None  # batch 0's commit alone measures nothing


def test_cpu_time_of_a_busy_child_counts_and_a_sleeping_one_does_not() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                             "while time.process_time() - t < 0.5: pass\nprint('done', flush=True)\n"
                             "time.sleep(30)"], stdout=subprocess.PIPE)
    try:
        assert busy.stdout is not None and busy.stdout.readline() == b"done\n"
        assert busy.pid in process_tree([os.getpid()])
        spent = cpu_s([busy.pid])
        assert 0.4 <= spent < 5.0
        assert cpu_s([busy.pid]) - spent < 0.1  # now asleep: its CPU time stays put
    finally:
        busy.kill()
        busy.wait()
    assert cpu_s([busy.pid]) == 0.0  # a gone process counts nothing
