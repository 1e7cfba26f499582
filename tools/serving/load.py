#!/usr/bin/env python3
"""A small closed-loop load generator for OpenAI-compatible servers (tools/serving/serve.py, vLLM,
SGLang, TensorRT-LLM): N workers each send one request, wait for the reply, send the next, until
a request count or a duration is reached. Standard library only (no torch), so it runs anywhere.

It reports what was sent, completed and failed (by cause), the achieved request and output-token
rates, and latency percentiles (nearest rank: the smallest latency that at least p% of the
completed requests did not exceed). SIGINT/SIGTERM stop new requests; the ones in flight finish
and the report is printed, so a capture script can run it for the length of a window.

usage: load.py --url http://127.0.0.1:8000 [--concurrency 16] [--requests 64 | --duration 30]
               [--prompt-len 128] [--output-len 64] [--endpoint completions|chat] [--json PATH]

Exit status: 0 all requests completed; 1 some failed; 2 bad usage; 3 the server was not ready
(--wait-ready) or /v1/models named no model."""
import argparse
import http.client
import json
import math
import signal
import sys
import threading
import time
from urllib.parse import urlsplit

EXIT_OK, EXIT_FAILURES, EXIT_USAGE, EXIT_NOT_READY = 0, 1, 2, 3


def percentile(sorted_values, p):
    """Nearest rank: the value at rank ceil(p/100 * n) (1-based) of the sorted values."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def build_parser():
    p = argparse.ArgumentParser(prog="load.py", description="Closed-loop load for an OpenAI-compatible server.")
    p.add_argument("--url", required=True, help="base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--concurrency", "-c", type=positive_int, default=1, help="requests in flight at once")
    stop = p.add_mutually_exclusive_group()
    stop.add_argument("--requests", "-n", type=positive_int, help="send this many requests in all (default 32)")
    stop.add_argument("--duration", "-d", type=positive_float,
                      help="start new requests for this many seconds; those in flight then finish")
    p.add_argument("--prompt-len", type=positive_int, default=128, help="prompt length in words (serve.py: tokens)")
    p.add_argument("--output-len", type=positive_int, default=64,
                   help="max_tokens of each request (with ignore_eos, so every request generates exactly this)")
    p.add_argument("--endpoint", choices=["completions", "chat"], default="completions")
    p.add_argument("--model", help="model id to send (default: the first id GET /v1/models lists)")
    p.add_argument("--no-ignore-eos", action="store_true", help="do not send ignore_eos (servers that reject it)")
    p.add_argument("--timeout", type=positive_float, default=600.0, help="seconds one request may take")
    p.add_argument("--wait-ready", type=float, default=0.0,
                   help="first poll GET /health for up to this many seconds until it answers 200")
    p.add_argument("--json", help="also write the report as JSON to this file")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the one-line summary")
    return p


class Target:
    def __init__(self, url):
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"--url must be http://HOST[:PORT], got {url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.prefix = parts.path.rstrip("/")

    def connect(self, timeout):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def get(self, path, timeout=10.0):
        conn = self.connect(timeout)
        try:
            conn.request("GET", self.prefix + path)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()


def wait_ready(target, seconds):
    """True once GET /health answers 200 within `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            status, _ = target.get("/health", timeout=5.0)
            if status == 200:
                return True
        except (OSError, http.client.HTTPException):
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)


def first_model(target):
    status, body = target.get("/v1/models")
    if status != 200:
        raise RuntimeError(f"GET /v1/models answered {status}")
    data = json.loads(body).get("data") or []
    if not data or not isinstance(data[0], dict) or not data[0].get("id"):
        raise RuntimeError("GET /v1/models lists no model")
    return data[0]["id"]


def prompt_text(index, words):
    """Distinct prompts (no two requests share a prefix beyond the first word), deterministic."""
    return " ".join(["load"] + [f"r{index}w{i}" for i in range(words - 1)])


class Load:
    def __init__(self, args, target, model):
        self.args, self.target, self.model = args, target, model
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.next_index = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self.latencies = []
        self.output_tokens = 0
        self.prompt_tokens = 0
        self.failures = {}
        self.failure_examples = []
        self.first_send = None
        self.last_finish = None
        self.deadline = None

    def _claim(self):
        """The index of the next request to send, or None when the budget or time is spent."""
        with self.lock:
            if self.stop.is_set():
                return None
            if self.args.requests is not None and self.next_index >= self.args.requests:
                return None
            if self.deadline is not None and time.monotonic() >= self.deadline:
                return None
            index = self.next_index
            self.next_index += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            if self.first_send is None:
                self.first_send = time.monotonic()
            return index

    def _body(self, index):
        a = self.args
        body = {"model": self.model, "max_tokens": a.output_len, "temperature": 0.0}
        if not a.no_ignore_eos:
            body["ignore_eos"] = True
        text = prompt_text(index, a.prompt_len)
        if a.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": text}]
            return "/v1/chat/completions", body
        body["prompt"] = text
        return "/v1/completions", body

    def _fail(self, cause, detail):
        with self.lock:
            self.failures[cause] = self.failures.get(cause, 0) + 1
            if len(self.failure_examples) < 5:
                self.failure_examples.append(f"{cause}: {detail}")

    def _worker(self):
        conn = None
        while True:
            index = self._claim()
            if index is None:
                break
            path, body = self._body(index)
            data = json.dumps(body).encode("utf-8")
            started = time.monotonic()
            try:
                if conn is None:
                    conn = self.target.connect(self.args.timeout)
                conn.request("POST", self.target.prefix + path, body=data,
                             headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                payload = r.read()
                finished = time.monotonic()
                if r.status != 200:
                    try:
                        message = json.loads(payload)["error"]["message"]
                    except (ValueError, KeyError, TypeError):
                        message = payload[:200].decode("utf-8", "replace")
                    self._fail(f"HTTP {r.status}", message)
                else:
                    usage = json.loads(payload).get("usage") or {}
                    with self.lock:
                        self.latencies.append(finished - started)
                        self.output_tokens += int(usage.get("completion_tokens") or 0)
                        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
                if r.will_close:
                    conn.close()
                    conn = None
            except TimeoutError:
                self._fail("timeout", f"no reply within {self.args.timeout:g} s")
                conn = self._drop(conn)
            except (OSError, http.client.HTTPException, ValueError) as e:
                self._fail("connection" if isinstance(e, (OSError, http.client.HTTPException)) else "bad reply",
                           f"{type(e).__name__}: {e}")
                conn = self._drop(conn)
            finally:
                with self.lock:
                    self.in_flight -= 1
                    self.last_finish = time.monotonic()
        if conn is not None:
            conn.close()

    @staticmethod
    def _drop(conn):
        if conn is not None:
            conn.close()
        return None

    def run(self):
        if self.args.duration is not None:
            self.deadline = time.monotonic() + self.args.duration
        threads = [threading.Thread(target=self._worker, name=f"load-{i}", daemon=True)
                   for i in range(self.args.concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.2)  # short joins: signals are handled in this (the main) thread

    def report(self):
        latencies = sorted(self.latencies)
        completed = len(latencies)
        failed = sum(self.failures.values())
        wall = (self.last_finish - self.first_send) if self.first_send is not None else 0.0
        a = self.args

        def ms(v):
            return None if v is None else round(1000.0 * v, 3)

        return {
            "url": f"http://{self.target.host}:{self.target.port}{self.target.prefix}",
            "endpoint": "/v1/chat/completions" if a.endpoint == "chat" else "/v1/completions",
            "model": self.model, "concurrency": a.concurrency, "prompt_len": a.prompt_len,
            "output_len": a.output_len, "requests_budget": a.requests, "duration_s": a.duration,
            "sent": self.next_index, "completed": completed, "failed": failed, "failures": dict(self.failures),
            "failure_examples": list(self.failure_examples), "most_in_flight": self.most_in_flight,
            "interrupted": self.stop.is_set(), "wall_s": round(wall, 6),
            "requests_per_s": round(completed / wall, 4) if wall > 0 else None,
            "output_tokens": self.output_tokens, "prompt_tokens": self.prompt_tokens,
            "output_tokens_per_s": round(self.output_tokens / wall, 2) if wall > 0 else None,
            "latency_ms": {"min": ms(latencies[0] if latencies else None),
                           "mean": ms(sum(latencies) / completed if completed else None),
                           "p50": ms(percentile(latencies, 50)), "p90": ms(percentile(latencies, 90)),
                           "p99": ms(percentile(latencies, 99)), "max": ms(latencies[-1] if latencies else None)},
        }


def summary_line(r):
    lat = r["latency_ms"]
    rate = "-" if r["requests_per_s"] is None else f"{r['requests_per_s']:.2f}"
    line = (f"load: c={r['concurrency']} sent {r['sent']}, completed {r['completed']}, failed {r['failed']} "
            f"in {r['wall_s']:.2f} s: {rate} req/s")
    if lat["p50"] is not None:
        line += f"; latency ms p50 {lat['p50']:.1f} p90 {lat['p90']:.1f} p99 {lat['p99']:.1f} max {lat['max']:.1f}"
    return line


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.requests is None and args.duration is None:
        args.requests = 32
    try:
        target = Target(args.url)
    except ValueError as e:
        print(f"load.py: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.wait_ready > 0 and not wait_ready(target, args.wait_ready):
        print(f"load.py: {args.url}/health did not answer 200 within {args.wait_ready:g} s", file=sys.stderr)
        return EXIT_NOT_READY
    model = args.model
    if model is None:
        try:
            model = first_model(target)
        except (OSError, http.client.HTTPException, ValueError, RuntimeError) as e:
            print(f"load.py: cannot read the model from {args.url}/v1/models: {e}", file=sys.stderr)
            return EXIT_NOT_READY
    load = Load(args, target, model)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda s, _f: load.stop.set())
    load.run()
    report = load.report()
    if not args.quiet:
        lat = report["latency_ms"]
        print(f"load: {report['endpoint']} model {model}, prompt {args.prompt_len} words, output {args.output_len} "
              f"tokens, most in flight {report['most_in_flight']}"
              + (" (interrupted: stopped starting requests)" if report["interrupted"] else ""))
        if report["completed"]:
            print(f"load: latency ms min {lat['min']:.1f} mean {lat['mean']:.1f}; output "
                  f"{report['output_tokens']} tokens, {report['output_tokens_per_s'] or 0:.1f} tokens/s")
        for example in report["failure_examples"]:
            print(f"load: failure: {example}")
    print(summary_line(report))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
    return EXIT_FAILURES if report["failed"] else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
