"""Input generators for the element-conversion tests: exhaustive bit patterns of the 16-bit
types and of fp32, every code of each format, and random fp32 sets aimed at rounding ties.
Inputs only; the expected values come from element_oracle.py."""
import ml_dtypes
import numpy as np

ELEMENT_FORMATS = ("float8_e4m3fn", "float8_e5m2", "float4_e2m1fn")
CODES_PER_FORMAT = {"float8_e4m3fn": 256, "float8_e5m2": 256, "float4_e2m1fn": 16, "float8_e8m0fnu": 256}


def all_bf16_bits():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def all_fp16_bits():
    return all_bf16_bits()


def bf16_bits_as_f32(h):
    """bf16 -> fp32 exactly: the 16 bits are the top half of the fp32 pattern."""
    return (h.astype(np.uint32) << 16).view(np.float32)


def fp16_bits_as_f32(h):
    """fp16 -> fp32 exactly (numpy's widening conversion is exact, NaN payloads included)."""
    return h.view(np.float16).astype(np.float32)


def all_16bit_inputs():
    """(name, fp32 array) for every bf16 and every fp16 bit pattern."""
    return [("bfloat16", bf16_bits_as_f32(all_bf16_bits())), ("float16", fp16_bits_as_f32(all_fp16_bits()))]


def all_codes(fmt):
    return np.arange(CODES_PER_FORMAT[fmt], dtype=np.uint32).astype(np.uint8)


def fp32_chunk(start, count):
    """The bit patterns [start, start + count) as uint32, and the same memory viewed as fp32."""
    bits = np.arange(count, dtype=np.uint32) + np.uint32(start)
    return bits, bits.view(np.float32)


def random_fp32(seed, n):
    """Random fp32 sets, as (name, array):
    - uniform bit patterns (every exponent, NaNs and Infs included);
    - patterns with exponents in and around the fp16 range, where most fp16 rounding happens;
    - exact bf16 ties (low 16 bits 0x8000) and exact fp16 ties (normal: low 13 bits 0x1000;
      subnormal: odd multiples of 2^-25), each with random signs."""
    rng = np.random.default_rng(seed)
    sign = rng.integers(0, 2, n, dtype=np.uint32) << 31
    uniform = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    exp = rng.integers(127 - 30, 127 + 18, n, dtype=np.uint32)
    mant = rng.integers(0, 1 << 23, n, dtype=np.uint32)
    near_fp16 = sign | (exp << 23) | mant
    bf16_ties = (uniform & np.uint32(0xFFFF0000)) | np.uint32(0x8000)
    fp16_normal_ties = sign | (rng.integers(127 - 14, 127 + 16, n, dtype=np.uint32) << 23) | (
        mant & np.uint32(0x7FE000)) | np.uint32(0x1000)
    k = rng.integers(0, 1 << 10, n, dtype=np.uint32).astype(np.float32)
    fp16_subnormal_ties = ((2 * k + 1) * np.float32(2.0 ** -25)).view(np.uint32) | sign
    return [("uniform bits", uniform.view(np.float32)),
            ("exponents near the fp16 range", near_fp16.view(np.float32)),
            ("bf16 ties", bf16_ties.view(np.float32)),
            ("fp16 normal ties", fp16_normal_ties.view(np.float32)),
            ("fp16 subnormal ties", fp16_subnormal_ties.view(np.float32))]


def ml_dtype(name):
    return getattr(ml_dtypes, name)
