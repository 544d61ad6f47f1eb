"""The settings table of protocol.json and the check of checkpointfs.protocol.settings, against the golden cases the
shim's ScalaTest suite runs too (tests/protocol/golden_settings.json), and docs/spark.md's table of settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkpointfs.protocol import settings

GOLDEN = json.loads((Path(__file__).parent / "golden_settings.json").read_text(encoding="utf-8"))["cases"]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "spark.md"


@pytest.mark.parametrize("case", GOLDEN, ids=lambda c: f"{c['key']}={c['value']}")
def test_golden_case(case: dict[str, str | None]) -> None:
    assert settings.problem(str(case["key"]), str(case["value"])) == case["problem"]


def test_the_golden_cases_cover_every_key_and_kind() -> None:
    keys = {str(c["key"]).removeprefix(settings.SPARK_PREFIX) for c in GOLDEN}
    assert set(settings.SETTINGS) <= keys
    rejected = {settings.SETTINGS[k].kind for k in keys if k in settings.SETTINGS
                for c in GOLDEN if str(c["key"]).removeprefix(settings.SPARK_PREFIX) == k and c["problem"]}
    assert rejected == {"choice", "int", "bool", "size", "schemes"}
    assert any(c["problem"] and "did you mean" in str(c["problem"]) for c in GOLDEN)
    assert any(c["problem"] and "known keys" in str(c["problem"]) for c in GOLDEN)


def test_defaults_are_accepted_values() -> None:
    for setting in settings.SETTINGS.values():
        if setting.default is not None:
            assert settings.problem(setting.key, setting.default) is None, setting.key


def test_every_setting_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    missing = [key for key in settings.SETTINGS if f"| `{key}` |" not in text]
    assert not missing, f"docs/spark.md's settings table lacks {missing}"


def test_edit_distance() -> None:
    assert settings.edit_distance("", "abc") == 3
    assert settings.edit_distance("kitten", "sitting") == 3
    assert settings.edit_distance("same", "same") == 0


def test_problems_of_a_conf_keep_order_and_skip_other_keys() -> None:
    found = settings.problems({"fs.s3a.endpoint": "x", "checkpointfs.store.check": "maybe",
                               "spark.hadoop.checkpointfs.cancel.stratgy": "abort"})
    assert found == ["checkpointfs.store.check='maybe': expected true or false",
                     "unknown setting 'spark.hadoop.checkpointfs.cancel.stratgy': did you mean "
                     "'spark.hadoop.checkpointfs.cancel.strategy'?"]


def test_a_mistyped_key_spark_copied_unprefixed_is_reported_once_as_written() -> None:
    found = settings.problems({"spark.hadoop.checkpointfs.cancel.stratgy": "abort",
                               "checkpointfs.cancel.stratgy": "abort"})  # Spark's copy into Hadoop's conf
    assert found == ["unknown setting 'spark.hadoop.checkpointfs.cancel.stratgy': did you mean "
                     "'spark.hadoop.checkpointfs.cancel.strategy'?"]
