#!/bin/bash
# Stage 2, device call 3: final candidates F0-F4 beside FA3/cuDNN, sanitizers on the named-barrier slot.
D=.devcarry/s2; L=$OUT/logs; mkdir -p $L; export PYTHONUNBUFFERED=1
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a $L/steps.txt; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/fa3_fwd*.whl && export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $L/gpu.txt; date -u >> $L/gpu.txt; sha256sum $D/k.cu $D/base.cu >> $L/gpu.txt
NV="nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -lineinfo"
b() { $NV -shared -Xcompiler -fPIC -Xptxas -v ${@:3} $2 -o /tmp/$1.so > $L/build_$1.txt 2>&1 || echo "BUILD FAIL $1"; }
t build
b base $D/base.cu & b F0 $D/k.cu & b F1 $D/k.cu -DFAH_NBSLOT=1 & b F2 $D/k.cu -DFAH_PREFETCH=1 &
b F3 $D/k.cu -DFAH_NBSLOT=1 -DFAH_PREFETCH=1 & b F4 $D/k.cu -DFAH_BN256=64 &
$NV -DFAH_NBSLOT=1 $D/k.cu $D/rc_driver.cu -o /tmp/rc_F1 > $L/build_rc_F1.txt 2>&1 &
$NV $D/k.cu $D/rc_driver.cu -o /tmp/rc_F0 > $L/build_rc_F0.txt 2>&1 &
$NV $D/mbar_probe.cu -o /tmp/mbar_probe > $L/build_probe.txt 2>&1 &
wait; t built
OK=""
for v in F0 F1 F2 F3 F4; do (timeout 200 python3 $D/run_bench.py /tmp/$v.so --only-check > $L/check_$v.txt 2>&1; echo "rc=$?" >> $L/check_$v.txt) & done; wait
for v in F0 F1 F2 F3 F4; do echo "check $v: $(tail -2 $L/check_$v.txt | tr '\n' ' ')" | tee -a $L/steps.txt; grep -q "rc=0" $L/check_$v.txt && OK="$OK --lib $v=/tmp/$v.so"; done
t "checked; timing base $OK"
timeout 240 python3 $D/bench_multi.py --lib base=/tmp/base.so $OK --reps 20 --passes 2 --json $L/bench3.json > $L/bench3.txt 2>&1
t benched
CS="compute-sanitizer --tool racecheck --racecheck-report all --print-limit 100000"
timeout 30 $CS /tmp/mbar_probe > $L/racecheck_probe.txt 2>&1; t "probe rc=$?"
for d in 64 128 256; do timeout 40 $CS /tmp/rc_F1 $d > $L/racecheck_F1_d$d.txt 2>&1; t "racecheck F1 D=$d rc=$?"; done
for d in 64 128 256; do timeout 40 $CS /tmp/rc_F0 $d > $L/racecheck_F0_d$d.txt 2>&1; t "racecheck F0 D=$d rc=$?"; done
for tool in synccheck memcheck; do for r in F1 F0; do timeout 40 compute-sanitizer --tool $tool /tmp/rc_$r > $L/${tool}_$r.txt 2>&1; t "$tool $r rc=$?"; done; done
tar czf $OUT/logs.tgz -C $OUT logs
python3 $D/rcsum.py $L/racecheck_*.txt | grep -v "^   B=" | head -40; grep -H "ERROR SUMMARY" $L/synccheck_*.txt $L/memcheck_*.txt
grep -h "== \|geomean" $L/bench3.txt; cat $L/steps.txt
