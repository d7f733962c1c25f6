#!/usr/bin/env bash
# One sharded session over ssh: shard i runs on the i-th host, all starting at one instant,
# then the reports this run wrote are copied here and merged.
#   deploy/ssh/run-shards.sh HOST... -- RUN_FLAGS...
#   e.g. deploy/ssh/run-shards.sh load1 load2 -- --base-url http://gateway:8000 --conc 64 --window 60s
# Each host needs llm-decode-bench on its PATH and ssh without a password prompt. A host named
# twice runs two shards, the second serving /metrics on the next port (9464, 9465, ...).
# Environment (all optional):
#   SESSION_ID    the session's id (default: ssh- and the start time)
#   START_LEAD    seconds from now to --start-at (default 20: time for every ssh to connect)
#   METRICS_PORT  the first /metrics port on a host (default 9464)
#   REPORTS       where the reports land (default ./reports/SESSION_ID); it must not hold
#                 reports already: a reused SESSION_ID is refused before any shard starts
# Each shard writes its report under a name of this run only (remote /tmp), so a report of
# an earlier run is never copied or merged. Exit status: 0 when every shard succeeded and the
# merge did; else the first failed shard's exit status (ssh's 255 when it could not connect),
# after merging the reports the other shards wrote (the merged report records the missing).
set -euo pipefail
hosts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do hosts+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#hosts[@]} -gt 0 ] || { echo "usage: $0 HOST... -- RUN_FLAGS..." >&2; exit 2; }
n=${#hosts[@]}
start_at=$(( $(date +%s) + ${START_LEAD:-20} ))
session=${SESSION_ID:-ssh-$(date -u +%Y%m%dT%H%M%SZ)}
dir=${REPORTS:-reports/$session}
if compgen -G "$dir/*.json" > /dev/null; then
    echo "$0: $dir already holds reports (a reused SESSION_ID?): move them or pick another SESSION_ID; nothing started" >&2
    exit 2
fi
mkdir -p "$dir"
# This run's own remote file names: the session, the start instant and this script's pid.
run_tag="$session-$start_at-$$"
pids=()
declare -A on_host
for i in "${!hosts[@]}"; do
    host=${hosts[$i]}
    port=$((${METRICS_PORT:-9464} + ${on_host[$host]:-0}))
    on_host[$host]=$((${on_host[$host]:-0} + 1))
    remote=(llm-decode-bench run --headless "$@" --shard "$i/$n" --start-at "$start_at"
        --session-id "$session" --metrics-listen "0.0.0.0:$port" --out "/tmp/llm-decode-bench-$run_tag-shard-$i.json")
    # shellcheck disable=SC2029 # quoted here (%q) on purpose: the remote shell splits it back
    ssh "$host" "$(printf '%q ' "${remote[@]}")" > "$dir/shard-$i.log" 2>&1 &
    pids+=($!)
done
echo "session $session: $n shards start at $start_at; logs in $dir/shard-*.log" >&2
status=0
copied=()
for i in "${!hosts[@]}"; do
    host=${hosts[$i]}
    code=0
    wait "${pids[$i]}" || code=$?
    if [ "$code" -ne 0 ]; then
        echo "shard $i on $host failed (exit $code): see $dir/shard-$i.log" >&2
        [ "$status" -ne 0 ] || status=$code
    fi
    # A failed shard may still have written a (partial) report: merge records it incomplete.
    if scp -q "$host:/tmp/llm-decode-bench-$run_tag-shard-$i.json" "$dir/shard-$i.json" 2> /dev/null; then
        copied+=("$dir/shard-$i.json")
        ssh "$host" rm -f "/tmp/llm-decode-bench-$run_tag-shard-$i.json" || true
    else
        echo "shard $i on $host: no report to copy (the merge records it missing)" >&2
    fi
done
if [ ${#copied[@]} -eq 0 ]; then
    echo "$0: no shard wrote a report; nothing to merge" >&2
    exit $(( status == 0 ? 1 : status ))
fi
merge=0
llm-decode-bench report merge "${copied[@]}" --out "$dir/merged.json" || merge=$?
if [ "$merge" -ne 0 ]; then
    echo "$0: report merge failed (exit $merge)" >&2
    [ "$status" -ne 0 ] || status=$merge
fi
if [ "$merge" -eq 0 ]; then
    echo "merged the reports of ${#copied[@]} of $n shards: $dir/merged.json" >&2
fi
exit "$status"
