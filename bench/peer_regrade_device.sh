#!/bin/bash
# One device call of the peer re-grade, on a GPU host with neither PostgreSQL nor Redis nor
# network (docs/benchmarks.md, "Scale-out on one host", "The peer's 117 runs through the
# production path on 4×H100"; what travels is prepared there):
#
#   bench/peer_regrade_device.sh SECONDS [scaleout]
#
# run from the repository root with $OUT set; SECONDS is the call's limit. It installs the
# carried wheels, puts the carried redis-server on PATH, samples the host's load, optionally
# grades four copies of one honest kernel on four GPUs at once first (bench/scaleout.py), then
# re-grades the peer's runs with one pinned worker per GPU until shortly before the limit,
# resuming bench/results/peer_regrade_h100.jsonl and every var/peer_calls/call*.jsonl. $PROBLEMS
# (e.g. "--problem 07_w4a16_gemm --problem 01_fp8_gemm") narrows the queue; $SCALEOUT_ARGS
# (default "--workers 4 --runs 4"), $SCALEOUT_PROBLEM (default row_sum) and $SCALEOUT_S
# (default 240) shape the scale-out run, and a call whose scale-out leaves under 120 s skips
# the re-grade. What comes back:
# $OUT/evaluations.jsonl, $OUT/regrade.json, $OUT/scaleout.json and $OUT/logs.tgz (the workers'
# logs, each grade's staff log, the load samples).
set -u
limit_s=$1
started=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    var/wheels-web/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH="$PWD/var/redisbin:$PATH"
export LD_LIBRARY_PATH="$PWD/var/redisbin/lib:${LD_LIBRARY_PATH:-}"
work=/tmp/regrade
rm -rf "$work" && mkdir -p "$work"  # a machine still warm from the last call keeps /tmp
lscpu --extended=CPU,CORE,SOCKET,NODE >"$work/cpus.txt" 2>&1
(while sleep 10; do
    echo "$(date +%s) load $(cut -d' ' -f1-3 /proc/loadavg) gpus $(nvidia-smi \
        --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits | tr '\n' ' ')"
    ps -eo pid,psr,pcpu,comm --sort=-pcpu | sed -n 2,9p | tr -s ' ' | tr '\n' ';'; echo
done >"$work/load.log" 2>&1 &)
if [ "${2:-}" = scaleout ]; then
    ARENA_ENGINE_LOG_DIR="$work/scaleout/grades" timeout "${SCALEOUT_S:-240}" python3 \
        bench/scaleout.py --servers /tmp/srv-scaleout ${SCALEOUT_ARGS:---workers 4 --runs 4} \
        --problem "${SCALEOUT_PROBLEM:-row_sum}" --out "$work/scaleout" >"$work/scaleout.out" 2>&1
    cp "$work/scaleout/scaleout.json" "$OUT/" 2>/dev/null
fi
resume=(--resume bench/results/peer_regrade_h100.jsonl)
for earlier in var/peer_calls/call*.jsonl; do
    [ -f "$earlier" ] && resume+=(--resume "$earlier")
done
if [ $((started + limit_s - 75 - $(date +%s))) -lt 120 ]; then
    tail -25 "$work/scaleout.out"
    tar -czf "$OUT/logs.tgz" -C "$work" cpus.txt load.log scaleout.out scaleout
    exit 0
fi
# the workers stop at the deadline and are given 30 s to end; then the results are copied
python3 bench/peer_regrade.py --checkout var/peer --problems var/kbh --out "$work/rg" \
    --servers /tmp/srv --workers 4 --costs bench/results/peer_runs_h100.jsonl "${resume[@]}" \
    ${PROBLEMS:-} --until $((started + limit_s - 75)) >"$work/regrade.out" 2>&1
cp "$work/rg/evaluations.jsonl" "$work/rg/regrade.json" "$OUT/"
tail -25 "$work/regrade.out"
tar -czf "$OUT/logs.tgz" -C "$work" --exclude='*.jsonl' --exclude=gpu-locks --exclude=pg \
    cpus.txt load.log regrade.out $(cd "$work" && ls -d scaleout.out scaleout rg 2>/dev/null)
