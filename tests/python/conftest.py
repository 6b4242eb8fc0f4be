"""pytest configuration of the mxq CPU test suite (run by ctest as the `pytest` test).

Importing mxq_hooks here makes a missing MXQ_TESTHOOKS library fail the whole run at collection
time instead of skipping tests.
"""
import mxq_hooks  # noqa: F401  (fails loudly when the hooks library is missing)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "exhaustive: sweeps every fp32 bit pattern (about a minute on 2 cores); runs by default, "
        "deselect with -m 'not exhaustive'")
