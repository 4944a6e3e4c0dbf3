# Sourced by the device scripts (bench/hw/run_*.sh): what every command on the GPU machine needs.
# NVLink multicast stays off (KINDS.md); $OUT, $LOG and say() for the script's output; the carried wheels
# (.whl/, from ../shared/device/wheels.sh) installed once per process tree, the checkout on PYTHONPATH.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-out/hw}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
if [ -n "${CTAHW_WHEELS_INSTALLED:-}" ]; then
  :  # a calling script installed them already
elif ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD CTAHW_WHEELS_INSTALLED=1 || { echo "wheel install failed" | tee -a "$LOG"; exit 1; }
else
  export PYTHONPATH=$PWD
fi
# record_env [CMD...]: the run's environment into $OUT/env.txt (date, commit, GPUs, topology, CuPy), then CMD's
# output if given. record_env_end: the GPUs' clocks, power, temperature and memory appended after the run.
record_env() {
  {
    date -u; echo "commit: ${CTAHW_COMMIT:-unknown}"
    nvidia-smi --query-gpu=index,name,uuid,serial,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
    nvidia-smi topo -m
    python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion(), 'numpy', numpy.__version__)"
    if [ $# -gt 0 ]; then "$@"; fi
  } > "$OUT/env.txt" 2>&1
}
record_env_end() {
  nvidia-smi --query-gpu=index,clocks.sm,power.draw,temperature.gpu,memory.used,utilization.gpu --format=csv \
    >> "$OUT/env.txt" 2>&1
}
# run_begin MS [QUERY]: the call's folder $R = $OUT/run, its env.txt (record_env), and nvidia-smi sampling QUERY
# (default: timestamp, SM clock, power, temperature, throttle reasons) every MS ms into $R/smi.csv in the background.
# run_end: the sampling stopped, the GPUs' state after the run appended to env.txt (record_env_end), the log copied,
# and $R packed into $OUT/run.tar.gz (the device tool returns at most 8 files).
SMI_QUERY=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
run_begin() {
  R="$OUT/run"; mkdir -p "$R"
  OUT="$R" record_env
  nvidia-smi --query-gpu="${2:-$SMI_QUERY}" --format=csv -lms "$1" > "$R/smi.csv" 2>&1 &
  SMI=$!
}
run_end() {
  kill $SMI
  OUT="$R" record_env_end
  cp "$LOG" "$R/log.txt"
  tar czf "$OUT/run.tar.gz" -C "$OUT" run && rm -rf "$R"
}
