"""Writes the shim as a Maven repository (``dist/maven/``): one artifact per Spark line, ``io.checkpointfs:
checkpointfs-spark-<line>_<scala>:<version>``, for ``spark-submit --packages``, ``spark.jars.packages`` and sbt or
Maven builds.

    python jvm-shim/maven_repo.py [--out dist/maven] [--jars checkpointfs/jars]

Every version comes from ``checkpointfs/spark/lines.py`` (loaded by path: no install, no pyspark) and the project
version from ``pyproject.toml``. Each artifact carries its jar group's shim jar (built by ``jvm-shim/build.sh``), a
POM naming the s3a:// jars the way ``configure()`` picks them (hadoop-aws of the line's Hadoop without the 500 MB AWS
SDK v2 bundle, plus the SDK modules S3A loads at ``HADOOP_DEPS``' release; for Hadoop 3.3.x the SDK v1 bundle), a
sources jar (the Scala folders the group compiles from, read off ``jvm-shim/pom.xml``), a javadoc jar holding a
README (Maven Central accepts that) and ``.sha1``/``.md5`` checksums, plus ``maven-metadata.xml`` per artifact.
Signatures (``.asc``) are left to the release. The output is reproducible: fixed timestamps in every zip.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import logging
import os
import re
import runpy
import shutil
import sys
import time
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

log = logging.getLogger("maven_repo")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LINES_PY = REPO / "checkpointfs" / "spark" / "lines.py"
PYPROJECT = REPO / "pyproject.toml"
SHIM_POM = HERE / "pom.xml"

PROJECT_URL = "https://github.com/checkpointfs/checkpointfs"
"""Home page and SCM of the POMs (Maven Central requires both): to be confirmed before the first release."""
LICENSE = ("Apache-2.0", "https://www.apache.org/licenses/LICENSE-2.0.txt")
DEVELOPER = ("checkpointfs", "The checkpointfs developers", PROJECT_URL)
ZIP_TIME = (2020, 1, 1, 0, 0, 0)
"""Timestamp of every entry of the jars written here, so that the same input gives the same bytes."""

SPARK_SHIPS: tuple[tuple[str, str], ...] = (
    ("io.netty", "*"),
    ("org.apache.httpcomponents", "*"),
    ("commons-codec", "commons-codec"),
    ("commons-logging", "commons-logging"),
    ("org.slf4j", "*"),
)
"""What the AWS SDK and hadoop-aws would pull in that every supported Spark already ships (at its own, newer
version: netty 4.2 on Spark 4.1+, slf4j 2, commons-logging's API via jcl-over-slf4j on Spark 4): excluded from every
dependency, as ``configure()`` drops jars pyspark ships and ``jvm-shim/deps/pom.xml`` skips these groups. Spark,
Hadoop and Scala themselves are no dependencies at all (hadoop-aws names hadoop-common as provided)."""


@dataclass(frozen=True)
class Dependency:
    """One ``<dependency>`` of an artifact's POM."""

    group: str
    artifact: str
    version: str
    exclusions: tuple[tuple[str, str], ...] = SPARK_SHIPS

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


def load_lines() -> dict[str, Any]:
    """The tables of ``lines.py`` (``LINES``, ``HADOOP_DEPS``, ``MAVEN_GROUP``, ...)."""
    return runpy.run_path(str(LINES_PY))


def project_version(pyproject: Path = PYPROJECT) -> str:
    """``[project] version`` of pyproject.toml (read without tomllib, which Python 3.10 lacks)."""
    section = ""
    for raw in pyproject.read_text().splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line
        elif section == "[project]":
            match = re.fullmatch(r'version\s*=\s*"([^"]+)"', line)
            if match:
                return match.group(1)
    raise SystemExit(f"maven_repo: no [project] version in {pyproject}")


def dependencies(line: Any, tables: dict[str, Any]) -> list[Dependency]:
    """The run-time dependencies of ``line``'s artifact: what ``configure()`` puts beside the shim jar (``tables``:
    :func:`load_lines`, whose ``SDK_V2_BUNDLE`` and ``SDK_V2_MODULES`` ``configure()`` uses too)."""
    deps = tables["HADOOP_DEPS"][line.hadoop]
    bundle = tuple(tables["SDK_V2_BUNDLE"].split(":"))
    aws = Dependency("org.apache.hadoop", "hadoop-aws", deps.hadoop, (bundle, *SPARK_SHIPS))
    if deps.sdk_v1:
        return [aws, Dependency("com.amazonaws", "aws-java-sdk-bundle", deps.aws_sdk)]
    return [aws, *(Dependency("software.amazon.awssdk", m, deps.aws_sdk) for m in tables["SDK_V2_MODULES"])]


def source_folders(group: str, pom: Path = SHIM_POM) -> list[Path]:
    """The Scala source folders ``jvm-shim/pom.xml`` compiles for jar group ``group``: its ``sourceDirectory`` and
    the build-helper sources, with ``shim.group`` and the group's profile properties substituted."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ET.parse(pom).getroot()
    props = {p.tag.split("}")[1]: p.text or "" for p in root.findall("m:properties/*", ns)}
    props["shim.group"] = group
    props["project.basedir"] = str(HERE)
    for profile in root.findall("m:profiles/m:profile", ns):
        if profile.findtext("m:activation/m:property/m:value", namespaces=ns) == group:
            props.update({p.tag.split("}")[1]: p.text or "" for p in profile.findall("m:properties/*", ns)})
    build = root.find("m:build", ns)
    assert build is not None, pom
    raw = [build.findtext("m:sourceDirectory", namespaces=ns) or "src/main/java"]
    raw += [s.text or "" for s in build.iter(f"{{{ns['m']}}}source")]

    def substitute(text: str) -> str:
        for _ in range(3):  # properties naming properties
            text = re.sub(r"\$\{([^}]+)\}", lambda m: props.get(m.group(1), m.group(0)), text)
        return text

    folders: list[Path] = []
    for text in raw:
        folder = HERE / substitute(text)
        if folder not in folders:
            folders.append(folder)
    missing = [f for f in folders if not f.is_dir()]
    if missing:
        raise SystemExit(f"maven_repo: source folders of {group} missing: {missing}")
    return folders


def _zip(entries: dict[str, bytes]) -> bytes:
    """A jar (zip) of ``entries``, a manifest first, with fixed timestamps."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ["META-INF/MANIFEST.MF", *sorted(n for n in entries if n != "META-INF/MANIFEST.MF")]:
            data = entries.get(name, b"Manifest-Version: 1.0\r\nCreated-By: checkpointfs maven_repo.py\r\n\r\n")
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def sources_jar(group: str) -> bytes:
    """The ``-sources.jar`` of ``group``: every file of its source folders, by package path."""
    entries: dict[str, bytes] = {}
    for folder in source_folders(group):
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                entries[path.relative_to(folder).as_posix()] = path.read_bytes()
    return _zip(entries)


def javadoc_jar(line: Any, artifact: str, version: str) -> bytes:
    """The ``-javadoc.jar``: a README pointing at the documentation (the shim's API is one class name)."""
    readme = (
        f"# {artifact} {version}\n\n"
        f"The checkpointfs shim for Spark {line.line}: set\n"
        "`spark.sql.streaming.checkpointFileManagerClass=io.checkpointfs.spark.DirectWriteCheckpointFileManager`\n"
        "(and `spark.hadoop.fs.s3a.impl=io.checkpointfs.spark.CheckpointS3AFileSystem`).\n\n"
        f"Documentation: {PROJECT_URL}/blob/main/docs/spark.md (docs/spark.md in the sources).\n"
    )
    return _zip({"README.md": readme.encode()})


def pom_xml(line: Any, group_id: str, artifact: str, version: str, deps: list[Dependency]) -> str:
    """The POM of ``line``'s artifact, with what Maven Central requires (name, description, url, license,
    developers, scm)."""

    def dependency(d: Dependency) -> str:
        exclusions = "".join(
            f"\n        <exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
            for g, a in d.exclusions)
        return (f"    <dependency>\n      <groupId>{d.group}</groupId>\n      <artifactId>{d.artifact}</artifactId>\n"
                f"      <version>{d.version}</version>\n"
                + (f"      <exclusions>{exclusions}\n      </exclusions>\n" if exclusions else "")
                + "    </dependency>\n")

    description = (
        f"Spark {line.line} (Scala {line.scala}, Hadoop {line.hadoop}) Structured Streaming checkpoints on S3 "
        "without the rename dance: a CheckpointFileManager writing each checkpoint file once with conditional "
        f"writes. Jar group {line.group.name}; brings hadoop-aws {line.hadoop} and its AWS SDK.")
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>{group_id}</groupId>
  <artifactId>{artifact}</artifactId>
  <version>{version}</version>
  <packaging>jar</packaging>
  <name>checkpointfs Spark {line.line} shim</name>
  <description>{escape(description)}</description>
  <url>{PROJECT_URL}</url>
  <licenses>
    <license>
      <name>{LICENSE[0]}</name>
      <url>{LICENSE[1]}</url>
      <distribution>repo</distribution>
    </license>
  </licenses>
  <developers>
    <developer>
      <id>{DEVELOPER[0]}</id>
      <name>{DEVELOPER[1]}</name>
      <url>{DEVELOPER[2]}</url>
    </developer>
  </developers>
  <scm>
    <connection>scm:git:{PROJECT_URL}.git</connection>
    <developerConnection>scm:git:{PROJECT_URL}.git</developerConnection>
    <url>{PROJECT_URL}</url>
  </scm>
  <properties>
    <checkpointfs.spark.line>{line.line}</checkpointfs.spark.line>
    <checkpointfs.jar.group>{line.group.name}</checkpointfs.jar.group>
    <checkpointfs.hadoop.version>{line.hadoop}</checkpointfs.hadoop.version>
  </properties>
  <dependencies>
{"".join(dependency(d) for d in deps)}  </dependencies>
</project>
"""


def metadata_xml(group_id: str, artifact: str, version: str, updated: str) -> str:
    """``maven-metadata.xml`` of an artifact with one version."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<metadata>
  <groupId>{group_id}</groupId>
  <artifactId>{artifact}</artifactId>
  <versioning>
    <latest>{version}</latest>
    <release>{version}</release>
    <versions>
      <version>{version}</version>
    </versions>
    <lastUpdated>{updated}</lastUpdated>
  </versioning>
</metadata>
"""


def _write(path: Path, data: bytes) -> None:
    """``path`` and its ``.sha1`` and ``.md5``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.with_name(path.name + ".sha1").write_text(hashlib.sha1(data).hexdigest())
    path.with_name(path.name + ".md5").write_text(hashlib.md5(data).hexdigest())


def _updated(jars: list[Path]) -> str:
    """``lastUpdated`` (``yyyyMMddHHmmss``, UTC): the newest shim jar's time, so that reruns give the same file."""
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(max(j.stat().st_mtime for j in jars)))


def write_repository(out: Path, jars_dir: Path) -> list[str]:
    """Write every line's artifact under ``out`` (replacing what was there); returns their coordinates."""
    tables = load_lines()
    group_id: str = tables["MAVEN_GROUP"]
    version = project_version()
    lines: tuple[Any, ...] = tables["LINES"]
    jars = {line.group.name: jars_dir / line.group.jar_name for line in lines}
    missing = sorted({str(j) for j in jars.values() if not j.is_file()})
    if missing:
        raise SystemExit(f"maven_repo: shim jars not built: {', '.join(missing)} (run `make setup` or "
                         "`bash jvm-shim/build.sh --jars-only`)")
    updated = _updated(list(jars.values()))
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    sources = {name: sources_jar(name) for name in jars}
    coordinates = []
    for line in lines:
        artifact = line.maven_artifact
        folder = tmp.joinpath(*group_id.split("."), artifact)
        base = folder / version / f"{artifact}-{version}"
        _write(base.with_name(base.name + ".jar"), jars[line.group.name].read_bytes())
        deps = dependencies(line, tables)
        _write(base.with_name(base.name + ".pom"), pom_xml(line, group_id, artifact, version, deps).encode())
        _write(base.with_name(base.name + "-sources.jar"), sources[line.group.name])
        _write(base.with_name(base.name + "-javadoc.jar"), javadoc_jar(line, artifact, version))
        _write(folder / "maven-metadata.xml", metadata_xml(group_id, artifact, version, updated).encode())
        coordinates.append(f"{group_id}:{artifact}:{version}")
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    return coordinates


def main(argv: list[str] | None = None) -> int:
    """Command line: write the repository and print its coordinates."""
    parser = argparse.ArgumentParser(prog="python jvm-shim/maven_repo.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist" / "maven", help="repository root (replaced)")
    parser.add_argument("--jars", type=Path, default=REPO / "checkpointfs" / "jars", help="the built shim jars")
    args = parser.parse_args(argv)
    for coordinates in write_repository(args.out.resolve(), args.jars.resolve()):
        print(coordinates)
    log.info("Maven repository in %s", args.out)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="maven_repo: %(message)s")
    sys.exit(main())
