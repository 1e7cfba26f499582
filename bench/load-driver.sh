#!/usr/bin/env bash
# Requests/s the request driver (`kprof load`) sustains against the OpenAI stand-in
# (tools/serving/serve.py --backend fake, no sleep per token) beside tools/serving/load.py on the
# same server, at c=1, 16 and 64. Both are held back by the Python server too: the figures say
# which client gets more out of the same server, not a client's ceiling.
#
# usage: bench/load-driver.sh [KPROF] [REQUESTS_PER_RUN]   (default build/kprof, 600)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kprof=${1:-$root/build/kprof}
n=${2:-600}
python=/usr/bin/python3
[ -x "$python" ] || python=python3
tmp=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill -- -"$server_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

setsid "$python" "$root/tools/serving/serve.py" --backend fake --port 0 --fake-ms-per-token 0 \
  --batch-wait-ms 0 --max-batch 64 >"$tmp/serve.out" 2>"$tmp/serve.err" &
server_pid=$!
for _ in $(seq 100); do grep -q '^listening on ' "$tmp/serve.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$tmp/serve.out" | head -1)
[ -n "$url" ] || { echo "serve.py did not start" >&2; exit 1; }

rate() {
  "$python" - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d = d.get("load", d)
print(f"{d['requests_per_s']:.1f} req/s, p50 {d['latency_ms']['p50']:.2f} ms, {d['completed']}/{d['sent']} completed")
PY
}

echo "server: $url (fake backend, 0 ms per token, output 1 token); $n requests a run"
for c in 1 16 64; do
  "$kprof" load --url "$url" -c "$c" -n "$n" --prompt-len 16 --output-len 1 --wait-ready 30 \
    --json "$tmp/kprof.json" >/dev/null 2>"$tmp/kprof.err" || true
  "$python" "$root/tools/serving/load.py" --url "$url" -c "$c" -n "$n" --prompt-len 16 --output-len 1 \
    --wait-ready 30 --json "$tmp/loadpy.json" -q >/dev/null || true
  printf 'c=%-3s kprof load: %s\n      load.py:    %s\n' "$c" "$(rate "$tmp/kprof.json")" "$(rate "$tmp/loadpy.json")"
done
