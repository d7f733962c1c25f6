#!/usr/bin/env sh
# Starts a sharded session from an overlay: writes the overlay's start.env (START_AT, the
# instant every shard starts its first cell; SESSION_ID), deletes the previous session's Job
# (a Job's pod template cannot change in place) and applies the overlay.
#   deploy/k8s/start.sh [OVERLAY_DIR] [LEAD_SECONDS]
# LEAD_SECONDS (default 120) must cover scheduling and image pulls: a shard that starts more
# than 5 s after START_AT refuses to run (exit 2) and `report merge` records it missing.
# SESSION_ID may be set in the environment; default: k8s- and the start time.
set -eu
overlay=${1:-$(dirname "$0")/overlays/example}
lead=${2:-120}
start_at=$(( $(date +%s) + lead ))
session=${SESSION_ID:-k8s-$(date -u +%Y%m%dT%H%M%SZ)}
printf 'START_AT=%s\nSESSION_ID=%s\n' "$start_at" "$session" > "$overlay/start.env"
rendered=$(mktemp)
trap 'rm -f "$rendered"' EXIT
kubectl kustomize "$overlay" > "$rendered"
kubectl delete --ignore-not-found -f "$rendered"
kubectl apply -f "$rendered"
echo "session $session: shards start at $start_at ($(date -u -d "@$start_at" +%H:%M:%SZ))"
