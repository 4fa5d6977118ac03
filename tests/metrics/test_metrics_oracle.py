"""Every streaming metric against TensorFlow on one table of cases (tests/metrics/cases.py):
values after each of two update batches, the final value, the variable names and the
names of the value and update tensors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflux as tf
from tests import oracle
from tests.metrics.cases import PROGRAM

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def both():
    return oracle.run_both(PROGRAM, tf, timeout=300)


def _case_names():
    import re

    return re.findall(r'^    "(\w+)": lambda', PROGRAM, flags=re.M)


@pytest.mark.parametrize("case", _case_names())
def test_metric_matches_tensorflow(both, case):
    ours, theirs = both
    got, want = ours[case], theirs[case]
    for i, (g, w) in enumerate(zip(got["updates"], want["updates"], strict=True)):
        np.testing.assert_allclose(g, np.asarray(w, np.float64), rtol=2e-5, atol=1e-6,
                                   err_msg=f"{case}: update {i}")
    np.testing.assert_allclose(got["value"], np.asarray(want["value"], np.float64),
                               rtol=2e-5, atol=1e-6, err_msg=f"{case}: value")
    assert got["scope"] == want["scope"]
    assert got["vars"] == want["vars"]
    assert got["names"] == want["names"]
