"""Compute precisions of a card: the gpus.csv column of each one's dense throughput, the NVIDIA compute
capability its tensor math needs, and the one fallback rule. Light on purpose (no pandas): the CLI's
argument parser takes its choices from here."""

from __future__ import annotations

#: precision → the gpus.csv column of its dense throughput (TOPS for int8)
PRECISION_COLUMN = {"fp32": "fp32_tflops", "fp16": "fp16_tflops", "bf16": "bf16_tflops",
                    "fp8": "fp8_tflops", "fp4": "fp4_tflops", "int8": "int8_tops"}
PRECISIONS = tuple(PRECISION_COLUMN)
#: the minimum NVIDIA compute capability of tensor-core math in a precision (CUDA programming guide:
#: BF16 tensor cores from Ampere, 8.0; FP8 from Ada/Hopper, 8.9; FP4 from Blackwell, 10.0 — sm_100 data-centre,
#: sm_120 GeForce/RTX PRO; llm-compressor: NVFP4 "Supported on NVIDIA Blackwell (SM100) GPUs or later")
MIN_COMPUTE_CAPABILITY = {"bf16": 8.0, "fp8": 8.9, "fp4": 10.0}
#: the one fallback rule: when a card has no figure for a compute dtype, the next column is used
#: (a weight-only, FP8 or FP4 format on a card without its tensor math computes in 16 bits — vLLM runs an NVFP4
#: checkpoint weight-only through Marlin before Blackwell; fp16 and bf16 run at the same tensor rate on every
#: card that has both)
FALLBACK = {"fp8": ("fp8", "fp16", "bf16"), "fp4": ("fp4", "fp16", "bf16"), "bf16": ("bf16", "fp16"),
            "fp16": ("fp16", "bf16"), "fp32": ("fp32",), "int8": ("int8",)}
