#!/bin/sh
# One observer poll's time against a real Prometheus (BENCHMARKS.md, issue 27 observer): SHARDS
# synthetic shard pages (CELLS decode cells each, the series of docs/metrics.md with counters
# and histogram buckets growing with time) scraped every second by Debian's prometheus, then
# examples/observe_poll.rs times ROUNDS polls at 1, 4, 8 and 18 queries in flight, interleaved.
# Usage: benches/observe_poll.sh   (SHARDS default 8, CELLS 32, ROUNDS 40; OUT default /tmp/observe_poll;
# CARGO_FLAGS default --release, empty for a debug build)
set -e
SHARDS=${SHARDS:-8}
CELLS=${CELLS:-32}
ROUNDS=${ROUNDS:-40}
OUT=${OUT:-/tmp/observe_poll}
PORT0=18610
mkdir -p "$OUT"
cat /proc/loadavg
python3 - "$SHARDS" "$CELLS" "$PORT0" > "$OUT/pages.log" 2>&1 <<'PY' &
import http.server, socketserver, sys, threading, time
shards, cells, port0 = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
LE = [m * 10.0 ** e for e in range(-5, 2) for m in (1, 1.5, 2, 3, 5, 7)]
def page(shard):
    t = time.time()
    out = []
    lab = lambda extra: '{session="s-1",shard="%d"%s}' % (shard, extra)
    out.append("llm_decode_bench_heartbeat_timestamp_seconds%s %f" % (lab(""), t))
    out.append("llm_decode_bench_session_finished%s 0" % lab(""))
    for c in range(cells):
        cell = ',cell="ctx=%dk conc=%d"' % (c // 8, 2 ** (c % 8))
        n = int(t * 50) % 10 ** 9
        out.append("llm_decode_bench_cell_active%s %d" % (lab(cell), int(c == int(t / 10) % cells)))
        for name in ("output_tokens_total", "requests_started_total", "requests_completed_total"):
            out.append("llm_decode_bench_%s%s %d" % (name, lab(cell), n))
        out.append('llm_decode_bench_request_errors_total%s %d' % (lab(cell + ',kind="stalled"'), n // 1000))
        for name in ("requests_in_flight", "streams_running"):
            out.append("llm_decode_bench_%s%s %d" % (name, lab(cell), c % 8))
        for h in ("ttft", "itl", "tpot"):
            for i, le in enumerate(LE):
                out.append('llm_decode_bench_%s_seconds_bucket%s %d' % (h, lab(cell + ',le="%g"' % le), n * (i + 1) // len(LE)))
            out.append('llm_decode_bench_%s_seconds_bucket%s %d' % (h, lab(cell + ',le="+Inf"'), n))
            out.append('llm_decode_bench_%s_seconds_count%s %d' % (h, lab(cell), n))
            out.append('llm_decode_bench_%s_seconds_sum%s %f' % (h, lab(cell), n * 0.01))
    return ("\n".join(out) + "\n").encode()
def serve(shard):
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = page(shard)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    socketserver.ThreadingTCPServer(("127.0.0.1", port0 + shard), H).serve_forever()
socketserver.ThreadingTCPServer.allow_reuse_address = True
for s in range(shards):
    threading.Thread(target=serve, args=(s,), daemon=True).start()
while True:
    time.sleep(3600)
PY
PAGES=$!
TARGETS=$(i=0; while [ $i -lt "$SHARDS" ]; do printf "'127.0.0.1:%d'," $((PORT0 + i)); i=$((i + 1)); done)
printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: shards\n    static_configs:\n      - targets: [%s]\n' "${TARGETS%,}" > "$OUT/prom.yml"
rm -rf "$OUT/data"
prometheus --config.file="$OUT/prom.yml" --storage.tsdb.path="$OUT/data" --web.listen-address=127.0.0.1:18690 > "$OUT/prom.log" 2>&1 &
PROM=$!
trap 'kill $PAGES $PROM 2>/dev/null' EXIT INT TERM
sleep 15
cargo run ${CARGO_FLAGS---release} --example observe_poll -- http://127.0.0.1:18690 '{job="shards",session="s-1"}' "$ROUNDS"
cat /proc/loadavg
