"""Every fp32 bit pattern (2^32) through encode(..., satfinite) for each element format,
against ml_dtypes plus the satfinite rule (FORMATS.md section 1). Chunks of 2^24 patterns are
checked by a pool of worker processes, one per core."""
import multiprocessing
import os
import time

import numpy as np
import pytest

import mxq_hooks
from element_cases import ELEMENT_FORMATS, fp32_chunk
from element_oracle import E2M1_NAN_CODE, describe_mismatches, expected_codes, ml_codes

CHUNK = 1 << 24
TOTAL = 1 << 32


def check_chunk(start):
    """Returns {format: (inputs compared with ml_dtypes, mismatches, NaN inputs checked against
    our rule, mismatches there, examples)} for the patterns [start, start + CHUNK)."""
    bits, x = fp32_chunk(start, CHUNK)
    x_nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    x_neg = bits >= np.uint32(0x80000000)
    result = {}
    for fmt in ELEMENT_FORMATS:
        got = mxq_hooks.encode(x, fmt, mxq_hooks.SATFINITE)
        want = expected_codes(x, fmt, mxq_hooks.SATFINITE, ref=ml_codes(x, fmt), x_nan=x_nan, x_neg=x_neg)
        if fmt == "float4_e2m1fn":  # NaN: our rule, not ml_dtypes' (see element_oracle.py)
            want[x_nan] = E2M1_NAN_CODE
            nan_checked, nan_bad = int(np.count_nonzero(x_nan)), int(np.count_nonzero(got[x_nan] != E2M1_NAN_CODE))
            compared = CHUNK - nan_checked
        else:
            nan_checked, nan_bad, compared = 0, 0, CHUNK
        bad = np.count_nonzero(got != want)
        result[fmt] = (compared, int(bad) - nan_bad, nan_checked, nan_bad,
                       describe_mismatches(x, got, want) if bad else "")
    return result


@pytest.mark.exhaustive
def test_every_fp32_pattern_satfinite():
    workers = min(2, os.cpu_count() or 1)
    totals = {f: [0, 0, 0, 0, []] for f in ELEMENT_FORMATS}
    t0 = time.monotonic()
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        for res in pool.imap_unordered(check_chunk, range(0, TOTAL, CHUNK)):
            for fmt, (compared, bad, nan_checked, nan_bad, examples) in res.items():
                t = totals[fmt]
                t[0] += compared
                t[1] += bad
                t[2] += nan_checked
                t[3] += nan_bad
                if examples and len(t[4]) < 3:
                    t[4].append(examples)
    elapsed = time.monotonic() - t0
    for fmt, (compared, bad, nan_checked, nan_bad, examples) in totals.items():
        print(f"fp32 sweep {fmt}: {compared} inputs vs ml_dtypes, {bad} mismatches; "
              f"{nan_checked} NaN inputs vs our rule, {nan_bad} mismatches ({elapsed:.1f} s, {workers} workers)")
    for fmt, (compared, bad, nan_checked, nan_bad, examples) in totals.items():
        assert compared + nan_checked == TOTAL, fmt
        assert bad == 0 and nan_bad == 0, f"{fmt}: {bad} + {nan_bad} mismatches, e.g. {examples}"
    # E2M1 NaN inputs: every pattern with exponent 0xff and a non-zero mantissa, both signs.
    assert totals["float4_e2m1fn"][2] == 2 * ((1 << 23) - 1)
