"""docs/spark.md's ``spark-submit`` commands, run as written on the main line: the block that names each test is read
and run by bash with this venv's ``python`` and ``spark-submit`` first on PATH; only ``my_query.py`` is swapped for
``harness/job.py --jars submitted`` (a dropDuplicates query that sets no jar and none of the shim's settings, only the
store's ``fs.s3a.*`` from the environment: the command line must bring the rest). The shim must then have written
the checkpoint, and the output must hold every id once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checkpointfs.spark import running_line
from checkpointfs.spark._jars import JARS_DIR
from harness.driver import Job, harness_only_path
from harness.job import S3_ENV
from harness.snippets import REPO, blocks_tested_by, substituted

from .conftest import Pipeline, committed_ids

pytestmark = [pytest.mark.spark]

HERE = "tests/spark_e2e/test_submit_snippets.py"
BATCHES = 3
PARTITIONS = 2
RUN_TIMEOUT_S = 600


def _run_documented(test: str, pipeline: Pipeline, tmp_path: Path, replacements: dict[str, str]) -> None:
    """Run the block whose marker names ``test`` (``my_query.py`` swapped for the job, and ``replacements``) to its
    end, then check the query's output and checkpoint."""
    for b in range(BATCHES):
        pipeline.add_input(b, [*range(b * 4, b * 4 + 4), 0])  # id 0 again in every batch
    [block] = blocks_tested_by(f"{HERE}::{test}")
    job = " ".join([str(REPO / "harness" / "job.py"), "--jars", "submitted", "--query", "dedup",
                    "--partitions", str(PARTITIONS), "--input", str(pipeline.input_dir),
                    "--output", pipeline.output, "--checkpoint", pipeline.checkpoint])
    script = substituted(block, {**replacements, "my_query.py": job})
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS")}
    env.update({S3_ENV: json.dumps(pipeline.server.hadoop_conf()), "PYSPARK_PYTHON": sys.executable,
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
                "PYTHONPATH": os.pathsep.join(filter(None, [harness_only_path(), env.get("PYTHONPATH")]))})
    log_path = tmp_path / "submit.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], stdout=log, stderr=subprocess.STDOUT,
                                   env=env, cwd=tmp_path, start_new_session=True)
    job_run = Job(process, log_path, 0)
    try:
        outcome = job_run.wait(RUN_TIMEOUT_S)
    finally:
        job_run.kill()
    assert (outcome.get("status"), outcome.get("batches")) == ("ok", BATCHES), log_path.read_text()[-4000:]
    assert committed_ids(pipeline) == list(range(BATCHES * 4))
    pipeline.assert_written_by_shim(BATCHES, PARTITIONS)


def test_spark_submit_with_configures_jars_runs_the_stateful_query(pipeline: Pipeline, tmp_path: Path) -> None:
    """``spark-submit --jars <spark_conf()'s jars> --conf ...`` (docs/spark.md, "On a cluster")."""
    _run_documented("test_spark_submit_with_configures_jars_runs_the_stateful_query", pipeline, tmp_path, {})


# make test's budget: this resolves hadoop-aws and the whole AWS SDK bundle (about 600 MB) from Maven Central into
# Ivy's cache; the test above runs the same settings with the jars configure() uses
@pytest.mark.extended(
    covered_by=f"{HERE}::test_spark_submit_with_configures_jars_runs_the_stateful_query")
def test_spark_submit_packages_of_hadoop_aws_runs_the_stateful_query(pipeline: Pipeline, tmp_path: Path) -> None:
    """``spark-submit --jars <the shim> --packages org.apache.hadoop:hadoop-aws:<the line's Hadoop>`` (docs/spark.md,
    "Jars that reach every executor"), the shim's path swapped for this build's."""
    line = running_line()
    jar = JARS_DIR / line.group.jar_name
    if not jar.is_file():
        pytest.skip(f"the shim jar {jar.name} was not built: run `make setup`")
    [block] = blocks_tested_by(f"{HERE}::test_spark_submit_packages_of_hadoop_aws_runs_the_stateful_query")
    assert f"--packages org.apache.hadoop:hadoop-aws:{line.hadoop} " in block.text, "the docs name another Hadoop"
    _run_documented("test_spark_submit_packages_of_hadoop_aws_runs_the_stateful_query", pipeline, tmp_path,
                    {f"/path/{jar.name}": str(jar)})
