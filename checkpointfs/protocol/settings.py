"""The shim's settings as ``protocol.json`` lists them (section ``settings``), and the check the shim makes of them
when a manager is made: an unknown ``checkpointfs.*`` key is a typo, named with the closest known key; a value its
kind does not accept is named with its key and what the key accepts. The shim's ``SettingsCheck`` words its
messages exactly as :func:`problem` does (``tests/protocol/golden_settings.json`` checks both).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from . import load

__all__ = ["PREFIX", "SETTINGS", "SPARK_PREFIX", "Setting", "closest", "edit_distance", "problem", "problems"]

Kind = Literal["choice", "int", "bool", "size", "schemes"]

_DATA = load()["settings"]
PREFIX: str = _DATA["prefix"]
"""The prefix of every setting: ``checkpointfs.``."""
SPARK_PREFIX = "spark.hadoop."
"""Spark's prefix for Hadoop settings: ``spark.hadoop.checkpointfs.x`` is the Hadoop setting ``checkpointfs.x``."""
_INHERIT: str = _DATA["inherit_value"]


@dataclass(frozen=True)
class Setting:
    """One setting: its ``key``, the ``kind`` of value it takes, the ``choices`` of a choice, the ``minimum`` of an
    int or size, its ``default`` as text (None: derived elsewhere, e.g. the protocol's part size), and whether an
    empty value or ``inherit`` keeps the S3A setting the file system has."""

    key: str
    kind: Kind
    choices: tuple[str, ...] = ()
    minimum: int = 0
    default: str | None = None
    inherit: bool = False

    def accepts(self) -> str:
        """What the key accepts, in words (the end of every message about its value)."""
        if self.kind == "choice":
            text = "one of " + ", ".join(self.choices)
        elif self.kind == "int":
            text = f"an integer of at least {self.minimum}"
        elif self.kind == "bool":
            text = "true or false"
        elif self.kind == "size":
            text = f"a size in bytes of at least {self.minimum}, with an optional K, M, G or T suffix"
        else:
            text = "comma-separated URI schemes"
        return text + (f", or {_INHERIT} (or empty) to keep the file system's own" if self.inherit else "")


SETTINGS: Mapping[str, Setting] = {
    key: Setting(key, spec["kind"], tuple(spec.get("choices", ())), int(spec.get("min", 0)), spec.get("default"),
                 bool(spec.get("inherit", False)))
    for key, spec in _DATA["keys"].items()
}
"""Every setting, in the table's order."""

_SIZE = re.compile(r"(\d+)([kKmMgGtT]?)")
_SIZE_FACTORS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_INT_MAX = 2**31 - 1
"""The largest int a JVM setting holds."""
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: the fewest single-character inserts, deletes and substitutions from ``a`` to ``b``."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def closest(key: str) -> str | None:
    """The known key nearest ``key`` by edit distance, the first in the table's order on a tie, written as ``key``
    is (with its ``spark.hadoop.`` prefix when it has one); None when even that one is further than a third of its
    length away."""
    prefixed = key.startswith(SPARK_PREFIX)
    name = key[len(SPARK_PREFIX):] if prefixed else key
    best, distance = None, 0
    for known in SETTINGS:
        d = edit_distance(name, known)
        if best is None or d < distance:
            best, distance = known, d
    if best is None or distance > len(best) // 3:
        return None
    return SPARK_PREFIX + best if prefixed else best


def _value_ok(setting: Setting, value: str) -> bool:
    text = value.strip()
    if setting.inherit and (text == "" or text.lower() == _INHERIT):
        return True
    if setting.kind == "choice":
        return text.lower() in setting.choices
    if setting.kind == "bool":
        return text.lower() in ("true", "false")
    if setting.kind == "int":
        return re.fullmatch(r"[+-]?\d+", text) is not None and setting.minimum <= int(text) <= _INT_MAX
    if setting.kind == "size":
        match = _SIZE.fullmatch(text)
        return match is not None and int(match[1]) * _SIZE_FACTORS[match[2].lower()] >= setting.minimum
    return all(_SCHEME.fullmatch(s.strip()) for s in text.split(",") if s.strip())


def problem(key: str, value: str) -> str | None:
    """What is wrong with the setting ``key`` = ``value`` (``key`` with or without ``spark.hadoop.``), in the words
    the shim uses; None when nothing is, or when ``key`` is not under ``checkpointfs.``."""
    name = key[len(SPARK_PREFIX):] if key.startswith(SPARK_PREFIX) else key
    if not name.startswith(PREFIX):
        return None
    setting = SETTINGS.get(name)
    if setting is None:
        near = closest(key)
        hint = f"did you mean '{near}'?" if near else "known keys: " + ", ".join(SETTINGS)
        return f"unknown setting '{key}': {hint}"
    if _value_ok(setting, value):
        return None
    return f"{key}='{value}': expected {setting.accepts()}"


def problems(conf: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[str]:
    """The :func:`problem` of every entry of ``conf`` (a mapping or key-value pairs), in order; a key that is also
    there with ``spark.hadoop.`` and the same value (Spark copies ``spark.hadoop.X`` to ``X`` in the Hadoop
    configuration) is reported once, as the user wrote it."""
    items = list(conf.items() if isinstance(conf, Mapping) else conf)
    written = dict(items)
    return [p for p in (problem(k, v) for k, v in items
                        if not (not k.startswith(SPARK_PREFIX) and written.get(SPARK_PREFIX + k) == v))
            if p is not None]
