"""Encoding-phase tests run BLAS single-threaded: on the shared 2-core machine OpenBLAS
threads spinning on small matrices made chunked passes 20x slower, not faster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True)
def _single_threaded_blas() -> Iterator[None]:
    with threadpool_limits(limits=1, user_api="blas"):
        yield
