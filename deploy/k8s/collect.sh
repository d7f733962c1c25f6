#!/usr/bin/env sh
# Waits for every shard of the Job to end, copies each shard's report out of its pod (the
# `reports` container holds it), marks it collected (the pod then ends) and merges them.
#   deploy/k8s/collect.sh [NAMESPACE] [DIR] [TIMEOUT_SECONDS]
#   (defaults: llm-bench, ./reports, 7200)
# DIR must not hold reports already (exit 2). The wait for all the shards is bounded by
# TIMEOUT_SECONDS: past it, the script names the
# shard it was waiting for and exits 1 without merging. Exit status otherwise: 0 when every
# shard ended with 0 and the merge succeeded; 1 when a shard failed or left no report (the
# reports there are are merged all the same, and the merged report records the others).
set -eu
ns=${1:-llm-bench}
dir=${2:-reports}
timeout=${3:-7200}
job=llm-decode-bench
case $timeout in '' | *[!0-9]*) echo "$0: TIMEOUT_SECONDS must be whole seconds, not '$timeout'" >&2; exit 2 ;; esac
deadline=$(( $(date +%s) + timeout ))
# A folder holding an earlier session's reports is refused: its shard files would be
# overwritten one by one and its merged report would make the merge fail at the end.
for old in "$dir"/shard-*.json "$dir"/merged.json; do
    if [ -e "$old" ]; then
        echo "$0: $dir already holds reports ($old); give a new folder as DIR" >&2
        exit 2
    fi
done
mkdir -p "$dir"
shards=$(kubectl get job "$job" -n "$ns" -o jsonpath='{.spec.completions}')
[ -n "$shards" ] || { echo "$0: job $job in namespace $ns has no completions" >&2; exit 1; }
state='{.status.containerStatuses[?(@.name=="shard")].state.terminated.exitCode}'
status=0
set -- # from here on: the reports copied
i=0
while [ "$i" -lt "$shards" ]; do
    sel="job-name=$job,batch.kubernetes.io/job-completion-index=$i"
    pod="" code=""
    while :; do
        [ -n "$pod" ] || pod=$(kubectl get pods -n "$ns" -l "$sel" -o jsonpath='{.items[0].metadata.name}' 2> /dev/null || true)
        [ -z "$pod" ] || code=$(kubectl get pod "$pod" -n "$ns" -o jsonpath="$state")
        [ -z "$code" ] || break
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "$0: shard $i (pod ${pod:-not created}) had not ended after ${timeout} s; nothing merged" >&2
            exit 1
        fi
        sleep 10
    done
    [ "$code" -eq 0 ] || { echo "shard $i: exit $code (kubectl logs -n $ns $pod -c shard)" >&2; status=1; }
    if kubectl cp -n "$ns" -c reports "$pod:/reports/shard-$i.json" "$dir/shard-$i.json"; then
        kubectl exec -n "$ns" -c reports "$pod" -- touch /reports/collected
        set -- "$@" "$dir/shard-$i.json"
    else
        echo "shard $i: no report (kubectl logs -n $ns $pod -c shard)" >&2
        status=1
    fi
    i=$((i + 1))
done
[ $# -gt 0 ] || { echo "$0: no shard left a report; nothing to merge" >&2; exit 1; }
llm-decode-bench report merge "$@" --out "$dir/merged.json" || status=1
exit "$status"
