#!/bin/sh
# Shard window alignment (BENCHMARKS.md, issue 27): three sessions of two shards each
# (`run --shard i/2 --start-at T`), one after the other, against the simulator; prints how far
# apart the shards' decode windows opened and how late each opened and started.
# Usage: benches/shard_align.sh   (BIN: the binary, default the debug build under
# $CARGO_TARGET_DIR, else target/; OUT: where the reports go, default /tmp/shard_align)
set -e
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/debug/llm-decode-bench}
OUT=${OUT:-/tmp/shard_align}
mkdir -p "$OUT"
cat /proc/loadavg
"$BIN" sim --replicas 1 --port 18500 --speed 20 > "$OUT/sim.log" 2>&1 &
SIM=$!
sleep 2
for run in 1 2 3; do
  T=$(( $(date +%s) + 5 ))
  for i in 0 1; do
    "$BIN" run --headless --base-url http://127.0.0.1:18501 --ctx 0 --conc 3,8 --window 2s \
      --warmup-timeout 2s --shard $i/2 --start-at $T --overwrite --out "$OUT/r${run}s$i.json" \
      > /dev/null 2> "$OUT/e${run}s$i" &
    eval "P$i=\$!"
  done
  wait "$P0" "$P1"
done
kill "$SIM"
cat /proc/loadavg
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for run in (1, 2, 3):
    tl = [json.load(open(f"{out}/r{run}s{i}.json"))["shard"]["timeline"] for i in (0, 1)]
    for a, b in zip(*tl):
        ms = lambda x: x * 1e3
        late = [ms(s["window_opened_unix_s"] - s["window_due_unix_s"]) for s in (a, b)]
        delta = ms(a["window_opened_unix_s"] - b["window_opened_unix_s"])
        print(f"run {run} {a['cell']}: started late {a['late_ms']:.2f} / {b['late_ms']:.2f} ms, "
              f"window opened after due {late[0]:.2f} / {late[1]:.2f} ms, shard 0 - shard 1 {delta:.2f} ms")
PY
