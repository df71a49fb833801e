#!/bin/bash
# Stage 2, device call 1: build variants, check, time beside FA3/cuDNN, racecheck, one ncu profile.
D=.devcarry/s2; L=$OUT/logs; mkdir -p $L; export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $L/steps.txt; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/fa3_fwd*.whl && export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $L/gpu.txt
date -u >> $L/gpu.txt; nvcc --version | tail -2 >> $L/gpu.txt
NV="nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -lineinfo"
b() { $NV -shared -Xcompiler -fPIC -Xptxas -v ${@:3} $2 -o /tmp/$1.so > $L/build_$1.txt 2>&1 || echo "BUILD FAIL $1"; }
t build
b base $D/base.cu & b A $D/k.cu & b T $D/k.cu -DFAH_TMA_ST=1 & b W $D/k.cu -DFAH_BN128NC=176 &
b TW $D/k.cu -DFAH_TMA_ST=1 -DFAH_BN128NC=176 & b P $D/k.cu -DFAH_PP128=1 & b TP $D/k.cu -DFAH_TMA_ST=1 -DFAH_PP128=1 &
$NV $D/base.cu $D/rc_driver.cu -o /tmp/rc_base > $L/build_rc_base.txt 2>&1 &
$NV -DFAH_TMA_ST=1 -DFAH_BN128NC=176 $D/k.cu $D/rc_driver.cu -o /tmp/rc_TW > $L/build_rc_TW.txt 2>&1 &
$NV $D/k.cu $D/rc_driver.cu -o /tmp/rc_A > $L/build_rc_A.txt 2>&1 &
wait; t built; ls /tmp/*.so /tmp/rc_* >> $L/steps.txt
OK=""
for v in A T W TW P TP; do (timeout 200 python3 $D/run_bench.py /tmp/$v.so --only-check > $L/check_$v.txt 2>&1; echo "rc=$?" >> $L/check_$v.txt) & done; wait
for v in A T W TW P TP; do tail -2 $L/check_$v.txt | tr '\n' ' ' | sed "s/^/check $v: /" | tee -a $L/steps.txt; echo | tee -a $L/steps.txt; grep -q "rc=0" $L/check_$v.txt && OK="$OK --lib $v=/tmp/$v.so"; done
t "checked; timing base $OK"
timeout 240 python3 $D/bench_multi.py --lib base=/tmp/base.so $OK --reps 20 --passes 2 --json $L/bench1.json > $L/bench1.txt 2>&1
t benched
CS="compute-sanitizer --tool racecheck --racecheck-report all"
timeout 60 $CS /tmp/rc_base > $L/racecheck_base.txt 2>&1; t "racecheck base rc=$?"
timeout 60 $CS /tmp/rc_TW > $L/racecheck_TW.txt 2>&1; t "racecheck TW rc=$?"
timeout 45 $CS /tmp/rc_A > $L/racecheck_A.txt 2>&1; t "racecheck A rc=$?"
PV=T; grep -q "lib T=" <<< "$OK" || PV=base
timeout 90 ncu --clock-control none -k regex:fa_fwd --launch-skip 2 --launch-count 1 --import-source no \
  --section SpeedOfLight --section WarpStateStats --section SourceCounters --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis --section LaunchStats -o $L/prof_$PV -f python3 $D/prof.py /tmp/$PV.so 32 512 16 16 128 0 > $L/ncu_run.txt 2>&1
t "ncu rc=$?"
ncu -i $L/prof_$PV.ncu-rep --page details --csv > $L/ncu_details_$PV.csv 2>&1
ncu -i $L/prof_$PV.ncu-rep --page source --csv --print-source sass > $L/ncu_source_$PV.csv 2>$L/ncu_source_err.txt || \
  ncu -i $L/prof_$PV.ncu-rep --page source --csv > $L/ncu_source_$PV.csv 2>>$L/ncu_source_err.txt
t exported
tar czf $OUT/logs.tgz -C $OUT logs
grep -h "== \|geomean" $L/bench1.txt; cat $L/steps.txt; grep -h "RACECHECK SUMMARY\|Error\|Warning" $L/racecheck_*.txt | sort | uniq -c | head -20
