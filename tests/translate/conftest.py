"""``device``: a started backend of each available kind, shared with the array tests' fixture."""

from tests.numpy.conftest import device, pytest_sessionfinish  # noqa: F401  (fixture and hook)
