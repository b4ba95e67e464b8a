"""A fake of the ``pynvml`` module (nvidia-ml-py) for tests, benchmarks and the page's demo mode.

It answers the NVML calls that :mod:`gpucost.probe` makes, from plain Python records, and raises the
real ``pynvml`` exception classes (``NVMLError_NotSupported``, ``NVMLError_GpuIsLost``, …) that the
probe binds in with :meth:`FakeNVML.bind` (``gpucost.probe.set_nvml`` does it). This module never
imports ``pynvml`` itself — only ``gpucost/probe.py`` does — so without nvidia-ml-py it falls back to
stand-in classes of the same names.

Scenarios (each a function returning a :class:`FakeNVML`):

* :func:`no_library` — ``nvmlInit`` raises ``NVMLError_LibraryNotFound`` (no driver);
* :func:`power_not_supported` — one GPU whose power reading raises ``NVMLError_NotSupported``;
* :func:`gpu_lost` — two GPUs, the second one lost after a few utilization reads (``GpuIsLost``);
* :func:`mig_a100` — an A100 80GB in MIG mode with three instances (no per-GPU utilization then);
* :func:`two_gpus` — an RTX 4090 and an A100 80GB, different in every capability;
* :func:`fleet` — N copies of an H100 (for the benchmark);
* :func:`demo` — the page's demo: an RTX 4090 busy then idle, an A100 with full memory, driven by a
  clock (simulated time), every number stated in :data:`DEMO_SCRIPT`; five processes of four users
  (alice, bob, carol, dave) share the two cards, each with its SM share.

The figures here describe make-believe GPUs; they are not measurements and not catalog data.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

MIB = 2**20

# -- NVML constants the probe uses (same values as pynvml / nvml.h) -------------------------------------
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1

#: error name → NVML return code (nvml.h), for the stand-in classes
_ERRORS = {
    "NVMLError_Uninitialized": 1, "NVMLError_InvalidArgument": 2, "NVMLError_NotSupported": 3,
    "NVMLError_NoPermission": 4, "NVMLError_NotFound": 6, "NVMLError_DriverNotLoaded": 9,
    "NVMLError_LibraryNotFound": 12, "NVMLError_FunctionNotFound": 13, "NVMLError_GpuIsLost": 15,
    "NVMLError_Unknown": 999,
}
_MESSAGES = {1: "Uninitialized", 2: "Invalid Argument", 3: "Not Supported", 4: "Insufficient Permissions",
             6: "Not Found", 9: "Driver Not Loaded", 12: "NVML Shared Library Not Found",
             13: "Function Not Found", 15: "GPU is lost", 999: "Unknown Error"}


def stand_in_errors() -> SimpleNamespace:
    """Exception classes named and numbered like pynvml's, for when nvidia-ml-py is not installed."""

    class NVMLError(Exception):
        value = 999

        def __str__(self) -> str:
            return _MESSAGES.get(self.value, f"NVML error {self.value}")

    ns = SimpleNamespace(NVMLError=NVMLError)
    for name, code in _ERRORS.items():
        setattr(ns, name, type(name, (NVMLError,), {"value": code}))
    return ns


@dataclass
class FakeMig:
    """One MIG instance: a slice of a GPU with its own memory."""

    name: str
    memory_total_mib: float
    memory_used_mib: float
    gpu_instance_id: int
    compute_instance_id: int = 0
    uuid: str = ""


#: NVML's "no MIG instance" gpuInstanceId in a process record (0xFFFFFFFF)
NO_INSTANCE = 0xFFFFFFFF


@dataclass
class FakeProcess:
    """A process on a fake GPU. ``sm_util``: its share of SM time [%] (nvmlDeviceGetProcessUtilization),
    a number or a function of the fake's clock; ``user``: who owns it (the probe asks the fake instead of
    /proc, where these pids do not exist); ``gpu_instance_id``: its MIG instance."""

    pid: int
    name: str
    used_memory_mib: float | None  # None: NVML could not say (Windows WDDM, some containers)
    kind: str = "compute"  # compute | graphics
    user: str | None = None
    sm_util: float | Callable[[float], float] = 0.0
    gpu_instance_id: int = NO_INSTANCE


@dataclass
class FakeGPU:
    """What one fake GPU answers. ``unsupported`` lists NVML function names that raise NotSupported;
    ``lost_after_reads``: after that many utilization reads, every call raises GpuIsLost;
    ``script(t)`` returns changing fields (util_gpu, util_mem, mem_used_mib, power_w, temperature_c,
    sm_clock_mhz) at ``t`` seconds of the fake's clock."""

    name: str
    uuid: str
    memory_total_mib: float
    memory_used_mib: float = 0.0
    memory_reserved_mib: float = 0.0  # what the driver holds (in v1's "used", apart in v2)
    util_gpu: int = 0
    util_mem: int = 0
    temperature_c: int = 40
    power_w: float = 50.0
    power_limit_w: float = 300.0
    sm_clock_mhz: int = 1000
    sm_clock_max_mhz: int = 2000
    mem_clock_mhz: int = 5000
    mem_clock_max_mhz: int = 10000
    pcie_gen: int = 4
    pcie_width: int = 16
    pcie_gen_max: int = 4
    pcie_width_max: int = 16
    compute_capability: tuple[int, int] = (8, 0)
    mig_mode: int | None = None  # None: MIG not supported (raises NotSupported)
    mig_instances: list[FakeMig] = field(default_factory=list)
    mig_slots: int = 7
    ecc_mode: int | None = None  # None: ECC not supported
    ecc_counts: dict[tuple[int, int], int] = field(default_factory=dict)  # (error type, counter) → n
    processes: list[FakeProcess] = field(default_factory=list)
    unsupported: set[str] = field(default_factory=set)
    lost_after_reads: int | None = None
    script: Callable[[float], dict] | None = None
    util_reads: int = 0
    lost: bool = False


class _Handle:
    __slots__ = ("gpu", "index", "mig")

    def __init__(self, gpu: FakeGPU, index: int, mig: FakeMig | None = None):
        self.gpu, self.index, self.mig = gpu, index, mig


class FakeNVML:
    """A stand-in for the ``pynvml`` module. Pass it to ``gpucost.probe.set_nvml`` (or put it in
    ``sys.modules["pynvml"]`` after :meth:`bind`). ``clock`` drives the GPUs' ``script``s."""

    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_CLOCK_MEM = NVML_CLOCK_MEM
    NVML_DEVICE_MIG_DISABLE = NVML_DEVICE_MIG_DISABLE
    NVML_DEVICE_MIG_ENABLE = NVML_DEVICE_MIG_ENABLE
    NVML_MEMORY_ERROR_TYPE_CORRECTED = NVML_MEMORY_ERROR_TYPE_CORRECTED
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    NVML_VOLATILE_ECC = NVML_VOLATILE_ECC
    NVML_AGGREGATE_ECC = NVML_AGGREGATE_ECC
    nvmlMemory_v2 = 0x02000028  # pynvml's version tag of the v2 memory struct

    is_fake = True

    def __init__(self, gpus: list[FakeGPU], *, driver_version: str = "550.54.15", cuda_version: int = 12040,
                 init_error: str | None = None, errors: Any = None, clock: Callable[[], float] | None = None,
                 label: str = "fake"):
        self.gpus = gpus
        self.driver_version = driver_version
        self.cuda_version = cuda_version
        self.init_error = init_error
        self.label = label
        self._clock = clock or time.monotonic
        self._t0 = self._clock()
        self.initialized = False
        self.calls = 0
        self.bind(errors)

    # -- errors -----------------------------------------------------------------------------------
    def bind(self, errors: Any = None) -> FakeNVML:
        """Raise the exception classes of ``errors`` (the real pynvml module); stand-ins when None."""
        src = errors if errors is not None else stand_in_errors()
        self.errors_bound = errors is not None
        self.NVMLError = src.NVMLError
        for name in _ERRORS:
            setattr(self, name, getattr(src, name))
        return self

    def _raise(self, name: str):
        raise getattr(self, name)()

    # -- helpers ----------------------------------------------------------------------------------
    def now(self) -> float:
        """Seconds of the fake's clock since it was made."""
        return self._clock() - self._t0

    def _live(self, h: _Handle, fn: str) -> FakeGPU:
        self.calls += 1
        if not self.initialized:
            self._raise("NVMLError_Uninitialized")
        gpu = h.gpu
        if gpu.lost:
            self._raise("NVMLError_GpuIsLost")
        if fn in gpu.unsupported:
            self._raise("NVMLError_NotSupported")
        return gpu

    def _dyn(self, gpu: FakeGPU, key: str):
        if gpu.script is not None:
            vals = gpu.script(self.now())
            if key in vals:
                return vals[key]
        return getattr(gpu, key)

    # -- the pynvml API the probe uses --------------------------------------------------------------
    def nvmlInit(self) -> None:
        if self.init_error:
            self._raise(self.init_error)
        self.initialized = True

    def nvmlShutdown(self) -> None:
        self.initialized = False

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver_version

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda_version

    def nvmlDeviceGetCount(self) -> int:
        if not self.initialized:
            self._raise("NVMLError_Uninitialized")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        if not 0 <= index < len(self.gpus):
            self._raise("NVMLError_InvalidArgument")
        return _Handle(self.gpus[index], index)

    def nvmlDeviceGetName(self, h: _Handle) -> str:
        gpu = self._live(h, "nvmlDeviceGetName")
        return h.mig.name if h.mig else gpu.name

    def nvmlDeviceGetUUID(self, h: _Handle) -> str:
        gpu = self._live(h, "nvmlDeviceGetUUID")
        return h.mig.uuid if h.mig else gpu.uuid

    def nvmlDeviceGetCudaComputeCapability(self, h: _Handle) -> tuple[int, int]:
        return self._live(h, "nvmlDeviceGetCudaComputeCapability").compute_capability

    def nvmlDeviceGetMemoryInfo(self, h: _Handle, version: int | None = None):
        gpu = self._live(h, "nvmlDeviceGetMemoryInfo")
        if h.mig:
            total, used, reserved = h.mig.memory_total_mib, h.mig.memory_used_mib, 0.0
        else:
            total, used = gpu.memory_total_mib, self._dyn(gpu, "memory_used_mib")
            reserved = gpu.memory_reserved_mib
        if version is None:  # v1: used includes what the driver reserves
            return SimpleNamespace(total=int(total * MIB), used=int((used + reserved) * MIB),
                                   free=int((total - used - reserved) * MIB))
        if "nvmlMemory_v2" in gpu.unsupported:
            self._raise("NVMLError_NotSupported")
        return SimpleNamespace(version=version, total=int(total * MIB), reserved=int(reserved * MIB),
                               used=int(used * MIB), free=int((total - used - reserved) * MIB))

    def nvmlDeviceGetUtilizationRates(self, h: _Handle):
        gpu = self._live(h, "nvmlDeviceGetUtilizationRates")
        if gpu.lost_after_reads is not None:
            if gpu.util_reads >= gpu.lost_after_reads:
                gpu.lost = True  # from now on every call on this GPU raises GpuIsLost
                self._raise("NVMLError_GpuIsLost")
            gpu.util_reads += 1
        if gpu.mig_mode == NVML_DEVICE_MIG_ENABLE:
            self._raise("NVMLError_NotSupported")  # NVML has no whole-GPU utilization in MIG mode
        return SimpleNamespace(gpu=self._dyn(gpu, "util_gpu"), memory=self._dyn(gpu, "util_mem"))

    def nvmlDeviceGetTemperature(self, h: _Handle, sensor: int) -> int:
        return self._dyn(self._live(h, "nvmlDeviceGetTemperature"), "temperature_c")

    def nvmlDeviceGetPowerUsage(self, h: _Handle) -> int:
        return int(round(self._dyn(self._live(h, "nvmlDeviceGetPowerUsage"), "power_w") * 1000))  # mW

    def nvmlDeviceGetEnforcedPowerLimit(self, h: _Handle) -> int:
        return int(round(self._live(h, "nvmlDeviceGetEnforcedPowerLimit").power_limit_w * 1000))  # mW

    def nvmlDeviceGetClockInfo(self, h: _Handle, clock: int) -> int:
        gpu = self._live(h, "nvmlDeviceGetClockInfo")
        return self._dyn(gpu, "sm_clock_mhz") if clock == NVML_CLOCK_SM else gpu.mem_clock_mhz

    def nvmlDeviceGetMaxClockInfo(self, h: _Handle, clock: int) -> int:
        gpu = self._live(h, "nvmlDeviceGetMaxClockInfo")
        return gpu.sm_clock_max_mhz if clock == NVML_CLOCK_SM else gpu.mem_clock_max_mhz

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: _Handle) -> int:
        return self._live(h, "nvmlDeviceGetCurrPcieLinkGeneration").pcie_gen

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: _Handle) -> int:
        return self._live(h, "nvmlDeviceGetCurrPcieLinkWidth").pcie_width

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: _Handle) -> int:
        return self._live(h, "nvmlDeviceGetMaxPcieLinkGeneration").pcie_gen_max

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: _Handle) -> int:
        return self._live(h, "nvmlDeviceGetMaxPcieLinkWidth").pcie_width_max

    def nvmlDeviceGetMigMode(self, h: _Handle) -> list[int]:
        gpu = self._live(h, "nvmlDeviceGetMigMode")
        if gpu.mig_mode is None:
            self._raise("NVMLError_NotSupported")
        return [gpu.mig_mode, gpu.mig_mode]

    def nvmlDeviceGetMaxMigDeviceCount(self, h: _Handle) -> int:
        gpu = self._live(h, "nvmlDeviceGetMaxMigDeviceCount")
        if gpu.mig_mode is None:
            self._raise("NVMLError_NotSupported")
        return gpu.mig_slots

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: _Handle, index: int) -> _Handle:
        gpu = self._live(h, "nvmlDeviceGetMigDeviceHandleByIndex")
        if gpu.mig_mode != NVML_DEVICE_MIG_ENABLE:
            self._raise("NVMLError_InvalidArgument")
        if not 0 <= index < len(gpu.mig_instances):
            self._raise("NVMLError_NotFound")
        return _Handle(gpu, index, gpu.mig_instances[index])

    def nvmlDeviceGetGpuInstanceId(self, h: _Handle) -> int:
        self._live(h, "nvmlDeviceGetGpuInstanceId")
        if h.mig is None:
            self._raise("NVMLError_InvalidArgument")
        return h.mig.gpu_instance_id

    def nvmlDeviceGetComputeInstanceId(self, h: _Handle) -> int:
        self._live(h, "nvmlDeviceGetComputeInstanceId")
        if h.mig is None:
            self._raise("NVMLError_InvalidArgument")
        return h.mig.compute_instance_id

    def nvmlDeviceGetEccMode(self, h: _Handle) -> list[int]:
        gpu = self._live(h, "nvmlDeviceGetEccMode")
        if gpu.ecc_mode is None:
            self._raise("NVMLError_NotSupported")
        return [gpu.ecc_mode, gpu.ecc_mode]

    def nvmlDeviceGetTotalEccErrors(self, h: _Handle, error_type: int, counter_type: int) -> int:
        gpu = self._live(h, "nvmlDeviceGetTotalEccErrors")
        if gpu.ecc_mode is None:
            self._raise("NVMLError_NotSupported")
        return gpu.ecc_counts.get((error_type, counter_type), 0)

    def _procs(self, h: _Handle, kind: str, fn: str) -> list:
        gpu = self._live(h, fn)
        return [SimpleNamespace(pid=p.pid, usedGpuMemory=None if p.used_memory_mib is None
                                else int(p.used_memory_mib * MIB), gpuInstanceId=p.gpu_instance_id,
                                computeInstanceId=0 if p.gpu_instance_id != NO_INSTANCE else NO_INSTANCE)
                for p in gpu.processes if p.kind == kind]

    def nvmlDeviceGetProcessUtilization(self, h: _Handle, last_seen_timestamp: int) -> list:
        """One sample per process since ``last_seen_timestamp`` [µs]: its SM share now; NotFound when no
        process ran (as NVML says then), NotSupported in MIG mode."""
        gpu = self._live(h, "nvmlDeviceGetProcessUtilization")
        if gpu.mig_mode == NVML_DEVICE_MIG_ENABLE:
            self._raise("NVMLError_NotSupported")
        now_us = int(self.now() * 1e6) + 1
        procs = [p for p in gpu.processes if p.kind == "compute"]
        if not procs or now_us <= last_seen_timestamp:
            self._raise("NVMLError_NotFound")
        return [SimpleNamespace(pid=p.pid, timeStamp=now_us,
                                smUtil=int(round(p.sm_util(self.now()) if callable(p.sm_util) else p.sm_util)),
                                memUtil=0, encUtil=0, decUtil=0) for p in procs]

    def process_owner(self, pid: int) -> str | None:
        """Who owns fake process ``pid`` (the fake's stand-in for /proc/PID's owner)."""
        for gpu in self.gpus:
            for p in gpu.processes:
                if p.pid == pid:
                    return p.user
        return None

    def nvmlDeviceGetComputeRunningProcesses(self, h: _Handle) -> list:
        return self._procs(h, "compute", "nvmlDeviceGetComputeRunningProcesses")

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: _Handle) -> list:
        return self._procs(h, "graphics", "nvmlDeviceGetGraphicsRunningProcesses")

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        for gpu in self.gpus:
            for p in gpu.processes:
                if p.pid == pid:
                    return p.name
        self._raise("NVMLError_NotFound")


# --------------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------------

def _rtx_4090(**kw) -> FakeGPU:
    base = dict(name="NVIDIA GeForce RTX 4090", uuid="GPU-4090aaaa-0000-0000-0000-000000000001",
                memory_total_mib=24564, memory_used_mib=18000, util_gpu=87, util_mem=41, temperature_c=66,
                power_w=372.5, power_limit_w=450, sm_clock_mhz=2520, sm_clock_max_mhz=3120,
                mem_clock_mhz=10501, mem_clock_max_mhz=10501, pcie_gen=4, pcie_width=16, pcie_gen_max=4,
                pcie_width_max=16, compute_capability=(8, 9),
                processes=[FakeProcess(4242, "python train.py", 17500.0)])
    base.update(kw)
    return FakeGPU(**base)


def _a100_80gb(**kw) -> FakeGPU:
    base = dict(name="NVIDIA A100-SXM4-80GB", uuid="GPU-a100bbbb-0000-0000-0000-000000000002",
                memory_total_mib=81920, memory_used_mib=2048, util_gpu=3, util_mem=0, temperature_c=34,
                power_w=61.0, power_limit_w=400, sm_clock_mhz=210, sm_clock_max_mhz=1410,
                mem_clock_mhz=1593, mem_clock_max_mhz=1593, pcie_gen=4, pcie_width=16, pcie_gen_max=4,
                pcie_width_max=16, compute_capability=(8, 0), mig_mode=NVML_DEVICE_MIG_DISABLE, ecc_mode=1,
                ecc_counts={(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC): 0,
                            (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC): 0,
                            (NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC): 12,
                            (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC): 0},
                processes=[FakeProcess(5151, "vllm serve", 1500.0), FakeProcess(777, "Xorg", None, "graphics")])
    base.update(kw)
    return FakeGPU(**base)


def no_library(errors: Any = None) -> FakeNVML:
    """No NVIDIA driver: ``nvmlInit`` raises NVMLError_LibraryNotFound, as the real one does then."""
    return FakeNVML([], init_error="NVMLError_LibraryNotFound", errors=errors, label="no library")


def power_not_supported(errors: Any = None) -> FakeNVML:
    """One GPU whose power draw and limit raise NVMLError_NotSupported (the rest reads normally)."""
    gpu = FakeGPU(name="NVIDIA GeForce RTX 3060", uuid="GPU-3060cccc-0000-0000-0000-000000000003",
                  memory_total_mib=12288, memory_used_mib=1024, util_gpu=12, util_mem=5, temperature_c=45,
                  power_w=0.0, power_limit_w=170, sm_clock_mhz=1320, sm_clock_max_mhz=2100,
                  mem_clock_mhz=7501, mem_clock_max_mhz=7501, compute_capability=(8, 6),
                  unsupported={"nvmlDeviceGetPowerUsage", "nvmlDeviceGetEnforcedPowerLimit"})
    return FakeNVML([gpu], errors=errors, label="power not supported")


def gpu_lost(errors: Any = None, after_reads: int = 3) -> FakeNVML:
    """Two H100s; the second one answers ``after_reads`` utilization reads, then is lost (GpuIsLost)."""
    gpus = [FakeGPU(name="NVIDIA H100 80GB HBM3", uuid=f"GPU-h100dddd-0000-0000-0000-00000000000{i}",
                    memory_total_mib=81559, memory_used_mib=40000, util_gpu=70, util_mem=30, temperature_c=55,
                    power_w=500.0, power_limit_w=700, compute_capability=(9, 0), mig_mode=0, ecc_mode=1,
                    pcie_gen=5, pcie_gen_max=5, lost_after_reads=after_reads if i == 1 else None)
            for i in range(2)]
    return FakeNVML(gpus, driver_version="560.35.03", cuda_version=12060, errors=errors, label="gpu lost")


def mig_a100(errors: Any = None) -> FakeNVML:
    """An A100 80GB in MIG mode with three instances (3g.40gb, 2g.20gb, 1g.10gb)."""
    migs = [FakeMig("NVIDIA A100-SXM4-80GB MIG 3g.40gb", 40192, 30000, 2, 0, "MIG-aaaa0001"),
            FakeMig("NVIDIA A100-SXM4-80GB MIG 2g.20gb", 19968, 512, 3, 0, "MIG-aaaa0002"),
            FakeMig("NVIDIA A100-SXM4-80GB MIG 1g.10gb", 9728, 0, 9, 0, "MIG-aaaa0003")]
    gpu = _a100_80gb(mig_mode=NVML_DEVICE_MIG_ENABLE, mig_instances=migs, memory_used_mib=30512, processes=[])
    return FakeNVML([gpu], errors=errors, label="MIG A100")


def two_gpus(errors: Any = None) -> FakeNVML:
    """Two different GPUs: a busy GeForce RTX 4090 (no MIG, no ECC) and an idle A100 80GB SXM."""
    return FakeNVML([_rtx_4090(), _a100_80gb()], errors=errors, label="RTX 4090 + A100")


def fleet(n: int = 8, errors: Any = None) -> FakeNVML:
    """``n`` H100s with ECC (a full HGX box when n = 8), for the benchmark."""
    gpus = [FakeGPU(name="NVIDIA H100 80GB HBM3", uuid=f"GPU-h100eeee-0000-0000-0000-{i:012d}",
                    memory_total_mib=81559, memory_used_mib=60000, util_gpu=90, util_mem=50, power_w=600,
                    power_limit_w=700, compute_capability=(9, 0), mig_mode=0, ecc_mode=1)
            for i in range(n)]
    return FakeNVML(gpus, errors=errors, label=f"{n} x H100")


#: The demo's script (simulated time). RTX 4090: busy until BUSY_UNTIL_S, then idle with its model
#: still loaded; A100: steady half load with nearly full memory.
DEMO_SCRIPT = {
    "busy_until_s": 1200.0,
    "rtx4090_busy": {"util_gpu": 92, "util_mem": 48, "memory_used_mib": 21000.0, "power_w": 410.0,
                     "temperature_c": 71, "sm_clock_mhz": 2610},
    "rtx4090_idle": {"util_gpu": 3, "util_mem": 1, "memory_used_mib": 21000.0, "power_w": 35.0,
                     "temperature_c": 44, "sm_clock_mhz": 210},
    "a100": {"util_gpu": 45, "util_mem": 30, "memory_used_mib": 78000.0, "power_w": 250.0,
             "temperature_c": 52, "sm_clock_mhz": 1410},
    #: each demo process's share of SM time [%]: (while the RTX 4090 is busy, after) or one steady share
    "process_sm_pct": {"train": (62, 1), "jupyter": (28, 2), "vllm": 35, "eval": 8, "notebook": 2},
}


def demo(clock: Callable[[], float] | None = None, errors: Any = None) -> FakeNVML:
    """The page's demo fleet, driven by ``clock`` (a simulated clock; see :data:`DEMO_SCRIPT`)."""
    s = DEMO_SCRIPT

    def rtx(t: float) -> dict:
        return s["rtx4090_busy"] if t < s["busy_until_s"] else s["rtx4090_idle"]

    def a100(t: float) -> dict:
        return s["a100"]

    def share(busy: float, idle: float) -> Callable[[float], float]:
        return lambda t: busy if t < s["busy_until_s"] else idle

    sm = s["process_sm_pct"]
    gpus = [_rtx_4090(script=rtx, processes=[
                FakeProcess(4242, "python train.py (demo)", 14000.0, user="alice", sm_util=share(*sm["train"])),
                FakeProcess(4243, "jupyter kernel (demo)", 6500.0, user="bob", sm_util=share(*sm["jupyter"]))]),
            _a100_80gb(script=a100, processes=[
                FakeProcess(5151, "vllm serve (demo)", 60000.0, user="carol", sm_util=sm["vllm"]),
                FakeProcess(5152, "python eval.py (demo)", 17000.0, user="dave", sm_util=sm["eval"]),
                FakeProcess(5153, "python notebook.py (demo)", None, user="alice", sm_util=sm["notebook"])])]
    return FakeNVML(gpus, errors=errors, clock=clock, label="demo")


SCENARIOS: dict[str, Callable[..., FakeNVML]] = {
    "no_library": no_library, "power_not_supported": power_not_supported, "gpu_lost": gpu_lost,
    "mig_a100": mig_a100, "two_gpus": two_gpus, "fleet": fleet, "demo": demo,
}


class SimClock:
    """Simulated time for the demo and tests: ``sleep(dt)`` advances it (optionally with a short real
    pause per step so a chart can animate)."""

    def __init__(self, start: float = 0.0, real_pause_s: float = 0.0):
        self.t = start
        self.real_pause_s = real_pause_s

    def __call__(self) -> float:
        return self.t

    def sleep(self, dt: float) -> None:
        if dt > 0:
            self.t += dt
        if self.real_pause_s > 0:
            time.sleep(self.real_pause_s)
