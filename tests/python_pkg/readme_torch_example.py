import torch, mxq
x = torch.randn(4096, 7168, dtype=torch.bfloat16, device="cuda")
q = mxq.quantize(x, "mxfp8:dir=both")  # one pass: rowwise, and K-major columnwise for the GEMM's B
y = mxq.dequantize(q, dtype=torch.bfloat16)
print(q.data.dtype, q.scales.dtype, tuple(q.col_data.shape), (y - x).abs().max().item())
