"""The claims, in the order page 06 shows them: inputs (bounds from the shared specs where the quantity is
shared), the function computing each, the engines it uses and the numbers shown."""

from __future__ import annotations

from gpucost.claims import cloud, hardware, quantization
from gpucost.claims.core import REGISTRY, ClaimDef, I, tolerance
from gpucost.spot import SPOT_BUCKETS
from gpucost.units import HOURS_PER_YEAR

_CUR = I("currency", "CNY", "currency")
_GPU_4090 = I("gpu", "rtx-4090", "gpu")
_REF_A100 = I("reference_gpu", "a100-80gb-sxm", "gpu")


def _spot_default(key: str):
    return lambda cat: cloud.scenario_value("midsize", key)


def _configured_base(cat) -> int:
    return int(cloud.scenario_value("midsize", "hybrid.configured_base") or 0)


_DEFS = (
    ClaimDef("rtx4090_fp16_tflops",
             (_GPU_4090, I("claimed_tflops", 83.6, lo=0.1, hi=100000, unit="TFLOPS"), tolerance("tolerance_pct", "spec_pct")),
             hardware.rtx4090_fp16, ("gpucost.records.Gpu (gpus.csv dense throughput, as gpucost.cards ranks it)",),
             (("fp16_dense_tensor_tflops", "TFLOPS"), ("fp32_tflops", "TFLOPS"), ("claim_over_dense_fp16_pct", "%"))),
    ClaimDef("rtx4090_training_vs_a100",
             (_GPU_4090, _REF_A100, I("model", "llama-3-8b", "model"),
              I("mode", "lora", "choice", choices=("full", "lora", "qlora")),
              I("claimed_gap_pct", 15.0, lo=0, hi=100, unit="%")),
             hardware.rtx4090_training, ("gpucost.speed.training_time", "gpucost.memory.estimate"),
             (("speed_share_pct", "%"), ("gpu_tokens_per_s", "tokens/s"), ("reference_tokens_per_s", "tokens/s"))),
    ClaimDef("rtx4090_price_vs_a100",
             (_GPU_4090, _REF_A100, I("condition", "new", "choice", choices=("new", "used")), _CUR,
              I("claimed_multiple_x", 5.0, lo=1, hi=1000, unit="×"), tolerance("tolerance_pct", "amount_pct")),
             hardware.rtx4090_price, ("gpucost.pricing.price_summary",),
             (("price_multiple_x", "×"), ("gpu_price_money", "{currency}"), ("reference_price_money", "{currency}"))),
    ClaimDef("vram_under_16gb_70b",
             (I("model", "llama-3-70b", "model"),
              I("vram_gib", lambda cat: hardware.largest_under(cat, 16.0), lo=1, hi=4096, unit="GiB"),
              I("context", 4096, "int", shared="context"), I("allow_cpu_offload", True, "bool")),
             hardware.vram16_70b, ("gpucost.memory.estimate", "gpucost.quant"),
             (("smallest_total_gib", "GiB"), ("layers_on_gpu", ""), ("cpu_ram_needed_gib", "GiB"))),
    ClaimDef("used_a100_discount",
             (I("gpu", "a100-80gb-sxm", "gpu"), I("statistic", "median", "choice", choices=("median", "same-source")),
              _CUR, I("claimed_pct", 40.0, lo=0, hi=100, unit="%"), tolerance("tolerance_pp", "share_pp")),
             hardware.used_a100, ("gpucost.pricing.price_summary",),
             (("discount_pct", "%"), ("price_new_median_money", "{currency}"), ("price_used_median_money", "{currency}"))),
    ClaimDef("spot_discount",
             (I("gpu", "", "gpu_or_any"), I("provider", "aws", "provider"),
              I("claimed_low_pct", 70.0, lo=0, hi=100, unit="%"), I("claimed_high_pct", 90.0, lo=0, hi=100, unit="%"),
              I("interruption_bucket", _spot_default("spot.interruption_bucket"), "choice", choices=SPOT_BUCKETS),
              I("checkpoint_minutes", _spot_default("spot.checkpoint_minutes"), lo=0, hi=1440, unit="min"),
              I("restart_minutes", _spot_default("spot.restart_minutes"), lo=0, hi=1440, unit="min"),
              I("gpus_per_job", 1, "int", shared="gpus")),
             cloud.spot, ("gpucost.catalog (cloud_offers.csv)", "gpucost.spot.spot_factor", "gpucost.spot.spot_bucket"),
             (("discount_median_pct", "%"), ("effective_discount_pct", "%"), ("offers_in_claimed_range_pct", "%"))),
    ClaimDef("reserved_1y_saving",
             (I("gpu", "", "gpu_or_any"), I("provider", "", "provider"),
              I("utilization_pct", 100.0, lo=1, hi=100, unit="%"), I("claimed_pct", 35.0, lo=0, hi=100, unit="%"),
              tolerance("tolerance_pp", "share_pp")),
             cloud.reserved, ("gpucost.catalog (cloud_offers.csv)", "gpucost.tco (reserved break-even utilization)"),
             (("effective_saving_pct", "%"), ("list_saving_median_pct", "%"), ("break_even_utilization_pct", "%"))),
    ClaimDef("time_slicing_8x",
             (I("gpu", "a100-80gb-sxm", "gpu"), I("replicas", 8, "int", lo=1, hi=64),
              I("workload_mem_gib", 0.0, lo=0, hi=4096, unit="GiB"), I("workload_util_pct", 30.0, lo=0.5, hi=100, unit="%"),
              I("claimed_gain_pct", 300.0, lo=0, hi=10000, unit="%"), tolerance("tolerance_pct", "gain_pct")),
             cloud.time_slicing, ("gpucost.plan.plan_share", "gpucost.plan.device_plugin_config"),
             (("utilization_gain_pct", "%"), ("utilization_alone_pct", "%"), ("utilization_shared_pct", "%"),
              ("cards_needed", ""))),
    ClaimDef("int8_memory",
             (I("model", "llama-3-8b", "model"), I("base_format", "fp16", "format"),
              I("quant_format", "bnb-int8", "format"), I("context", 4096, "int", shared="context"),
              I("claimed_pct", 75.0, lo=0, hi=100, unit="%"), tolerance("tolerance_pp", "share_pp")),
             quantization.int8_memory, ("gpucost.memory.estimate", "gpucost.quant.weights_file_gib"),
             (("total_cut_pct", "%"), ("bits_cut_pct", "%"), ("total_quant_gib", "GiB"))),
    ClaimDef("int8_speed",
             (I("model", "llama-3-8b", "model"), I("gpu", "rtx-4090", "gpu"), I("base_format", "fp16", "format"),
              I("quant_format", "bnb-int8", "format"), I("batch", 1, "int", shared="batch"),
              I("claimed_low_x", 2.0, lo=0, hi=100, unit="×"), I("claimed_high_x", 4.0, lo=0, hi=100, unit="×")),
             quantization.int8_speed, ("gpucost.speed.speed",),
             (("speedup_x", "×"), ("measured_speedup_x", "×"), ("quant_tokens_per_s", "tokens/s"))),
    ClaimDef("int8_accuracy",
             (I("quant_format", "bnb-int8", "format"), I("claimed_pct", 95.0, lo=0, hi=100, unit="%"),
              tolerance("tolerance_pp", "quality_pp")),
             quantization.int8_accuracy, ("gpucost.catalog (quant_formats.csv ppl_delta)",),
             (("quality_kept_at_least_pct", "%"), ("ppl_delta", ""))),
    ClaimDef("zero3_100b",
             (I("params_b", 100.0, lo=0.1, hi=100000, unit="B"), I("num_layers", 80, "int", lo=1, hi=1024),
              I("gpu", "a100-80gb-sxm", "gpu"), I("seq_len", 4096, "int", shared="context"),
              I("micro_batch", 1, "int", shared="batch"),
              I("claimed_from_gpus", 32, "int", shared="gpus"), I("claimed_to_gpus", 8, "int", shared="gpus"),
              I("host_ram_gib_per_node", quantization.host_ram_default, lo=1, hi=1e6, unit="GiB"),
              I("gpus_per_node", 8, "int", lo=1, hi=64)),
             quantization.zero3, ("gpucost.memory.min_gpus", "gpucost.plan.fit_strategies", "gpucost.speed.training_time"),
             (("min_gpus_zero3_offload", ""), ("min_gpus_zero3", ""), ("min_gpus_without_zero3", ""), ("slowdown_x", "×"))),
    ClaimDef("idle_reclaim",
             (I("gpu", "a100-80gb-sxm", "gpu"), I("gpus", 4, "int", shared="gpus"),
              I("busy_pct", 30.0, lo=1, hi=99, unit="%"), I("job_minutes", 120.0, lo=1, hi=100000, unit="min"),
              I("idle_util_pct", 20.0, lo=1, hi=100, unit="%"), I("idle_for_minutes", 30.0, lo=0, hi=10000, unit="min"),
              _CUR, I("min_recovered_pct", 50.0, lo=0, hi=100, unit="%")),
             cloud.idle, ("gpucost.monitor.summarize", "gpucost.monitor.card_value"),
             (("saved_money_per_month", "{currency}"), ("idle_cost_money_per_month", "{currency}"), ("recovered_pct", "%"))),
    ClaimDef("startup_first_year",
             (I("scenario", "startup", "scenario"), I("region", "CN", "region"), I("owned_count", 2, "int", lo=1, hi=1000),
              I("condition", "new", "choice", choices=("new", "used")),
              I("a100_hours", float(HOURS_PER_YEAR), lo=0, hi=float(HOURS_PER_YEAR), unit="h"),
              I("a100_pricing", "reserved-1y", "choice", choices=("on-demand", "spot", "reserved-1y")), _CUR,
              I("claimed_cny", 80000.0, lo=1, hi=1e9, unit="CNY"), tolerance("tolerance_pct", "amount_pct")),
             cloud.startup, ("gpucost.tco.resolve", "gpucost.tco.evaluate"),
             (("total_money", "{currency}"), ("claimed_money", "{currency}"), ("a100_hours_within_claim", "h"))),
    ClaimDef("midsize_spot_reserved",
             (I("scenario", "midsize", "scenario"), I("provider", "aws", "provider"),
              I("reserved_gpus", _configured_base, "int", lo=0, hi=100000),
              I("months", 12, "int", shared="horizon_months"), _CUR,
              I("claimed_pct", 55.0, lo=0, hi=100, unit="%"), tolerance("tolerance_pp", "share_pp")),
             cloud.midsize, ("gpucost.tco.evaluate (hybrid: reserved-1y base + spot bursts)",),
             (("mix_cut_pct", "%"), ("best_mix_cut_pct", "%"), ("best_reserved_gpus", ""))),
    ClaimDef("t4_cluster_performance",
             (I("t4_count", 8, "int", lo=1, hi=4096), I("reference_gpu", "a100-40gb-sxm", "gpu"),
              I("reference_count", 8, "int", lo=1, hi=4096), I("model", "llama-3.2-1b", "model"),
              I("claimed_pct", 60.0, lo=0, hi=1000, unit="%"), tolerance("tolerance_pp", "near_pp")),
             hardware.t4_perf, ("gpucost.speed.training_time",),
             (("training_share_pct", "%"), ("dense_tflops_share_pct", "%"), ("bandwidth_share_pct", "%"))),
    ClaimDef("t4_cluster_price",
             (I("t4_count", 8, "int", lo=1, hi=4096), I("t4_used_price", None, "optfloat", lo=0, hi=1e9,
                                                       unit="{currency}"),
              _CUR, I("claimed_cny", 30000.0, lo=1, hi=1e9, unit="CNY"), tolerance("tolerance_pct", "amount_pct")),
             hardware.t4_price, ("gpucost.pricing.price_summary",),
             (("total_money", "{currency}"), ("claimed_money", "{currency}"))),
    ClaimDef("hybrid_cuts_60pct",
             (I("scenario", "midsize", "scenario"),
              I("baseline", "on-demand", "choice",
                choices=("on-demand", "buy-new", "buy-used", "lease", "spot", "reserved-1y", "reserved-3y")),
              I("horizon_months", 0, "int", lo=0, hi=120, unit="months"), _CUR, I("claimed_pct", 60.0, lo=0, hi=100, unit="%")),
             cloud.hybrid, ("gpucost.tco.evaluate (cheapest hybrid)",),
             (("cut_pct", "%"), ("hybrid_money", "{currency}"), ("baseline_money", "{currency}"))),
)

for _d in _DEFS:
    REGISTRY.add(_d)
