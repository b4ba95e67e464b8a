"""Records the engines talk about, built once from the catalog tables.

A :class:`Gpu` is one row of gpus.csv with units in its field names and the card knowledge every engine
needs as methods: the dense throughput a precision runs at (one fallback rule), whether a precision is
supported (BF16 needs NVIDIA compute capability 8.0, FP8 8.9), the precision training runs in, the link
between two cards, and whether the card only comes on a server baseboard (a data column, ``host_type``,
not a guess from the name). Engines take records, not table rows.

Records are cached per loaded table (:func:`gpucost.catalog.derived`), so building them costs once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from gpucost.catalog import Catalog, derived
from gpucost.errors import GpucostError, UnknownNameError
from gpucost.precisions import FALLBACK, MIN_COMPUTE_CAPABILITY, PRECISION_COLUMN, PRECISIONS
from gpucost.serialize import number

#: host types on which a card cannot be bought alone: it sits on a vendor baseboard (HGX, OAM UBB) or is
#: part of a rack-scale system, so the host is a server of that class (gpus.csv ``host_type``)
BASEBOARD_HOSTS = frozenset({"baseboard_server", "rack"})
FORM_FACTORS = ("pcie", "sxm", "oam", "superchip", "soc")
HOST_TYPES = ("desktop", "workstation", "pcie_server", "baseboard_server", "rack", "mini_pc")
#: PCIe x16 bandwidth per direction [GB/s]: 8, 16, 32, 64 GT/s per lane × 16 lanes × 128/130 encoding / 8
#: (PCI-SIG PCIe 3.0/4.0/5.0/6.0 base specifications)
PCIE_GBPS = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}
#: the catalog's nvlink_gbps is the total of both directions (NVIDIA datasheets: A100 600 GB/s,
#: H100 SXM 900 GB/s); one direction carries half
NVLINK_DIRECTIONS = 2
DEFAULT_PCIE_GEN = 4


@dataclass(frozen=True)
class Gpu:
    """One accelerator (a row of gpus.csv). Throughput is dense: TFLOPS, TOPS for int8."""

    id: str
    name: str
    vendor: str
    segment: str
    architecture: str
    vram_gib: float
    mem_bandwidth_gbps: float
    compute_capability: float | None = None
    fp32_tflops: float | None = None
    fp16_tflops: float | None = None
    bf16_tflops: float | None = None
    fp8_tflops: float | None = None
    fp4_tflops: float | None = None
    int8_tops: float | None = None
    tdp_w: float | None = None
    pcie_gen: int | None = None
    nvlink_gbps: float | None = None
    link_name: str = ""
    mig_max_instances: int = 0
    release_year: int | None = None
    form_factor: str = "pcie"
    host_type: str = "desktop"
    memory_type: str = ""            # HBM3, GDDR6X, LPDDR5x … (gpus.csv)
    source: str = ""
    as_of: str = ""

    # -- throughput ---------------------------------------------------------------------------------
    def column(self, precision: str) -> float | None:
        """The card's own figure for ``precision`` (None when the datasheet gives none)."""
        if precision not in PRECISION_COLUMN:
            raise UnknownNameError("precision", precision, PRECISION_COLUMN)
        return getattr(self, PRECISION_COLUMN[precision])

    def supports(self, precision: str) -> bool:
        """Whether the card computes in ``precision`` on tensor cores: it has a figure for it and, on
        NVIDIA, the compute capability it needs."""
        if self.column(precision) is None:
            return False
        need = MIN_COMPUTE_CAPABILITY.get(precision)
        if need is None or self.vendor != "NVIDIA" or self.compute_capability is None:
            return True
        return self.compute_capability >= need

    def compute_precision(self, dtype: str) -> str | None:
        """The precision a computation in ``dtype`` actually runs in on this card (the fallback rule)."""
        for p in FALLBACK.get(dtype, (dtype,)):
            if self.supports(p):
                return p
        return None

    def tflops(self, dtype: str) -> float | None:
        """Dense throughput [TFLOPS] of a computation in ``dtype`` on this card (see :data:`FALLBACK`)."""
        p = self.compute_precision(dtype)
        return None if p is None else self.column(p)

    @property
    def fp16_accumulate_factor(self) -> float:
        """How much faster FP16 tensor math runs with FP16 instead of FP32 accumulation. gpus.csv gives
        GeForce cards' FP16 with FP32 accumulate (what training uses); NVIDIA's GeForce parts since Turing
        run FP16 accumulate at twice that rate (Ada whitepaper appendix: RTX 4090 330.3 vs 165.2 TFLOPS;
        Ampere GA102 whitepaper: RTX 3090 142 vs 71); data-centre and workstation parts run both at one rate."""
        cc = self.compute_capability or 0.0
        return 2.0 if self.vendor == "NVIDIA" and self.segment == "consumer" and cc >= 7.5 else 1.0

    @property
    def training_precision(self) -> str:
        """bf16 where the card has BF16 tensor cores, else fp16 (mixed precision with loss scaling)."""
        return "bf16" if self.supports("bf16") else "fp16"

    @property
    def training_tflops(self) -> float | None:
        """Dense throughput of training math [TFLOPS]: the training precision, else fp32."""
        return self.tflops(self.training_precision) or self.fp32_tflops

    def require_training_tflops(self) -> float:
        t = self.training_tflops
        if t is None:
            raise GpucostError(f"no dense BF16/FP16 throughput for {self.name} in gpus.csv")
        return t

    # -- links and hosts ----------------------------------------------------------------------------
    @property
    def has_nvlink(self) -> bool:
        return self.nvlink_gbps is not None

    def link(self, kind: str = "auto") -> tuple[str, float]:
        """(link name, one-direction bandwidth [GB/s]) between two cards: NVLink-class when the card has
        one (``auto``) or when asked, else PCIe of the card's generation."""
        if kind not in ("auto", "nvlink", "pcie"):
            raise UnknownNameError("link", kind, ("auto", "nvlink", "pcie"))
        if kind in ("auto", "nvlink") and self.nvlink_gbps is not None:
            return "nvlink", self.nvlink_gbps / NVLINK_DIRECTIONS
        if kind == "nvlink":
            raise GpucostError(f"{self.id} has no NVLink-class link in the catalog")
        gen = self.pcie_gen or DEFAULT_PCIE_GEN
        return f"pcie{gen}", PCIE_GBPS.get(gen, PCIE_GBPS[DEFAULT_PCIE_GEN])

    @property
    def on_baseboard(self) -> bool:
        """Sold only on a multi-GPU server baseboard or as part of a rack-scale system."""
        return self.host_type in BASEBOARD_HOSTS

    @property
    def has_hbm(self) -> bool:
        """High-bandwidth memory stacked beside the die (the data-centre cards: A100, H100, MI300X …)."""
        return self.memory_type.upper().startswith("HBM")

    @property
    def is_geforce(self) -> bool:
        return self.vendor == "NVIDIA" and self.segment == "consumer"


_FIELDS = tuple(Gpu.__dataclass_fields__)
#: a user's gpus.csv without form_factor/host_type: a PCIe card in the host its segment implies
_DEFAULT_HOST = {"consumer": {"form_factor": "pcie", "host_type": "desktop"},
                 "workstation": {"form_factor": "pcie", "host_type": "workstation"},
                 "datacenter": {"form_factor": "pcie", "host_type": "pcie_server"}}


def gpu_from_row(row: Mapping) -> Gpu:
    """A :class:`Gpu` from one gpus.csv row (a mapping of its columns)."""
    kw: dict[str, object] = {}
    for name in _FIELDS:
        v = row.get(name)
        if name in ("id", "name", "vendor", "segment", "architecture", "source", "as_of"):
            kw[name] = str(v if v is not None else "")
        elif name in ("link_name", "memory_type"):
            kw[name] = "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
        elif name in ("form_factor", "host_type"):
            text = "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
            kw[name] = text or _DEFAULT_HOST[str(row.get("segment") or "consumer")][name]
        elif name in ("pcie_gen", "release_year"):
            x = number(v)
            kw[name] = None if x is None else int(x)
        elif name == "mig_max_instances":
            kw[name] = int(number(v) or 0)
        elif name == "vram_gib":
            kw[name] = float(number(v) or 0.0)
        elif name == "mem_bandwidth_gbps":  # NaN: the vendor publishes no figure (Ascend); speed says so
            bw = number(v)
            kw[name] = math.nan if bw is None else float(bw)
        else:
            kw[name] = number(v)
    return Gpu(**kw)  # type: ignore[arg-type]


def _build(gpus_table) -> dict[str, Gpu]:
    return {str(r["id"]): gpu_from_row(r) for r in gpus_table.to_dict(orient="records")}


def gpu_records(catalog: Catalog) -> dict[str, Gpu]:
    """Every card of the catalog by id, built once per loaded gpus table."""
    return derived(catalog.gpus, "gpu_records", _build)


def gpu(catalog: Catalog, name: str) -> Gpu:
    """The :class:`Gpu` for an id, name, NVML name or alias ("RTX 4090", "A100 80GB SXM")."""
    return gpu_records(catalog)[catalog.gpu_id(name)]


__all__ = ["Gpu", "gpu", "gpu_records", "gpu_from_row", "PRECISION_COLUMN", "PRECISIONS",
           "MIN_COMPUTE_CAPABILITY", "FORM_FACTORS", "HOST_TYPES", "PCIE_GBPS"]
