#!/bin/bash
# One device call of bench/grade_cost.py, a lane per GPU (docs/benchmarks.md, "Cost of a grade"):
#
#   bench/grade_cost_device.sh SECONDS "GPU|ARGS" ["GPU|ARGS" ...]
#   bench/grade_cost_device.sh 540 "0|--regrades 5 --grade softmax=tests/runners/solutions/softmax/honest.py" \
#       "1|--regrades 5 --grade fp8_gemm=tests/runners/solutions/fp8_gemm/honest.py" "2|cheats"
#
# run from the repository root with $OUT set; SECONDS is the call's limit. Each lane runs
# `python bench/grade_cost.py --out $OUT/gGPU --until DEADLINE ARGS` pinned to its GPU (a lane
# of "cheats [--only NAME ...]" runs bench/cheats_gpu.py instead, one of "gap [ARGS]"
# bench/warmup_gap.py), so no grade is cut in the middle, and packs its results and progress logs, without the disk cache, into $OUT/gGPU.tgz
# beside $OUT/gGPU.txt
# (the device tool brings back at most 8 files: four lanes). Each lane's text starts with its
# GPU's name.
set -u
limit_s=$1
shift
deadline=$(( $(date +%s) + limit_s - 30 ))  # leaves the packing its time
lane() {
    local gpu=${1%%|*} args=${1#*|}
    local out="$OUT/g$gpu"
    mkdir -p "$out"
    {
        nvidia-smi -L | sed -n "$(( gpu + 1 ))p"
        if [ "${args%% *}" = cheats ]; then
            # shellcheck disable=SC2086  # the --only names are a list of arguments
            CUDA_VISIBLE_DEVICES=$gpu timeout $(( deadline - $(date +%s) )) \
                python bench/cheats_gpu.py --out "$out/cheats" ${args#cheats}
        elif [ "${args%% *}" = gap ]; then
            # shellcheck disable=SC2086  # ARGS is a list of arguments
            CUDA_VISIBLE_DEVICES=$gpu timeout $(( deadline - $(date +%s) )) \
                python bench/warmup_gap.py --out "$out/gap.json" ${args#gap}
        else
            # shellcheck disable=SC2086  # ARGS is a list of arguments
            CUDA_VISIBLE_DEVICES=$gpu python bench/grade_cost.py --out "$out" --until "$deadline" $args
        fi
    } >"$OUT/g$gpu.txt" 2>&1
    tar czf "$OUT/g$gpu.tgz" --exclude=cache -C "$OUT" "g$gpu" && rm -rf "$out"
}
for spec in "$@"; do
    lane "$spec" &
done
wait
tail -n 20 "$OUT"/g*.txt
