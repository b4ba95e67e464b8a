#!/usr/bin/env bash
# On a machine WITH an NVIDIA GPU: check `gpucost probe` against the real NVML and keep the answers.
#
#   OUT=/some/dir tools/device_probe_check.sh     (from anywhere; OUT defaults to <repo>/device-out)
#
# Makes a fresh venv, installs nvidia-ml-py, pandas, numpy and pyyaml, then the package itself
# (pip install --no-deps .), and writes under $OUT:
#   summary.txt            one line per check, and what each probe said
#   nvidia-smi.txt         what the driver says (to compare with)
#   probe.json             gpucost probe --json                          (+ .rc, .stderr)
#   probe_watch.json       gpucost probe --watch 5 --interval 1 --json   (+ .rc, .stderr)
#   probe_processes.json   gpucost probe --processes --json              (+ .rc, .stderr)
#   rules.yml              gpucost rules --gpu <the first catalog card found>
#   bench_probe_real.txt   benchmarks/bench_probe.py --real --seconds 5
#
# Offline machines: put wheels in WHEELHOUSE (default build/wheelhouse when it exists) as any/*.whl (pure
# Python: nvidia-ml-py, tzdata, python-dateutil, six, setuptools, wheel) and cpXY/*.whl (numpy, pandas,
# pyyaml for that Python), e.g. for Python 3.11:
#   pip download --only-binary=:all: --python-version 3.11 --platform manylinux_2_28_x86_64 \
#       -d build/wheelhouse/cp311 nvidia-ml-py pandas numpy pyyaml
# If no venv can be made or pip fails, the wheels are unpacked into a folder on PYTHONPATH instead.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
: >"$OUT/summary.txt"
PY="${PYTHON:-python3}"
TMP="$(mktemp -d)"
log() { echo "$*" | tee -a "$OUT/summary.txt"; }

WHEELHOUSE="${WHEELHOUSE:-}"
[ -z "$WHEELHOUSE" ] && [ -d build/wheelhouse ] && WHEELHOUSE="$PWD/build/wheelhouse"
PYTAG="$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
log "python: $("$PY" --version 2>&1) ($PYTAG) at $(command -v "$PY"); wheelhouse: ${WHEELHOUSE:-none (PyPI)}"
SRC=()
[ -n "$WHEELHOUSE" ] && SRC=(--no-index --find-links "$WHEELHOUSE/any" --find-links "$WHEELHOUSE/$PYTAG")

MODE=venv
if "$PY" -m venv "$TMP/venv" >"$OUT/pip.log" 2>&1 \
   && { [ -z "$WHEELHOUSE" ] || "$TMP/venv/bin/python" -m pip install -q --disable-pip-version-check "${SRC[@]}" \
          setuptools wheel >>"$OUT/pip.log" 2>&1; } \
   && "$TMP/venv/bin/python" -m pip install -q --disable-pip-version-check "${SRC[@]}" \
          nvidia-ml-py pandas numpy pyyaml >>"$OUT/pip.log" 2>&1 \
   && "$TMP/venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
          $([ -n "$WHEELHOUSE" ] && echo --no-build-isolation) . >>"$OUT/pip.log" 2>&1; then
  RUNPY=("$TMP/venv/bin/python")
  log "installed into a fresh venv: nvidia-ml-py $("${RUNPY[@]}" -c 'import importlib.metadata as m; print(m.version("nvidia-ml-py"))')"
else
  MODE=unpacked
  log "venv/pip failed (see pip.log); unpacking the wheels onto PYTHONPATH instead"
  mkdir -p "$TMP/site"
  for whl in "${WHEELHOUSE:-/nonexistent}"/any/*.whl "${WHEELHOUSE:-/nonexistent}/$PYTAG"/*.whl; do
    [ -f "$whl" ] && "$PY" -m zipfile -e "$whl" "$TMP/site"
  done
  export PYTHONPATH="$TMP/site:$PWD"
  RUNPY=("$PY")
fi
gc() { "${RUNPY[@]}" -m gpucost "$@"; }
log "mode: $MODE; gpucost $(gc --version 2>&1)"

(nvidia-smi; nvidia-smi -q -d MEMORY,UTILIZATION,POWER,CLOCK,ECC,PERFORMANCE) >"$OUT/nvidia-smi.txt" 2>&1 || true
run() {  # run NAME ARGS...: keep stdout, stderr and exit code of `gpucost ARGS`
  local name="$1" t0 rc
  shift
  t0=$(date +%s%N)
  gc "$@" >"$OUT/$name.json" 2>"$OUT/$name.stderr"
  rc=$?
  echo "$rc" >"$OUT/$name.rc"
  log "$name: exit $rc in $(( ($(date +%s%N) - t0) / 1000000 )) ms  (gpucost $*)"
}
run probe probe --json
run probe_watch probe --watch 5 --interval 1 --json
run probe_processes probe --processes --json

"${RUNPY[@]}" - "$OUT" <<'PYEOF' 2>&1 | tee -a "$OUT/summary.txt"
import json, sys
out = sys.argv[1]
for name in ("probe", "probe_watch", "probe_processes"):
    try:
        d = json.load(open(f"{out}/{name}.json"))
    except Exception as exc:
        print(f"{name}: not JSON ({exc})"); continue
    print(f"{name}: available={d['available']} driver={d['driver_version']} cuda={d['cuda_version']} "
          f"reason={d['reason']}")
    for g in d["gpus"]:
        print(f"  [{g['index']}] {g['name']} catalog={g['catalog_id']} ({g['catalog_note']}) "
              f"cc={g['compute_capability']} mem={g['memory_used_mib']}/{g['memory_total_mib']} MiB "
              f"util={g['utilization_gpu_pct']} temp={g['temperature_c']} power={g['power_w']}/{g['power_limit_w']} W "
              f"sm={g['sm_clock_mhz']}/{g['sm_clock_max_mhz']} pcie=gen{g['pcie_gen']}x{g['pcie_width']} "
              f"mig={g['mig_mode']} ecc={g['ecc_mode']} lost={g['lost']} unavailable={g['unavailable']} "
              f"processes={g['processes']}")
    w = d.get("watch")
    if w:
        print(f"  watch: {w['samples']} samples; " + "; ".join(
            f"[{s['index']}] util mean {s['util_mean_pct']} p95 {s['util_p95_pct']} power mean {s['power_mean_w']} W "
            f"energy {s['energy_kwh']} kWh" for s in w["gpus"]))
PYEOF

GPU_ID="$("${RUNPY[@]}" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(next((g["catalog_id"] for g in d["gpus"] if g["catalog_id"]), ""))' "$OUT/probe.json" 2>/dev/null)"
gc rules ${GPU_ID:+--gpu "$GPU_ID"} >"$OUT/rules.yml" 2>"$OUT/rules.stderr"
log "rules ${GPU_ID:+--gpu $GPU_ID}: exit $?"
if [ -f benchmarks/bench_probe.py ]; then
  timeout 120 "${RUNPY[@]}" benchmarks/bench_probe.py --real --seconds 5 >"$OUT/bench_probe_real.txt" 2>&1
  log "bench_probe --real: exit $?"
  cat "$OUT/bench_probe_real.txt" >>"$OUT/summary.txt"
fi
log "done: files in $OUT"
