#!/usr/bin/env sh
# Waits for every shard of the Job to end, copies each shard's report out of its pod (the
# `reports` container holds it), marks it collected (the pod then ends) and merges them.
#   deploy/k8s/collect.sh [NAMESPACE] [DIR]        (defaults: llm-bench, ./reports)
set -eu
ns=${1:-llm-bench}
dir=${2:-reports}
job=llm-decode-bench
mkdir -p "$dir"
shards=$(kubectl get job "$job" -n "$ns" -o jsonpath='{.spec.completions}')
i=0
while [ "$i" -lt "$shards" ]; do
    sel="job-name=$job,batch.kubernetes.io/job-completion-index=$i"
    pod=$(kubectl get pods -n "$ns" -l "$sel" -o jsonpath='{.items[0].metadata.name}')
    state='{.status.containerStatuses[?(@.name=="shard")].state.terminated.exitCode}'
    while [ -z "$(kubectl get pod "$pod" -n "$ns" -o jsonpath="$state")" ]; do sleep 10; done
    if kubectl cp -n "$ns" -c reports "$pod:/reports/shard-$i.json" "$dir/shard-$i.json"; then
        kubectl exec -n "$ns" -c reports "$pod" -- touch /reports/collected
    else
        echo "shard $i: no report (kubectl logs -n $ns $pod -c shard)" >&2
    fi
    i=$((i + 1))
done
llm-decode-bench report merge "$dir"/shard-*.json --out "$dir/merged.json"
