"""Showback's sources on recorded data (tests/fixtures/showback/): a generic usage CSV, a Slurm sacct
export, a real Prometheus server (Debian's prometheus package) holding DCGM exporter series built into a
TSDB by promtool, and the probe's per-process samples from the fake NVML. Expected bills are worked out by
hand in each test from the fixture's numbers (stated next to them)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from datetime import UTC, datetime

import pandas as pd
import pytest
import requests

from gpucost import probe
from gpucost.catalog import Catalog
from gpucost.errors import DataError, GpucostError
from gpucost.fake_nvml import FakeGPU, FakeMig, FakeNVML, FakeProcess, SimClock
from gpucost.showback import IDLE, allocate, card_rates, parse_period
from gpucost.usage_sources import read_csv, read_probe, read_prometheus

from .conftest import ROOT

FIX = ROOT / "tests" / "fixtures" / "showback"
OM = FIX / "dcgm_2026-11-02_2h.om"
TWO_HOURS = parse_period("2026-11-02T00:00..2026-11-02T02:00")


def costs(bill) -> dict[str, float]:
    return {ln.name: ln.cost for ln in bill.lines}


# -- generic CSV ------------------------------------------------------------------------------------

def test_generic_csv_samples_every_15_minutes():
    # 8 samples 15 min apart (2 h): alice 40 %, bob 20 % of one RTX 4090, at 1.00/h → 0.80, 0.40, idle 0.80
    use = read_csv(FIX / "usage_ws1.csv")
    assert use.models == {"ws1:0": "rtx-4090"}
    assert set(use.frame["duration_s"]) == {900.0}
    rates = card_rates(Catalog(), use.models, "USD", hourly=1.0)
    b = allocate(use.frame, rates, idle="separate")
    assert b.period.hours == 2
    assert costs(b) == {"alice": 0.80, "bob": 0.40, IDLE: 0.80}
    assert costs(allocate(use.frame, rates, by="project", idle="spread")) == {"vision": 1.33, "speech": 0.67}


@pytest.mark.parametrize("text, row, column", [
    ("time,card,sm_pct\n2026-11-01T00:00Z,g,10\n2026-11-01T00:01Z,g,abc\n", 2, "sm_pct"),
    ("time,card,sm_pct\n2026-11-01T00:00Z,g,150\n", 1, "sm_pct"),
    ("time,card,sm_pct\nyesterday,g,10\n", 1, "time"),
    ("time,card,memory_mib\n2026-11-01T00:00Z,,10\n", 1, "card"),
    ("time,card,memory_mib\n2026-11-01T00:00Z,g,-1\n", 1, "memory_mib"),
])
def test_bad_csv_cells_name_file_row_and_column(tmp_path, text, row, column):
    f = tmp_path / "bad.csv"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as e:
        read_csv(f)
    assert (e.value.file, e.value.row, e.value.column) == ("bad.csv", row, column)
    assert str(e.value).startswith(f"bad.csv, row {row} (line {row + 1}), column '{column}'")


def test_csv_without_needed_columns(tmp_path):
    f = tmp_path / "u.csv"
    f.write_text("when,card,sm_pct\n2026-11-01,g,1\n", encoding="utf-8")
    with pytest.raises(DataError, match="no 'time' column"):
        read_csv(f)
    f.write_text("time,card,user\n2026-11-01,g,ana\n", encoding="utf-8")
    with pytest.raises(DataError, match="sm_pct, memory_mib or mig_profile"):
        read_csv(f)


# -- Slurm sacct ---------------------------------------------------------------------------------------

def test_sacct_export_bills_allocated_gpus_of_each_node():
    # two nodes of 4 GPUs at 1.00 per GPU-hour: each node 4.00/h × 720 h = 2880.00 in November.
    # alice 2 GPUs × 10 h = 20.00; bob 1 × 24 h = 24.00; carol 4 × 36 h = 144.00; dave 1 GPU from
    # 20:00 on Nov 30 into December: 4 h in November = 4.00. The CPU-only job, the job step and the
    # pending job are not billed.
    use = read_csv(FIX / "sacct_2026-11.txt", gpus_per_node=4)
    assert sorted(use.models) == ["gpu01", "gpu02"] and use.scale == {"gpu01": 4, "gpu02": 4}
    rates = card_rates(Catalog(), use.models, "USD", hourly=1.0, scale=use.scale)
    assert rates["gpu01"].per_hour == 4.0
    b = allocate(use.frame, rates, period=parse_period("2026-11"), idle="separate")
    assert costs(b) == {"carol": 144.0, "bob": 24.0, "alice": 20.0, "dave": 4.0, IDLE: 5568.0}
    assert b.total == 5760.0
    by_project = allocate(use.frame, rates, period=parse_period("2026-11"), by="project", idle="separate")
    assert costs(by_project) == {"physics": 164.0, "chemistry": 28.0, IDLE: 5568.0}
    # GPU-hours count GPUs, not nodes: physics 20 + 144, idle 2 × 4 × 720 − 192
    assert {ln.name: ln.gpu_hours for ln in by_project.lines} == pytest.approx(
        {"physics": 164.0, "chemistry": 28.0, IDLE: 5568.0})
    assert by_project.idle_share == pytest.approx(5568 / 5760)


def test_sacct_needs_the_gpus_per_node(tmp_path):
    with pytest.raises(GpucostError, match="--gpus-per-node"):
        read_csv(FIX / "sacct_2026-11.txt")
    with pytest.raises(DataError, match="more than --gpus-per-node 2") as e:
        read_csv(FIX / "sacct_2026-11.txt", gpus_per_node=2)
    assert (e.value.row, e.value.column) == (5, "AllocTRES")


# -- Prometheus with DCGM exporter metrics -------------------------------------------------------------

def _tool(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name} is missing in CI: .ci/run installs Debian's prometheus package")
        pytest.skip(f"{name} is not installed (apt-get install prometheus gives it)")
    return exe


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def prometheus_url(tmp_path_factory):
    """A real Prometheus serving a TSDB that promtool built from the recorded OpenMetrics file."""
    promtool, prometheus = _tool("promtool"), _tool("prometheus")
    root = tmp_path_factory.mktemp("prometheus")
    data = root / "data"
    proc = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(OM), str(data)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cfg = root / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n", encoding="utf-8")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (root / "prometheus.log").open("w")
    server = subprocess.Popen([prometheus, f"--storage.tsdb.path={data}", f"--config.file={cfg}",
                               f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"],
                              stdout=log, stderr=subprocess.STDOUT, cwd=root)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{url}/-/ready", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("prometheus did not start: " + (root / "prometheus.log").read_text()[-2000:])
            time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.mark.promtool
def test_prometheus_dcgm_series_billed_by_namespace(prometheus_url):
    # 4 A100 80GB cards, 2 h at 1.00/h each = 8.00. gpu0: team-a engine 0.6 → 1.20 (idle 0.80);
    # gpu1: team-b 0.3 for 1 h → 0.30 (idle 1.70); gpu2 MIG: 3g.40gb (3/7) team-a, 4g.40gb (4/7) team-b
    # → 2.00 × 3/7 = 0.857 and 1.143, in cents 86 and 114 (largest remainder); gpu3: no pod, idle 2.00.
    use = read_prometheus(prometheus_url, TWO_HOURS, step_s=300)
    assert set(use.models.values()) == {"NVIDIA A100-SXM4-80GB"} and len(use.models) == 4
    rates = card_rates(Catalog(), use.models, "USD", hourly=1.0)
    assert {r.gpu_id for r in rates.values()} == {"a100-80gb-sxm"}
    b = allocate(use.frame, rates, period=TWO_HOURS, by="project", idle="separate")
    assert costs(b) == {"team-a": 2.06, "team-b": 1.44, IDLE: 4.50}
    by_pod = allocate(use.frame, rates, period=TWO_HOURS, by="pod", idle="separate")
    assert costs(by_pod) == {"team-a/train-0": 1.20, "team-b/batch-0": 1.14, "team-a/nb-0": 0.86,
                             "team-b/infer-0": 0.30, IDLE: 4.50}
    assert use.notes == ("SM share from DCGM_FI_PROF_GR_ENGINE_ACTIVE",)


@pytest.mark.promtool
def test_prometheus_gpu_util_when_asked_and_memory_held(prometheus_url):
    # GPU_UTIL says gpu0 80 % (1.60) and gpu1 50 % for 1 h (0.50); MIG as before
    use = read_prometheus(prometheus_url, TWO_HOURS, step_s=300, metric="util")
    rates = card_rates(Catalog(), use.models, "USD", hourly=1.0)
    b = allocate(use.frame, rates, period=TWO_HOURS, by="project", idle="separate")
    assert costs(b) == {"team-a": 2.46, "team-b": 1.64, IDLE: 3.90}
    # memory held: gpu0 40960 of 81920 MiB = 1.00; gpu1 20480 = a quarter over 2 h = 0.50
    m = allocate(use.frame, rates, period=TWO_HOURS, by="pod", idle="separate", rule="memory")
    assert costs(m)["team-a/train-0"] == 1.00 and costs(m)["team-b/infer-0"] == 0.50


@pytest.mark.promtool
def test_prometheus_outside_its_data_and_unreachable(prometheus_url):
    with pytest.raises(GpucostError, match="no DCGM_FI_PROF_GR_ENGINE_ACTIVE"):
        read_prometheus(prometheus_url, parse_period("2025-01"), step_s=3600)
    with pytest.raises(GpucostError, match="cannot reach Prometheus"):
        read_prometheus(f"http://127.0.0.1:{_free_port()}", TWO_HOURS, step_s=300)


def test_prometheus_range_is_asked_in_pieces_under_its_point_limit():
    asked = []

    class Resp:
        status_code = 200

        def __init__(self, body):
            self.body = body

        def json(self):
            return self.body

    def get(url, params, timeout):
        asked.append((float(params["start"]), float(params["end"])))
        return Resp({"status": "success", "data": {"resultType": "matrix", "result": []}})

    with pytest.raises(GpucostError):
        read_prometheus("http://x", parse_period("2026-11"), step_s=60, metric="util", get=get)
    # November at 60 s: 43,200 points per series in pieces of at most 10,000, twice (util and memory)
    util = asked[: len(asked) // 2]
    assert len(util) == 5
    assert all((b - a) / 60 + 1 <= 10_000 for a, b in util)
    assert util[0][0] == datetime(2026, 11, 1, tzinfo=UTC).timestamp()
    assert util[-1][1] == datetime(2026, 12, 1, tzinfo=UTC).timestamp() - 60


# -- the probe's per-process samples (fake NVML) -------------------------------------------------------

@pytest.fixture
def _real_nvml_after():
    yield
    probe.set_nvml(None)


def test_demo_processes_of_several_users_become_a_bill(_real_nvml_after):
    # demo: RTX 4090 alice 62 % / bob 28 % until 1200 s, then 1 % / 2 %; A100 carol 35 %, dave 8 %,
    # alice 2 %. An hour sampled each minute at 1.00/h per card: alice (20×62 + 40×1)/60 % of an hour =
    # 0.2133 → 21 cents, bob (20×28 + 40×2)/60 = 0.1067 → 11 (largest remainder), idle 68; A100: 35, 8, 2,
    # idle 55. Alice owes 0.23 in all.
    sim = SimClock()
    probe.set_nvml(probe.fake("demo", clock=sim))
    use = read_probe(3600, 60, sample_fn=probe.process_samples, clock=sim, sleep=sim.sleep,
                     wall_start=datetime(2026, 11, 2, tzinfo=UTC))
    assert set(use.frame["user"].unique()) == {"alice", "bob", "carol", "dave"}
    assert set(use.models.values()) == {"NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-80GB"}
    rates = card_rates(Catalog(), use.models, "USD", hourly=1.0)
    b = allocate(use.frame, rates, period=parse_period("2026-11-02T00:00..2026-11-02T01:00"), idle="separate")
    assert costs(b) == {"carol": 0.35, "alice": 0.23, "bob": 0.11, "dave": 0.08, IDLE: 1.23}


def test_process_samples_in_mig_mode_name_the_instance(_real_nvml_after):
    migs = [FakeMig("NVIDIA A100-SXM4-80GB MIG 3g.40gb", 40192, 30000, 2),
            FakeMig("NVIDIA A100-SXM4-80GB MIG 4g.40gb", 40192, 1000, 1)]
    gpu = FakeGPU(name="NVIDIA A100-SXM4-80GB", uuid="GPU-m", memory_total_mib=81920, mig_mode=1,
                  mig_instances=migs, processes=[FakeProcess(10, "train", 29000.0, user="ana", gpu_instance_id=2),
                                                 FakeProcess(11, "serve", 900.0, user="ben", gpu_instance_id=1)])
    probe.set_nvml(FakeNVML([gpu]))
    (g,) = probe.process_samples()
    assert [(p["user"], p["mig_profile"], p["sm_pct"], p["memory_mib"]) for p in g["processes"]] == \
        [("ana", "3g.40gb", None, 29000.0), ("ben", "4g.40gb", None, 900.0)]


def test_process_samples_without_a_gpu_is_empty_and_the_probe_says_why(_real_nvml_after):
    probe.set_nvml(probe.fake("no_library"))
    assert probe.process_samples() == []
    assert not probe.probe().available


def test_process_owner_reads_proc():
    import getpass

    class Real:  # not a fake: the owner comes from /proc/PID
        is_fake = False

    if not os.path.isdir(f"/proc/{os.getpid()}"):
        pytest.skip("no /proc on this system")
    assert probe.process_owner(Real(), os.getpid()) in (getpass.getuser(), str(os.getuid()))
    assert probe.process_owner(Real(), 2**22 + 12345) is None


def test_read_probe_rows_stand_for_one_interval(_real_nvml_after):
    sim = SimClock()
    probe.set_nvml(probe.fake("demo", clock=sim))
    use = read_probe(300, 60, sample_fn=probe.process_samples, clock=sim, sleep=sim.sleep,
                     wall_start=datetime(2026, 11, 2, tzinfo=UTC))
    assert len(use.frame) == 5 * 5  # 5 samples × 5 processes
    assert set(use.frame["duration_s"]) == {60.0}
    assert use.frame["start"].min() == pd.Timestamp("2026-11-02", tz="UTC")


def test_a_gpu_no_process_used_is_billed_idle_over_the_watch(_real_nvml_after):
    # two fake cards, nobody on the second: 10 min at 60 s; the probe's span is the watch (600 s)
    busy = FakeGPU(name="NVIDIA A100-SXM4-80GB", uuid="GPU-busy", memory_total_mib=81920,
                   processes=[FakeProcess(1, "job", 100.0, user="ana", sm_util=50)])
    empty = FakeGPU(name="NVIDIA A100-SXM4-80GB", uuid="GPU-empty", memory_total_mib=81920)
    sim = SimClock()
    probe.set_nvml(FakeNVML([busy, empty], clock=sim))
    use = read_probe(600, 60, sample_fn=probe.process_samples, clock=sim, sleep=sim.sleep,
                     wall_start=datetime(2026, 11, 2, tzinfo=UTC))
    assert use.period.hours == pytest.approx(600 / 3600)
    # 6.00/h per card for 10 min = 1.00 each: ana 50 % of the first = 0.50; idle 0.50 + 1.00
    b = allocate(use.frame, card_rates(Catalog(), use.models, "USD", hourly=6.0), period=use.period, idle="separate")
    assert costs(b) == {"ana": 0.50, IDLE: 1.50}
