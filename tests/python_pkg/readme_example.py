import numpy as np, mxq
x = np.random.default_rng(0).standard_normal((256, 1024), dtype=np.float32)
q = mxq.quantize(x, "mxfp8")  # float8_e4m3fn data, one float8_e8m0fnu scale per 1x32 block
y = mxq.dequantize(q)
print(q, "max error", float(np.abs(y - x).max()))
