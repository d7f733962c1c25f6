#!/usr/bin/env bash
# One sharded session over ssh: shard i runs on the i-th host, all starting at one instant,
# then the reports are copied here and merged.
#   deploy/ssh/run-shards.sh HOST... -- RUN_FLAGS...
#   e.g. deploy/ssh/run-shards.sh load1 load2 -- --base-url http://gateway:8000 --conc 64 --window 60s
# Each host needs llm-decode-bench on its PATH and ssh without a password prompt. A host named
# twice runs two shards, the second serving /metrics on the next port (9464, 9465, ...). Reports
# land in ./reports/SESSION_ID/ (SESSION_ID may be set in the environment); the exit status is not 0
# when a shard failed (the merged report records it missing).
set -euo pipefail
hosts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do hosts+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#hosts[@]} -gt 0 ] || { echo "usage: $0 HOST... -- RUN_FLAGS..." >&2; exit 2; }
n=${#hosts[@]}
start_at=$(( $(date +%s) + 20 ))
session=${SESSION_ID:-ssh-$(date -u +%Y%m%dT%H%M%SZ)}
dir=reports/$session
mkdir -p "$dir"
pids=()
declare -A on_host
for i in "${!hosts[@]}"; do
    port=$((9464 + ${on_host[${hosts[$i]}]:-0}))
    on_host[${hosts[$i]}]=$((${on_host[${hosts[$i]}]:-0} + 1))
    remote=(llm-decode-bench run --headless "$@" --shard "$i/$n" --start-at "$start_at"
        --session-id "$session" --metrics-listen "0.0.0.0:$port" --out "/tmp/$session-shard-$i.json")
    # shellcheck disable=SC2029 # quoted here (%q) on purpose: the remote shell splits it back
    ssh "${hosts[$i]}" "$(printf '%q ' "${remote[@]}")" > "$dir/shard-$i.log" 2>&1 &
    pids+=($!)
done
failed=0
for i in "${!hosts[@]}"; do
    if ! wait "${pids[$i]}"; then
        echo "shard $i on ${hosts[$i]} failed: $dir/shard-$i.log" >&2
        failed=1
    fi
    scp -q "${hosts[$i]}:/tmp/$session-shard-$i.json" "$dir/" || true
done
llm-decode-bench report merge "$dir"/"$session"-shard-*.json --out "$dir/merged.json"
exit "$failed"
