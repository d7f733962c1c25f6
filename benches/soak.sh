#!/usr/bin/env bash
# Soak of llm-decode-bench against its own simulator (not in CI; BENCHMARKS.md "Soak").
#
# Starts `llm-decode-bench sim` (one replica, room for every stream, 1% request faults) and
# `llm-decode-bench run --headless` (one decode cell, ctx x conc, one long window) as two
# processes on free loopback ports, samples both processes' RSS and CPU every
# SOAK_SAMPLE_S seconds into rss.csv, then checks:
#   1. accounting: every request of the attempt is in the report as completed, cut or an error
#      of a named kind; the simulator's own counters (`sim:completion_requests_total`,
#      `sim:injected_faults_total`, `vllm:request_success_total`) agree with the client's;
#   2. memory: the mean RSS of the last comparison span is at most SOAK_RSS_GROWTH_PCT above
#      that of the first span after SOAK_RSS_SKIP_S of warmup (spans: min(10 min, a third of
#      the rest)), for both processes.
# Exit 0 when both hold, 1 otherwise (2 when a process could not start).
#
#   benches/soak.sh                      # the documented run: 30 min, 256 streams
#   SOAK_WINDOW=2m benches/soak.sh       # a dry run
#
# Settings (environment): SOAK_WINDOW (30m), SOAK_CONC (256), SOAK_CTX (512),
# SOAK_MAX_TOKENS (128), SOAK_FAULTS, SOAK_SIM_ARGS, SOAK_DIR (output directory),
# SOAK_BIN (a built binary; default: build with cargo --release into CARGO_TARGET_DIR),
# SOAK_SAMPLE_S (10), SOAK_RSS_SKIP_S (120, less for short windows), SOAK_RSS_GROWTH_PCT (10).
set -euo pipefail

WINDOW=${SOAK_WINDOW:-30m}
CONC=${SOAK_CONC:-256}
CTX=${SOAK_CTX:-512}
MAX_TOKENS=${SOAK_MAX_TOKENS:-128}
# Request faults add up to 1% of requests; metrics-fail hits 1% of the scrapes.
FAULTS=${SOAK_FAULTS:-reset=0.003,stall=0.002,malformed=0.002,http500=0.001,http503=0.001,http429=0.001,metrics-fail=0.01}
SIM_ARGS=${SOAK_SIM_ARGS:---replicas 1 --max-num-seqs $CONC --speed 2 --step-per-seq-ms 0.2 --step-per-prefill-token-us 10}
SAMPLE_S=${SOAK_SAMPLE_S:-10}
GROWTH_PCT=${SOAK_RSS_GROWTH_PCT:-10}
DIR=${SOAK_DIR:-$(mktemp -d /tmp/llm-decode-bench-soak.XXXXXX)}
mkdir -p "$DIR"
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [[ -z ${SOAK_BIN:-} ]]; then
    (cd "$ROOT" && cargo build --release --quiet)
    SOAK_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/llm-decode-bench
fi
BIN=$SOAK_BIN
[[ -x $BIN ]] || { echo "soak: no binary at $BIN" >&2; exit 2; }
window_s=$(python3 -c "import re,sys; m=re.fullmatch(r'(\d+)(s|m|h)','$WINDOW') or sys.exit('soak: SOAK_WINDOW must be like 90s, 30m, 1h'); print(int(m[1])*{'s':1,'m':60,'h':3600}[m[2]])")
SKIP_S=${SOAK_RSS_SKIP_S:-$(( window_s / 6 < 120 ? window_s / 6 : 120 ))}

SIM_PID='' RUN_PID=''
cleanup() {
    [[ -n $RUN_PID ]] && kill "$RUN_PID" 2>/dev/null || true
    [[ -n $SIM_PID ]] && kill "$SIM_PID" 2>/dev/null || true
}
trap cleanup EXIT

# --- the simulator ---------------------------------------------------------------------------
# shellcheck disable=SC2086
"$BIN" sim --port 0 --seed 7 --faults "$FAULTS" $SIM_ARGS --ready-file "$DIR/ready.json" \
    >"$DIR/sim.out" 2>"$DIR/sim.err" &
SIM_PID=$!
for _ in $(seq 100); do [[ -s $DIR/ready.json ]] && break; sleep 0.1; done
[[ -s $DIR/ready.json ]] || { echo "soak: the simulator did not start (see $DIR/sim.err)" >&2; exit 2; }
REPLICA=$(jq -r '.replicas[0].url' "$DIR/ready.json")

# --- the client ------------------------------------------------------------------------------
"$BIN" run --headless --base-url "$REPLICA" --ctx "$CTX" --conc "$CONC" --window "$WINDOW" \
    --max-tokens "$MAX_TOKENS" --idle-timeout 10s --allow-errors \
    --out "$DIR/report.json" --log-file "$DIR/run.log" >"$DIR/run.out" 2>"$DIR/run.err" &
RUN_PID=$!
echo "soak: sim pid $SIM_PID ($REPLICA), run pid $RUN_PID, window $WINDOW, output in $DIR"

# --- sampling --------------------------------------------------------------------------------
ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
echo "t_s,sim_rss_kb,run_rss_kb,sim_cpu_pct,run_cpu_pct" >"$DIR/rss.csv"
start=$(date +%s.%N)
prev_t=$start prev_sim=$(cpu_ticks "$SIM_PID") prev_run=$(cpu_ticks "$RUN_PID")
while kill -0 "$RUN_PID" 2>/dev/null; do
    sleep "$SAMPLE_S"
    kill -0 "$RUN_PID" 2>/dev/null || break
    now=$(date +%s.%N) sim=$(cpu_ticks "$SIM_PID") run=$(cpu_ticks "$RUN_PID")
    awk -v t="$now" -v t0="$start" -v pt="$prev_t" -v s="$sim" -v ps="$prev_sim" -v r="$run" -v pr="$prev_run" \
        -v hz="$ticks" -v srss="$(rss_kb "$SIM_PID")" -v rrss="$(rss_kb "$RUN_PID")" \
        'BEGIN { dt = t - pt; printf "%.0f,%d,%d,%.1f,%.1f\n", t - t0, srss, rrss, 100*(s-ps)/hz/dt, 100*(r-pr)/hz/dt }' \
        >>"$DIR/rss.csv"
    prev_t=$now prev_sim=$sim prev_run=$run
done
set +e
wait "$RUN_PID"
run_rc=$?
set -e
RUN_PID=''
elapsed=$(awk -v t="$(date +%s.%N)" -v t0="$start" 'BEGIN { printf "%.0f", t - t0 }')

# --- the simulator's own record (a scrape may hit an injected metrics fault: retry) -----------
for _ in $(seq 20); do
    curl -sf "$REPLICA/metrics" -o "$DIR/sim-metrics.txt" && break
    sleep 0.2
done
kill "$SIM_PID" 2>/dev/null || true
wait "$SIM_PID" 2>/dev/null || true
SIM_PID=''

# --- checks ----------------------------------------------------------------------------------
python3 "$ROOT/benches/soak_check.py" "$DIR" "$run_rc" "$elapsed" "$SKIP_S" "$GROWTH_PCT"
