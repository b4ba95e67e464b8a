"""Unit constants: each defined once, used everywhere (names say the unit).

Hours: a year is 365 days (8760 h); an average month is a twelfth of it (730 h), which is also what cloud
providers bill as a month. Memory: GiB = 2^30 bytes (what llama.cpp, PyTorch and nvidia-smi's MiB use);
GB = 10^9 bytes (what Hugging Face file lists and datasheets use).
"""

from __future__ import annotations

HOURS_PER_DAY = 24
HOURS_PER_YEAR = 365 * HOURS_PER_DAY          # 8760 h
MONTHS_PER_YEAR = 12
HOURS_PER_MONTH = HOURS_PER_YEAR / MONTHS_PER_YEAR   # 730 h: an average month
SECONDS_PER_HOUR = 3600

BYTES_PER_GIB = 2**30
BYTES_PER_MIB = 2**20
BYTES_PER_GB = 10**9
MIB_PER_GIB = 1024
GIB_PER_GB = BYTES_PER_GB / BYTES_PER_GIB     # 0.931…

WATTS_PER_KW = 1000
J_PER_KWH = 3.6e6                             # 1 kWh = 1000 W × 3600 s

TOKENS_PER_MILLION = 1e6
TFLOPS = 1e12                                 # FLOP/s in one TFLOPS
