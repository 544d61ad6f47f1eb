"""The one redact(): explicit secrets, URL user info, presigned-URL credentials and the AWS credential variables."""

from __future__ import annotations

import pytest

from checkpointfs import redact as redact_module
from checkpointfs.redact import redact
from checkpointfs.store.s3 import client


def test_explicit_secrets_and_url_user_info() -> None:
    text = redact("put failed on http://AKIA1:s3cr3t@host:9000/b with key s3cr3t", ("s3cr3t", ""))
    assert "s3cr3t" not in text and "AKIA1" not in text
    assert text == "put failed on http://<redacted>@host:9000/b with key <redacted>"


def test_presigned_url_credentials() -> None:
    url = ("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F2024%2Fus"
           "&X-Amz-Signature=abcdef0123&x-amz-security-token=tok+en&X-Amz-Expires=60")
    text = redact(url)
    assert "AKIA" not in text and "abcdef0123" not in text and "tok+en" not in text
    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in text and "X-Amz-Expires=60" in text


def test_credential_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "x")  # too short to replace safely: left alone
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    assert redact("signed with wJalrXUtnFEMI-secret by x") == "signed with <redacted> by x"


def test_the_s3_client_uses_the_same_function() -> None:
    assert client.redact is redact_module.redact
