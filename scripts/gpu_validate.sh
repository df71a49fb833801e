#!/usr/bin/env bash
# Validation of the evaluator and the FlashAttention task on an H200 (run on the device machine from the
# repository root). Writes every record and log under $OUT (or ./.device-out). Steps:
#  1. full evaluation of the task's initial kernel (all correctness scenarios + 26 timed configs with
#     FA3, cuDNN and FA2), twice, to see the run-to-run spread of the timing ratios;
#  2. the shipped kernel (kernels/flash_attention_hopper.cu) evaluated the same way;
#  3. crashing, hanging and wrong candidates on a few scenarios: each must get its verdict with the
#     ledger intact;
#  4. the GPU-marked tests.
# Other steps: smoke (three scenarios, one config), attacks (tests/adversarial/test_gpu_attacks.py), and
# owed: what the 2026-12-01 afternoon changes still need on a GPU (docs/perf.md "Not measured yet"): the
# shipped kernel's full evaluation with the timed whole-output checks, the GPU attacks, the rmsnorm task
# and the profile tool; STEPS=owed bash scripts/gpu_validate.sh. span: the clock bound's calibration
# (scripts/span_calibration.py, every timed call logged) and the GPU attacks.
# .whl/ (from scripts/device_wheels.sh, carried to the device): wheels the GPU machine lacks, installed first.
set -uo pipefail
OUT=${OUT:-./.device-out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH="$PWD/src:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
Q="python3 -m quaere"
steps=${STEPS:-"initial kernel pytest"}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
for step in $steps; do
  start=$(date +%s.%N)
  case $step in
    initial|initial2) $Q eval --task flash_attention_hopper --json >"$OUT/eval-$step.json" 2>"$OUT/eval-$step.log" ;;
    kernel) $Q eval --task flash_attention_hopper ${KERNEL:-kernels/flash_attention_hopper.cu} --json >"$OUT/eval-kernel.json" 2>"$OUT/eval-kernel.log" ;;
    adversarial)
      for bad in crash hang wrong; do
        $Q eval --task flash_attention_hopper tests/fixtures/gpu/$bad.cu --scenarios tests/fixtures/gpu/scenarios-small.json \
          --no-benchmark --json >"$OUT/eval-$bad.json" 2>"$OUT/eval-$bad.log"
        echo "$bad: exit $?"
      done
      python3 - <<'PY'
import json, sys
from pathlib import Path
from quaere.evaluate.ledger import read_ledger
led = read_ledger(Path(".quaere/ledger.jsonl"))
print(f"ledger: {len(led.evaluations)} records, problems: {list(led.problems)}")
PY
      ;;
    smoke) python3 scripts/gpu_smoke.py 2>&1 | tee "$OUT/smoke.log" | tail -30 ;;
    attacks) python3 -m pytest -m gpu -q -s -p no:cacheprovider tests/adversarial/test_gpu_attacks.py 2>&1 | tee "$OUT/attacks.log" | tail -60 ;;
    owed)
      $Q eval --task flash_attention_hopper kernels/flash_attention_hopper.cu --json >"$OUT/eval-kernel.json" 2>"$OUT/eval-kernel.log"
      echo "kernel: exit $?"
      python3 -m pytest -m gpu -q -s -p no:cacheprovider tests/adversarial/test_gpu_attacks.py \
        tests/task_new/test_gpu.py tests/methods/test_gpu_profile.py 2>&1 | tee "$OUT/owed-gpu.log" | tail -60 ;;
    span)  # the clock bound's calibration data (docs/security.md: the device-timeline span), then the attacks
      python3 scripts/span_calibration.py 2>&1 | tee "$OUT/span.log"
      python3 -m pytest -m gpu -q -s -p no:cacheprovider tests/adversarial/test_gpu_attacks.py 2>&1 | tee "$OUT/attacks.log" | tail -60 ;;
    pytest) python3 -m pytest -m gpu -q -s -p no:cacheprovider tests -k "${PYTEST_K:-not initial_kernel_passes}" 2>&1 | tee "$OUT/pytest-gpu.log" | tail -40 ;;
  esac
  echo "step $step: rc $? wall $(python3 -c "import time;print(round(time.time()-$start,1))") s"
done
python3 scripts/summarize_evals.py "$OUT"/eval-*.json | tee "$OUT/summary.txt"
