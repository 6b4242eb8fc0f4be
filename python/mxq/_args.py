"""Checks of the package's plain arguments (flags, integers, names), run before a value reaches
the binding: nanobind's own type errors name neither the call nor the argument, and Python's
truthiness or int() would take "no" as True and 64.5 as 64. Each error names the call, the
argument, the value and what was expected."""
from __future__ import annotations

import math

import numpy as np

INT32 = (-2**31, 2**31 - 1)  # a C++ int
INT64 = (-2**63, 2**63 - 1)  # a C++ int64_t
SIZE = (0, 2**63 - 1)  # a shape's extent
# float32's rounding of a float64 (round to nearest, ties to even): magnitudes from the tie above
# its largest finite value up become inf, and those up to the tie below its least subnormal 0
_F32_TO_INF = 2.0**128 - 2.0**103
_F32_TO_ZERO = 2.0**-150


def _outside_f32(m):
    """Whether float32 turns the magnitude m (float64: a float, or a NumPy array of them) into inf
    or 0 when it is neither: comparisons alone, which torch.compile traces for a float."""
    return ((m >= _F32_TO_INF) & (m < math.inf)) | ((m > 0) & (m <= _F32_TO_ZERO))


def check_bool(v, op: str, name: str) -> bool:
    """v as a bool; True, False (or NumPy's bool) only: 1, "no" and None are refused."""
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{op}: {name}={v!r}; expected a bool")
    return bool(v)


def is_int(v) -> bool:
    """An int, NumPy integer or torch.SymInt (a dynamic shape's size), not a bool (nor a float,
    however whole)."""
    if type(v).__name__ == "SymInt":
        return True
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def check_int(v, op: str, name: str, expected: str, bounds=INT64) -> int:
    """v as an int within bounds; a float, bool or str is refused, never truncated."""
    if not is_int(v):
        raise TypeError(f"{op}: {name}={v!r}; expected an int ({expected})")
    if not bounds[0] <= int(v) <= bounds[1]:
        raise ValueError(f"{op}: {name}={int(v)} is out of range; expected {expected}")
    return int(v)


def check_str(v, op: str, name: str, expected: str) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{op}: {name}={v!r}; expected a str ({expected})")
    return v


def check_f32(v, op: str, name: str):
    """v (a number, or a host array of them) if float32 holds it: a float64 value beyond float32's
    range would become inf, and a tiny non-zero one 0, and the call would quietly run on that.
    NaN and Inf pass (the C++ API judges them), as do device arrays (never read on the host)."""
    if isinstance(v, (int, float)):
        # a Python number (a bool, np.float64 too), without numpy: torch.compile's fullgraph mode cannot
        # trace numpy's errstate nor type(v).__module__ of a float; an int reaches the binding
        # through float64 as a float would
        huge = isinstance(v, int) and abs(v) >= 2**1024  # beyond float64 too (float() would raise)
        bad = huge or _outside_f32(abs(float(v)))
    elif hasattr(v, "__cuda_array_interface__") or type(v).__module__.split(".")[0] == "torch":
        return v
    else:
        a = np.asarray(v)
        if a.dtype.kind not in "iuf" or (a.dtype.kind == "f" and a.dtype.itemsize <= 4):
            return v
        bad = bool(_outside_f32(np.abs(a.astype(np.float64))).any())
    if bad:
        raise ValueError(f"{op}: {name}={v!r} is outside float32's range; expected 0 or a magnitude between "
                         "1.4e-45 and 3.4e+38")
    return v
