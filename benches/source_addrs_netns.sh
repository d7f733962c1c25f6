#!/bin/sh
# Shows `run --source-addrs` carrying more connections to one target than one source address
# has ephemeral ports, at a scale any machine allows: inside a private network namespace
# (unprivileged: `unshare -rn`) the port range is narrowed to 1,000 ports, then 1,800 paced
# streams go to one bench server, refused from one address (exit 2 before any load) and
# carried from two (BENCHMARKS.md, "Where one box ends"). Not in CI; about 20 s.
# Usage: benches/source_addrs_netns.sh [path/to/llm-decode-bench]
# (default: the release build under $CARGO_TARGET_DIR, else target/). The reports go to a
# temporary folder removed at the end; KEEP=1 keeps it (its path is printed).
set -eu
BIN=${1:-${CARGO_TARGET_DIR:-target}/release/llm-decode-bench}
[ -x "$BIN" ] || { echo "build first: cargo build --release (or pass the binary; not found: $BIN)" >&2; exit 2; }
BIN=$(readlink -f "$BIN")
OUT=$(mktemp -d)
if [ "${KEEP:-0}" = 1 ]; then
    echo "reports kept in $OUT"
else
    trap 'rm -rf "$OUT"' EXIT
fi
# shellcheck disable=SC2016 # expanded by the inner shell, not here
unshare -rn sh -c '
set -u
BIN=$1; OUT=$2
ip link set lo up
echo "40000 40999" > /proc/sys/net/ipv4/ip_local_port_range
echo "port range in this namespace: $(cat /proc/sys/net/ipv4/ip_local_port_range)"
"$BIN" bench-server --port 18900 --mode paced --interval-us 100000 --tokens 100000 > "$OUT/server.log" 2>&1 &
SERVER=$!
sleep 1
"$BIN" run --headless --base-url http://127.0.0.1:18900 --ctx 0 --conc 1800 --window 5s --out "$OUT/one.json"
echo "one source address: exit $?"
"$BIN" run --headless --base-url http://127.0.0.1:18900 --ctx 0 --conc 1800 --window 8s \
    --source-addrs 127.0.0.1,127.0.0.2 --out "$OUT/two.json" > "$OUT/two.out" 2>&1 &
RUN=$!
sleep 7
echo "established connections to the server by source address:"
ss -Htn state established "( dport = :18900 )" | awk "{print \$3}" | cut -d: -f1 | sort | uniq -c
wait $RUN
echo "two source addresses: exit $? (report: $OUT/two.json, kept with KEEP=1)"
tail -n 6 "$OUT/two.out"
kill $SERVER
' sh "$BIN" "$OUT"
