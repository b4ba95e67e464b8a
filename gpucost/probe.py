"""The NVML boundary: which NVIDIA GPUs this machine has and what they are doing right now.

This is the only module of gpucost that imports ``pynvml`` (from the ``nvidia-ml-py`` package; the PyPI
package ``pynvml`` is deprecated). The rules it keeps (as gpustat and nvitop do):

* ``nvmlInit`` runs lazily, on the first probe, and is kept for the life of the process; a failed start
  is retried on the next probe (the user may have fixed the driver).
* memory is read with NVML's version-2 memory info where the driver has it, so ``memory_used_mib`` is
  what nvidia-smi shows (without the driver's reservation, ``memory_reserved_mib``); else version 1.
* every field is read through one helper, :meth:`_Reader.get`, which turns ``pynvml.NVMLError`` (and its
  subclasses: ``NVMLError_NotSupported``, ``NVMLError_GpuIsLost``, …) into ``None`` and notes why;
  once a GPU is lost, its remaining fields are ``None`` without further calls.
* nothing here raises to the caller: without the library or a driver, :func:`probe` answers
  ``available: False`` with the reason and a hint.

Units: memory in MiB (2**20 bytes, as nvidia-smi shows it), power in W (NVML gives mW), clocks in MHz,
temperature in °C, utilization in % of the last sample period (NVML's own 1/6 s to 1 s window).

Tests and the page's demo mode replace the module with :func:`set_nvml` (a :mod:`gpucost.fake_nvml`
object); putting a fake in ``sys.modules["pynvml"]`` works too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpucost.i18n import Message
from gpucost.serialize import Record

MIB = 2**20

#: why NVML did not start, and what to do (error class name → (reason, hint)); sentences of
#: locales/*/messages.json (English in the CLI's JSON, the page's language on page 04)
INIT_ERRORS: dict[str, tuple[Message, Message]] = {
    name: (Message(f"pr_{key}"), Message(f"ph_{key}")) for name, key in (
        ("NVMLError_LibraryNotFound", "lib_not_found"), ("NVMLError_DriverNotLoaded", "driver_not_loaded"),
        ("NVMLError_LibRmVersionMismatch", "version_mismatch"), ("NVMLError_NoPermission", "no_permission"))}
NOT_INSTALLED = (Message("pr_not_installed"), Message("ph_not_installed"))
NO_DEVICES = (Message("pr_no_devices"), Message("ph_no_devices"))


# --------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MigInstance(Record):
    """One MIG instance of a GPU in MIG mode."""

    index: int
    name: str | None
    uuid: str | None
    memory_total_mib: float | None
    memory_used_mib: float | None
    gpu_instance_id: int | None
    compute_instance_id: int | None



@dataclass(frozen=True)
class GpuProcess(Record):
    """A process using a GPU. ``used_memory_mib`` is None where NVML cannot tell (Windows WDDM)."""

    pid: int
    name: str | None
    used_memory_mib: float | None
    kind: str  # compute | graphics



@dataclass(frozen=True)
class GpuInfo(Record):
    """Everything the probe read from one GPU. ``None``: NVML could not say (see ``unavailable``)."""

    index: int
    name: str | None
    uuid: str | None = None
    catalog_id: str | None = None
    catalog_note: str | None = None
    compute_capability: float | None = None
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    memory_free_mib: float | None = None
    memory_reserved_mib: float | None = None  # held by the driver (NVML memory info v2); None with v1
    utilization_gpu_pct: float | None = None
    utilization_memory_pct: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_mhz: float | None = None
    mem_clock_max_mhz: float | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    mig_mode: bool | None = None  # None: the GPU has no MIG
    mig_instances: tuple[MigInstance, ...] = ()
    ecc_mode: bool | None = None  # None: the GPU has no ECC
    ecc_corrected_volatile: int | None = None
    ecc_uncorrected_volatile: int | None = None
    ecc_corrected_aggregate: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    processes: tuple[GpuProcess, ...] | None = None  # None: not asked for
    lost: bool = False
    unavailable: tuple[tuple[str, str], ...] = ()  # (field, NVML's reason)

    @property
    def memory_used_pct(self) -> float | None:
        if self.memory_used_mib is None or not self.memory_total_mib:
            return None
        return 100.0 * self.memory_used_mib / self.memory_total_mib



@dataclass(frozen=True)
class ProbeResult:
    """The answer of :func:`probe`: ``available`` False with ``reason`` and ``hint`` when there is no GPU."""

    available: bool
    reason: str | None = None
    hint: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: tuple[GpuInfo, ...] = ()
    backend: str = "nvml"  # nvml | fake (a test or the page's demo)

    def to_dict(self) -> dict:
        return {"available": self.available, "reason": self.reason, "hint": self.hint,
                "driver_version": self.driver_version, "cuda_version": self.cuda_version,
                "backend": self.backend, "gpus": [g.to_dict() for g in self.gpus]}


# --------------------------------------------------------------------------------------------------
# The module in use, and its lazy start
# --------------------------------------------------------------------------------------------------

class _State:
    def __init__(self) -> None:
        self.injected: Any = None  # a module set with set_nvml (fake), or None: the real pynvml
        self.started: Any = None  # the module on which nvmlInit succeeded
        self.handles: dict[int, Any] = {}
        self.count = 0
        self.driver_version: str | None = None
        self.cuda_version: str | None = None
        self.last_util_us: dict[int, int] = {}  # GPU index → newest process-utilization sample seen [µs]


_STATE = _State()
_LOCK = threading.RLock()


def real_pynvml() -> Any:
    """The ``pynvml`` module of nvidia-ml-py, or None when it is not installed.

    (``sys.modules["pynvml"]`` wins when a test has put a fake there.) Fakes borrow its exception classes.
    """
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def set_nvml(module: Any = None) -> None:
    """Use ``module`` instead of the real pynvml (a :class:`gpucost.fake_nvml.FakeNVML` for tests and
    the demo); ``None`` goes back to the real one. A fake still unbound gets the real exception classes."""
    with _LOCK:
        shutdown()
        if module is not None and getattr(module, "is_fake", False) and not module.errors_bound:
            real = real_pynvml()
            if real is not None and not getattr(real, "is_fake", False):
                module.bind(real)
        _STATE.injected = module


def fake(scenario: str, **kwargs) -> Any:
    """A :mod:`gpucost.fake_nvml` scenario bound to the real pynvml exception classes (not yet in use)."""
    from gpucost import fake_nvml

    real = real_pynvml()
    return fake_nvml.SCENARIOS[scenario](errors=real if real is not None and
                                         not getattr(real, "is_fake", False) else None, **kwargs)


def shutdown() -> None:
    """Close NVML if this module started it (the next probe starts it again)."""
    with _LOCK:
        nvml, _STATE.started = _STATE.started, None
        _STATE.handles = {}
        _STATE.last_util_us = {}
        if nvml is not None:
            try:
                nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001 - shutting down must not raise
                pass


def _module() -> Any:
    return _STATE.injected if _STATE.injected is not None else real_pynvml()


def _text(v: Any) -> Any:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _start() -> tuple[Any, tuple[str, str] | None]:
    """(module, None) once NVML runs, else (None, (reason, hint)). Never raises."""
    nvml = _module()
    if nvml is None:
        return None, NOT_INSTALLED
    if _STATE.started is nvml:
        return nvml, None
    if _STATE.started is not None:
        shutdown()
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        reason, hint = INIT_ERRORS.get(type(exc).__name__, (Message("pr_init_failed", error=str(exc)),
                                                            Message("ph_init_failed")))
        return None, (Message("pr_detail", reason=reason, detail=f"{type(exc).__name__}: {exc}"), hint)
    except Exception as exc:  # noqa: BLE001 - an OSError from dlopen and the like: still an answer
        return None, (Message("pr_init_failed", error=f"{type(exc).__name__}: {exc}"), Message("ph_init_failed"))
    _STATE.started = nvml
    _STATE.handles = {}
    r = _Reader(nvml)
    _STATE.count = r.get("device_count", "nvmlDeviceGetCount") or 0
    _STATE.driver_version = _text(r.get("driver_version", "nvmlSystemGetDriverVersion"))
    cuda = r.get("cuda_version", "nvmlSystemGetCudaDriverVersion")
    _STATE.cuda_version = f"{cuda // 1000}.{(cuda % 1000) // 10}" if isinstance(cuda, int) and cuda > 0 else None
    return nvml, None


def _handle(nvml: Any, index: int, r: _Reader) -> Any:
    h = _STATE.handles.get(index)
    if h is None:
        h = r.get("handle", "nvmlDeviceGetHandleByIndex", index)
        if h is not None:
            _STATE.handles[index] = h
    return h


# --------------------------------------------------------------------------------------------------
# The one reading helper
# --------------------------------------------------------------------------------------------------

class _Reader:
    """Reads NVML fields of one GPU; an NVMLError becomes None and is noted in ``unavailable``."""

    __slots__ = ("nvml", "lost", "unavailable")

    def __init__(self, nvml: Any):
        self.nvml = nvml
        self.lost = False
        self.unavailable: dict[str, str] = {}

    def get(self, field_name: str, fn_name: str, *args: Any, quiet: tuple[str, ...] = (), **kw: Any) -> Any:
        """``nvml.<fn_name>(*args, **kw)``, or None on an NVML error (``quiet`` error names not noted)."""
        if self.lost:
            return None
        try:
            return getattr(self.nvml, fn_name)(*args, **kw)
        except self.nvml.NVMLError as exc:
            name = type(exc).__name__
            if name == "NVMLError_GpuIsLost":
                self.lost = True
            if name not in quiet:
                self.unavailable.setdefault(field_name, str(exc) or name)
            return None
        except AttributeError:  # a function this version of nvidia-ml-py does not have
            self.unavailable.setdefault(field_name, f"{fn_name} is not in this nvidia-ml-py")
            return None


def _memory(r: _Reader, h: Any) -> Any:
    """Memory info: version 2 when the bindings and driver have it (``used`` then excludes the memory the
    driver reserves, as nvidia-smi shows it, and ``reserved`` is given), else version 1."""
    v2 = getattr(r.nvml, "nvmlMemory_v2", None)
    if r.lost:
        return None
    if v2 is not None:
        first = _Reader(r.nvml)
        try:
            mem = first.get("memory_total_mib", "nvmlDeviceGetMemoryInfo", h, version=v2)
        except TypeError:  # bindings whose nvmlDeviceGetMemoryInfo takes no version
            mem = None
        if mem is not None or first.lost:
            r.lost = r.lost or first.lost
            for k, v in first.unavailable.items():
                r.unavailable.setdefault(k, v)
            return mem
    return r.get("memory_total_mib", "nvmlDeviceGetMemoryInfo", h)


def _mib(v: Any) -> float | None:
    return None if v is None else v / MIB


def _mw_to_w(v: Any) -> float | None:
    return None if v is None else v / 1000.0


def _read_gpu(nvml: Any, index: int, processes: bool) -> GpuInfo:
    r = _Reader(nvml)
    h = _handle(nvml, index, r)
    if h is None:
        return GpuInfo(index=index, name=None, lost=r.lost, unavailable=tuple(r.unavailable.items()))
    name = _text(r.get("name", "nvmlDeviceGetName", h))
    uuid = _text(r.get("uuid", "nvmlDeviceGetUUID", h))
    cc = r.get("compute_capability", "nvmlDeviceGetCudaComputeCapability", h)
    mem = _memory(r, h)
    util = r.get("utilization_gpu_pct", "nvmlDeviceGetUtilizationRates", h)
    temp = r.get("temperature_c", "nvmlDeviceGetTemperature", h, nvml.NVML_TEMPERATURE_GPU)
    power = r.get("power_w", "nvmlDeviceGetPowerUsage", h)
    limit = r.get("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", h)
    sm = r.get("sm_clock_mhz", "nvmlDeviceGetClockInfo", h, nvml.NVML_CLOCK_SM)
    sm_max = r.get("sm_clock_max_mhz", "nvmlDeviceGetMaxClockInfo", h, nvml.NVML_CLOCK_SM)
    memclk = r.get("mem_clock_mhz", "nvmlDeviceGetClockInfo", h, nvml.NVML_CLOCK_MEM)
    memclk_max = r.get("mem_clock_max_mhz", "nvmlDeviceGetMaxClockInfo", h, nvml.NVML_CLOCK_MEM)
    gen = r.get("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", h)
    width = r.get("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", h)
    gen_max = r.get("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration", h)
    width_max = r.get("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth", h)

    mig = r.get("mig_mode", "nvmlDeviceGetMigMode", h, quiet=("NVMLError_NotSupported",))
    mig_on = None if mig is None else bool(mig[0] == nvml.NVML_DEVICE_MIG_ENABLE)
    instances: list[MigInstance] = []
    if mig_on:
        slots = r.get("mig_instances", "nvmlDeviceGetMaxMigDeviceCount", h) or 0
        for i in range(slots):
            mh = r.get("mig_instances", "nvmlDeviceGetMigDeviceHandleByIndex", h, i,
                       quiet=("NVMLError_NotFound", "NVMLError_InvalidArgument"))
            if mh is None:
                continue
            mr = _Reader(nvml)
            mmem = mr.get("memory", "nvmlDeviceGetMemoryInfo", mh)
            instances.append(MigInstance(
                index=i, name=_text(mr.get("name", "nvmlDeviceGetName", mh)),
                uuid=_text(mr.get("uuid", "nvmlDeviceGetUUID", mh)),
                memory_total_mib=_mib(getattr(mmem, "total", None)),
                memory_used_mib=_mib(getattr(mmem, "used", None)),
                gpu_instance_id=mr.get("gpu_instance_id", "nvmlDeviceGetGpuInstanceId", mh),
                compute_instance_id=mr.get("compute_instance_id", "nvmlDeviceGetComputeInstanceId", mh)))

    ecc = r.get("ecc_mode", "nvmlDeviceGetEccMode", h, quiet=("NVMLError_NotSupported",))
    ecc_on = None if ecc is None else bool(ecc[0])
    counts: dict[str, Any] = {}
    if ecc_on:
        for key, etype, ctype in (
                ("ecc_corrected_volatile", nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_VOLATILE_ECC),
                ("ecc_uncorrected_volatile", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC),
                ("ecc_corrected_aggregate", nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_AGGREGATE_ECC),
                ("ecc_uncorrected_aggregate", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                 nvml.NVML_AGGREGATE_ECC)):
            counts[key] = r.get(key, "nvmlDeviceGetTotalEccErrors", h, etype, ctype)

    procs: tuple[GpuProcess, ...] | None = None
    if processes:
        seen: dict[int, GpuProcess] = {}
        for kind, fn in (("compute", "nvmlDeviceGetComputeRunningProcesses"),
                         ("graphics", "nvmlDeviceGetGraphicsRunningProcesses")):
            for p in r.get("processes", fn, h) or []:
                pid = int(p.pid)
                if pid in seen:
                    continue
                used = getattr(p, "usedGpuMemory", None)
                used = None if used is None or used >= 2**63 else used / MIB  # NVML_VALUE_NOT_AVAILABLE
                pname = _text(_Reader(nvml).get("process_name", "nvmlSystemGetProcessName", pid))
                seen[pid] = GpuProcess(pid=pid, name=pname, used_memory_mib=used, kind=kind)
        procs = tuple(seen.values())

    return GpuInfo(
        index=index, name=name, uuid=uuid,
        compute_capability=None if cc is None else float(f"{cc[0]}.{cc[1]}"),
        memory_total_mib=_mib(getattr(mem, "total", None)), memory_used_mib=_mib(getattr(mem, "used", None)),
        memory_free_mib=_mib(getattr(mem, "free", None)),
        memory_reserved_mib=_mib(getattr(mem, "reserved", None)),
        utilization_gpu_pct=getattr(util, "gpu", None), utilization_memory_pct=getattr(util, "memory", None),
        temperature_c=temp, power_w=_mw_to_w(power), power_limit_w=_mw_to_w(limit),
        sm_clock_mhz=sm, sm_clock_max_mhz=sm_max, mem_clock_mhz=memclk, mem_clock_max_mhz=memclk_max,
        pcie_gen=gen, pcie_width=width, pcie_gen_max=gen_max, pcie_width_max=width_max,
        mig_mode=mig_on, mig_instances=tuple(instances), ecc_mode=ecc_on,
        processes=procs, lost=r.lost, unavailable=tuple(r.unavailable.items()), **counts)


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------

Matcher = Callable[[str, float | None], tuple[str | None, str | None]]


def probe(processes: bool = False, match: Matcher | None = None) -> ProbeResult:
    """Read every NVIDIA GPU of this machine. Never raises.

    processes : bool   also list the running processes and their memory (slower; may need privileges)
    match     : callable (nvml_name, memory_total_mib) -> (catalog_id, note), e.g.
                ``lambda n, m: gpucost.monitor.match_gpu(catalog, n, m)``; its errors are caught.
    """
    with _LOCK:
        try:
            nvml, why = _start()
            if nvml is None or why is not None:
                reason, hint = why or NOT_INSTALLED
                return ProbeResult(available=False, reason=reason, hint=hint, backend=_backend())
            if _STATE.count <= 0:
                return ProbeResult(available=False, reason=NO_DEVICES[0], hint=NO_DEVICES[1],
                                   driver_version=_STATE.driver_version, cuda_version=_STATE.cuda_version,
                                   backend=_backend())
            gpus = [_read_gpu(nvml, i, processes) for i in range(_STATE.count)]
            if match is not None:
                gpus = [_matched(g, match) for g in gpus]
            return ProbeResult(available=True, driver_version=_STATE.driver_version,
                               cuda_version=_STATE.cuda_version, gpus=tuple(gpus), backend=_backend())
        except Exception as exc:  # noqa: BLE001 - the probe answers, it does not raise
            return ProbeResult(available=False, reason=f"unexpected error while probing: "
                               f"{type(exc).__name__}: {exc}", hint="Please report this as a gpucost bug.",
                               backend=_backend())


def _matched(g: GpuInfo, match: Matcher) -> GpuInfo:
    from dataclasses import replace

    if not g.name:
        return g
    try:
        cid, note = match(g.name, g.memory_total_mib)
    except Exception as exc:  # noqa: BLE001 - a bad catalog must not break the probe
        cid, note = None, f"catalog not available: {exc}"
    return replace(g, catalog_id=cid, catalog_note=note)


def _backend() -> str:
    m = _module()
    return "fake" if m is not None and getattr(m, "is_fake", False) else "nvml"


def _each_gpu(read: Callable[[Any, int, _Reader, Any], dict | None]) -> list[dict]:
    """``read(nvml, index, reader, handle)`` for every GPU under the lock (a None answer is left out): the one frame
    of the sampling readers. An empty list when NVML does not run, or when a reading fails. Never raises."""
    with _LOCK:
        try:
            nvml, _why = _start()
            if nvml is None:
                return []
            out = []
            for i in range(_STATE.count):
                r = _Reader(nvml)
                got = read(nvml, i, r, _handle(nvml, i, r))
                if got is not None:
                    out.append(got)
            return out
        except Exception:  # noqa: BLE001 - never raises; a failed sample is an empty one
            return []


def _changing_fields(nvml: Any, i: int, r: _Reader, h: Any) -> dict:
    """One GPU's fields that change, for :func:`sample`."""
    util = r.get("utilization_gpu_pct", "nvmlDeviceGetUtilizationRates", h) if h is not None else None
    mem = _memory(r, h) if h is not None else None
    power = r.get("power_w", "nvmlDeviceGetPowerUsage", h) if h is not None else None
    temp = (r.get("temperature_c", "nvmlDeviceGetTemperature", h, nvml.NVML_TEMPERATURE_GPU)
            if h is not None else None)
    return {"index": i, "utilization_gpu_pct": getattr(util, "gpu", None),
            "utilization_memory_pct": getattr(util, "memory", None),
            "memory_used_mib": _mib(getattr(mem, "used", None)),
            "memory_total_mib": _mib(getattr(mem, "total", None)),
            "power_w": _mw_to_w(power), "temperature_c": temp, "lost": r.lost}


def sample() -> list[dict]:
    """The fields that change, for every GPU (cheap: 4 NVML calls per GPU), as plain dicts with keys
    index, utilization_gpu_pct, utilization_memory_pct, memory_used_mib, memory_total_mib, power_w,
    temperature_c, lost. An empty list when NVML does not run. Never raises."""
    return _each_gpu(_changing_fields)


#: NVML's gpuInstanceId of a process that is not in a MIG instance
NO_MIG_INSTANCE = 0xFFFFFFFF


def process_owner(nvml: Any, pid: int) -> str | None:
    """The user name owning process ``pid``: the owner of /proc/PID (its uid's name, else the uid), or a
    fake NVML's own answer; None when the process is not visible here (another container, gone)."""
    if getattr(nvml, "is_fake", False):
        return nvml.process_owner(pid)
    import os

    try:
        uid = os.stat(f"/proc/{int(pid)}").st_uid
    except (OSError, ValueError):
        return None
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def _process_sm(r: _Reader, h: Any, index: int) -> dict[int, float] | None:
    """Each process's SM share [%] since the last call for this GPU (the mean of NVML's samples), {} when
    no process ran since then, None when NVML cannot say (MIG mode, an old driver)."""
    last = _STATE.last_util_us.get(index, 0)
    probe_r = _Reader(r.nvml)
    got = probe_r.get("process_utilization", "nvmlDeviceGetProcessUtilization", h, last,
                      quiet=("NVMLError_NotFound",))
    if got is None:
        return {} if "process_utilization" not in probe_r.unavailable else None
    sums: dict[int, list[float]] = {}
    newest = last
    for smp in got:
        ts = int(getattr(smp, "timeStamp", 0) or 0)
        if ts <= last:
            continue
        newest = max(newest, ts)
        sums.setdefault(int(smp.pid), []).append(float(smp.smUtil))
    _STATE.last_util_us[index] = newest
    return {pid: sum(v) / len(v) for pid, v in sums.items()}


def process_samples() -> list[dict]:
    """Who uses each GPU now, for showback: per GPU a dict with index, uuid, name, memory_total_mib and
    ``processes``, each {pid, name, user, sm_pct, memory_mib, mig_profile} (from
    nvmlDeviceGetComputeRunningProcesses and nvmlDeviceGetProcessUtilization; ``sm_pct`` None where NVML
    cannot say, 0 for a process that ran no kernel since the last call; ``mig_profile`` the MIG instance's
    profile, "3g.40gb"). An empty list when NVML does not run. Never raises."""
    return _each_gpu(_processes_of)


def _processes_of(nvml: Any, i: int, r: _Reader, h: Any) -> dict | None:
    """One GPU's processes for :func:`process_samples` (None where its handle could not be had)."""
    if h is None:
        return None
    mem = _memory(r, h)
    profiles: dict[int, str] = {}
    mig = r.get("mig_mode", "nvmlDeviceGetMigMode", h, quiet=("NVMLError_NotSupported",))
    if mig is not None and mig[0] == nvml.NVML_DEVICE_MIG_ENABLE:
        for k in range(r.get("mig", "nvmlDeviceGetMaxMigDeviceCount", h) or 0):
            mh = r.get("mig", "nvmlDeviceGetMigDeviceHandleByIndex", h, k,
                       quiet=("NVMLError_NotFound", "NVMLError_InvalidArgument"))
            if mh is None:
                continue
            gi = r.get("mig", "nvmlDeviceGetGpuInstanceId", mh)
            nm = _text(r.get("mig", "nvmlDeviceGetName", mh)) or ""
            if gi is not None:
                profiles[int(gi)] = nm.split("MIG ")[-1].strip()
    sm = _process_sm(r, h, i)
    procs = []
    for p in r.get("processes", "nvmlDeviceGetComputeRunningProcesses", h) or []:
        pid = int(p.pid)
        used = getattr(p, "usedGpuMemory", None)
        gi = getattr(p, "gpuInstanceId", NO_MIG_INSTANCE)
        procs.append({
            "pid": pid, "name": _text(_Reader(nvml).get("process_name", "nvmlSystemGetProcessName", pid)),
            "user": process_owner(nvml, pid),
            "sm_pct": None if sm is None else sm.get(pid, 0.0),
            "memory_mib": None if used is None or used >= 2**63 else used / MIB,
            "mig_profile": profiles.get(int(gi), "") if gi is not None and gi != NO_MIG_INSTANCE else ""})
    return {"index": i, "uuid": _text(r.get("uuid", "nvmlDeviceGetUUID", h)),
            "name": _text(r.get("name", "nvmlDeviceGetName", h)),
            "memory_total_mib": _mib(getattr(mem, "total", None)), "processes": procs}


def is_available() -> bool:
    """True when NVML runs and sees at least one GPU. Never raises."""
    with _LOCK:
        try:
            nvml, _ = _start()
            return nvml is not None and _STATE.count > 0
        except Exception:  # noqa: BLE001
            return False


def uses_fake() -> bool:
    """True while a fake NVML is in use (tests, the page's demo)."""
    return _backend() == "fake"


__all__ = ["GpuInfo", "GpuProcess", "MigInstance", "ProbeResult", "fake", "is_available", "probe",
           "process_owner", "process_samples", "real_pynvml", "sample", "set_nvml", "shutdown", "uses_fake"]
