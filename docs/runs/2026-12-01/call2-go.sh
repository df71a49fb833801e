#!/bin/bash
# Stage 2, device call 2: the per-tile fixes (T1-T3) and the cross-tile overlap (X1, X2).
D=.devcarry/s2; L=$OUT/logs; mkdir -p $L; export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $L/steps.txt; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/fa3_fwd*.whl && export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $L/gpu.txt; date -u >> $L/gpu.txt
NV="nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -lineinfo"
b() { $NV -shared -Xcompiler -fPIC -Xptxas -v ${@:3} $2 -o /tmp/$1.so > $L/build_$1.txt 2>&1 || echo "BUILD FAIL $1"; }
t build
b base $D/base.cu & b T1 $D/k.cu -DFAH_PREFETCH=0 -DFAH_SPLITRED=0 & b T2 $D/k.cu -DFAH_SPLITRED=0 & b T3 $D/k.cu &
b X1 $D/k.cu -DFAH_XT=1 & b X2 $D/k.cu -DFAH_XT=2 &
$NV -DFAH_XT=1 $D/k.cu $D/rc_driver.cu -o /tmp/rc_X1 > $L/build_rc_X1.txt 2>&1 &
$NV $D/mbar_probe.cu -o /tmp/mbar_probe > $L/build_probe.txt 2>&1 &
wait; t built
OK=""
for v in T1 T2 T3 X1 X2; do (timeout 200 python3 $D/run_bench.py /tmp/$v.so --only-check > $L/check_$v.txt 2>&1; echo "rc=$?" >> $L/check_$v.txt) & done; wait
for v in T1 T2 T3 X1 X2; do echo "check $v: $(tail -2 $L/check_$v.txt | tr '\n' ' ')" | tee -a $L/steps.txt; grep -q "rc=0" $L/check_$v.txt && OK="$OK --lib $v=/tmp/$v.so"; done
t "checked; timing base $OK"
timeout 240 python3 $D/bench_multi.py --lib base=/tmp/base.so $OK --reps 20 --passes 2 --json $L/bench2.json > $L/bench2.txt 2>&1
t benched
CS="compute-sanitizer --tool racecheck --racecheck-report all --print-limit 100000"
timeout 30 $CS /tmp/mbar_probe > $L/racecheck_probe.txt 2>&1; t "racecheck probe rc=$?"
for d in 64 128 256; do timeout 40 $CS /tmp/rc_X1 $d > $L/racecheck_X1_d$d.txt 2>&1; t "racecheck X1 D=$d rc=$?"; done
timeout 40 compute-sanitizer --tool synccheck /tmp/rc_X1 > $L/synccheck_X1.txt 2>&1; t "synccheck rc=$?"
timeout 40 compute-sanitizer --tool memcheck /tmp/rc_X1 > $L/memcheck_X1.txt 2>&1; t "memcheck rc=$?"
PV=X1; grep -q "lib X1=" <<< "$OK" || PV=T3
timeout 60 ncu --clock-control none -k regex:fa_fwd --launch-skip 2 --launch-count 1 --import-source no \
  --section SpeedOfLight --section WarpStateStats --section SourceCounters -o $L/prof_$PV -f python3 $D/prof.py /tmp/$PV.so 32 512 16 16 128 0 > $L/ncu_run.txt 2>&1
ncu -i $L/prof_$PV.ncu-rep --page source --csv --print-source sass > $L/ncu_source_$PV.csv 2>$L/ncu_source_err.txt
ncu -i $L/prof_$PV.ncu-rep --page details --csv > $L/ncu_details_$PV.csv 2>&1
t "ncu done"
rm -f $L/*.ncu-rep; tar czf $OUT/logs.tgz -C $OUT logs
python3 $D/rcsum.py $L/racecheck_*.txt | head -60; grep -h "ERROR SUMMARY" $L/synccheck_X1.txt $L/memcheck_X1.txt
grep -h "== \|geomean" $L/bench2.txt; cat $L/steps.txt
