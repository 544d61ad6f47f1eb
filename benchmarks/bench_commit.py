"""Commit benchmark: requests per checkpoint-file commit and commits per second on the embedded S3, for
DirectWriteManager, the rename baseline (PUT temp, COPY, DELETE) and a raw put_object loop (the floor).

The three run interleaved in rounds, their order rotating every round, in one process, so each ratio compares
figures taken side by side on the same (noisy, shared) machine. Requests are counted at the server."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.baselines import raw_put, rename_commit
from benchmarks.rotation import rotated
from checkpointfs import DirectWriteManager
from checkpointfs.testing import EmbeddedS3
from harness.demo import checkpoint_file

RESULTS = Path(__file__).parent / "results"
BUCKET = "checkpoints"


def run(commits: int, rounds: int) -> dict[str, Any]:
    """Measure; returns the results document."""
    with EmbeddedS3([BUCKET]) as s3:
        direct = DirectWriteManager(**s3.manager_options())
        client = s3.client()

        def direct_commit(key: str, data: bytes) -> None:
            with direct.create_atomic(s3.uri(key)) as out:
                out.write(data)

        contenders: dict[str, Callable[[str, bytes], None]] = {
            "direct_write": direct_commit,
            "rename_baseline": lambda key, data: rename_commit(client, BUCKET, key, data),
            "raw_put_floor": lambda key, data: raw_put(client, BUCKET, key, data),
        }
        rates: dict[str, list[float]] = {name: [] for name in contenders}
        requests: dict[str, dict[str, int]] = {name: {} for name in contenders}
        for r in range(rounds):
            for name in rotated(list(contenders), r):
                commit = contenders[name]
                s3.requests.clear()
                start = time.perf_counter()
                for batch in range(commits):
                    commit(f"{name}/{r}/offsets/{batch}", checkpoint_file(batch))
                rates[name].append(commits / (time.perf_counter() - start))
                for op, n in s3.requests.counts().items():
                    requests[name][op] = requests[name].get(op, 0) + n
    total = commits * rounds
    out: dict[str, Any] = {"commits_per_round": commits, "rounds": rounds, "file_bytes": len(checkpoint_file(0)),
                           "store": "embedded S3 (moto) on 127.0.0.1, no latency model", "results": {}}
    for name in contenders:
        per_commit = {op: n / total for op, n in sorted(requests[name].items())}
        out["results"][name] = {
            "requests_per_commit": sum(per_commit.values()),
            "requests_per_commit_by_operation": per_commit,
            "commits_per_second_median": statistics.median(rates[name]),
            "commits_per_second_rounds": rates[name],
        }
    res = out["results"]
    for name in contenders:
        res[name]["requests_ratio_to_floor"] = res[name]["requests_per_commit"] / res["raw_put_floor"][
            "requests_per_commit"]
        res[name]["rate_ratio_to_floor"] = (res[name]["commits_per_second_median"]
                                            / res["raw_put_floor"]["commits_per_second_median"])
        res[name]["rate_ratio_to_rename"] = (res[name]["commits_per_second_median"]
                                             / res["rename_baseline"]["commits_per_second_median"])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run and write benchmarks/results/commit.json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    doc = run(args.commits, args.rounds)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "commit.json").write_text(json.dumps(doc, indent=2) + "\n")
    print(f"{'contender':<16} {'req/commit':>10} {'commits/s':>10} {'x floor rate':>13} {'x rename rate':>14}")
    for name, r in doc["results"].items():
        print(f"{name:<16} {r['requests_per_commit']:>10.2f} {r['commits_per_second_median']:>10.1f} "
              f"{r['rate_ratio_to_floor']:>13.2f} {r['rate_ratio_to_rename']:>14.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
