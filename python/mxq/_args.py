"""Checks of the package's plain arguments (flags, integers, names), run before a value reaches
the binding: nanobind's own type errors name neither the call nor the argument, and Python's
truthiness or int() would take "no" as True and 64.5 as 64. Each error names the call, the
argument, the value and what was expected."""
from __future__ import annotations

import numpy as np

INT32 = (-2**31, 2**31 - 1)  # a C++ int
INT64 = (-2**63, 2**63 - 1)  # a C++ int64_t
SIZE = (0, 2**63 - 1)  # a shape's extent


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
