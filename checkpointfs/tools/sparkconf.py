"""A job's S3 settings, read from its ``spark-defaults.conf`` (as :func:`checkpointfs.spark.submit.spark_defaults_text`
writes it: ``key value`` lines), and turned into what a boto3 client needs to reach the same store as the job's S3A.

The file is read as Spark reads it (``java.util.Properties``): ``#``/``!`` comments, the key ending at the first
unescaped whitespace, ``=`` or ``:``, backslash escapes and line continuations. Only ``spark.hadoop.fs.s3a.*``
settings matter here; they apply as S3A applies them, per-bucket ``fs.s3a.bucket.<bucket>.<option>`` winning over
``fs.s3a.<option>`` for that bucket. Secret values are kept out of every message and report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidConfigError

HADOOP_PREFIX = "spark.hadoop."
S3A_PREFIX = "fs.s3a."
BUCKET_PREFIX = "fs.s3a.bucket."
SIMPLE_PROVIDER = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
TEMPORARY_PROVIDER = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
S3A_DEFAULT_PROVIDERS = (TEMPORARY_PROVIDER, SIMPLE_PROVIDER,
                         "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
                         "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider")
"""S3A's providers when ``fs.s3a.aws.credentials.provider`` is unset, in its order."""
BOOLEAN_OPTIONS = ("fs.s3a.path.style.access", "fs.s3a.connection.ssl.enabled")
SECRET_OPTIONS = ("fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token")
DEFAULT_CHAIN = "boto3's default chain (environment, shared config, instance profile)"
"""The credentials in words when the doctor's client takes boto3's own (no usable keys in the file)."""
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(first line number, logical line)``: comments and blank lines dropped, continuations joined (a line ending
    in an odd number of backslashes continues on the next, whose leading whitespace is dropped)."""
    pending: str | None = None
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
            start = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield start, (pending or "") + line
        pending = None
    if pending is not None:
        yield start, pending


def _unescape(text: str, number: int, path: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 == len(text):
            out.append(char)
            index += 1
            continue
        escaped = text[index + 1]
        if escaped == "u":
            digits = text[index + 2:index + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise InvalidConfigError(path, f"line {number}: malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            index += 6
            continue
        out.append(_ESCAPES.get(escaped, escaped))
        index += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """A logical line's raw key and raw value (Properties: the key ends at the first unescaped whitespace, ``=`` or
    ``:``; then whitespace and at most one ``=`` or ``:`` are skipped)."""
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in " \t\f=:":
            break
        index += 1
    key, rest = line[:index], line[index:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def parse_spark_defaults(text: str, path: str) -> dict[str, str]:
    """The settings of a ``spark-defaults.conf`` text (``path`` names it in errors). Values are trimmed, as Spark
    trims them. Raises :class:`InvalidConfigError` naming the file, the line number and the problem for a malformed
    escape, an S3A setting without a value, or an S3A switch that is not ``true``/``false`` (Hadoop would silently
    take the default)."""
    settings: dict[str, str] = {}
    for number, line in _logical_lines(text):
        raw_key, raw_value = _split(line)
        key = _unescape(raw_key, number, path)
        value = _unescape(raw_value, number, path).strip()
        if not key:
            raise InvalidConfigError(path, f"line {number}: no key before the value")
        if key.startswith(HADOOP_PREFIX + S3A_PREFIX):
            option = key[len(HADOOP_PREFIX):]
            if not value:
                raise InvalidConfigError(path, f"line {number}: {key} has no value (expected `{key} VALUE`)")
            base = _base_option(option)
            if base in BOOLEAN_OPTIONS and value.lower() not in ("true", "false"):
                raise InvalidConfigError(path, f"line {number}: {key}: {value!r} is not true or false")
        settings[key] = value
    return settings


def read_spark_defaults(path: str) -> dict[str, str]:
    """:func:`parse_spark_defaults` of the file at ``path``; :class:`InvalidConfigError` when it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidConfigError(path, f"cannot read the settings file: {type(e).__name__}: {e.args[-1]}") from None
    return parse_spark_defaults(text, path)


def _short(provider: str) -> str:
    """A provider's class name without its package."""
    return provider.rsplit(".", 1)[-1]


def _base_option(option: str) -> str:
    """``fs.s3a.X`` for ``fs.s3a.bucket.<bucket>.X`` (bucket names hold no dot-free guarantee, so the known options
    are matched by suffix), else ``option``."""
    if option.startswith(BUCKET_PREFIX):
        for known in (*BOOLEAN_OPTIONS, *SECRET_OPTIONS):
            if option.endswith("." + known[len(S3A_PREFIX):]):
                return known
    return option


@dataclass
class S3ClientSettings:
    """What a boto3 client needs to reach a bucket as the job's S3A does, with where each value came from (the
    setting's name, never a secret's value)."""

    bucket: str
    source: str
    endpoint_url: str | None = None
    region: str | None = None
    path_style: bool = False
    use_ssl: bool = True
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    credentials: str = DEFAULT_CHAIN
    origins: dict[str, str] = field(default_factory=dict)
    bucket_overrides: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials held (to redact from any message)."""
        return tuple(s for s in (self.access_key, self.secret_key, self.session_token) if s)

    def to_json(self) -> dict[str, Any]:
        """The settings in force, without secrets."""
        return {"spark_conf": self.source, "bucket": self.bucket, "endpoint": self.endpoint_url,
                "region": self.region, "path_style_access": self.path_style, "ssl": self.use_ssl,
                "credentials": self.credentials, "origins": dict(self.origins),
                "bucket_overrides": list(self.bucket_overrides), "notes": list(self.notes)}


def s3a_options(conf: Mapping[str, str], bucket: str) -> dict[str, tuple[str, str]]:
    """The ``fs.s3a.*`` options in force for ``bucket``: option -> (value, the ``spark.hadoop.`` setting it came
    from). ``fs.s3a.bucket.<bucket>.<option>`` overrides ``fs.s3a.<option>``, as S3A's per-bucket configuration."""
    found: dict[str, tuple[str, str]] = {}
    bucket_prefix = f"{BUCKET_PREFIX}{bucket}."
    overrides: list[tuple[str, str, str]] = []
    for key, value in conf.items():
        if not key.startswith(HADOOP_PREFIX + S3A_PREFIX):
            continue
        option = key[len(HADOOP_PREFIX):]
        if option.startswith(bucket_prefix):
            rest = option[len(bucket_prefix):]
            if rest and not rest.startswith("bucket.") and rest != "impl":
                overrides.append((S3A_PREFIX + rest, value, key))
        elif not option.startswith(BUCKET_PREFIX):
            found[option] = (value, key)
    for option, value, key in overrides:
        found[option] = (value, key)
    return found


def client_settings(conf: Mapping[str, str], bucket: str, source: str) -> S3ClientSettings:
    """The boto3 client settings for ``bucket`` from a job's Spark settings ``conf`` (read from ``source``)."""
    options = s3a_options(conf, bucket)
    result = S3ClientSettings(bucket, source)
    result.bucket_overrides = sorted(key for _, key in options.values() if ".bucket." in key)
    for option, (_, key) in options.items():
        if option in ("fs.s3a.endpoint", "fs.s3a.endpoint.region", "fs.s3a.path.style.access",
                      "fs.s3a.connection.ssl.enabled", "fs.s3a.aws.credentials.provider", *SECRET_OPTIONS):
            result.origins[option] = key

    def value(option: str) -> str | None:
        found = options.get(option)
        return found[0] if found else None

    result.use_ssl = (value("fs.s3a.connection.ssl.enabled") or "true").lower() == "true"
    result.path_style = (value("fs.s3a.path.style.access") or "false").lower() == "true"
    endpoint = value("fs.s3a.endpoint")
    if endpoint:
        result.endpoint_url = endpoint if "://" in endpoint else f"{'https' if result.use_ssl else 'http'}://{endpoint}"
        if "://" in endpoint:
            result.use_ssl = endpoint.lower().startswith("https://")
    result.region = value("fs.s3a.endpoint.region")
    _credentials(result, value)
    if conf.get(HADOOP_PREFIX + "hadoop.security.credential.provider.path"):
        result.notes.append("hadoop.security.credential.provider.path is set: credentials kept in a Hadoop "
                            "credential store are not read by the doctor")
    return result


def _credentials(result: S3ClientSettings, value: Callable[[str], str | None]) -> None:
    """Take the keys S3A's first usable provider would take; otherwise boto3's default chain, said in a note."""
    access, secret, token = (value(o) for o in SECRET_OPTIONS)
    configured = value("fs.s3a.aws.credentials.provider")
    providers = ([p.strip() for p in configured.split(",") if p.strip()] if configured
                 else list(S3A_DEFAULT_PROVIDERS))
    for provider in providers:
        short = _short(provider)
        if short == _short(TEMPORARY_PROVIDER):
            if access and secret and token:
                result.access_key, result.secret_key, result.session_token = access, secret, token
                result.credentials = f"fs.s3a.access.key, fs.s3a.secret.key and fs.s3a.session.token ({short})"
                return
            continue  # no keys for it: S3A goes on to the next provider
        if short == _short(SIMPLE_PROVIDER):
            if access and secret:
                result.access_key, result.secret_key = access, secret
                result.credentials = f"fs.s3a.access.key and fs.s3a.secret.key ({short})"
                return
            continue
        result.credentials = DEFAULT_CHAIN
        if configured:
            result.notes.append(f"credentials provider {short}: the doctor cannot use it, and uses boto3's default "
                                "credential chain instead, which may not be the identity the job has")
        return
    result.credentials = DEFAULT_CHAIN
    result.notes.append("no provider in fs.s3a.aws.credentials.provider found its keys in the file: the doctor uses "
                        "boto3's default credential chain")
