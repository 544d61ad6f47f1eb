"""Keeping credentials out of what the tools print: user info in URLs and the values of credential variables."""

from __future__ import annotations

import os
import re

_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")
_SECRET_VARIABLES = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID")
_SIGNATURE = re.compile(r"(X-Amz-(?:Signature|Credential|Security-Token)=)[^&\s]+", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with user info in URLs, presigned-URL credentials and the values of the AWS credential variables
    replaced by ``<redacted>``."""
    text = _USERINFO.sub(r"\g<scheme><redacted>@", text)
    text = _SIGNATURE.sub(r"\1<redacted>", text)
    for name in _SECRET_VARIABLES:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, "<redacted>")
    return text
