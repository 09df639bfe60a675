#!/bin/sh
# tests/cuda/on_gpu.sh - everything attn_cuda.cuh needs checked on a real GPU, in one run of at most
# about 8 minutes (a lent H100/H200 gives 15 minutes in all, start included, so a second run fits):
#   1. the GPU, driver, nvcc and PyTorch versions;
#   2. build (sm_90) unless build/test_cuda, build/bench_cuda and build/libattn_cuda_shim.so are
#      already there (built on the CPU machine with `make CUDA_ARCH=-arch=sm_90 ...` and carried,
#      which saves the device minutes nvcc would take);
#   3. make test-cuda's program: the whole CUDA suite against attn.h's CPU functions;
#   4. bench_cuda (cuBLAS unfused baseline, cuDNN's SDPA graph, TF32);
#   5. bench/bench_cuda_torch.py: forward, backward, paged decode and TF32 beside PyTorch's SDPA
#      (FlashAttention-2 and cuDNN backends) in one process;
#   6. compute-sanitizer memcheck and racecheck on parts of the suite, time permitting.
# Results go to $OUT (default build/gpu_out): log.txt (all output) and the CSVs, at most 8 files.
# Usage on the GPU machine, from the repository root: sh tests/cuda/on_gpu.sh
# `sh tests/cuda/on_gpu.sh profile` is the follow-up run instead: the suite, each kernel's SASS
# instruction mix (cuobjdump), Nsight Compute on one launch of each main kernel (ncu.txt), and
# an A/B of the shim against build/libattn_cuda_shim_fast.so (a -use_fast_math build) when carried.
OUT=${OUT:-build/gpu_out}
mkdir -p "$OUT"
LOG=$OUT/log.txt
T0=$(date +%s)
log() { echo "$@" | tee -a "$LOG"; }
elapsed() { echo $(( $(date +%s) - T0 )); }
# run NAME SECONDS COMMAND...: its output into the log, its status and time in one line
run() {
    name=$1; secs=$2; shift 2
    log "=== $name (limit ${secs}s, at $(elapsed)s)"
    timeout "$secs" "$@" >>"$LOG" 2>&1
    rc=$?
    log "=== $name: exit $rc after $(elapsed)s"
    return $rc
}
: >"$LOG"
log "=== on_gpu.sh $(date -u +%Y-%m-%dT%H:%MZ)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv 2>&1 | tee -a "$LOG"
nvcc --version 2>&1 | tail -2 | tee -a "$LOG"
PY=python3
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())" 2>&1 | tee -a "$LOG"

# cuDNN and cuBLAS for bench_cuda's dlopen: the toolkit's, else the ones PyTorch ships
PYLIBS=$($PY -c "import os, nvidia; b = list(nvidia.__path__)[0]; print(':'.join(os.path.join(b, d, 'lib') for d in sorted(os.listdir(b)) if os.path.isdir(os.path.join(b, d, 'lib'))))" 2>/dev/null)
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64:$PYLIBS"

need=""
for f in build/test_cuda build/bench_cuda build/libattn_cuda_shim.so; do [ -x "$f" ] || [ -f "$f" ] || need="$need $f"; done
if [ -n "$need" ]; then
    run "build$need" 300 make -j8 CUDA_ARCH=-arch=sm_90 $need || log "build failed"
else
    log "=== build: prebuilt binaries carried (nvcc $(strings build/test_cuda 2>/dev/null | grep -m1 -o 'cuda_[0-9.]*' || echo '?'), -arch=sm_90)"
fi

run "test-cuda (make test-cuda's program)" 150 ./build/test_cuda
log "$(grep -E '^(ok|FAIL)|passed, [0-9]+ failed' "$LOG" | tail -12)"

if [ "$1" = profile ]; then
    log "=== SASS instruction mix per kernel (cuobjdump)"
    cuobjdump -sass build/test_cuda >"$OUT/sass.txt" 2>&1
    awk -f tests/cuda/sass_stats.awk "$OUT/sass.txt" | tee -a "$LOG"
    gzip -9 "$OUT/sass.txt"
    run "ncu, one launch of each main kernel" 200 ncu --clock-control none --target-processes all --kernel-name regex:acu_ --launch-count 8 \
        --set full --page details --print-units base -o /tmp/acu_prof $PY bench/bench_cuda_torch.py profile
    ncu --import /tmp/acu_prof.ncu-rep --page details --print-units base >"$OUT/ncu.txt" 2>&1
    ncu --import /tmp/acu_prof.ncu-rep --page raw --csv >"$OUT/ncu_raw.csv" 2>&1 && gzip -9 "$OUT/ncu_raw.csv"
    grep -E "^  acu_|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Issue Slots Busy|One or More Eligible|Theoretical Occupancy|L1/TEX Hit|DRAM Throughput" "$OUT/ncu.txt" | tee -a "$LOG"
    ATTN_SHIM=build/libattn_cuda_shim_old.so ATTN_SHIM_B=build/libattn_cuda_shim.so:build/libattn_cuda_shim_fast.so PYTHONUNBUFFERED=1 \
        run "A/B: A = the first run's build, B = this one, C = this one with -use_fast_math" 120 $PY bench/bench_cuda_torch.py ab
    log "=== on_gpu.sh profile done in $(elapsed)s"
    ls -la "$OUT" | tee -a "$LOG"
    exit 0
fi

run "bench_cuda" 90 ./build/bench_cuda
[ -f bench/results_cuda.csv ] && cp bench/results_cuda.csv "$OUT/"
[ -f bench/results_cuda_tf32.csv ] && cp bench/results_cuda_tf32.csv "$OUT/"

# the Python bench's soft budget: what is left of ~7 minutes, less the sanitizer's minute
left=$(( 330 - $(elapsed) ))
[ $left -lt 60 ] && left=60
PYTHONUNBUFFERED=1 OUT_DIR="$OUT" BENCH_BUDGET_S=$left run "bench_cuda_torch.py (budget ${left}s)" $(( left + 60 )) \
    $PY bench/bench_cuda_torch.py

if command -v compute-sanitizer >/dev/null 2>&1 && [ "$(elapsed)" -lt 440 ]; then
    TEST_CUDA_ONLY=forward,decode,bwd_tc run "compute-sanitizer racecheck (forward, decode, bwd_tc)" 40 \
        compute-sanitizer --tool racecheck --print-limit 10 ./build/test_cuda
    TEST_CUDA_ONLY=forward,decode,merge run "compute-sanitizer memcheck (forward, decode, merge)" 30 \
        compute-sanitizer --tool memcheck --print-limit 10 ./build/test_cuda
fi
log "=== on_gpu.sh done in $(elapsed)s"
ls -la "$OUT" | tee -a "$LOG"
