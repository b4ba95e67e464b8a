"""Sharing and scaling planner: MIG tables and placements against NVIDIA's documents, time-slicing refusals,
ZeRO-3 GPU counts and the ZeRO paper's figures by hand, the autoscaler on a tiny trace by hand, and every
emitted config through its validator (Kubernetes schema, documented structures, DeepSpeed's own classes)."""

from __future__ import annotations

import importlib.util
import json
import math

import jsonschema
import numpy as np
import pytest
import yaml

from gpucost import plan
from gpucost.catalog import Catalog
from gpucost.errors import DataError, GpucostError

from .conftest import ROOT, cli_json, run_cli, run_notebook

SCHEMAS = ROOT / "tests" / "schemas"
GIB = 2**30


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog()


def _schema(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / f"{name}.schema.json").read_text()))


def _k8s_validate(obj: dict) -> None:
    import kubernetes_validate

    kubernetes_validate.validate(obj, "1.30", strict=True)


# ==================================================================================================
# MIG: NVIDIA's profile tables and placements
# ==================================================================================================

# From the MIG User Guide, "Supported MIG Profiles" (profile: memory GB in the name, memory slices of 8,
# compute slices of 7, number of instances available); media-extension (+me) profiles: 1 instance.
# Memory slices are the guide's "fraction of memory" x 8, except 1g.10gb on A100 40GB (the table prints 1/8,
# but `nvidia-smi mig -lgipp` places it on 2 slices: "Profile ID 15 Placements: {0,2,4,6}:2").
A100_40 = {"1g.5gb": (5, 1, 1, 7), "1g.5gb+me": (5, 1, 1, 1), "1g.10gb": (10, 2, 1, 4), "2g.10gb": (10, 2, 2, 3),
           "3g.20gb": (20, 4, 3, 2), "4g.20gb": (20, 4, 4, 1), "7g.40gb": (40, 8, 7, 1)}
H100_80 = {"1g.10gb": (10, 1, 1, 7), "1g.10gb+me": (10, 1, 1, 1), "1g.20gb": (20, 2, 1, 4), "2g.20gb": (20, 2, 2, 3),
           "3g.40gb": (40, 4, 3, 2), "4g.40gb": (40, 4, 4, 1), "7g.80gb": (80, 8, 7, 1)}
H200 = {"1g.18gb": (18, 1, 1, 7), "1g.18gb+me": (18, 1, 1, 1), "1g.35gb": (35, 2, 1, 4), "2g.35gb": (35, 2, 2, 3),
        "3g.71gb": (71, 4, 3, 2), "4g.71gb": (71, 4, 4, 1), "7g.141gb": (141, 8, 7, 1)}
B200 = {"1g.23gb": (23, 1, 1, 7), "1g.23gb+me": (23, 1, 1, 1), "1g.45gb": (45, 2, 1, 4), "2g.45gb": (45, 2, 2, 3),
        "3g.90gb": (90, 4, 3, 2), "4g.90gb": (90, 4, 4, 1), "7g.180gb": (180, 8, 7, 1)}
H100_94 = {"1g.12gb": (12, 1, 1, 7), "1g.12gb+me": (12, 1, 1, 1), "1g.24gb": (24, 2, 1, 4), "2g.24gb": (24, 2, 2, 3),
           "3g.47gb": (47, 4, 3, 2), "4g.47gb": (47, 4, 4, 1), "7g.94gb": (94, 8, 7, 1)}
# A30-24GB: fractions of 4 (1g.6gb 1/4 memory 1/4 SMs x4; 2g.12gb 2/4 x2; 4g.24gb full x1)
A30 = {"1g.6gb": (6, 1, 1, 4), "1g.6gb+me": (6, 1, 1, 1), "2g.12gb": (12, 2, 2, 2), "2g.12gb+me": (12, 2, 2, 1),
       "4g.24gb": (24, 4, 4, 1)}


@pytest.mark.parametrize("gpu,table", [
    ("a100-40gb-sxm", A100_40), ("a100-40gb-pcie", A100_40),
    # A100 80GB: "the profile names will change according to the memory proportion": same slices as 40GB
    ("a100-80gb-sxm", {n: (H100_80[n][0], *v[1:]) for n, v in zip(H100_80, A100_40.values(), strict=True)}),
    ("h100-sxm", H100_80), ("h100-pcie", H100_80), ("h100-nvl", H100_94), ("h200", H200), ("b200", B200),
    ("a30", A30)])
def test_mig_profiles_are_nvidias_tables(cat, gpu, table):
    got = {p.profile: (p.memory_gb, p.memory_slices, p.compute_slices, p.max_instances)
           for p in plan.mig_profiles(gpu, cat, with_media=True)}
    assert got == table
    totals = {(p.memory_slices_total, p.compute_slices_total) for p in plan.mig_profiles(gpu, cat, with_media=True)}
    assert totals == ({(4, 4)} if gpu == "a30" else {(8, 7)})


def test_mig_start_slots_are_the_lgipp_placements(cat):
    # nvidia-smi mig -lgipp (MIG User Guide, A100; the same output is published for H100 and H100 NVL):
    # ID 19 {0,1,2,3,4,5,6}:1 ; 15 {0,2,4,6}:2 ; 14 {0,2,4}:2 ; 9 {0,4}:4 ; 5 {0}:4 ; 0 {0}:8
    lgipp = {"1g": (0, 1, 2, 3, 4, 5, 6), "1g-double": (0, 2, 4, 6), "2g": (0, 2, 4), "3g": (0, 4), "4g": (0,),
             "7g": (0,)}
    for gpu, double in (("a100-40gb-sxm", "1g.10gb"), ("h100-sxm", "1g.20gb"), ("h100-nvl", "1g.24gb")):
        ps = {p.profile: p for p in plan.mig_profiles(gpu, cat)}
        for name, p in ps.items():
            key = "1g-double" if name == double else name.split(".")[0]
            assert p.starts == lgipp[key], (gpu, name)
    # A30: 4 memory slices; 4 one-slice, 2 two-slice and 1 four-slice instances can only sit at these starts
    assert {p.profile: p.starts for p in plan.mig_profiles("a30", cat)} == {
        "1g.6gb": (0, 1, 2, 3), "2g.12gb": (0, 2), "4g.24gb": (0,)}


def _layout(cat, gpu, names):
    ps = {p.profile: p for p in plan.mig_profiles(gpu, cat, with_media=True)}
    return plan.mig_layout(tuple(ps[n] for n in names))


def test_mig_layouts_follow_nvidias_placement_rules(cat):
    g = "a100-40gb-sxm"
    assert _layout(cat, g, ["1g.5gb"] * 7) == (0, 1, 2, 3, 4, 5, 6)  # seven 1g at slots 0..6
    assert _layout(cat, g, ["1g.5gb"] * 8) is None  # at most 7 instances
    assert _layout(cat, g, ["4g.20gb", "3g.20gb"]) == (0, 4)  # 4g only at 0, so 3g at 4 (valid since R510)
    assert _layout(cat, g, ["3g.20gb", "3g.20gb"]) == (0, 4)
    assert _layout(cat, g, ["3g.20gb"] * 3) is None  # 3 x 4 memory slices > 8
    assert _layout(cat, g, ["4g.20gb", "4g.20gb"]) is None  # one 4g per GPU
    # 2g at 0, 2, 4 plus a 1g at 6: 8 memory slices... no, 7 used; compute 2+2+2+1 = 7
    assert _layout(cat, g, ["2g.10gb"] * 3 + ["1g.5gb"]) == (0, 2, 4, 6)
    # 4g + 2g + 1g + 1g: memory 4+2+1+1 = 8 fits, but compute 4+2+1+1 = 8 > 7 slices
    assert _layout(cat, g, ["4g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]) is None
    # four 1g.10gb fill all 8 memory slices (starts 0,2,4,6): no room for another 1g.5gb
    assert _layout(cat, g, ["1g.10gb"] * 4) == (0, 2, 4, 6)
    assert _layout(cat, g, ["1g.10gb"] * 4 + ["1g.5gb"]) is None
    assert _layout(cat, g, ["7g.40gb", "1g.5gb"]) is None
    assert _layout(cat, g, ["1g.5gb+me", "1g.5gb+me"]) is None  # media extensions: one per GPU


@pytest.mark.parametrize("gpu,combo", [
    # NVIDIA mig-parted config-default.yaml, config "all-balanced", per device
    ("a100-40gb-sxm", {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
    ("a100-80gb-sxm", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
    ("h100-sxm", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
    ("h100-nvl", {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1}),
    ("h200", {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}),
    ("b200", {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}),
    ("a30", {"1g.6gb": 2, "2g.12gb": 1}),
])
def test_nvidias_balanced_configs_have_a_valid_layout(cat, gpu, combo):
    names = [n for n, k in combo.items() for _ in range(k)]
    assert _layout(cat, gpu, names) is not None


def test_non_mig_card_is_refused_with_the_list_of_mig_cards(cat):
    with pytest.raises(GpucostError, match="no MIG profile table for GPU 'rtx-4090'.*a100-80gb-sxm"):
        plan.plan_share([plan.Workload(4, 10)], "rtx-4090", "mig", cat)


def test_mig_plan_picks_the_smallest_profile_with_enough_memory_and_compute(cat):
    ws = plan.parse_workloads(["10:30", "8:20:latency", "16:40", "4:10"])
    r = plan.plan_share(ws, "a100-80gb-sxm", "mig", cat)
    prof = {p.workload: (p.profile, p.card, p.start) for p in r.placements}
    # 10 GiB @ 30 %: 1g (1/7 = 14.3 %) and 2g (2/7 = 28.6 %) are too slow -> 3g.40gb (42.9 %)
    # 8 GiB @ 20 %: 1g.10gb has 9.31 GiB but 14.3 % -> 2g.20gb; 16 GiB @ 40 % -> 3g.40gb; 4 GiB @ 10 % -> 1g.10gb
    # packing, largest first: card 0 = 3g@0 + 3g@4 (all 8 memory slices); card 1 = 2g@0 + 1g@2
    assert prof == {1: ("3g.40gb", 0, 0), 2: ("2g.20gb", 1, 0), 3: ("3g.40gb", 0, 4), 4: ("1g.10gb", 1, 2)}
    assert (r.cards_needed, r.cards_without_sharing, r.cards_saved) == (2, 4, 2)
    # utilization: (30+20+40+10) / 4 cards = 25 % alone; / 2 cards = 50 % shared: +25 points
    assert r.utilization_without_sharing_pct == pytest.approx(25.0)
    assert r.utilization_gained_pct == pytest.approx(25.0)
    with pytest.raises(GpucostError, match="fits no MIG profile"):
        plan.plan_share([plan.Workload(79, 50)], "a100-80gb-sxm", "mig", cat)  # 7g.80gb = 74.5 GiB nominal


# ==================================================================================================
# Time-slicing and MPS
# ==================================================================================================

def test_time_slicing_refuses_workloads_whose_memory_does_not_fit_together(cat):
    a, b = plan.Workload(16, 20), plan.Workload(16, 20)
    ok, why = plan.fit_together([a, b], 24.0, "time-slicing")
    assert not ok and "memory 32 GiB > the card's 24 GiB" in why  # 16 + 16 = 32 > 24
    assert plan.fit_together([a, plan.Workload(8, 20)], 24.0)[0]  # 16 + 8 = 24 <= 24
    ok, why = plan.fit_together([plan.Workload(10, 60), plan.Workload(10, 50)], 80.0)
    assert not ok and "110 %" in why  # 60 + 50 > 100 %: compute is shared in turns
    r = plan.plan_share([a, b], "rtx-4090", "time-slicing", cat)
    assert r.cards_needed == 2 and {p.card for p in r.placements} == {0, 1}
    assert any("memory 32 GiB > the card's 24 GiB" in n for n in r.notes)
    assert r.config("k8s_configmap") is None  # nothing shares a card
    with pytest.raises(GpucostError, match="needs 30 GiB, more than one GeForce RTX 4090 has"):
        plan.plan_share([plan.Workload(30, 10)], "rtx-4090", "time-slicing", cat)


def test_time_slicing_packs_by_memory_and_utilization_and_isolates_latency_work(cat):
    ws = [plan.Workload(40, 30), plan.Workload(30, 30), plan.Workload(20, 50), plan.Workload(10, 10, True)]
    r = plan.plan_share(ws, "a100-80gb-sxm", "time-slicing", cat)
    # first fit by memory: card 0 = 40 + 30 (70 GiB, 60 %); 20 GiB @ 50 % would make 110 % -> card 1;
    # the latency-sensitive one gets its own card 2
    assert [c.workloads for c in r.cards] == [(1, 2), (3,), (4,)]
    cm = yaml.safe_load(r.config("k8s_configmap"))
    assert yaml.safe_load(cm["data"]["any"])["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 2}]
    shared = plan.plan_share(ws, "a100-80gb-sxm", "time-slicing", cat, latency_alone=False)
    assert [c.workloads for c in shared.cards] == [(1, 2, 4), (3,)]  # 80 GiB, 70 %


def test_mps_shares_memory_and_warns_for_latency_sensitive_neighbours(cat):
    ws = [plan.Workload(20, 40), plan.Workload(10, 30, True)]
    r = plan.plan_share(ws, "h100-sxm", "mps", cat)
    assert r.cards_needed == 1
    assert any("not advisable for a latency target" in x for x in r.warnings)
    cfg = yaml.safe_load(yaml.safe_load(r.config("k8s_configmap"))["data"]["any"])
    assert cfg["sharing"] == {"mps": {"renameByDefault": False,
                                      "resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}
    # 48 clients at most per GPU (MPS)
    many = plan.plan_share([plan.Workload(0.5, 1)] * 50, "h100-sxm", "mps", cat)
    assert [len(c.workloads) for c in many.cards] == [48, 2]


@pytest.mark.parametrize("text,err", [("10x30", "expected MEM_GIB:UTIL_PCT"), ("a:b", "must be numbers"),
                                      ("10:0", "utilization must be > 0"), ("-1:20", "memory must be"),
                                      ("10:20:fast", "unknown flag 'fast'")])
def test_bad_workload_syntax_is_one_clear_line(text, err):
    with pytest.raises(GpucostError, match=err):
        plan.parse_workload(text)


# ==================================================================================================
# Configs through their validators
# ==================================================================================================

@pytest.mark.parametrize("mode", ["time-slicing", "mps", "mig"])
def test_emitted_configs_pass_kubernetes_and_documented_schemas(cat, mode):
    ws = plan.parse_workloads(["10:30", "8:20", "16:40", "4:10"])
    r = plan.plan_share(ws, "a100-80gb-sxm", mode, cat)
    cm = yaml.safe_load(r.config("k8s_configmap"))
    _k8s_validate(cm)  # the ConfigMap against the Kubernetes 1.30 schema, strictly
    assert cm["apiVersion"] == "v1" and cm["kind"] == "ConfigMap"
    if mode == "mig":
        parted = yaml.safe_load(r.config("mig_parted"))
        _schema("mig_parted_config").validate(parted)
        assert yaml.safe_load(cm["data"]["config.yaml"]) == parted
        # card 0 holds two 3g.40gb, card 1 a 2g.20gb and a 1g.10gb
        entries = parted["mig-configs"]["gpucost-plan"]
        assert {json.dumps(e["devices"]): e["mig-devices"] for e in entries} == {
            "[0]": {"3g.40gb": 2}, "[1]": {"1g.10gb": 1, "2g.20gb": 1}}
    else:
        embedded = yaml.safe_load(cm["data"]["any"])
        _schema("device_plugin_config").validate(embedded)
        key = "timeSlicing" if mode == "time-slicing" else "mps"
        assert embedded["sharing"][key]["resources"][0]["replicas"] == max(len(c.workloads) for c in r.cards)


def test_schemas_reject_what_the_documents_forbid():
    dp = _schema("device_plugin_config")
    res = [{"name": "nvidia.com/gpu", "replicas": 4}]
    assert not dp.is_valid({"version": "v1", "sharing": {"timeSlicing": {"resources": res}, "mps": {"resources": res}}})
    assert not dp.is_valid({"version": "v2", "sharing": {"timeSlicing": {"resources": res}}})
    assert not dp.is_valid({"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "gpu", "replicas": 2}]}}})
    mp = _schema("mig_parted_config")
    assert not mp.is_valid({"version": "v1", "mig-configs": {"x": [{"devices": "all", "mig-enabled": True,
                                                                    "mig-devices": {"1g.5gb": "7"}}]}})
    assert not mp.is_valid({"version": "v1", "mig-configs": {"x": [{"devices": "some", "mig-enabled": True,
                                                                    "mig-devices": {}}]}})
    # NVIDIA's own default config file entries validate
    assert mp.is_valid({"version": "v1", "mig-configs": {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "all-1g.10gb": [{"device-filter": ["0x233010DE", "0x20B210DE"], "devices": "all", "mig-enabled": True,
                         "mig-devices": {"1g.10gb": 7}}]}})
    ds = _schema("deepspeed_config")
    base = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True}}
    assert ds.is_valid({**base, "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}})
    assert not ds.is_valid({**base, "zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}})
    assert not ds.is_valid({**base, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme"}}})
    assert not ds.is_valid({**base, "zero_optimization": {"stage": 4}})
    assert not ds.is_valid({**base, "zero_optimization": {"stage": 1, "ofload_optimizer": {"device": "cpu"}}})
    assert not ds.is_valid({**base, "fp16": {"enabled": True}, "zero_optimization": {"stage": 0}})


# ==================================================================================================
# Multi-GPU training
# ==================================================================================================

def test_plan_train_counts_are_the_memory_engines(cat):
    """One training-memory model: the planner's GPU count for each strategy is gpucost.memory.min_gpus'."""
    from gpucost import memory
    from gpucost.models import catalog_spec
    from gpucost.quant import get_format

    r = plan.plan_train("llama-3-70b", "h100-sxm", cat, mode="full", seq_len=4096)
    spec, bf16 = catalog_spec("llama-3-70b", cat), get_format("bf16", cat)
    for o in r.options:
        if o.tp * o.pp > 1:
            continue
        n, _ = memory.min_gpus(spec, bf16, memory.Setup(mode="full", context=4096, zero=o.zero_stage,
                                                         offload=o.offload), 80.0)
        assert o.min_gpus == n, o.strategy


def test_plan_train_chooses_fewest_gpus_without_offload_and_prices_them(cat):
    r = plan.plan_train("llama-3.1-70b", "a100-80gb-sxm", cat, mode="full", tokens=1e9, seq_len=2048)
    fits = [o for o in r.options if o.min_gpus is not None and o.offload == "none"]
    assert r.chosen.min_gpus == min(o.min_gpus for o in fits)
    assert r.chosen.offload == "none"
    # cost = price per GPU-hour x GPUs x hours
    assert r.chosen.cost == pytest.approx(r.price_per_gpu_hour * r.chosen.min_gpus * r.chosen.time_to_train_hours)
    # hours = tokens / tokens per second / 3600
    assert r.chosen.time_to_train_hours == pytest.approx(1e9 / r.chosen.tokens_per_s / 3600)
    by = {o.strategy: o for o in r.options}
    assert by["dp"].min_gpus is None  # 70B x 16 bytes cannot sit on one 80 GiB card
    assert by["zero3+cpu"].min_gpus <= by["zero3"].min_gpus
    assert by["zero1"].min_gpus is None or by["zero1"].min_gpus >= by["zero2"].min_gpus >= by["zero3"].min_gpus
    d = r.to_dict()
    assert {"min_gpus", "zero_stage", "offload", "tokens_per_s", "time_to_train_hours", "cost", "currency"} <= set(d)


def _check_deepspeed(cfg: dict, world: int, model_parallel: int = 1) -> None:
    _schema("deepspeed_config").validate(cfg)
    # DeepSpeedConfig._batch_assertion: train_batch_size == micro batch x grad accumulation x world size
    # (the data-parallel world: GPUs / (tensor x pipeline parallel))
    assert cfg["train_batch_size"] == (cfg["train_micro_batch_size_per_gpu"] * cfg["gradient_accumulation_steps"]
                                       * (world // model_parallel))
    if importlib.util.find_spec("pydantic") is None:
        return
    from .deepspeed_classes import deepspeed_config_classes

    with deepspeed_config_classes() as ds:
        z = ds.get_zero_config(cfg)
        assert z.stage == cfg["zero_optimization"]["stage"]
        for key in ("offload_optimizer", "offload_param"):
            want = cfg["zero_optimization"].get(key)
            got = getattr(z, key)
            if want:
                assert got.device == want["device"]
                if want["device"] == "nvme":
                    assert str(got.nvme_path) == want["nvme_path"]
        assert ds.get_bfloat16_config(cfg).enabled == cfg["bf16"]["enabled"]
        assert ds.get_float16_config(cfg).enabled == cfg["fp16"]["enabled"]


@pytest.mark.parametrize("strategy", plan.STRATEGIES, ids=lambda s: s.name)
def test_deepspeed_config_of_every_strategy_is_accepted(strategy):
    cfg = plan.deepspeed_config(strategy, 8, micro_batch=2, grad_accum=4, nvme_path="/local_nvme")
    _check_deepspeed(cfg, 8)
    assert cfg["train_batch_size"] == 2 * 4 * 8  # micro 2 x accumulation 4 x 8 data-parallel GPUs
    zo = cfg["zero_optimization"]
    assert zo["stage"] == strategy.zero_stage
    if strategy.offload != "none":
        assert zo["offload_optimizer"]["device"] == strategy.offload
        assert ("offload_param" in zo) == (strategy.zero_stage == 3)


def test_deepspeed_classes_reject_a_misspelt_key():
    pytest.importorskip("pydantic")
    from .deepspeed_classes import deepspeed_config_classes

    with deepspeed_config_classes() as ds, pytest.raises(Exception, match="ofload_param"):
        ds.get_zero_config({"zero_optimization": {"stage": 3, "ofload_param": {"device": "cpu"}}})


def test_planned_deepspeed_config_with_tensor_parallel(cat):
    r = plan.plan_train("llama-3.1-70b", "a100-80gb-sxm", cat, tokens=1e9, strategy=None)
    c = r.chosen
    _check_deepspeed(r.deepspeed_config, c.min_gpus, c.tp * c.pp)
    if c.tp > 1:
        assert r.deepspeed_config["tensor_parallel"] == {"autotp_size": c.tp}


def test_plan_train_bad_inputs(cat):
    with pytest.raises(GpucostError, match="unknown model 'llama-9'"):
        plan.plan_train("llama-9", "h100-sxm", cat)
    with pytest.raises(GpucostError, match="unknown GPU 'h1000'; closest"):
        plan.plan_train("llama-3.1-8b", "h1000", cat)
    with pytest.raises(GpucostError, match="tokens must be"):
        plan.plan_train("llama-3.1-8b", "h100-sxm", cat, tokens=0)


# ==================================================================================================
# Autoscaling and commitments
# ==================================================================================================

TINY = plan.Trace(np.array([0.0, 1.0]), np.array([2, 1]), np.array([2.0, 1.0]), "tiny")


def test_fixed_fleet_on_a_tiny_trace_by_hand():
    r = plan.simulate_fleet(TINY, "fixed", max_gpus=2, price_per_gpu_hour=2.0)
    # A (2 GPUs, 2 h) runs 0..2; B (1 GPU, 1 h) arrives at 1, waits for A, runs 2..3
    # waits 0 and 1 h: mean 0.5, p95 (linear) 0 + 0.95 x 1 = 0.95; 2 GPUs x 3 h = 6 GPU-h billed, 12 at 2.0
    # used 2x2 + 1x1 = 5 GPU-h: utilization 5/6
    assert (r.wait_mean_hours, r.wait_p95_hours) == pytest.approx((0.5, 0.95))
    assert (r.gpu_hours_billed, r.cost, r.utilization, r.makespan_hours) == pytest.approx((6.0, 12.0, 5 / 6, 3.0))


def test_autoscaler_on_a_tiny_trace_by_hand():
    r = plan.simulate_fleet(TINY, "autoscale", max_gpus=2, price_per_gpu_hour=2.0, startup_hours=0.5,
                            cooldown_hours=0.25)
    # t=0: A waits; 2 GPUs requested (billed from 0), ready at 0.5 -> A runs 0.5..2.5 (wait 0.5)
    # t=1: B arrives; the cap (2) is busy -> B waits until A ends at 2.5, runs 2.5..3.5 (wait 1.5)
    # t=2.5: one GPU idle -> released after the 0.25 h cool-down at 2.75; B's GPU idle at 3.5, released 3.75
    # billed: 2 GPUs x 2.75 h + 1 GPU x 1.0 h = 6.5 GPU-h -> 13.0 at 2.0; utilization 5 / 6.5
    # waits 0.5 and 1.5: mean 1.0, p95 0.5 + 0.95 x 1.0 = 1.45; the last job ends at 3.5
    assert (r.wait_mean_hours, r.wait_p95_hours) == pytest.approx((1.0, 1.45))
    assert (r.gpu_hours_billed, r.cost, r.utilization) == pytest.approx((6.5, 13.0, 5 / 6.5))
    assert r.makespan_hours == pytest.approx(3.5)
    # the spot pool with no interruptions: the same fleet, billed at the spot price (6.5 x 1.0)
    s = plan.simulate_fleet(TINY, "spot", max_gpus=2, price_per_gpu_hour=2.0, spot_price_per_gpu_hour=1.0,
                            startup_hours=0.5, cooldown_hours=0.25, interruption_rate_per_hour=0.0)
    assert (s.cost, s.spot_gpu_hours, s.on_demand_gpu_hours) == pytest.approx((6.5, 6.5, 0.0))


def test_spot_interruptions_requeue_work_after_the_last_checkpoint():
    one = plan.Trace(np.array([0.0]), np.array([1]), np.array([10.0]), "one")
    calm = plan.simulate_fleet(one, "spot", max_gpus=1, spot_price_per_gpu_hour=1.0, startup_hours=0.0,
                               interruption_rate_per_hour=0.0)
    rough = plan.simulate_fleet(one, "spot", max_gpus=1, spot_price_per_gpu_hour=1.0, startup_hours=0.0,
                                interruption_rate_per_hour=0.5, checkpoint_hours=1.0, seed=3)
    assert calm.makespan_hours == pytest.approx(10.0) and calm.interruptions == 0
    assert rough.interruptions > 0
    assert rough.makespan_hours > calm.makespan_hours  # lost work since the last checkpoint is redone
    assert rough.gpu_hours_billed >= 10.0


def test_commitment_level_by_hand():
    tr = plan.Trace(np.array([0.0, 0.0]), np.array([1, 1]), np.array([10.0, 5.0]), "two")
    # demand: 2 GPUs for 5 h, then 1 GPU for 5 h; T = 10 h; on-demand price 1
    # d = 40 %: cost(0) = 15; cost(1) = 1 x 10 x 0.6 + 5 (overflow) = 11; cost(2) = 2 x 10 x 0.6 = 12 -> 1 GPU
    c = plan.commitment_level(tr, 0.4)
    assert (c.level_gpus, c.cost, c.cost_on_demand_only, c.saving) == pytest.approx((1, 11.0, 15.0, 4.0))
    assert c.costs == pytest.approx((15.0, 11.0, 12.0))
    # d = 60 %: cost(1) = 4 + 5 = 9; cost(2) = 8 -> 2 GPUs
    assert plan.commitment_level(tr, 0.6).level_gpus == 2
    with pytest.raises(GpucostError, match="discount"):
        plan.commitment_level(tr, 1.0)


def test_trace_reader_names_file_row_and_column(tmp_path):
    p = tmp_path / "jobs.csv"
    p.write_text("arrival_hour,gpu_hours,gpus\n0,4,2\n1,3,1.5\n")
    with pytest.raises(DataError, match=r"jobs.csv, row 2 \(line 3\), column 'gpus': '1.5' must be a whole number"):
        plan.read_trace(p)
    p.write_text("arrival,gpu_hours,gpus\n0,4,2\n")
    with pytest.raises(DataError, match="missing column 'arrival_hour'"):
        plan.read_trace(p)
    # a demand profile (hour, gpus): 2 then 1 GPU -> three 1-GPU one-hour jobs
    p.write_text("hour,gpus\n0,2\n1,1\n")
    tr = plan.read_trace(p)
    assert list(tr.arrival) == [0, 0, 1] and tr.gpu_hours == 3


def test_sample_trace_has_provenance_and_plans():
    import pandas as pd

    df = pd.read_csv(plan.sample_trace_path())
    assert len(df) == 1000 and df["source"].str.contains("HeliosArtifact").all()
    assert df["as_of"].str.match(r"^\d{4}-\d{2}-\d{2}$").all()
    tr = plan.read_trace("sample")
    assert plan.default_max_gpus(tr) >= int(tr.gpus.max())
    r = plan.plan_scale(tr, "autoscale", gpu="h100-sxm", price_per_gpu_hour=2.0, spot_price_per_gpu_hour=1.0,
                        commit_discount=0.4)
    pol = {p.policy: p for p in (r.result, *r.others)}
    assert pol["autoscale"].utilization > pol["fixed"].utilization  # the fleet follows the queue
    assert pol["fixed"].gpu_hours_used == pytest.approx(tr.gpu_hours)
    assert r.commitment.cost <= r.commitment.cost_on_demand_only


# ==================================================================================================
# CLI
# ==================================================================================================

def test_cli_share_contract_and_config_file_is_never_overwritten(tmp_path):
    out = tmp_path / "cm.yaml"
    d = cli_json("plan", "share", "--gpu", "a100-80gb-sxm", "--workload", "10:30", "--workload", "8:20:latency",
                 "--workload", "16:40", "--mode", "time-slicing", "--k8s-config", str(out))
    assert {"cards_needed", "cards_without_sharing", "placements"} <= set(d)
    assert d["cards_without_sharing"] == 3 and d["written"]["k8s_config"] == str(out)
    _k8s_validate(yaml.safe_load(out.read_text()))
    before = out.read_text()
    proc = run_cli("plan", "share", "--gpu", "a100-80gb-sxm", "--workload", "10:30", "--workload", "8:20",
                   "--k8s-config", str(out))
    assert proc.returncode == 2 and "exists; not overwritten" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and out.read_text() == before
    proc = run_cli("plan", "share", "--gpu", "a100-80gb-sxm", "--workload", "10:30", "--workload", "8:20",
                   "--workload", "4:10", "--k8s-config", str(out), "--force", "--json")  # 3 replicas now
    assert proc.returncode == 0 and out.read_text() != before


@pytest.mark.parametrize("args,msg", [
    (("share", "--gpu", "a100-80gb-sxm", "--workload", "10-30"), "expected MEM_GIB:UTIL_PCT"),
    (("share", "--gpu", "rtx4099", "--workload", "10:30"), "unknown GPU 'rtx4099'; closest"),
    (("train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tokens", "lots"), "'lots' is not a number"),
])
def test_cli_bad_input_is_exit_2_and_one_line(args, msg):
    proc = run_cli("plan", *args)
    assert proc.returncode == 2 and msg in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_cli_train_contract_and_deepspeed_file(tmp_path):
    out = tmp_path / "ds_config.json"
    d = cli_json("plan", "train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tokens", "2B",
                 "--deepspeed-config", str(out))
    assert {"min_gpus", "zero_stage", "offload", "tokens_per_s", "time_to_train_hours", "cost", "currency"} <= set(d)
    cfg = json.loads(out.read_text())
    assert cfg == d["deepspeed_config"]
    _check_deepspeed(cfg, d["min_gpus"], d["tp"] * d["pp"])
    assert d["time_to_train_hours"] == pytest.approx(2e9 / d["tokens_per_s"] / 3600)
    proc = run_cli("plan", "train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deepspeed-config", str(out))
    assert proc.returncode == 2 and "exists; not overwritten" in proc.stderr


def test_cli_scale_contract_and_bad_trace_row(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_hour,gpu_hours,gpus\n0,4,2\n1,1,1\n")
    d = cli_json("plan", "scale", "--trace", str(p), "--policy", "fixed", "--max-gpus", "2", "--price", "2")
    assert {"cost", "wait_mean_hours", "wait_p95_hours", "utilization"} <= set(d)
    # hand: A 0..2, B waits 1 h, 2..3: mean wait 0.5; 2 GPUs x 3 h x 2.0 = 12; utilization 5/6
    assert (d["cost"], d["wait_mean_hours"], d["utilization"]) == pytest.approx((12.0, 0.5, 5 / 6))
    p.write_text("arrival_hour,gpu_hours,gpus\n0,4,2\n1,-1,1\n")
    proc = run_cli("plan", "scale", "--trace", str(p))
    assert proc.returncode == 2
    assert "row 2 (line 3), column 'gpu_hours'" in proc.stderr and str(p) in proc.stderr
    proc = run_cli("plan", "scale", "--trace", str(tmp_path / "missing.csv"))
    assert proc.returncode == 2 and "file not found" in proc.stderr


# ==================================================================================================
# Page (papermill)
# ==================================================================================================

@pytest.mark.notebook
@pytest.mark.timeout(300)
def test_page_answers_all_three_planners_like_the_cli(tmp_path):
    rec = run_notebook("05_sharing_and_scaling.ipynb", {"share_mode": "mig", "policy": "autoscale"}, tmp_path)
    assert rec["error"] is None, rec["errors"]
    share = cli_json("plan", "share", "--gpu", "a100-80gb-sxm", "--workload", "10:30", "--workload", "8:20:latency",
                     "--workload", "16:40", "--workload", "4:10", "--mode", "mig")
    assert rec["share"]["cards_needed"] == share["cards_needed"] == 2
    assert rec["share"]["placements"] == share["placements"]
    assert rec["share"]["download_links"] == 2  # mig-parted config and the ConfigMap
    train = cli_json("plan", "train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tokens", "1B")
    for k in ("min_gpus", "zero_stage", "strategy", "deepspeed_config"):
        assert rec["train"][k] == train[k]
    assert rec["train"]["download_links"] == 1
    scale = cli_json("plan", "scale", "--trace", "sample", "--policy", "autoscale")
    assert rec["scale"]["cost"] == pytest.approx(scale["cost"])
    assert rec["scale"]["utilization"] == pytest.approx(scale["utilization"])
    assert math.isfinite(rec["scale"]["wait_p95_hours"])


def test_page_shows_bad_workloads_as_a_message():
    from gpucost.ui.sharing_scaling import SharingScalingPage

    page = SharingScalingPage(workloads="10:30\nnonsense")
    assert page.error and "nonsense" in page.error
    assert "nonsense" in page.workloads_msg.value
    assert page.results_record()["train"]["min_gpus"] >= 1  # the other tabs still answer
