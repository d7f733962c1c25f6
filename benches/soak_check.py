#!/usr/bin/env python3
"""Checks of benches/soak.sh: request accounting (client report against the simulator's own
counters) and RSS flatness (rss.csv). Prints a summary, writes summary.json next to the
inputs, exits 1 when a check fails.

usage: soak_check.py DIR RUN_EXIT_CODE ELAPSED_S RSS_SKIP_S RSS_GROWTH_PCT
"""
import json
import os
import re
import sys

EARLY = {"http500": "server_error", "http503": "overloaded", "http429": "rate_limited"}
MID = {"reset": "stream_reset", "stall": "stalled", "malformed": "malformed_chunk"}
KINDS = {"context_overflow", "bad_request", "rate_limited", "overloaded", "server_error", "connect",
         "stream_reset", "stalled", "stream_error", "incomplete", "malformed_chunk",
         "first_token_timeout", "unauthorized", "not_event_stream", "oversized", "redirected"}


def prom(text):
    """name{labels} -> value, for the families the checks read."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)$', line)
        if m:
            out[m[1] + (m[2] or "")] = float(m[3])
    return out


def pick(metrics, name, **labels):
    """Sum of the samples of `name` whose labels include `labels`."""
    total, found = 0.0, False
    for key, v in metrics.items():
        base, _, rest = key.partition("{")
        if base != name:
            continue
        if all(f'{k}="{val}"' in rest for k, val in labels.items()):
            total, found = total + v, True
    return total if found else None


def accounting(report, metrics, problems):
    attempts = [a for c in report["decode"]["cells"] for a in c["attempts"]]
    # Exact counts per outcome; request_samples may be a bounded uniform sample of them.
    by = {}
    for a in attempts:
        outcomes = a.get("request_outcomes") or {}
        if not outcomes:
            problems.append("an attempt has no request_outcomes (older binary?)")
        for k, n in outcomes.items():
            by[k] = by.get(k, 0) + n
        held = len(a["request_samples"])
        if held > min(sum(outcomes.values()), 16384):
            problems.append(f"an attempt keeps {held} request records, more than its bound")
        own = {k: n for k, n in outcomes.items() if k in KINDS}
        if own != a["errors"] or sum(own.values()) != a["error_count"]:
            problems.append(f"attempt errors {a['errors']} / {a['error_count']} differ from its outcomes {own}")
    unnamed = {k: n for k, n in by.items() if k not in KINDS | {"completed", "cut"}}
    if unnamed:
        problems.append(f"requests with an unnamed outcome: {unnamed}")
    errors = {k: n for k, n in by.items() if k in KINDS}
    prom = [a.get("prometheus") or {} for a in attempts]
    c = {"started": sum(by.values()), "completed": by.get("completed", 0), "cut": by.get("cut", 0), "errors": errors,
         "request_records_kept": sum(len(a["request_samples"]) for a in attempts),
         "window_tokens": sum(a["window_tokens"] for a in attempts),
         "server_window_tokens": sum(p.get("generation_tokens_delta") or 0 for p in prom),
         "client_over_server": [p.get("client_over_server") for p in prom],
         "aggregate_tps": [a["aggregate_tps"] for a in attempts],
         "attempt_status": [a["status"] for a in attempts], "complete": report.get("complete")}
    if c["completed"] + c["cut"] + sum(errors.values()) != c["started"]:
        problems.append("completed + cut + errors != started")
    if report.get("complete") is not True:
        problems.append("the report is not complete")
    s = server(metrics, problems)
    if s is None:
        return c, None
    # Preflight's connection-reuse probe is one more completion the server counts.
    probe = ((report.get("target") or {}).get("connection_reuse") or {}).get("probe_requests", 0)
    c["preflight_requests"] = probe
    if s["requests"] != c["started"] + probe:
        problems.append(f"server accepted {s['requests']} requests, the client recorded {c['started']} + {probe} probe")
    for fault, kind in EARLY.items():
        if errors.get(kind, 0) != s["injected"].get(fault, 0):
            problems.append(f"{kind}: client {errors.get(kind, 0)}, server injected {s['injected'].get(fault, 0)}")
    unreached = 0
    for fault, kind in MID.items():
        gap = s["injected"].get(fault, 0) - errors.get(kind, 0)
        if gap < 0:
            problems.append(f"{kind}: client {errors.get(kind, 0)} > server injected {s['injected'].get(fault, 0)}")
        unreached += max(gap, 0)
    if unreached > c["cut"]:
        problems.append(f"{unreached} injected mid-stream faults not seen, more than the {c['cut']} cut requests")
    early = sum(s["injected"].get(f, 0) for f in EARLY)
    # A request cut before the engine admitted it is dropped without an abort count.
    s["engine_unrecorded"] = s["requests"] - early - s["finished"] - s["aborted"]
    if not 0 <= s["engine_unrecorded"] <= c["cut"]:
        problems.append(f"server: accepted - early faults - finished - aborted = {s['engine_unrecorded']}")
    done = c["completed"] + errors.get("malformed_chunk", 0) + probe
    if not 0 <= s["finished"] - done <= c["cut"]:
        problems.append(f"server finished {s['finished']}, client completed+malformed {done} (cut {c['cut']})")
    if s["running"] or s["waiting"]:
        problems.append(f"server still has {s['running']} running / {s['waiting']} waiting after the run")
    s["unreached_mid_faults"] = unreached
    return c, s


def server(metrics, problems):
    if metrics is None:
        problems.append("no /metrics scrape of the simulator after the run")
        return None
    requests = pick(metrics, "sim:completion_requests_total")
    if requests is None:
        problems.append("the simulator exports no sim:completion_requests_total (older binary?)")
        return None
    injected = {k: int(pick(metrics, "sim:injected_faults_total", kind=k) or 0) for k in list(EARLY) + list(MID)}
    fin = lambda r: int(pick(metrics, "vllm:request_success_total", finished_reason=r) or 0)  # noqa: E731
    return {"requests": int(requests), "injected": injected, "finished": fin("stop") + fin("length"),
            "aborted": fin("abort"), "generation_tokens": int(pick(metrics, "vllm:generation_tokens_total") or 0),
            "running": pick(metrics, "vllm:num_requests_running") or 0,
            "waiting": pick(metrics, "vllm:num_requests_waiting") or 0}


def memory(rows, skip_s, growth_pct, problems, req_rate):
    rows = [r for r in rows if r["t_s"] > skip_s]
    if len(rows) < 3:
        problems.append("too few RSS samples after the warmup")
        return {}
    span = min(600.0, (rows[-1]["t_s"] - rows[0]["t_s"]) / 3)
    first = [r for r in rows if r["t_s"] <= rows[0]["t_s"] + span]
    last = [r for r in rows if r["t_s"] >= rows[-1]["t_s"] - span]
    out = {"span_s": span, "skip_s": skip_s}
    for who in ("sim", "run"):
        a = sum(r[f"{who}_rss_kb"] for r in first) / len(first)
        b = sum(r[f"{who}_rss_kb"] for r in last) / len(last)
        growth = 100.0 * (b - a) / a if a else float("inf")
        # Requests between the two spans' midpoints, at the run's mean request rate.
        between = req_rate * (sum(r["t_s"] for r in last) / len(last) - sum(r["t_s"] for r in first) / len(first))
        out[who] = {"first_mean_kb": round(a), "last_mean_kb": round(b), "growth_pct": round(growth, 2),
                    "growth_bytes_per_request": round(1024 * (b - a) / between) if between > 0 else None,
                    "max_kb": max(r[f"{who}_rss_kb"] for r in rows),
                    "cpu_mean_pct": round(sum(r[f"{who}_cpu_pct"] for r in rows) / len(rows), 1)}
        if growth > growth_pct:
            problems.append(f"{who} RSS grew {growth:.1f}% (first {span:.0f} s mean {a:.0f} kB, last {b:.0f} kB)")
    return out


def main():
    d, run_rc, elapsed, skip_s, growth_pct = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    problems = []
    if run_rc != 0:
        problems.append(f"run exited {run_rc} (see {d}/run.err)")
    with open(os.path.join(d, "report.json")) as f:
        report = json.load(f)
    path = os.path.join(d, "sim-metrics.txt")
    metrics = prom(open(path).read()) if os.path.exists(path) else None
    client, srv = accounting(report, metrics, problems)
    with open(os.path.join(d, "rss.csv")) as f:
        head = f.readline().strip().split(",")
        rows = [dict(zip(head, map(float, line.split(",")))) for line in f if line.strip()]
    mem = memory(rows, skip_s, growth_pct, problems, client["started"] / max(elapsed, 1.0))
    pick_rows = [rows[0], rows[len(rows) // 2], rows[-1]] if rows else []
    summary = {"elapsed_s": elapsed, "client": client, "server": srv, "memory": mem,
               "rss_start_mid_end": pick_rows, "report_bytes": os.path.getsize(os.path.join(d, "report.json")),
               "problems": problems, "verdict": "pass" if not problems else "fail"}
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary, indent=2))
    print(f"soak: {summary['verdict'].upper()}" + "".join(f"\n  - {p}" for p in problems))
    sys.exit(0 if not problems else 1)


if __name__ == "__main__":
    main()
