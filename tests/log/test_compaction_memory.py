"""Compaction streams: compacting a log of a million entries stays within a fixed memory bound."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # minutes (about 15 s on the 2-core machine): `make check` leaves it out

ENTRIES = 1_000_000
RSS_BOUND_MB = 160

SCRIPT = textwrap.dedent("""
    import json, sys
    from checkpointfs import RenameBasedManager
    from checkpointfs.log import FileStreamSinkLog, SinkFileStatus

    root, entries = sys.argv[1], int(sys.argv[2])
    log = FileStreamSinkLog(RenameBasedManager(), root + "/_spark_metadata", compact_interval=2, deletion=False)
    def statuses(n):
        for i in range(n):
            yield SinkFileStatus(f"file:///out/part-{i:08d}.json", i, False, 1700000000000 + i)
    def status(field):   # this process's own figures (ru_maxrss would carry the forking parent's peak)
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
    assert log.add(0, statuses(entries))            # a plain batch, written as it is generated
    before = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:   # reset the peak (VmHWM) to the current RSS
        f.write("5")
    assert log.add(1, [SinkFileStatus("file:///out/last.json", 1)])   # the compaction reads all of batch 0
    peak = status("VmHWM")
    print(json.dumps({"before_kb": before, "peak_kb": peak}))
""")


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc to measure peak RSS")
def test_compacting_a_million_entries_keeps_memory_bounded(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), str(ENTRIES)], capture_output=True,
                            text=True, timeout=600, check=True)
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    compact = tmp_path / "_spark_metadata" / "1.compact"
    with compact.open() as f:
        assert f.readline() == "v1\n"
        lines = sum(1 for _ in f)
    assert lines == ENTRIES + 1
    assert figures["peak_kb"] / 1024 < RSS_BOUND_MB, figures
    # materializing a million entries would take several hundred MB; streaming adds next to nothing
    assert (figures["peak_kb"] - figures["before_kb"]) / 1024 < 32, figures
