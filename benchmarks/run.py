"""``make bench``: runs every ``benchmarks/bench_*.py`` (each has ``main(argv) -> int``) in turn; each writes its
JSON (and plots, where it makes them) under benchmarks/results/."""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path


def main() -> int:
    """Run all benchmarks (or those named on the command line, e.g. ``commit``); non-zero if any failed."""
    names = sys.argv[1:] or sorted(p.stem.removeprefix("bench_") for p in Path(__file__).parent.glob("bench_*.py"))
    failed = []
    for name in names:
        print(f"== benchmark {name}", flush=True)
        start = time.perf_counter()
        status = importlib.import_module(f"benchmarks.bench_{name}").main([])
        print(f"== {name}: {'ok' if status == 0 else 'FAILED'} in {time.perf_counter() - start:.0f} s\n", flush=True)
        if status:
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
