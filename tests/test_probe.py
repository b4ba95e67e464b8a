"""The NVML probe against the fake NVML (gpucost.fake_nvml) with the real pynvml exception classes, and
the real path on this machine. Expected values are the fake GPUs' own settings, converted by hand."""

from __future__ import annotations

import shutil
import sys

import pynvml
import pytest

from gpucost import fake_nvml, monitor, probe
from gpucost.catalog import Catalog

from .conftest import ROOT, run_cli

TINY = ROOT / "tests" / "fixtures" / "tiny_catalog"


@pytest.fixture(autouse=True)
def _real_nvml_after_each_test():
    yield
    probe.set_nvml(None)


def use(scenario: str, **kw):
    fake = probe.fake(scenario, **kw)
    probe.set_nvml(fake)
    return fake


def match_with(catalog):
    return lambda name, mem: monitor.match_gpu(catalog, name, mem)


def has_real_gpu() -> bool:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    try:
        return pynvml.nvmlDeviceGetCount() > 0
    finally:
        pynvml.nvmlShutdown()


# -- the fake itself -------------------------------------------------------------------------------

def test_fake_raises_the_real_pynvml_exception_classes():
    fake = probe.fake("power_not_supported")
    fake.nvmlInit()
    h = fake.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        fake.nvmlDeviceGetPowerUsage(h)
    with pytest.raises(pynvml.NVMLError_LibraryNotFound):
        probe.fake("no_library").nvmlInit()


def test_fake_left_unbound_is_bound_to_pynvml_by_set_nvml():
    fake = fake_nvml.gpu_lost()  # no errors given: stand-in classes until the probe binds it
    assert not fake.errors_bound
    probe.set_nvml(fake)
    assert fake.errors_bound and fake.NVMLError_GpuIsLost is pynvml.NVMLError_GpuIsLost


def test_fake_works_with_stand_in_errors_when_nvidia_ml_py_is_absent(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    fake = fake_nvml.power_not_supported()
    probe.set_nvml(fake)
    assert not fake.errors_bound and fake.NVMLError_NotSupported is not pynvml.NVMLError_NotSupported
    g = probe.probe().gpus[0]
    assert g.power_w is None and dict(g.unavailable)["power_w"] == "Not Supported"


# -- no library / no driver ---------------------------------------------------------------------------

def test_no_library_is_an_answer_with_reason_and_hint():
    use("no_library")
    r = probe.probe()
    assert r.available is False
    assert "no NVIDIA driver" in r.reason and "NVMLError_LibraryNotFound" in r.reason
    assert "nvidia-smi" in r.hint
    assert r.gpus == () and r.backend == "fake"
    assert probe.sample() == []
    assert probe.is_available() is False


def test_fake_injected_through_sys_modules_works_too(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", probe.fake("no_library"))
    r = probe.probe()
    assert not r.available and "LibraryNotFound" in r.reason
    monkeypatch.setitem(sys.modules, "pynvml", probe.fake("two_gpus"))
    r = probe.probe()
    assert r.available and [g.name for g in r.gpus] == ["NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-80GB"]


def test_without_nvidia_ml_py_it_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    r = probe.probe()
    assert r.available is False
    assert "nvidia-ml-py" in r.reason and r.hint == "`pip install nvidia-ml-py`"  # a command, shown as code


def test_a_failed_start_is_retried_and_a_good_one_kept(monkeypatch):
    fake = use("two_gpus")
    fake.init_error = "NVMLError_DriverNotLoaded"
    r = probe.probe()
    assert not r.available and "not loaded" in r.reason
    fake.init_error = None  # the user loads the driver
    calls = []
    real_init = fake.nvmlInit
    monkeypatch.setattr(fake, "nvmlInit", lambda: (calls.append(1), real_init())[1])
    assert probe.probe().available and probe.probe().available
    assert len(calls) == 1  # lazy init, once


def test_probe_never_raises_even_on_a_non_nvml_error(monkeypatch):
    fake = use("two_gpus")

    def broken(*a):
        raise RuntimeError("boom")

    monkeypatch.setattr(fake, "nvmlDeviceGetCount", broken)
    r = probe.probe()
    assert r.available is False and "RuntimeError: boom" in r.reason


def test_a_function_missing_from_old_bindings_is_a_none_field(monkeypatch):
    use("two_gpus")
    monkeypatch.delattr(fake_nvml.FakeNVML, "nvmlDeviceGetMaxPcieLinkWidth")
    g = probe.probe().gpus[0]
    assert g.pcie_width_max is None and g.pcie_width == 16
    assert "not in this nvidia-ml-py" in dict(g.unavailable)["pcie_width_max"]


# -- one GPU whose power reading is Not Supported -------------------------------------------------------

def test_power_not_supported_is_none_and_the_rest_reads():
    use("power_not_supported")
    r = probe.probe()
    g = r.gpus[0]
    assert g.power_w is None and g.power_limit_w is None
    assert dict(g.unavailable) == {"power_w": "Not Supported", "power_limit_w": "Not Supported"}
    assert g.memory_total_mib == 12288 and g.memory_used_mib == 1024 and g.memory_free_mib == 11264
    assert g.utilization_gpu_pct == 12 and g.compute_capability == 8.6
    assert g.mig_mode is None and g.ecc_mode is None and not g.lost
    assert r.driver_version == "550.54.15" and r.cuda_version == "12.4"  # 12040 → 12.4


def test_sampling_without_power_gives_no_energy_but_a_utilization():
    use("power_not_supported")
    clock = fake_nvml.SimClock()
    samples = monitor.run_sampler(probe.sample, 3, 1, clock=clock, sleep=clock.sleep)
    rep = monitor.summarize(samples, 1, kwh_price=0.3)
    s = rep.gpus[0]
    assert s.energy_kwh is None and s.energy_cost is None and s.energy_complete is False
    assert s.util_mean_pct == 12 and s.samples == 3


def test_a_name_that_matches_but_memory_that_does_not_is_no_match():
    gpu = fake_nvml.FakeGPU(name="NVIDIA GeForce RTX 3060", uuid="GPU-x", memory_total_mib=8192)
    probe.set_nvml(fake_nvml.FakeNVML([gpu]))
    g = probe.probe(match=match_with(Catalog())).gpus[0]
    assert g.catalog_id is None
    assert "rtx-3060-12gb" in g.catalog_note and "8.0 GiB" in g.catalog_note


def h200(**kw):
    # as nvidia-smi -q showed on an H200 (driver 580.159.04): Total 143771, Reserved 616, Used 0 MiB
    return fake_nvml.FakeGPU(name="NVIDIA H200", uuid="GPU-h200", memory_total_mib=143771, memory_used_mib=0,
                             memory_reserved_mib=616, **kw)


def test_memory_used_excludes_the_driver_reservation_like_nvidia_smi():
    probe.set_nvml(fake_nvml.FakeNVML([h200()]))
    g = probe.probe(match=match_with(Catalog())).gpus[0]
    assert (g.memory_total_mib, g.memory_used_mib, g.memory_reserved_mib, g.memory_free_mib) == (143771, 0, 616,
                                                                                                 143155)
    assert g.catalog_id == "h200"
    assert probe.sample()[0]["memory_used_mib"] == 0


def test_memory_falls_back_to_version_1_where_version_2_is_missing(monkeypatch):
    probe.set_nvml(fake_nvml.FakeNVML([h200(unsupported={"nvmlMemory_v2"})]))  # an old driver
    g = probe.probe().gpus[0]
    assert (g.memory_used_mib, g.memory_reserved_mib, g.memory_free_mib) == (616, None, 143155)  # v1: used + reserved
    fake = fake_nvml.FakeNVML([h200()])
    v1 = fake.nvmlDeviceGetMemoryInfo
    monkeypatch.setattr(fake, "nvmlDeviceGetMemoryInfo", lambda h: v1(h))  # bindings without version=
    probe.set_nvml(fake)
    g = probe.probe().gpus[0]
    assert g.memory_used_mib == 616 and g.memory_reserved_mib is None and g.unavailable == ()


# -- a GPU lost mid-sampling ------------------------------------------------------------------------------

def test_gpu_lost_mid_sampling_marks_it_and_keeps_the_other():
    use("gpu_lost", after_reads=3)
    clock = fake_nvml.SimClock()
    samples = monitor.run_sampler(probe.sample, 6, 1, clock=clock, sleep=clock.sleep)
    lost = [s for s in samples if s.index == 1]
    ok = [s for s in samples if s.index == 0]
    assert [s.utilization_gpu_pct for s in ok] == [70] * 6
    assert [s.utilization_gpu_pct for s in lost] == [70, 70, 70, None, None, None]
    assert [s.lost for s in lost] == [False, False, False, True, True, True]
    assert all(s.memory_used_mib is None and s.power_w is None for s in lost[3:])
    rep = monitor.summarize(samples, 1)
    g1 = rep.gpus[1]
    assert g1.lost and g1.lost_at_s == 3.0
    assert g1.util_mean_pct == 70
    # energy of the lost GPU covers its first 3 s only: 500 W × 3 s = 1500 J = 1500/3.6e6 kWh
    assert g1.energy_kwh == pytest.approx(1500 / 3.6e6) and g1.energy_complete is False
    assert not rep.gpus[0].lost and rep.gpus[0].energy_kwh == pytest.approx(500 * 6 / 3.6e6)
    # a full probe after the loss does not raise: the lost GPU answers nothing
    r = probe.probe()
    assert r.available and not r.gpus[0].lost
    g = r.gpus[1]
    assert g.lost and g.name is None and g.memory_total_mib is None
    assert dict(g.unavailable) == {"name": "GPU is lost"}  # later fields are not even asked


# -- a MIG-enabled A100 -------------------------------------------------------------------------------------

def test_mig_a100_lists_instances_and_has_no_whole_gpu_utilization():
    use("mig_a100")
    g = probe.probe(match=match_with(Catalog())).gpus[0]
    assert g.mig_mode is True
    assert [m.name.split(" MIG ")[1] for m in g.mig_instances] == ["3g.40gb", "2g.20gb", "1g.10gb"]
    assert [m.memory_total_mib for m in g.mig_instances] == [40192, 19968, 9728]
    assert [m.memory_used_mib for m in g.mig_instances] == [30000, 512, 0]
    assert [m.gpu_instance_id for m in g.mig_instances] == [2, 3, 9]
    assert g.utilization_gpu_pct is None and "utilization_gpu_pct" in dict(g.unavailable)
    assert g.ecc_mode is True and g.ecc_corrected_aggregate == 12 and g.ecc_uncorrected_volatile == 0
    assert g.catalog_id == "a100-80gb-sxm"
    clock = fake_nvml.SimClock()
    rep = monitor.summarize(monitor.run_sampler(probe.sample, 3, 1, clock=clock, sleep=clock.sleep), 1)
    assert rep.verdict("idle", 0).status == "unknown"
    assert rep.gpus[0].util_mean_pct is None and rep.gpus[0].idle_s is None


# -- two different GPUs --------------------------------------------------------------------------------------

def test_two_different_gpus_every_field():
    use("two_gpus")
    r = probe.probe(match=match_with(Catalog()))
    a, b = r.gpus
    assert (a.name, a.catalog_id, a.compute_capability) == ("NVIDIA GeForce RTX 4090", "rtx-4090", 8.9)
    assert (b.name, b.catalog_id, b.compute_capability) == ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm", 8.0)
    assert a.power_w == 372.5 and a.power_limit_w == 450  # 372500 mW, 450000 mW
    assert a.memory_total_mib == 24564 and a.memory_used_mib == 18000
    assert (a.sm_clock_mhz, a.sm_clock_max_mhz, a.mem_clock_mhz) == (2520, 3120, 10501)
    assert (a.pcie_gen, a.pcie_width) == (4, 16)
    assert a.mig_mode is None and a.ecc_mode is None and a.ecc_corrected_volatile is None
    assert a.unavailable == ()  # MIG and ECC "Not Supported" on GeForce is normal, not noted
    assert b.mig_mode is False and b.ecc_mode is True and b.ecc_corrected_aggregate == 12
    assert a.uuid != b.uuid


def test_processes_only_when_asked():
    use("two_gpus")
    assert all(g.processes is None for g in probe.probe().gpus)
    a, b = probe.probe(processes=True).gpus
    assert [(p.pid, p.name, p.used_memory_mib, p.kind) for p in a.processes] == \
        [(4242, "python train.py", 17500.0, "compute")]
    assert [(p.pid, p.used_memory_mib, p.kind) for p in b.processes] == \
        [(5151, 1500.0, "compute"), (777, None, "graphics")]


def test_probe_record_has_the_cli_contract_keys():
    use("two_gpus")
    d = probe.probe().to_dict()
    assert {"available", "reason", "driver_version", "cuda_version", "gpus"} <= set(d)
    keys = {"index", "name", "catalog_id", "memory_total_mib", "memory_used_mib", "utilization_gpu_pct",
            "temperature_c", "power_w", "power_limit_w", "compute_capability"}
    assert all(keys <= set(g) for g in d["gpus"])


# -- the real path on this machine --------------------------------------------------------------------------

def test_real_nvml_on_this_machine():
    probe.set_nvml(None)
    r = probe.probe()
    if has_real_gpu():
        assert r.available and r.gpus and r.backend == "nvml"
    else:
        assert r.available is False and r.backend == "nvml" and r.reason and r.hint


def test_cli_probe_json_on_this_machine_exits_0():
    proc = run_cli("probe", "--json")
    assert proc.returncode == 0, proc.stderr
    import json

    d = json.loads(proc.stdout)
    if has_real_gpu():
        assert d["available"] is True and d["gpus"]
    else:
        assert d["available"] is False and d["gpus"] == [] and d["reason"]
        assert shutil.which("nvidia-smi") is None or "driver" in d["reason"]


def test_cli_probe_demo_watch_hand_computed(monkeypatch):
    """Demo: RTX 4090 busy (92 %, 410 W) for 20 min then idle (3 %, 35 W); A100 at 45 %, 250 W,
    78000 of 81920 MiB. One hour at 60 s: 60 samples, each standing for 60 s."""
    proc = run_cli("probe", "--demo", "--watch", "3600", "--interval", "60", "--kwh-price", "0.30", "--json",
                   env={"GPUCOST_DATA_DIR": str(TINY)})
    assert proc.returncode == 0, proc.stderr
    import json

    d = json.loads(proc.stdout)
    assert d["demo"] is True and d["backend"] == "fake"
    w = d["watch"]
    assert w["samples"] == 60
    g0, g1 = w["gpus"]
    assert g0["util_mean_pct"] == pytest.approx((20 * 92 + 40 * 3) / 60)  # 32.67
    assert g0["util_p95_pct"] == 92  # rank 0.95 × 59 = 56.05 falls among the twenty 92s
    assert g0["idle_s"] == 40 * 60
    assert g0["energy_kwh"] == pytest.approx((20 * 410 + 40 * 35) * 60 / 3.6e6)  # 0.16 kWh
    assert g0["energy_cost"] == pytest.approx(0.16 * 0.30)
    assert g1["energy_kwh"] == pytest.approx(250 * 3600 / 3.6e6)  # 0.25
    assert g1["mem_used_max_pct"] == pytest.approx(100 * 78000 / 81920)  # 95.2 %
    status = {(v["policy"], v["index"]): v["status"] for v in w["verdicts"]}
    assert status == {("idle", 0): "fired", ("memory", 0): "ok", ("idle", 1): "ok", ("memory", 1): "fired"}
    # idle from t = 1200 s; fires at the first sample >= 1200 + 1800 s
    assert next(v for v in w["verdicts"] if v["policy"] == "idle")["fired_at_s"] == 3000
    # waste: 40 idle minutes = 2/3 GPU-hour × 0.69 USD/h (tiny catalog: runpod 1x RTX 4090 on demand)
    assert w["waste"][0]["basis"] == "cloud-on-demand"
    assert w["waste"][0]["wasted"] == pytest.approx(2 / 3 * 0.69)
    assert w["waste"][1]["wasted"] == 0
    assert d["gpus"][1]["value"]["hourly_value"] == pytest.approx(1.79)  # min(40.96 / 8, 1.79)


@pytest.mark.parametrize("args, words", [
    (("--watch", "5", "--interval", "0"), "interval"),
    (("--watch", "5", "--interval", "10"), "longer than the duration"),
    (("--watch", "-3"), "--watch"),
    (("--idle-for", "5 minutes"), "bad duration"),
    (("--idle-util", "150"), "percentage"),
    (("--currency", "XYZ"), "unknown currency"),
])
def test_cli_probe_bad_input_exits_2_with_one_line(args, words):
    proc = run_cli("probe", *args)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and words in proc.stderr and "Traceback" not in proc.stderr


def test_cli_probe_still_answers_with_a_broken_price_table(data_copy):
    (data_copy / "prices.csv").write_text("gpu_id,condition\nrtx-4090,new\n", encoding="utf-8")
    proc = run_cli("probe", "--demo", "--json", env={"GPUCOST_DATA_DIR": str(data_copy)})
    assert proc.returncode == 0, proc.stderr
    import json

    d = json.loads(proc.stdout)
    assert d["available"] and len(d["gpus"]) == 2
    assert "prices.csv" in d["catalog_error"] and all(g["value"] is None for g in d["gpus"])
