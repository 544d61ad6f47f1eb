"""Keeping credentials out of every message checkpointfs writes: the one :func:`redact`, used by the S3 client's
errors and by the tools' output alike."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

__all__ = ["REDACTED", "SECRET_VARIABLES", "redact"]

REDACTED = "<redacted>"
"""What a credential is replaced with."""
SECRET_VARIABLES = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "AZURE_STORAGE_KEY",
                    "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING",
                    "AZURE_CLIENT_SECRET")
"""Environment variables whose values are credentials."""
_MIN_VARIABLE_LENGTH = 4
"""Shorter values of those variables are not replaced (a one-letter test value would mangle every message)."""
_USERINFO = re.compile(r"(//)[^/@\s]+@")
_PRESIGNED = re.compile(r"(X-Amz-(?:Signature|Credential|Security-Token)=)[^&\s]+", re.IGNORECASE)
# Azure: a SAS token's signature (sig=), a connection string's AccountKey= and SharedAccessSignature=, and the
# signature of a SharedKey Authorization header
_AZURE_SAS = re.compile(r"([?&]sig=)[^&\s\"']+", re.IGNORECASE)
_AZURE_CONNECTION = re.compile(r"((?:AccountKey|SharedAccessSignature)=)[^;\s\"']+", re.IGNORECASE)
_AZURE_SHARED_KEY = re.compile(r"(SharedKey(?:Lite)? [^:\s]+:)[^\s\"',]+")
# A GCS resumable session's URI grants the upload to whoever holds it (upload_id); OAuth tokens in query strings.
_GRANTS = re.compile(r"((?:upload_id|access_token)=)[^&\s'\"]+")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with credentials replaced by ``<redacted>``: every one of ``secrets`` (those the caller holds), the
    user info of URLs (``scheme://user:password@host``), presigned-URL ``X-Amz-Signature``, ``X-Amz-Credential`` and
    ``X-Amz-Security-Token`` values, GCS resumable session ids (``upload_id=``) and ``access_token=`` values, Azure
    SAS signatures (``sig=``), connection strings' ``AccountKey=`` and ``SharedAccessSignature=`` values, SharedKey
    signatures, and the values of the AWS and Azure credential environment variables."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    for name in SECRET_VARIABLES:
        value = os.environ.get(name)
        if value and len(value) >= _MIN_VARIABLE_LENGTH:
            text = text.replace(value, REDACTED)
    text = _USERINFO.sub(rf"\1{REDACTED}@", text)
    text = _GRANTS.sub(rf"\1{REDACTED}", text)
    text = _PRESIGNED.sub(rf"\1{REDACTED}", text)
    text = _AZURE_SAS.sub(rf"\1{REDACTED}", text)
    text = _AZURE_CONNECTION.sub(rf"\1{REDACTED}", text)
    return _AZURE_SHARED_KEY.sub(rf"\1{REDACTED}", text)
