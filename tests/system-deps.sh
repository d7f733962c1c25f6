#!/usr/bin/env sh
# Installs the system packages the tests use, where missing (Debian or Ubuntu, apt-get):
#   gcc        the `ring` crate builds C
#   git        the build records the commit for `--version`
#   chromium   tests/reports/html.rs renders the HTML report in headless Chromium
#   prometheus tests/reports/prometheus.rs reads the simulated replicas through a real Prometheus
#   iproute2   tests/reliability/ runs its network-namespace case with `ip netns` and `tc`
#   ShellCheck tests/deploy/scripts.rs lints every script under deploy/ (package shellcheck)
# Run as root (CI) or with sudo available; prints what it installs, and nothing when all is there.
set -eu
missing=""
need() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need gcc gcc
need git git
need chromium chromium
need prometheus prometheus
need ip iproute2
need tc iproute2
need shellcheck shellcheck
[ -z "$missing" ] && exit 0
# shellcheck disable=SC2086 # the names, split on purpose
missing=$(printf '%s\n' $missing | sort -u | tr '\n' ' ')
if ! command -v apt-get >/dev/null 2>&1; then
    echo "tests/system-deps.sh: install these packages by hand (no apt-get here): $missing" >&2
    exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "tests/system-deps.sh: installing $missing" >&2
$sudo apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
