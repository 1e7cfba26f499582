#!/usr/bin/env python3
"""tools/serving/serve.py in its fake mode (no torch), as kprof's request driver will meet it:
the first line names the port; /health is 503 until the engine is warm; /v1/models,
/v1/completions and /v1/chat/completions answer in the OpenAI shape and refuse bad requests as
vLLM does; 16 concurrent requests are in flight at once (seen in the request log); every Nth
request fails with HTTP 500 when asked; /start_profile and /stop_profile are accepted; SIGTERM
stops front and engine, and the engine stops by itself when the front is killed. Neither process
may import torch or transformers (stand-ins that refuse to import are put on PYTHONPATH). Also
--dry-run's plan and the hf backend's start-up failure where torch is missing.

tools/serving/load.py is driven against it too: what it reports (sent, completed, failed, in
flight, latencies) is checked against the server's own request log.

usage: serving_fake_test.py SERVE_PY LOAD_PY  (exit 77 only when they or loopback sockets are missing)"""
import atexit
import json
import os
import py_compile
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

SERVE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else ""
LOAD = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else ""
TMP = tempfile.mkdtemp(prefix="kprof-serving-")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)
POISON = os.path.join(TMP, "poison")


def make_poison():
    """torch and transformers that cannot be imported: a fake-mode process that imports either dies."""
    for name in ("torch", "transformers"):
        os.makedirs(os.path.join(POISON, name), exist_ok=True)
        with open(os.path.join(POISON, name, "__init__.py"), "w") as f:
            f.write(f"raise ImportError('{name} imported by a process that must not import it')\n")


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = POISON + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def process_gone(pid):
    """True when pid no longer runs (absent, or a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(pid, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process_gone(pid):
            return True
        time.sleep(0.05)
    return False


class Serve:
    """serve.py started with extra options; stdout collected line by line."""

    def __init__(self, *options):
        self.proc = subprocess.Popen([sys.executable, SERVE, *options], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=env())
        self.lines = []
        self.cond = threading.Condition()
        first = self.proc.stdout.readline()
        self.listening_at = time.time()
        self.lines.append(first)
        self.collector = threading.Thread(target=self._collect, daemon=True)
        self.collector.start()
        m = re.fullmatch(r"listening on (http://127\.0\.0\.1:(\d+))\n", first)
        if not m:
            self.proc.kill()
            raise AssertionError(f"first line is not 'listening on http://127.0.0.1:PORT': {first!r}")
        self.url = m.group(1)
        self.port = int(m.group(2))

    def _collect(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def output(self):
        with self.cond:
            return "".join(self.lines)

    def wait_line(self, pattern, timeout=20):
        deadline = time.time() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    m = re.search(pattern, line)
                    if m:
                        return m
                left = deadline - time.time()
                if left <= 0 or (self.proc.poll() is not None and not self.cond.wait(0.2)):
                    raise AssertionError(f"no line matching {pattern!r}; output:\n{''.join(self.lines)}")
                self.cond.wait(min(left, 0.2))

    def request(self, method, path, body=None, raw=None, timeout=60):
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read()
                return r.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as e:
            text = e.read()
            return e.code, (json.loads(text) if text else None)

    def engine_pid(self):
        return int(self.wait_line(r"engine pid (\d+) ready after [\d.]+ s \(warm-up done\)").group(1))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.collector.join(10)
        self.proc.stdout.close()


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


class Basics(unittest.TestCase):
    def test_serve_py_compiles(self):
        py_compile.compile(SERVE, cfile=os.path.join(TMP, "serve.pyc"), doraise=True)

    def test_poison_refuses_import(self):
        """The stand-ins really stop an import (else the no-torch checks below could not fail)."""
        r = subprocess.run([sys.executable, "-c", "import torch"], env=env(), capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("torch imported by a process that must not import it", r.stderr)

    def test_dry_run_plan(self):
        r = subprocess.run([sys.executable, SERVE, "--backend", "hf", "--dry-run"], env=env(), capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        plan = json.loads(r.stdout)
        # Llama, hidden 2048, 8 layers, 16 heads (head dim 128), 4 KV heads, MLP 5632, vocab 32000:
        # embeddings + lm_head 2 * 32000 * 2048 = 131,072,000; per layer q,o 2 * 2048^2 = 8,388,608,
        # k,v 2 * 2048 * 512 = 2,097,152, MLP 3 * 2048 * 5632 = 34,603,008, norms 4,096 ->
        # 45,092,864 x 8 = 360,742,912; final norm 2,048. Total 491,816,960.
        self.assertEqual(plan["model"]["parameters"], 491_816_960)
        self.assertEqual(plan["decode_graph_batch_sizes"], [1, 2, 4, 8, 16, 32])
        # 8 layers x K and V x 4 heads x 2048 positions x 128 x 2 bytes = 33,554,432 per sequence.
        self.assertEqual(plan["kv_cache_bytes_per_sequence"], 33_554_432)
        self.assertEqual(plan["profiling_run_shape"], [32, 1024])
        r = subprocess.run([sys.executable, SERVE, "--backend", "hf", "--dry-run", "--max-batch", "12",
                            "--decode-graph", "on"], env=env(), capture_output=True, text=True, timeout=30)
        self.assertEqual(json.loads(r.stdout)["decode_graph_batch_sizes"], [1, 2, 4, 8, 12])

    def test_bad_options_refused(self):
        for options in (["--hidden", "2000", "--heads", "16"], ["--heads", "16", "--kv-heads", "5"],
                        ["--max-prefill-len", "4096", "--max-len", "2048"], ["--max-batch", "0"]):
            r = subprocess.run([sys.executable, SERVE, "--backend", "fake", *options], env=env(),
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, options)
            self.assertIn("serve.py: error:", r.stderr)

    def test_hf_backend_without_torch_fails_clearly(self):
        """Where torch is missing the hf backend stops with a reason, in the front (which imports
        torch itself) or, with --front-cuda off, when the engine fails its start-up."""
        s = Serve("--backend", "hf")
        try:
            self.assertEqual(s.proc.wait(30), 1)
            self.assertIn("the hf backend needs PyTorch and transformers", s.output())
        finally:
            s.kill()
        s = Serve("--backend", "hf", "--front-cuda", "off")
        try:
            self.assertEqual(s.proc.wait(30), 1)
            out = s.output()
            self.assertRegex(out, r"engine pid \d+ exited during start-up \(exit status 1\)")
            self.assertIn("torch imported by a process that must not import it", out)
        finally:
            s.kill()


class FakeServer(unittest.TestCase):
    READY_AFTER = 1.5
    MS_PER_TOKEN = 25

    @classmethod
    def setUpClass(cls):
        cls.log = os.path.join(TMP, "requests.jsonl")
        cls.s = Serve("--backend", "fake", "--model-name", "test-model", "--fake-ready-after", str(cls.READY_AFTER),
                      "--fake-ms-per-token", str(cls.MS_PER_TOKEN), "--request-log", cls.log, "--max-len", "256",
                      "--max-prefill-len", "64")
        # Readiness is measured from the moment the port was printed.
        cls.first_health = cls.s.request("GET", "/health")
        cls.early_completion = cls.s.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 1})
        while True:
            status, _ = cls.s.request("GET", "/health")
            if status == 200 or time.time() - cls.s.listening_at > 60:
                break
            time.sleep(0.05)
        cls.ready_after = time.time() - cls.s.listening_at
        cls.ready_status = status

    @classmethod
    def tearDownClass(cls):
        cls.s.kill()

    def completion(self, body, path="/v1/completions"):
        status, reply = self.s.request("POST", path, body)
        self.assertEqual(status, 200, reply)
        return reply

    def test_health_turns_ready_after_warm_up(self):
        self.assertEqual(self.first_health, (503, {"status": "starting"}))
        self.assertEqual(self.early_completion[0], 503)
        self.assertEqual(self.early_completion[1]["error"]["type"], "ServiceUnavailableError")
        self.assertEqual(self.ready_status, 200)
        self.assertGreaterEqual(self.ready_after, self.READY_AFTER - 0.05)
        self.assertLess(self.ready_after, 30)
        self.assertEqual(self.s.request("GET", "/health"), (200, None))
        self.s.engine_pid()  # the readiness line users can name

    def test_models(self):
        status, reply = self.s.request("GET", "/v1/models")
        self.assertEqual(status, 200)
        self.assertEqual(reply["object"], "list")
        self.assertEqual([m["id"] for m in reply["data"]], ["test-model"])
        self.assertEqual(reply["data"][0]["object"], "model")

    def test_completion_shape(self):
        reply = self.completion({"model": "test-model", "prompt": "one two three", "max_tokens": 5})
        self.assertTrue(reply["id"].startswith("cmpl-"))
        self.assertEqual(reply["object"], "text_completion")
        self.assertEqual(reply["model"], "test-model")
        self.assertIsInstance(reply["created"], int)
        self.assertEqual(len(reply["choices"]), 1)
        choice = reply["choices"][0]
        self.assertEqual(choice["index"], 0)
        self.assertEqual(len(choice["text"].split()), 5)  # one word per output token
        self.assertEqual(choice["finish_reason"], "length")
        self.assertEqual(reply["usage"], {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8})

    def test_completion_token_prompts_and_several_prompts(self):
        reply = self.completion({"prompt": [5, 6, 7, 8], "max_tokens": 2, "ignore_eos": True, "min_tokens": 1})
        self.assertEqual(reply["usage"], {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6})
        reply = self.completion({"prompt": ["a b", "c"], "max_tokens": 3})
        self.assertEqual([c["index"] for c in reply["choices"]], [0, 1])
        self.assertEqual(reply["usage"], {"prompt_tokens": 3, "completion_tokens": 6, "total_tokens": 9})
        reply = self.completion({"prompt": [[1, 2], [3]], "max_tokens": 1})
        self.assertEqual(reply["usage"]["prompt_tokens"], 3)

    def test_chat_completion_shape(self):
        reply = self.completion({"model": "test-model", "max_completion_tokens": 4, "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hello there"}]}]}, "/v1/chat/completions")
        self.assertTrue(reply["id"].startswith("chatcmpl-"))
        self.assertEqual(reply["object"], "chat.completion")
        message = reply["choices"][0]["message"]
        self.assertEqual(message["role"], "assistant")
        self.assertEqual(len(message["content"].split()), 4)
        self.assertEqual(reply["usage"]["completion_tokens"], 4)
        self.assertEqual(reply["choices"][0]["finish_reason"], "length")

    def test_bad_requests_are_refused_in_openai_shape(self):
        cases = [
            ("POST", "/v1/completions", {"model": "other", "prompt": "a"}, 404, "NotFoundError"),
            ("POST", "/v1/completions", {"prompt": "a", "stream": True}, 400, "BadRequestError"),
            ("POST", "/v1/completions", {"prompt": "a", "n": 2}, 400, "BadRequestError"),
            ("POST", "/v1/completions", {"prompt": "a", "max_tokens": 0}, 400, "BadRequestError"),
            ("POST", "/v1/completions", {"prompt": "a", "max_tokens": 4, "min_tokens": 5}, 400, "BadRequestError"),
            ("POST", "/v1/completions", {"prompt": ""}, 400, "BadRequestError"),
            ("POST", "/v1/completions", {"prompt": {"x": 1}}, 400, "BadRequestError"),
            ("POST", "/v1/completions", {"prompt": [1, 32000]}, 400, "BadRequestError"),  # vocab is 0..31999
            ("POST", "/v1/completions", {"prompt": " ".join(["w"] * 65)}, 400, "BadRequestError"),  # > 64
            ("POST", "/v1/completions", {"prompt": " ".join(["w"] * 60), "max_tokens": 197}, 400,
             "BadRequestError"),  # 257 > --max-len 256
            ("POST", "/v1/chat/completions", {"messages": []}, 400, "BadRequestError"),
            ("POST", "/v1/nothing", {}, 404, "NotFoundError"),
            ("GET", "/v1/completions", None, 405, "MethodNotAllowed"),
        ]
        for method, path, body, status, kind in cases:
            got, reply = self.s.request(method, path, body)
            self.assertEqual(got, status, (path, body, reply))
            self.assertEqual(reply["error"]["type"], kind, (path, body))
            self.assertEqual(reply["error"]["code"], status)
            self.assertTrue(reply["error"]["message"])
        got, reply = self.s.request("POST", "/v1/completions", raw=b"{not json")
        self.assertEqual(got, 400)
        self.assertIn("not valid JSON", reply["error"]["message"])
        # the longest request that fits is served: 60 + 196 = 256
        self.completion({"prompt": " ".join(["w"] * 60), "max_tokens": 196})

    def test_16_concurrent_requests_in_flight_at_once(self):
        n, tokens = 16, 40  # 40 steps x 25 ms: each request lasts about a second
        barrier = threading.Barrier(n)
        results = [None] * n

        def one(i):
            barrier.wait()
            results[i] = self.s.request("POST", "/v1/completions", {"prompt": f"request {i}", "max_tokens": tokens})

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertTrue(all(r is not None and r[0] == 200 for r in results), results)
        ids = {r[1]["id"] for r in results}
        records = [r for r in read_log(self.log) if r.get("id") in ids]
        self.assertEqual(len(records), n)
        for r in records:
            self.assertEqual((r["event"], r["endpoint"], r["status"]), ("request", "/v1/completions", 200))
            self.assertEqual(r["completion_tokens"], tokens)
            self.assertLess(r["arrival"], r["finish"])
        # Concurrency from the timestamps alone: the most intervals [arrival, finish] that overlap.
        self.assertEqual(most_overlapping(records), n)
        # ... and the front's own count agrees: the last to arrive saw all 16 in flight.
        self.assertEqual(max(r["in_flight_at_arrival"] for r in records), n)
        # The engine batched them (some engine batch held more than one request).
        sizes = [int(m) for m in re.findall(r"batch \d+: (\d+) requests", self.s.output())]
        self.assertTrue(any(size > 1 for size in sizes), sizes)

    def test_profile_window_endpoints(self):
        self.assertEqual(self.s.request("POST", "/start_profile"), (200, None))
        self.assertEqual(self.s.request("POST", "/stop_profile"), (200, None))
        events = [r["event"] for r in read_log(self.log) if r["event"] != "request"]
        self.assertEqual(events[-2:], ["start_profile", "stop_profile"])
        self.s.wait_line(r"\[engine [\d:.]+\] start_profile: profiling started")
        self.assertEqual(self.s.request("GET", "/start_profile")[0], 405)

    def test_zz_sigterm_stops_front_and_engine(self):
        engine = self.s.engine_pid()
        self.assertFalse(process_gone(engine))
        self.s.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.s.proc.wait(30), 0)
        self.assertTrue(wait_gone(engine, 10), f"engine pid {engine} still runs after the front stopped")
        self.assertRegex(self.s.output(), rf"engine pid {engine} stopped \(exit status 0\)")


class FailuresAndDeath(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.log = os.path.join(TMP, "failures.jsonl")
        cls.s = Serve("--backend", "fake", "--fake-fail-every", "3", "--fake-ms-per-token", "1", "--request-log",
                      cls.log)
        cls.s.engine_pid()

    @classmethod
    def tearDownClass(cls):
        cls.s.kill()

    def test_1_every_third_request_fails_with_500(self):
        statuses = []
        for i in range(6):
            status, reply = self.s.request("POST", "/v1/completions", {"prompt": f"p {i}", "max_tokens": 2})
            statuses.append(status)
            if status == 500:
                self.assertEqual(reply["error"]["type"], "InternalServerError")
                self.assertIn("injected failure", reply["error"]["message"])
        self.assertEqual(statuses, [200, 200, 500, 200, 200, 500])
        logged = [r["status"] for r in read_log(self.log) if r["event"] == "request"]
        self.assertEqual(logged, statuses)

    def test_2_engine_stops_when_front_is_killed(self):
        engine = self.s.engine_pid()
        self.s.proc.kill()
        self.s.proc.wait()
        self.assertTrue(wait_gone(engine, 10), f"engine pid {engine} outlived its killed front")


class EngineDeath(unittest.TestCase):
    def test_engine_killed_while_serving_fails_requests_and_stops_front(self):
        """An engine that dies mid-request (as a crashed EngineCore does): the request in flight
        gets a 503 at once rather than hanging, and the front exits 1 naming the engine's status."""
        s = Serve("--backend", "fake", "--fake-ms-per-token", "50")
        try:
            engine = s.engine_pid()
            result = []
            # 200 tokens x 50 ms: the request would last 10 s if the engine lived.
            t = threading.Thread(target=lambda: result.append(
                s.request("POST", "/v1/completions", {"prompt": "long", "max_tokens": 200})))
            started = time.time()
            t.start()
            s.wait_line(r"batch 1: 1 requests")  # the engine holds the request
            os.kill(engine, signal.SIGKILL)
            t.join(30)
            self.assertFalse(t.is_alive())
            self.assertLess(time.time() - started, 8)
            status, reply = result[0]
            self.assertEqual(status, 503, reply)
            self.assertEqual(reply["error"]["type"], "ServiceUnavailableError")
            self.assertEqual(s.proc.wait(30), 1)
            self.assertRegex(s.output(), rf"engine pid {engine} exited while serving \(exit status -9\); "
                             r"the front stops")
        finally:
            s.kill()


def most_overlapping(records):
    """The most [arrival, finish] intervals that overlap at one instant (a finish at the same
    instant as an arrival counts first)."""
    edges = sorted([(r["arrival"], 1) for r in records] + [(r["finish"], -1) for r in records])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def run_load(url, *options, timeout=120):
    report = os.path.join(TMP, f"load-{time.monotonic_ns()}.json")
    started = time.monotonic()
    r = subprocess.run([sys.executable, LOAD, "--url", url, "--json", report, *options], env=env(),
                       capture_output=True, text=True, timeout=timeout)
    elapsed = time.monotonic() - started
    data = None
    if os.path.exists(report):
        with open(report) as f:
            data = json.load(f)
    return r, data, elapsed


class LoadGenerator(unittest.TestCase):
    def test_percentile_is_nearest_rank(self):
        sys.path.insert(0, os.path.dirname(LOAD))
        sys.dont_write_bytecode = True  # no __pycache__ in the source tree
        try:
            import load
        finally:
            sys.path.pop(0)
        values = list(range(1, 101))  # 1..100: the p-th percentile by nearest rank is p itself
        self.assertEqual([load.percentile(values, p) for p in (1, 50, 90, 99, 100)], [1, 50, 90, 99, 100])
        self.assertEqual(load.percentile([7.0], 50), 7.0)
        self.assertEqual(load.percentile([1, 2, 3, 4], 50), 2)  # rank ceil(0.5 * 4) = 2
        self.assertEqual(load.percentile([1, 2, 3, 4], 90), 4)  # rank ceil(3.6) = 4
        self.assertIsNone(load.percentile([], 50))

    def test_concurrency_16_matches_the_server_log(self):
        log = os.path.join(TMP, "load16.jsonl")
        s = Serve("--backend", "fake", "--model-name", "load-model", "--fake-ms-per-token", "20", "--request-log",
                  log, "--fake-ready-after", "1")
        try:
            # --wait-ready: started while /health still answers 503
            r, report, elapsed = run_load(s.url, "--wait-ready", "30", "-c", "16", "-n", "48", "--prompt-len", "12",
                                          "--output-len", "10")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            records = [x for x in read_log(log) if x["event"] == "request"]
        finally:
            s.kill()
        self.assertEqual(report["model"], "load-model")  # read from /v1/models (a wrong one is a 404)
        self.assertEqual((report["sent"], report["completed"], report["failed"]), (48, 48, 0))
        self.assertEqual(len(records), 48)
        self.assertTrue(all(x["status"] == 200 for x in records))
        self.assertEqual({x["prompt_tokens"] for x in records}, {12})
        self.assertEqual({x["completion_tokens"] for x in records}, {10})
        self.assertEqual(report["output_tokens"], 480)
        self.assertEqual(report["prompt_tokens"], 576)
        # 16 in flight, seen by the server itself, and never more
        self.assertEqual(most_overlapping(records), 16)
        self.assertEqual(report["most_in_flight"], 16)
        # a client latency includes the server's: every percentile lies within the server's span
        # plus the client's overhead, and the ordering holds
        lat = report["latency_ms"]
        server = sorted(1000 * x["latency_s"] for x in records)
        self.assertGreaterEqual(lat["min"], server[0])
        self.assertGreaterEqual(lat["max"], server[-1])
        self.assertLessEqual(lat["min"], lat["p50"])
        self.assertLessEqual(lat["p50"], lat["p90"])
        self.assertLessEqual(lat["p90"], lat["p99"])
        self.assertLessEqual(lat["p99"], lat["max"])
        # the rate is what was completed over the time from the first send to the last reply,
        # which the server saw too (its first arrival to its last finish is a little shorter)
        span = max(x["finish"] for x in records) - min(x["arrival"] for x in records)
        self.assertGreaterEqual(report["wall_s"], span)
        self.assertLess(report["wall_s"], elapsed)
        self.assertAlmostEqual(report["requests_per_s"], 48 / report["wall_s"], places=2)
        self.assertIn("load: c=16 sent 48, completed 48, failed 0", r.stdout)

    def test_failures_and_duration(self):
        log = os.path.join(TMP, "loadfail.jsonl")
        s = Serve("--backend", "fake", "--fake-ms-per-token", "5", "--fake-fail-every", "4", "--request-log", log)
        try:
            s.engine_pid()
            r, report, _ = run_load(s.url, "-c", "1", "-n", "20", "--prompt-len", "3", "--output-len", "2")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertEqual((report["sent"], report["completed"], report["failed"]), (20, 15, 5))
            self.assertEqual(report["failures"], {"HTTP 500": 5})
            self.assertIn("injected failure", report["failure_examples"][0])
            statuses = [x["status"] for x in read_log(log) if x["event"] == "request"]
            self.assertEqual(statuses.count(500), 5)
            self.assertEqual(len(statuses), 20)
            # a duration: new requests for 2 s, then those in flight finish
            r, report, elapsed = run_load(s.url, "-c", "4", "--duration", "2", "--prompt-len", "3",
                                          "--output-len", "2")
            statuses = [x["status"] for x in read_log(log) if x["event"] == "request"][20:]
            self.assertEqual(report["sent"], len(statuses))
            self.assertEqual(report["completed"], statuses.count(200))
            self.assertEqual(report["failed"], statuses.count(500))
            self.assertGreater(report["sent"], 20)  # a request takes ~15 ms: 4 workers send many in 2 s
            self.assertGreaterEqual(report["wall_s"], 1.9)
            self.assertLess(report["wall_s"], 10)
        finally:
            s.kill()

    def test_sigint_stops_new_requests_and_reports(self):
        s = Serve("--backend", "fake", "--fake-ms-per-token", "5")
        try:
            s.engine_pid()
            report_path = os.path.join(TMP, "load-int.json")
            p = subprocess.Popen([sys.executable, LOAD, "--url", s.url, "-c", "2", "--duration", "120",
                                  "--prompt-len", "3", "--output-len", "4", "--json", report_path], env=env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            time.sleep(1.5)
            p.send_signal(signal.SIGINT)
            out, _ = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 0, out)
            with open(report_path) as f:
                report = json.load(f)
            self.assertTrue(report["interrupted"])
            self.assertGreater(report["completed"], 0)
            self.assertEqual(report["sent"], report["completed"])
            self.assertLess(report["wall_s"], 10)
            self.assertIn("interrupted", out)
        finally:
            s.kill()

    def test_not_ready_and_bad_url(self):
        s = Serve("--backend", "fake", "--fake-ready-after", "30")
        try:
            r, report, elapsed = run_load(s.url, "--wait-ready", "1", "-n", "1")
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIsNone(report)
            self.assertIn("/health did not answer 200 within 1 s", r.stderr)
        finally:
            s.kill()
        r, report, _ = run_load("ftp://x", "-n", "1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--url must be http://HOST[:PORT]", r.stderr)
        r = subprocess.run([sys.executable, LOAD, "--url", "http://127.0.0.1:1", "-n", "1", "--duration", "1"],
                           env=env(), capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)  # argparse: --requests and --duration exclude each other


class GpuCheckRehearsal(unittest.TestCase):
    """tools/serving/gpu-check.sh with --backend fake appended (serve.py's last --backend wins):
    the script the lead runs on the GPU machine, rehearsed here so a mistake in it does not cost
    GPU time. The GPU-only checks are reported as skips, not passes."""

    def run_check(self, name, *serve_options, **environment):
        script = os.path.join(os.path.dirname(SERVE), "gpu-check.sh")
        with socket.create_server(("127.0.0.1", 0)) as probe:
            port = probe.getsockname()[1]
        out = os.path.join(TMP, name)
        e = env()
        e.update(PYTHON=sys.executable, PORT=str(port), PROMPT_LEN="8", OUTPUT_LEN="4", C1_REQUESTS="3",
                 C16_REQUESTS="32", WINDOW_REQUESTS="16", HEALTH_TIMEOUT="60", **environment)
        # 25 ms a token keeps each request in flight ~100 ms: the check wants all 16 clients of the
        # c=16 load in flight at once, which 5 ms a token missed now and then on a loaded machine.
        r = subprocess.run(["bash", script, out, "--backend", "fake", "--fake-ms-per-token", "25", *serve_options],
                           env=e, capture_output=True, text=True, timeout=240)
        with open(os.path.join(out, "summary.txt")) as f:
            return r, f.read(), out

    def test_passes_on_a_healthy_server(self):
        r, summary, out = self.run_check("gpu-check-ok")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(summary.endswith("9 passed, 0 failed\n"), summary)
        self.assertEqual(len(re.findall(r"^skip ", summary, re.M)), 2, summary)
        self.assertRegex(summary, r"ok   load: c=16 sent 32, completed 32, failed 0")
        with open(os.path.join(out, "load-c16.json")) as f:
            self.assertEqual(json.load(f)["most_in_flight"], 16)
        for name in ("serve.log", "requests.jsonl", "check.log", "env.txt", "load-c1.json", "load-window.json"):
            self.assertTrue(os.path.isfile(os.path.join(out, name)), name)
        # a second run into the same directory is refused, the first run's logs untouched
        with open(os.path.join(out, "serve.log")) as f:
            before = f.read()
        r, _, _ = self.run_check("gpu-check-ok")
        self.assertEqual(r.returncode, 2)
        self.assertIn("already holds a check", r.stderr)
        with open(os.path.join(out, "serve.log")) as f:
            self.assertEqual(f.read(), before)

    def test_fails_when_requests_fail_or_the_server_never_starts(self):
        r, summary, _ = self.run_check("gpu-check-failing", "--fake-fail-every", "7")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(summary, r"FAIL load c16 \(exit 1, 16 of 16 in flight\)")
        # failed requests reach the server's log too: the accounting still agrees
        self.assertRegex(summary, r"ok   request log: \d+ requests, as many as load.py sent")
        r, summary, _ = self.run_check("gpu-check-bad-option", "--max-batch", "0")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(summary, "FAIL serve.py never became ready (GET /health)\n0 passed, 1 failed\n")


class EndOfSequence(unittest.TestCase):
    def test_eos_stops_after_min_tokens_unless_ignored(self):
        body = {"prompt": [11, 12, 13], "max_tokens": 6}
        s = Serve("--backend", "fake", "--fake-ms-per-token", "1")
        try:
            s.engine_pid()
            status, reply = s.request("POST", "/v1/completions", body)
            tokens = [int(w[1:]) for w in reply["choices"][0]["text"].split()]
        finally:
            s.kill()
        self.assertEqual(len(tokens), 6)
        eos = tokens[2]
        first_eos = tokens.index(eos)  # the fake's tokens need not all differ
        s = Serve("--backend", "fake", "--fake-ms-per-token", "1", "--eos-token-id", str(eos))
        try:
            s.engine_pid()
            _, reply = s.request("POST", "/v1/completions", body)
            self.assertEqual(reply["choices"][0]["finish_reason"], "stop")
            self.assertEqual(reply["usage"]["completion_tokens"], first_eos + 1)
            _, reply = s.request("POST", "/v1/completions", dict(body, ignore_eos=True))
            self.assertEqual(reply["choices"][0]["finish_reason"], "length")
            self.assertEqual(reply["usage"]["completion_tokens"], 6)
            _, reply = s.request("POST", "/v1/completions", dict(body, min_tokens=6))
            self.assertEqual(reply["usage"]["completion_tokens"], 6)
        finally:
            s.kill()


def main():
    for path, what in ((SERVE, "serve.py"), (LOAD, "load.py")):
        if not path or not os.path.isfile(path):
            print(f"skipped: {what} not found ({path or 'no path given'})")
            return 77
    try:
        socket.create_server(("127.0.0.1", 0)).close()
    except OSError as e:
        print(f"skipped: cannot listen on 127.0.0.1 ({e})")
        return 77
    make_poison()
    result = unittest.main(argv=[sys.argv[0], "-v"], exit=False).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
