"""The shim's Maven repository (``jvm-shim/maven_repo.py``, ``dist/maven/``) and ``configure(..., packages=True)``,
without Spark: every line's artifact is complete (jar, POM, sources, javadoc, checksums, metadata) and its POM names
hadoop-aws and the AWS SDK at the versions of ``checkpointfs/spark/lines.py``."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

import checkpointfs
from checkpointfs.spark import LINES, configure, shim_coordinates, spark_conf
from checkpointfs.spark._jars import JARS_DIR
from checkpointfs.spark.config import MANAGER_CLASS_KEY, PACKAGES_KEY, REPOSITORIES_KEY, SHIM_CLASS
from checkpointfs.spark.lines import HADOOP_DEPS, MAVEN_GROUP, SparkLine
from checkpointfs.spark.submit import submit_args

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "jvm-shim" / "maven_repo.py"
NS = {"m": "http://maven.apache.org/POM/4.0.0"}
SPARK_SHIPS = {("io.netty", "*"), ("org.apache.httpcomponents", "*"), ("commons-codec", "commons-codec"),
               ("commons-logging", "commons-logging"), ("org.slf4j", "*")}
"""What no artifact may drag in beside Spark's own copies (checked against real Ivy on the cluster test)."""


def load_script() -> ModuleType:
    """jvm-shim/maven_repo.py as a module (it is a build script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("checkpointfs_maven_repo", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Maven repository written from this checkout's shim jars into a temp dir."""
    missing = [g.jar_name for g in {line.group for line in LINES} if not (JARS_DIR / g.jar_name).is_file()]
    if missing:
        pytest.skip(f"the shim jars were not built ({', '.join(missing)}): run `make setup`")
    out = tmp_path_factory.mktemp("maven") / "maven"
    load_script().write_repository(out, JARS_DIR)
    return out


def artifact_dir(repository: Path, line: SparkLine) -> Path:
    return repository.joinpath(*MAVEN_GROUP.split("."), line.maven_artifact)


def checksummed(path: Path) -> bytes:
    """``path``'s bytes, after checking its .sha1 and .md5."""
    data = path.read_bytes()
    assert path.with_name(path.name + ".sha1").read_text() == hashlib.sha1(data).hexdigest(), path
    assert path.with_name(path.name + ".md5").read_text() == hashlib.md5(data).hexdigest(), path
    return data


def text(node: ET.Element, path: str) -> str:
    value = node.findtext(path, namespaces=NS)
    assert value, f"{path} missing"
    return value


def test_version_is_pyprojects() -> None:
    """The artifacts' version is pyproject's, the package's, and the one jvm-shim/pom.xml stamps in each jar's
    manifest (``Implementation-Version``)."""
    assert load_script().project_version() == checkpointfs.__version__
    pom = ET.parse(REPO / "jvm-shim" / "pom.xml").getroot()
    assert pom.findtext("m:version", namespaces=NS) == checkpointfs.__version__


@pytest.mark.parametrize("line", LINES, ids=lambda line: line.line)
def test_every_line_has_a_complete_artifact(repository: Path, line: SparkLine) -> None:
    version = checkpointfs.__version__
    folder = artifact_dir(repository, line)
    base = folder / version / f"{line.maven_artifact}-{version}"
    jar = checksummed(base.with_name(base.name + ".jar"))
    assert jar == (JARS_DIR / line.group.jar_name).read_bytes()  # the group's shim jar, as built
    with zipfile.ZipFile(base.with_name(base.name + "-sources.jar")) as sources:
        names = set(sources.namelist())
    checksummed(base.with_name(base.name + "-sources.jar"))
    assert "io/checkpointfs/spark/DirectWriteCheckpointFileManager.scala" in names  # src/main/scala
    assert "io/checkpointfs/spark/compat/package.scala" in names  # src/<group>/scala
    assert ("io/checkpointfs/spark/store/s3/SdkV2Uploader.scala" in names) == (not line.sdk_v1)  # src/sdkv2/scala
    with zipfile.ZipFile(base.with_name(base.name + "-javadoc.jar")) as javadoc:
        assert "docs/spark.md" in javadoc.read("README.md").decode()
    checksummed(base.with_name(base.name + "-javadoc.jar"))
    metadata = ET.fromstring(checksummed(folder / "maven-metadata.xml"))
    assert metadata.findtext("artifactId") == line.maven_artifact
    assert metadata.findtext("versioning/release") == version
    assert [v.text for v in metadata.iter("version")] == [version]


@pytest.mark.parametrize("line", LINES, ids=lambda line: line.line)
def test_pom_names_the_lines_hadoop_aws_and_sdk(repository: Path, line: SparkLine) -> None:
    version = checkpointfs.__version__
    pom = ET.fromstring(checksummed(artifact_dir(repository, line) / version /
                                    f"{line.maven_artifact}-{version}.pom"))
    assert (text(pom, "m:groupId"), text(pom, "m:artifactId"), text(pom, "m:version")) == (
        MAVEN_GROUP, line.maven_artifact, version)
    assert f"{MAVEN_GROUP}:{line.maven_artifact}:{version}" == shim_coordinates(line)
    # What Maven Central requires of a POM.
    for required in ("m:name", "m:description", "m:url", "m:developers/m:developer/m:name", "m:scm/m:url",
                     "m:scm/m:connection"):
        text(pom, required)
    assert text(pom, "m:licenses/m:license/m:name") == "Apache-2.0"

    sdk = HADOOP_DEPS[line.hadoop].aws_sdk
    expected = {("org.apache.hadoop", "hadoop-aws"): line.hadoop}
    if line.sdk_v1:
        expected[("com.amazonaws", "aws-java-sdk-bundle")] = sdk
    else:
        expected.update({("software.amazon.awssdk", m): sdk for m in ("s3", "s3-transfer-manager", "sts")})
    found = {}
    for dep in pom.findall("m:dependencies/m:dependency", NS):
        key = (text(dep, "m:groupId"), text(dep, "m:artifactId"))
        found[key] = text(dep, "m:version")
        assert dep.findtext("m:scope", namespaces=NS) in (None, "compile"), key  # nothing provided or optional
        exclusions = {(text(e, "m:groupId"), text(e, "m:artifactId")) for e in dep.findall("m:exclusions/*", NS)}
        assert SPARK_SHIPS <= exclusions, key
        if key == ("org.apache.hadoop", "hadoop-aws") and not line.sdk_v1:
            assert ("software.amazon.awssdk", "bundle") in exclusions  # the 500 MB bundle
    assert found == expected
    # configure()'s own table (what it fetches without local jars) names the same hadoop-aws (and SDK v1 bundle).
    for coordinates in HADOOP_DEPS[line.hadoop].packages:
        group, artifact, dep_version = coordinates.split(":")
        assert found[(group, artifact)] == dep_version


def test_sources_jar_is_reproducible(repository: Path) -> None:
    script = load_script()
    assert script.sources_jar("spark41") == script.sources_jar("spark41")


def test_packages_mode_names_the_lines_coordinates_and_no_jars() -> None:
    conf = spark_conf({"region": "eu-west-1"}, line="4.1", packages=True,
                      repositories=["file:///srv/maven", "https://repo.example/maven"])
    assert conf[PACKAGES_KEY] == f"io.checkpointfs:checkpointfs-spark-4.1_2.13:{checkpointfs.__version__}"
    assert conf[REPOSITORIES_KEY] == "file:///srv/maven,https://repo.example/maven"
    assert "spark.jars" not in conf
    assert conf[MANAGER_CLASS_KEY] == SHIM_CLASS
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert REPOSITORIES_KEY not in spark_conf(line="3.5", packages=True)
    assert spark_conf(line="3.5", packages=True)[PACKAGES_KEY].split(":")[1] == "checkpointfs-spark-3.5_2.12"
    assert submit_args(spark_conf(line="4.3", packages=True, repositories="file:///m"))[:4] == [
        "--packages", shim_coordinates("4.3"), "--repositories", "file:///m"]


def test_packages_mode_refuses_local_jars() -> None:
    with pytest.raises(ValueError, match=r"spark\.jars"):
        spark_conf(line="4.3", packages=True, extra_jars=["/x.jar"])
    with pytest.raises(ValueError, match=r"spark\.jars"):
        spark_conf(line="4.3", packages=True, deps_dir="/nowhere")
    with pytest.raises(ValueError, match="packages=True"):
        spark_conf(line="4.3", repositories="file:///m")


def test_configure_applies_packages_mode() -> None:
    class Builder:
        def __init__(self) -> None:
            self.conf: dict[str, str] = {}

        def config(self, key: str, value: str) -> Builder:
            self.conf[key] = value
            return self

    builder = configure(Builder(), line="4.2", packages=True, repositories="file:///m")
    assert builder.conf[PACKAGES_KEY] == shim_coordinates("4.2")
    assert builder.conf[REPOSITORIES_KEY] == "file:///m"
    assert "spark.jars" not in builder.conf


@pytest.mark.parametrize("line", LINES, ids=lambda line: line.line)
def test_docs_table_names_each_lines_artifact_and_versions(line: SparkLine) -> None:
    """docs/spark.md's "Maven coordinates" table row of ``line`` names its coordinates, hadoop-aws and SDK."""
    docs = (REPO / "docs" / "spark.md").read_text()
    [row] = [r for r in docs.splitlines() if r.startswith(f"| {line.line} | `{shim_coordinates(line)}`")]
    assert f"hadoop-aws {line.hadoop}" in row and HADOOP_DEPS[line.hadoop].aws_sdk in row, row
