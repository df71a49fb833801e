"""One local Ray instance for all of tests/pool (its start-up takes seconds on a 2-core machine; it is shut
down when the package's tests end, so the rest of the suite runs without it), and a pool of CPU judges on it
shared by the tests that need no pool of their own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.candidate_sources import self_contained

from quaere.evaluate.pool import PoolSpec
from quaere.task.loader import Task, load_task

if TYPE_CHECKING:
    from quaere.evaluate.pool_ray import RayPool

FIXTURES = self_contained(Path(__file__).parent / "fixtures")
CANDIDATES = self_contained(Path(__file__).parent.parent / "fixtures" / "candidates")


@pytest.fixture(scope="package")
def ray_session() -> Iterator[str]:
    """A local Ray instance with four CPUs; yields its address."""
    ray = pytest.importorskip("ray", reason="the evaluation pool needs Ray: pip install 'quaere[cluster]'")
    from quaere.evaluate.pool_ray import NAMESPACE

    ray.init(num_cpus=4, include_dashboard=False, namespace=NAMESPACE, logging_level="ERROR", log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="package")
def pool_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pool-cache")


@pytest.fixture(scope="package")
def cpu_pool(ray_session: str, pool_cache: Path) -> Iterator[RayPool]:
    """Three CPU judges that Ray restarts when they die."""
    from quaere.evaluate.pool_ray import start_pool

    pool = start_pool(PoolSpec(size=3), "cpu", pool_cache, restarts=3)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="session")
def softmax() -> Task:
    return load_task("cpu_softmax")
