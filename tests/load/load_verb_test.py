#!/usr/bin/env python3
"""`kprof load` against the OpenAI stand-in (tools/serving/serve.py --backend fake), and beside
tools/serving/load.py, the independent implementation, on the same server: the same counts as the
server's request log, latencies in the same range, failures by cause, exit codes, the progress
line, readiness, and the JSON valid against docs/kprof.load.schema.json (python3-jsonschema).

usage: load_verb_test.py KPROF SERVE_PY LOAD_PY SCHEMA"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

KPROF, SERVE, LOAD_PY, SCHEMA = sys.argv[1:5]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


class Server:
    def __init__(self, *extra, wait_ready=True):
        self.dir = tempfile.mkdtemp(prefix="kprof-load-test-")
        self.log = os.path.join(self.dir, "requests.jsonl")
        self.proc = subprocess.Popen(
            [sys.executable, SERVE, "--backend", "fake", "--port", "0", "--request-log", self.log, *extra],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            raise SystemExit(f"serve.py did not start: {line!r}")
        self.url = line.split()[-1]
        # "listening" comes before the engine is warm; until then requests answer 503.
        deadline = time.monotonic() + 30
        while wait_ready and time.monotonic() < deadline:
            try:
                if urllib.request.urlopen(self.url + "/health", timeout=2).status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.05)

    def requests(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log, encoding="utf-8") as f:
            return [r for r in map(json.loads, filter(None, f.read().splitlines())) if r.get("event") == "request"]

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def kprof(*args, timeout=120):
    return subprocess.run([KPROF, "load", *args], capture_output=True, text=True, timeout=timeout)


try:
    import jsonschema
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)

    def validate(doc):
        jsonschema.validate(doc, schema)
except ImportError:
    jsonschema = None

    def validate(doc):
        pass


# 1. kprof load and load.py, same server, same load: same counts; latencies in the same range.
server = Server("--fake-ms-per-token", "5", "--max-batch", "32")
try:
    with tempfile.TemporaryDirectory() as tmp:
        ours_json = os.path.join(tmp, "ours.json")
        r = kprof("--url", server.url, "-c", "8", "-n", "40", "--prompt-len", "16", "--output-len", "8",
                  "--json", ours_json)
        check(r.returncode == 0, f"kprof load exits 0 (got {r.returncode}: {r.stderr.strip()})")
        ours = json.load(open(ours_json, encoding="utf-8"))
        validate(ours)
        logged = server.requests()
        check(len(logged) == 40 and all(x["status"] == 200 for x in logged),
              f"the server logged 40 requests, all 200 (got {len(logged)})")
        o = ours["load"]
        check((o["sent"], o["completed"], o["failed"]) == (40, 40, 0), f"kprof: 40/40/0 (got {o['sent']}/{o['completed']}/{o['failed']})")
        check(o["max_in_flight"] == 8, f"kprof: 8 in flight at most (got {o['max_in_flight']})")
        check(sum(x["completion_tokens"] for x in logged) == 40 * 8, "every request generated 8 tokens")
        check("requests: 40 sent, 40 completed, 0 failed" in r.stdout, "the text summary counts")
        ref_json = os.path.join(tmp, "ref.json")
        p = subprocess.run([sys.executable, LOAD_PY, "--url", server.url, "-c", "8", "-n", "40", "--prompt-len", "16",
                            "--output-len", "8", "--json", ref_json, "-q"], capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"load.py exits 0 (got {p.returncode})")
        ref = json.load(open(ref_json, encoding="utf-8"))
        check(len(server.requests()) == 80, "the server logged load.py's 40 too")
        check((ref["sent"], ref["completed"], ref["failed"]) == (o["sent"], o["completed"], o["failed"]),
              "load.py counts the same")
        check(ref["most_in_flight"] == o["max_in_flight"], "load.py saw as many in flight")
        # Latencies: the server's own time is the floor, and the two clients' medians agree within 2x.
        # (Each p50 inside the other's [min, max] was too tight on a loaded 2-core CI machine: one run
        # had kprof's p50 93.4 ms against load.py's max 92.6 ms. A client that timed the wrong thing —
        # connect only, or the whole run — is off by far more than 2x.)
        ol, rl = o["latency_ms"], ref["latency_ms"]
        server_min = 1000 * min(x["latency_s"] for x in logged)
        check(ol["min"] >= server_min, f"kprof's fastest request ({ol['min']} ms) not under the server's time ({server_min:.1f} ms)")
        check(0.5 <= ol["p50"] / rl["p50"] <= 2.0, f"p50s within 2x of each other: kprof {ol}, load.py {rl}")
        check(ol["min"] <= ol["p50"] <= ol["max"], f"kprof's p50 inside its own range: {ol}")
        check(0.5 <= o["requests_per_s"] / ref["requests_per_s"] <= 2.0,
              f"req/s within 2x of load.py's ({o['requests_per_s']} vs {ref['requests_per_s']})")
finally:
    server.close()

# 2. Failures by cause, exit 12, JSON on stdout with --json -.
server = Server("--fake-ms-per-token", "1", "--fake-fail-every", "3")
try:
    r = kprof("--url", server.url, "-c", "3", "-n", "30", "--output-len", "4", "--json", "-")
    check(r.returncode == 12, f"some failed: exit 12 (got {r.returncode})")
    doc = json.loads(r.stdout)
    validate(doc)
    logged_500 = sum(1 for x in server.requests() if x["status"] == 500)
    check(doc["load"]["failures_by_cause"] == {"HTTP 500": 10} and logged_500 == 10,
          f"10 failures, all HTTP 500, as logged (got {doc['load']['failures_by_cause']}, log {logged_500})")
    check(len(doc["load"]["failure_examples"]) == 3, "three examples")
    check("failures: 10 HTTP 500" in r.stderr, "with --json -, the summary on stderr")
finally:
    server.close()

# 3. Readiness: --wait-ready waits for the warm-up; too short is exit 9 naming /health.
server = Server("--fake-ready-after", "2", "--fake-ms-per-token", "1", wait_ready=False)
try:
    r = kprof("--url", server.url, "-n", "2", "--wait-ready", "0.5")
    check(r.returncode == 9 and "/health did not answer 200 within 0.5 s (last: HTTP 503)" in r.stderr
          and r.stdout == "", f"not ready: exit 9, one line (got {r.returncode}: {r.stderr.strip()})")
    r = kprof("--url", server.url, "-n", "2", "--wait-ready", "30", "--json", "-")
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    check(r.returncode == 0 and doc["readiness"]["ready"] and doc["load"]["completed"] == 2,
          f"ready after the warm-up, then 2 completed (got {r.returncode}: {r.stderr.strip()})")
    validate(doc)
finally:
    server.close()

# 4. Duration with the progress line once a second; then the server killed under a duration.
server = Server("--fake-ms-per-token", "10")
try:
    start = time.monotonic()
    r = kprof("--url", server.url, "-c", "4", "--duration", "2.5", "--output-len", "4")
    took = time.monotonic() - start
    progress = [line for line in r.stderr.splitlines() if line.startswith("load: ") and "in flight" in line]
    check(r.returncode == 0 and 2.5 <= took < 8, f"--duration 2.5 ran {took:.1f} s, exit {r.returncode}")
    check(len(progress) >= 2 and "sent" in progress[0] and "completed" in progress[0],
          f"a progress line a second on stderr ({len(progress)})")
    p = subprocess.Popen([KPROF, "load", "--url", server.url, "-c", "4", "--duration", "30", "--json", "-"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    os.killpg(server.proc.pid, signal.SIGKILL)
    killed = time.monotonic()
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)  # the rest of the 30 s would only fail: Ctrl-C ends it
    out, err = p.communicate(timeout=30)
    check(time.monotonic() - killed < 10, "no hang after the server died")
    doc = json.loads(out) if out else {}
    check(p.returncode == 8 and doc.get("interrupted") is True and
          set(doc["load"]["failures_by_cause"]) == {"connection"},
          f"server killed: connection failures, exit 8 (interrupted) (got {p.returncode}, {out[:300]} {err[-300:]})")
    if doc:
        validate(doc)
finally:
    server.close()

# 4b. Ctrl-C with slow requests in flight: they are cut off (cancelled), not waited for.
server = Server("--fake-ms-per-token", "2000")  # 8 tokens: 16 s a request
try:
    p = subprocess.Popen([KPROF, "load", "--url", server.url, "-c", "3", "--output-len", "8", "--json", "-"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    interrupted_at = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    took = time.monotonic() - interrupted_at
    doc = json.loads(out) if out else {}
    figures = doc.get("load", {})
    check(took < 4, f"Ctrl-C with 3 requests of 16 s in flight ended in {took:.1f} s")
    # Issue 27 item 13: an interrupted load exits 8, as capture and trace (0 of 3 completed
    # exited 0).
    check(p.returncode == 8 and doc.get("interrupted") is True and
          (figures.get("sent"), figures.get("completed"), figures.get("failed"), figures.get("cancelled")) == (3, 0, 0, 3),
          f"3 sent, 0 completed, 0 failed, 3 cancelled, exit 8 (got {p.returncode}: {figures} {err[-300:]})")
    check("3 cancelled" in err and "cut off those in flight" in err, f"the summary says so ({err[-300:]})")
    if doc:
        validate(doc)
finally:
    server.close()

# 5. Usage errors: exit 2, nothing on stdout.
for args, what in [(["--url", "http://127.0.0.1:1", "-n", "3", "--duration", "2"], "-n with --duration"),
                   (["--url", "ftp://x"], "a URL that is not http"),
                   (["--url", "http://127.0.0.1:1", "--api", "embeddings"], "an unknown api"),
                   (["-n", "3"], "no --url")]:
    r = kprof(*args)
    check(r.returncode == 2 and r.stdout == "", f"usage: {what}: exit 2 (got {r.returncode}: {r.stderr.strip()})")
r = kprof("--url", "http://127.0.0.1:9", "-n", "1")
check(r.returncode == 9 and "http://127.0.0.1:9/v1/models" in r.stderr,
      f"no server: exit 9 naming /v1/models (got {r.returncode}: {r.stderr.strip()})")

if jsonschema is None:
    print("skip: python3-jsonschema not installed, the JSON was not validated")
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
