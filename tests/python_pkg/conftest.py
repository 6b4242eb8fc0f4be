"""pytest over the installed mxq package (pip install .): these tests import `mxq` from the
environment, never from python/ in the source tree."""
import pathlib

import numpy as np
import pytest

import mxq

REPO = pathlib.Path(__file__).resolve().parents[2]
assert not pathlib.Path(mxq.__file__).resolve().is_relative_to(REPO / "python"), (
    f"mxq imported from the source tree ({mxq.__file__}); install it: pip install .")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (sm_90+) and torch with CUDA; SKIPPED elsewhere")
