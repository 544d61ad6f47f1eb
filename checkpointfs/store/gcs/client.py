"""The HTTP side of :class:`~checkpointfs.store.gcs.GcsStore`: the authorized session it sends Google Cloud Storage's
JSON API requests on (google-auth's ``AuthorizedSession``, on requests), the name each request is counted under, and
what a failed request means in the protocol's terms (:func:`answer_of`, :func:`translate`: the one answer table of
``protocol.json``, with GCS's codes in it). Messages name the path and the cause, never a credential nor a resumable
session's URI (which grants the upload to whoever holds it: :func:`checkpointfs.redact.redact`)."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import requests
from requests.adapters import HTTPAdapter

from ... import protocol
from ...errors import AccessDeniedError, CheckpointFsError, StoreError, StoreUnavailableError
from ...redact import redact
from ..errors import class_names, error_for

log = logging.getLogger(__name__)

__all__ = ["CHUNK_MULTIPLE", "GCS_ENDPOINT", "RefusedAnswer", "SESSION_CANCELLED_STATUS", "SESSION_GONE_STATUSES",
           "WRITE_ID_ENCODING", "answer_of", "authorized_session", "decode_write_id", "encode_write_id",
           "operation_of", "translate"]

GCS_ENDPOINT = "https://storage.googleapis.com"
"""Google Cloud Storage's own endpoint (JSON API)."""
SCOPE = "https://www.googleapis.com/auth/devstorage.read_write"
"""The OAuth scope of Application Default Credentials: objects read and written, nothing else."""
EMULATOR_VARIABLE = "STORAGE_EMULATOR_HOST"
"""The variable Google's clients read an emulator's address from (``http://127.0.0.1:4443``); honoured the same way
when no ``endpoint_url`` is given."""

_GCS = protocol.load()["gcs"]
WRITE_ID_ENCODING: str = _GCS["write_id_encoding"]
"""How the write id is stored in an object's metadata (``base64`` of its UTF-8 bytes, as Google's connector does)."""
CHUNK_MULTIPLE: int = _GCS["chunk_multiple_bytes"]
"""Non-final chunks of a resumable upload are multiples of this (256 KiB)."""
SESSION_GONE_STATUSES: frozenset[int] = frozenset(_GCS["session_gone_statuses"])
"""Statuses of a resumable session URI that say the session is gone."""
SESSION_CANCELLED_STATUS: int = _GCS["session_cancelled_status"]
"""The answer to a DELETE that cancelled a resumable session (499)."""


def encode_write_id(write_id: str) -> str:
    """The metadata value a write id is stored as on GCS (``protocol.json`` ``gcs.write_id_encoding``)."""
    if WRITE_ID_ENCODING != "base64":  # pragma: no cover - protocol.json names the one encoding this knows
        raise ValueError(f"protocol.json: unknown gcs.write_id_encoding {WRITE_ID_ENCODING!r}")
    return base64.b64encode(write_id.encode("utf-8")).decode("ascii")


def decode_write_id(value: str) -> str:
    """The write id a stored metadata value holds; a value that is not base64 of UTF-8 text comes back as it is
    (another writer's: it matches no write id of ours)."""
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return value


# -- the session ---------------------------------------------------------------------------------------------------
def authorized_session(*, endpoint_url: str, credentials: Any, token: str | None, path: str = ""
                       ) -> tuple[requests.Session, str]:
    """An ``AuthorizedSession`` for ``endpoint_url`` and the credential to redact (``""``: none given): explicit
    ``credentials`` (a ``google.auth.credentials.Credentials``), else an OAuth2 access ``token``, else anonymous
    for an endpoint other than Google's (an emulator), else Application Default Credentials. A missing ADC is an
    :class:`~checkpointfs.errors.AccessDeniedError` naming ``path`` (the store's root; the endpoint without one) and
    the ways to give credentials."""
    import google.auth
    import google.auth.exceptions
    from google.auth.credentials import AnonymousCredentials
    from google.auth.transport.requests import AuthorizedSession

    secret = token or ""
    if credentials is None and token:
        from google.oauth2.credentials import Credentials

        credentials = Credentials(token)  # type: ignore[no-untyped-call]
    if credentials is None:
        if endpoint_url.rstrip("/") != GCS_ENDPOINT:
            credentials = AnonymousCredentials()  # type: ignore[no-untyped-call]
        else:
            try:
                credentials, _project = google.auth.default(scopes=[SCOPE])  # type: ignore[no-untyped-call]
            except google.auth.exceptions.DefaultCredentialsError as e:
                error = AccessDeniedError(path or endpoint_url,
                                          "no Google credentials: Application Default Credentials were not found "
                                          "(GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, "
                                          "or a metadata server); pass gcs_credentials or gcs_token")
                error.answer_class = protocol.classify(protocol.Answer(python_classes=class_names(e)))
                raise error from None
    return AuthorizedSession(credentials), secret  # type: ignore[no-untyped-call]


def endpoint_of(endpoint_url: str | None) -> str:
    """The endpoint requests go to: ``endpoint_url``, else ``$STORAGE_EMULATOR_HOST`` (``http://`` added when it
    names no scheme), else Google's."""
    if endpoint_url:
        return endpoint_url.rstrip("/")
    emulator = os.environ.get(EMULATOR_VARIABLE, "")
    if emulator:
        return (emulator if "://" in emulator else "http://" + emulator).rstrip("/")
    return GCS_ENDPOINT


class CountingAdapter(HTTPAdapter):
    """requests' adapter with one addition: ``on_send`` sees every request as it goes out (retries, and
    google-auth's re-send after refreshing an expired token, included), before any failure can hide it. Sends once:
    the store retries, seeing every attempt."""

    def __init__(self, on_send: Callable[[requests.PreparedRequest], None], pool_maxsize: int) -> None:
        super().__init__(pool_connections=1, pool_maxsize=pool_maxsize, max_retries=0)
        self._on_send = on_send

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        self._on_send(request)
        return super().send(request, *args, **kwargs)


def operation_of(method: str, url: str, content_range: str = "") -> tuple[str, str]:
    """The store operation a JSON API request is counted under, by the store interface's names (``PutObject``: a
    single-request upload; ``CreateMultipartUpload``: a resumable upload's initiation; ``UploadPart``: a chunk, or a
    session's status query; ``CompleteMultipartUpload``: the final chunk; ``AbortMultipartUpload``: a session's
    DELETE; ``GetObject``: a media download; ``HeadObject``: an object's resource; ``ListObjectsV2``: a listing;
    ``DeleteObject``; ``HeadBucket``), and the object key it names (``""``: none in the URL)."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    path = parts.path
    key = unquote(path.split("/o/", 1)[1]) if "/o/" in path else query.get("name", [""])[0]
    if path.startswith("/upload/"):
        if method == "DELETE":
            return "AbortMultipartUpload", key
        if method == "PUT" or "upload_id" in query:
            final = content_range and not content_range.endswith("/*")
            return ("CompleteMultipartUpload" if final else "UploadPart"), key
        kind = query.get("uploadType", [""])[0]
        return ("CreateMultipartUpload" if kind == "resumable" else "PutObject"), key
    if path.startswith("/batch/"):
        return "DeleteObjects", key
    if "/o/" in path:
        if method == "DELETE":
            return "DeleteObject", key
        return ("GetObject" if query.get("alt", [""])[0] == "media" else "HeadObject"), key
    if path.rstrip("/").endswith("/o"):
        return "ListObjectsV2", key
    return "HeadBucket", key


# -- failures ------------------------------------------------------------------------------------------------------
class RefusedAnswer(Exception):
    """A JSON API answer with an unexpected status: its ``status``, GCS's ``reason`` (``conditionNotMet``) and
    message, and the code the protocol table classifies it by (``NoSuchUpload`` for a gone session,
    ``NoSuchBucket`` for a missing bucket; else the reason)."""

    def __init__(self, response: requests.Response, *, session: bool = False, bucket_level: bool = False) -> None:
        self.status = response.status_code
        self.reason, self.message = _error_of(response)
        code = self.reason
        if session and self.status in SESSION_GONE_STATUSES:
            code = "NoSuchUpload"
        elif bucket_level and self.status == 404:
            code = "NoSuchBucket"
        self.code = code
        super().__init__(f"HTTP {self.status} {self.reason}: {self.message}")


def _error_of(response: requests.Response) -> tuple[str, str]:
    """GCS's ``reason`` and message of an error answer (``{"error": {"errors": [{"reason": ...}], "message":
    ...}}``), or ``("", <the body's start>)``."""
    try:
        body = response.json()
        error = body["error"]
        errors = error.get("errors") or [{}]
        return str(errors[0].get("reason") or ""), str(error.get("message") or "")
    except (ValueError, KeyError, TypeError, AttributeError):
        return "", response.text[:300].strip()


def _chained_names(error: BaseException) -> tuple[str, ...]:
    """The class names of ``error`` and of the errors it wraps (requests wraps urllib3's, whose ``reason`` says
    whether a connection was ever opened), for the table's transport kinds."""
    names: list[str] = []
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        names += class_names(current)
        pending += [arg for arg in current.args if isinstance(arg, BaseException)]
        for attribute in ("reason", "__cause__", "__context__"):
            inner = getattr(current, attribute, None)
            if isinstance(inner, BaseException):
                pending.append(inner)
    return tuple(dict.fromkeys(names))


def answer_of(error: BaseException) -> protocol.Answer:
    """The store's answer a failure of a JSON API request stands for."""
    if isinstance(error, RefusedAnswer):
        return protocol.Answer(status=error.status, code=error.code, python_classes=class_names(error))
    names = _chained_names(error)
    return protocol.Answer(transport=protocol.RULES.transport_of(names), python_classes=names)


def translate(error: BaseException, path: str, operation: str, secrets: tuple[str, ...] = ()) -> CheckpointFsError:
    """The contract's error for a failure of ``operation`` on ``path``, classified by the protocol table (its class
    in ``answer_class``); ``secrets`` and session URIs are redacted from the message."""
    if isinstance(error, CheckpointFsError):
        return error
    answer = answer_of(error)
    if isinstance(error, RefusedAnswer):
        return error_for(answer, path, operation, redact(error.message, secrets))
    final = protocol.classify(answer)
    result: CheckpointFsError
    if final.error == "AccessDeniedError":
        result = AccessDeniedError(path, f"{operation}: Google credentials could not be used "
                                         f"({type(error).__name__}: {redact(str(error), secrets)})")
    elif final.error == "StoreUnavailableError":
        result = StoreUnavailableError(path, f"{operation}: connection failed after retries: {type(error).__name__}: "
                                             f"{redact(str(error), secrets)}")
    else:
        result = StoreError(path, f"{operation} failed: {type(error).__name__}: {redact(str(error), secrets)}")
    result.answer, result.answer_class = answer, final
    return result


def object_resource(response: requests.Response, path: str) -> dict[str, Any]:
    """The JSON object resource of a successful answer; a StoreError naming ``path`` when it is not one."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise StoreError(path, f"the store answered HTTP {response.status_code} without a JSON resource")
    return body


def json_body(data: dict[str, Any]) -> bytes:
    """``data`` as the compact UTF-8 JSON the API takes."""
    return json.dumps(data, separators=(",", ":")).encode("utf-8")
