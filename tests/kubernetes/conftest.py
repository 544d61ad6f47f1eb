"""The Kubernetes tests' API server: fabric8's mock (harness.servers.k8s_mock) in CRUD mode on 127.0.0.1, started
once per module and stopped by its pid."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.servers.k8s_mock import KubernetesMock


@pytest.fixture(scope="module")
def k8s_api() -> Iterator[KubernetesMock]:
    """A mock API server that stores what it is sent (pods, config maps, services) and serves it back."""
    with KubernetesMock() as api:
        yield api
