#!/usr/bin/env python3
"""A serving-shaped program: an OpenAI-compatible HTTP front process that hands requests to a
separate engine process running a Llama model with a CUDA-graph decode loop, as vLLM's API server
and EngineCore do. It is kprof's GPU-side target for capture checks (profiler windows, NVTX
ranges, CUDA-graph decode, engine child processes, attach, warm capture under load) and, with
`--backend fake`, the OpenAI stand-in for kprof's request driver in CI (no torch needed).

The kernels are real PyTorch/transformers kernels; the engine logic is simplified (see
tools/serving/README.md for what is faithful and what is not).

usage: serve.py [--backend hf|fake] [--host 127.0.0.1] [--port 0] [options]   (--help lists all)

The first line on stdout is `listening on http://HOST:PORT`. Endpoints: GET /health (503 until
the engine is warm, then 200), GET /v1/models, POST /v1/completions, POST /v1/chat/completions,
POST /start_profile, POST /stop_profile."""
import argparse
import contextlib
import ctypes
import http.server
import inspect
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import uuid
import zlib
from urllib.parse import urlsplit

# torch and transformers are imported only inside the hf backend's functions: the fake backend
# must run where neither is installed, and neither of its processes may import them.

PAD_TOKEN_ID = 0
FIRST_WORD_TOKEN_ID = 3  # ids 0-2 are pad/bos/eos in Llama's vocabulary


# ------------------------------------------------------------------------------------------------
# Options


def bucket_sizes(max_batch):
    """The padded batch sizes decode graphs are captured for: powers of two below max_batch, and
    max_batch itself (vLLM captures a list of sizes and pads each batch up to the next one)."""
    sizes, b = [], 1
    while b < max_batch:
        sizes.append(b)
        b *= 2
    sizes.append(max_batch)
    return sizes


def bucket_for(n, buckets):
    for b in buckets:
        if b >= n:
            return b
    raise ValueError(f"batch of {n} is larger than the largest captured batch size {buckets[-1]}")


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_float(text):
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def build_parser():
    p = argparse.ArgumentParser(
        prog="serve.py",
        description="Serving-shaped test program: OpenAI HTTP front + engine process "
        "(Llama with CUDA-graph decode, or a fake engine without torch).")
    p.add_argument("--backend", choices=["hf", "fake"], default="hf",
                   help="hf: transformers Llama on CUDA (random weights); fake: no torch, the engine sleeps per token")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on the first line)")
    p.add_argument("--model-name", default="kprof-llama-random", help="the one id /v1/models lists")
    p.add_argument("--max-batch", type=positive_int, default=32, help="most requests in one engine batch")
    p.add_argument("--max-len", type=positive_int, default=2048, help="most tokens of a sequence (prompt + output)")
    p.add_argument("--max-prefill-len", type=positive_int, default=1024,
                   help="longest prompt accepted; the start-up profiling forward runs at max-batch x this")
    p.add_argument("--batch-wait-ms", type=non_negative_float, default=2.0,
                   help="how long an idle engine waits for more requests before a prefill")
    p.add_argument("--eos-token-id", type=int, default=None,
                   help="stop a request at this token (unless it sets ignore_eos) once it has min_tokens; "
                   "default: no EOS, every request generates max_tokens")
    p.add_argument("--request-log", default=None, help="append one JSON line per request and profile call")
    p.add_argument("--access-log", action="store_true", help="log every HTTP request line")
    p.add_argument("--api-key", default=None, help="as vLLM's: the /v1 routes answer 401 without 'Authorization: Bearer KEY'")
    # model (hf)
    g = p.add_argument_group("model (hf backend)")
    g.add_argument("--layers", type=positive_int, default=8)
    g.add_argument("--hidden", type=positive_int, default=2048)
    g.add_argument("--heads", type=positive_int, default=16)
    g.add_argument("--kv-heads", type=positive_int, default=4)
    g.add_argument("--intermediate", type=positive_int, default=5632)
    g.add_argument("--vocab", type=positive_int, default=32000)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--decode-graph", choices=["on", "off"], default="on",
                   help="on: decode replays CUDA graphs per batch-size bucket; off: eager decode")
    g.add_argument("--decode-backend", choices=["auto", "hf", "manual"], default="auto",
                   help="graph decoder: hf = transformers model over a StaticCache; manual = the built-in "
                   "capture-safe Llama decoder on the same weights; auto = hf, else manual")
    g.add_argument("--graph-check-tol", type=float, default=0.1,
                   help="largest relative logit difference between graph and eager decode accepted at start-up")
    g.add_argument("--reserve-gb", type=non_negative_float, default=0.0,
                   help="allocate this much extra device memory in the engine, as an engine's KV-cache pool would")
    g.add_argument("--front-cuda", choices=["on", "off"], default="on",
                   help="on: the front initialises CUDA itself at start, as an API server importing torch does")
    g.add_argument("--profile-mode", choices=["cuda", "torch"], default="cuda",
                   help="/start_profile: cuda = cudaProfilerStart/Stop in the engine; torch = PyTorch profiler trace")
    g.add_argument("--profile-with-stack", action="store_true",
                   help="torch mode: record Python stacks and nn.Module paths too (with_stack, with_modules)")
    g.add_argument("--profile-dir", default="serve-torch-profile",
                   help="where --profile-mode torch writes its traces (like VLLM_TORCH_PROFILER_DIR)")
    g.add_argument("--dry-run", action="store_true",
                   help="print the model, memory and graph plan for these options and exit (needs no torch)")
    # fake
    f = p.add_argument_group("fake backend")
    f.add_argument("--fake-ms-per-token", type=non_negative_float, default=10.0,
                   help="the fake engine sleeps this long per step (prefill or one decode token)")
    f.add_argument("--fake-ready-after", type=non_negative_float, default=0.0,
                   help="seconds the fake engine 'warms up' before /health turns 200")
    f.add_argument("--fake-fail-every", type=int, default=0,
                   help="every Nth generation request fails with HTTP 500 (0: never)")
    # internal
    p.add_argument("--role", choices=["front", "engine"], default="front", help=argparse.SUPPRESS)
    p.add_argument("--engine-fd", type=int, default=-1, help=argparse.SUPPRESS)
    return p


def parse_args(argv):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.hidden % args.heads:
        parser.error(f"--hidden {args.hidden} is not a multiple of --heads {args.heads}")
    if args.heads % args.kv_heads:
        parser.error(f"--heads {args.heads} is not a multiple of --kv-heads {args.kv_heads}")
    if (args.hidden // args.heads) % 2:
        parser.error("the head dimension (--hidden / --heads) must be even for rotary embeddings")
    if args.max_prefill_len >= args.max_len:
        parser.error(f"--max-prefill-len {args.max_prefill_len} must be below --max-len {args.max_len}")
    if args.vocab <= FIRST_WORD_TOKEN_ID + 1:
        parser.error("--vocab is too small")
    if args.fake_fail_every < 0:
        parser.error("--fake-fail-every must be 0 or more")
    if not args.graph_check_tol > 0:
        parser.error("--graph-check-tol must be above 0")
    return args


def log(role, message):
    """One line on stdout, written and flushed at once so the two processes' lines do not mix."""
    now = time.time()
    stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"
    text = "".join(f"[{role} {stamp}] {line}\n" for line in str(message).splitlines() or [""])
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass


# ------------------------------------------------------------------------------------------------
# Tokens: no tokenizer is downloaded (random weights, no network on the GPU machine). A text
# prompt is one token per whitespace-separated word; output tokens print as words `w<id>`.


def tokenize(text, vocab):
    span = vocab - FIRST_WORD_TOKEN_ID
    return [FIRST_WORD_TOKEN_ID + zlib.crc32(word.encode("utf-8")) % span for word in text.split()]


def detokenize(token_ids):
    return "".join(f" w{t}" for t in token_ids)


# ------------------------------------------------------------------------------------------------
# Front <-> engine: JSON lines over a socketpair


class Channel:
    def __init__(self, sock):
        self.sock = sock
        self.reader = sock.makefile("rb")
        self.send_lock = threading.Lock()

    def send(self, message):
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
        with self.send_lock:
            self.sock.sendall(data)

    def receive(self):
        """The next message, or None at end of stream."""
        while True:
            line = self.reader.readline()
            if not line:
                return None
            if line.strip():
                return json.loads(line)


# ------------------------------------------------------------------------------------------------
# Front process


class EngineUnavailable(Exception):
    pass


class Waiter:
    __slots__ = ("event", "reply")

    def __init__(self):
        self.event = threading.Event()
        self.reply = None


class EngineClient:
    """Starts the engine process, sends it work and matches its replies to the waiting handlers."""

    def __init__(self, front, argv):
        self.front = front
        self.argv = argv
        self.state = "starting"  # -> ready; or dead / stopping (the front's own start-up counts as starting)
        self.proc = None
        self.channel = None
        self.info = {}
        self.lock = threading.Lock()
        self.pending = {}
        self.next_id = 0
        self.spawned_at = None

    def start(self):
        front_sock, engine_sock = socket.socketpair()
        argv = [sys.executable, os.path.abspath(__file__)] + list(self.argv) + [
            "--role", "engine", "--engine-fd", str(engine_sock.fileno())]
        self.spawned_at = time.time()
        self.proc = subprocess.Popen(argv, pass_fds=(engine_sock.fileno(),), stdin=subprocess.DEVNULL)
        engine_sock.close()
        self.channel = Channel(front_sock)
        self.state = "starting"
        log("front", f"engine pid {self.proc.pid} started: {os.path.basename(argv[0])} {argv[1]} --role engine")
        threading.Thread(target=self._read_replies, name="engine-replies", daemon=True).start()

    def _read_replies(self):
        while True:
            try:
                message = self.channel.receive()
            except (OSError, ValueError) as e:
                log("front", f"reading from the engine failed: {e}")
                message = None
            if message is None:
                break
            op = message.get("op")
            if op == "ready":
                self.info = message
                self.state = "ready"
                log("front", f"engine pid {self.proc.pid} ready after {time.time() - self.spawned_at:.1f} s "
                    f"(warm-up done); decode: {message.get('decode', '?')}")
                continue
            with self.lock:
                waiter = self.pending.pop(message.get("id"), None)
            if waiter is not None:
                waiter.reply = message
                waiter.event.set()
        was = self.state
        if was != "stopping":
            self.state = "dead"
        self._fail_pending()
        if was == "stopping":
            return
        rc = self.proc.wait()
        when = "during start-up" if was == "starting" else "while serving"
        log("front", f"engine pid {self.proc.pid} exited {when} (exit status {rc}); the front stops")
        self.front.request_exit(1)

    def _fail_pending(self):
        with self.lock:
            waiters, self.pending = list(self.pending.values()), {}
        for waiter in waiters:
            waiter.event.set()

    def submit(self, message):
        if self.state not in ("ready", "starting") or self.channel is None:
            raise EngineUnavailable(f"engine is {self.state}")
        waiter = Waiter()
        with self.lock:
            self.next_id += 1
            message = dict(message, id=self.next_id)
            self.pending[self.next_id] = waiter
        try:
            self.channel.send(message)
        except OSError as e:
            with self.lock:
                self.pending.pop(message["id"], None)
            raise EngineUnavailable(f"cannot reach the engine: {e}")
        return waiter

    def wait(self, waiter, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not waiter.event.wait(0.25):
            if self.state in ("dead", "stopping"):
                raise EngineUnavailable(f"engine is {self.state}")
            if deadline is not None and time.monotonic() > deadline:
                raise EngineUnavailable(f"engine did not answer within {timeout:.0f} s")
        if waiter.reply is None:
            raise EngineUnavailable(f"engine is {self.state}")
        return waiter.reply

    def stop(self, grace=10.0):
        if self.proc is None:
            return
        previous, self.state = self.state, "stopping"
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.channel.send({"op": "shutdown"})
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                log("front", f"engine pid {self.proc.pid} did not stop within {grace:.0f} s; SIGTERM")
                self.proc.terminate()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    log("front", f"engine pid {self.proc.pid} still running; SIGKILL")
                    self.proc.kill()
                    self.proc.wait()
        self._fail_pending()
        with contextlib.suppress(OSError):
            self.channel.sock.close()
        if previous != "dead":
            log("front", f"engine pid {self.proc.pid} stopped (exit status {self.proc.returncode})")


class RequestLog:
    """JSON lines: one per generation request (arrival, finish, requests in flight) and per
    profile call, appended and flushed one whole line at a time."""

    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8")
        self.lock = threading.Lock()

    def write(self, record):
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self.lock:
            if not self.file.closed:
                self.file.write(line)
                self.file.flush()

    def close(self):
        with self.lock:
            self.file.close()


class HttpError(Exception):
    def __init__(self, status, message, kind="BadRequestError", param=None):
        super().__init__(message)
        self.status, self.message, self.kind, self.param = status, message, kind, param

    def body(self):
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.status}}


def _int_field(request, name, default, minimum):
    value = request.get(name, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise HttpError(400, f"'{name}' must be an integer >= {minimum}, got {json.dumps(value)}", param=name)
    return value


class Front:
    def __init__(self, args, argv):
        self.args = args
        self.created = int(time.time())
        self.engine = EngineClient(self, argv)
        self.request_log = RequestLog(args.request_log) if args.request_log else None
        self.shutdown = threading.Event()
        self.exit_code = None
        self.lock = threading.Lock()
        self.in_flight = 0
        self.answering = 0  # HTTP handlers between reading a request and writing its reply
        self.answered = threading.Condition(self.lock)

    def request_exit(self, code, why=None):
        if self.exit_code is None:
            self.exit_code = code
            if why:
                log("front", why)
        self.shutdown.set()

    def wait_answered(self, timeout):
        deadline = time.monotonic() + timeout
        with self.answered:
            while self.answering and time.monotonic() < deadline:
                self.answered.wait(max(0.0, deadline - time.monotonic()))

    # --- routes: each returns (status, JSON-able object or None for an empty body)

    def health(self, body):
        state = "shutting down" if self.shutdown.is_set() else self.engine.state
        if state == "ready":
            return 200, None
        return 503, {"status": state}

    def models(self, body):
        return 200, {"object": "list", "data": [{
            "id": self.args.model_name, "object": "model", "created": self.created, "owned_by": "kprof-serve",
            "root": self.args.model_name, "parent": None, "max_model_len": self.args.max_len}]}

    def completions(self, body):
        return self._generation("/v1/completions", body)

    def chat_completions(self, body):
        return self._generation("/v1/chat/completions", body)

    def start_profile(self, body):
        return self._profile("start_profile")

    def stop_profile(self, body):
        return self._profile("stop_profile")

    def _profile(self, op):
        started = time.time()
        self._require_ready()
        try:
            reply = self.engine.wait(self.engine.submit({"op": op}), timeout=600)
        except EngineUnavailable as e:
            raise HttpError(503, str(e), "ServiceUnavailableError")
        ok = bool(reply.get("ok"))
        log("front", f"{op}: {reply.get('message', '')}")
        if self.request_log:
            self.request_log.write({"event": op, "time": started, "finish": time.time(), "ok": ok,
                                    "message": reply.get("message", "")})
        if not ok:
            raise HttpError(500, f"{op} failed in the engine: {reply.get('message', '')}", "InternalServerError")
        return 200, None

    def _require_ready(self):
        if self.engine.state != "ready" or self.shutdown.is_set():
            state = "shutting down" if self.shutdown.is_set() else self.engine.state
            raise HttpError(503, f"the engine is not ready ({state}); poll GET /health", "ServiceUnavailableError")

    def _generation(self, endpoint, body):
        arrival = time.time()
        with self.lock:
            self.in_flight += 1
            at_arrival = self.in_flight
        status, result, error = 500, None, None
        try:
            status, result = self._generate(endpoint, body)
            return status, result
        except HttpError as e:
            status, error = e.status, e.message
            raise
        finally:
            finish = time.time()
            with self.lock:
                at_finish = self.in_flight
                self.in_flight -= 1
            if self.request_log:
                usage = (result or {}).get("usage", {})
                self.request_log.write({
                    "event": "request", "endpoint": endpoint, "id": (result or {}).get("id"), "status": status,
                    "arrival": arrival, "finish": finish, "latency_s": round(finish - arrival, 6),
                    "in_flight_at_arrival": at_arrival, "in_flight_at_finish": at_finish,
                    "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
                    "error": error})

    def _generate(self, endpoint, body):
        args = self.args
        chat = endpoint.endswith("/chat/completions")
        try:
            request = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, ValueError) as e:
            raise HttpError(400, f"request body is not valid JSON: {e}")
        if not isinstance(request, dict):
            raise HttpError(400, "request body must be a JSON object")
        self._require_ready()
        model = request.get("model")
        if model is not None and model != args.model_name:
            raise HttpError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
        if request.get("stream"):
            raise HttpError(400, "stream=true is not supported by this server (non-streaming only)", param="stream")
        if _int_field(request, "n", 1, 1) != 1:
            raise HttpError(400, "only n=1 is supported", param="n")
        if chat and request.get("max_completion_tokens") is not None:
            max_tokens = _int_field(request, "max_completion_tokens", 16, 1)
        else:
            max_tokens = _int_field(request, "max_tokens", 16, 1)
        min_tokens = _int_field(request, "min_tokens", 0, 0)
        if min_tokens > max_tokens:
            raise HttpError(400, f"min_tokens ({min_tokens}) must not exceed max_tokens ({max_tokens})",
                            param="min_tokens")
        ignore_eos = request.get("ignore_eos", False)
        if not isinstance(ignore_eos, bool):
            raise HttpError(400, "'ignore_eos' must be true or false", param="ignore_eos")
        prompts = [self._chat_prompt(request.get("messages"))] if chat else self._prompts(request.get("prompt"))
        for prompt in prompts:
            if not prompt:
                raise HttpError(400, "the prompt is empty", param="messages" if chat else "prompt")
            if len(prompt) > args.max_prefill_len:
                raise HttpError(400, f"the prompt has {len(prompt)} tokens; this server accepts at most "
                                f"{args.max_prefill_len} (--max-prefill-len)", param="prompt")
            if len(prompt) + max_tokens > args.max_len:
                raise HttpError(400, f"This model's maximum context length is {args.max_len} tokens. However, you "
                                f"requested {len(prompt) + max_tokens} tokens ({len(prompt)} in the prompt, "
                                f"{max_tokens} in the completion). Please reduce the length.", param="max_tokens")
        try:
            waiters = [self.engine.submit({"op": "generate", "prompt": prompt, "max_tokens": max_tokens,
                                           "min_tokens": min_tokens, "ignore_eos": ignore_eos})
                       for prompt in prompts]
            replies = [self.engine.wait(w) for w in waiters]
        except EngineUnavailable as e:
            raise HttpError(503, str(e), "ServiceUnavailableError")
        for reply in replies:
            if reply.get("error"):
                raise HttpError(500, reply["error"], "InternalServerError")
        prompt_tokens = sum(len(p) for p in prompts)
        completion_tokens = sum(len(r["token_ids"]) for r in replies)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        created = int(time.time())
        if chat:
            reply = replies[0]
            return 200, {"id": "chatcmpl-" + uuid.uuid4().hex, "object": "chat.completion", "created": created,
                         "model": args.model_name, "choices": [{
                             "index": 0, "message": {"role": "assistant", "content": detokenize(reply["token_ids"])},
                             "logprobs": None, "finish_reason": reply["finish_reason"], "stop_reason": None}],
                         "usage": usage}
        return 200, {"id": "cmpl-" + uuid.uuid4().hex, "object": "text_completion", "created": created,
                     "model": args.model_name, "choices": [{
                         "index": i, "text": detokenize(r["token_ids"]), "logprobs": None,
                         "finish_reason": r["finish_reason"], "stop_reason": None} for i, r in enumerate(replies)],
                     "usage": usage}

    def _prompts(self, prompt):
        vocab = self.args.vocab

        def token_list(items):
            if not all(isinstance(t, int) and not isinstance(t, bool) for t in items):
                return None
            bad = [t for t in items if not 0 <= t < vocab]
            if bad:
                raise HttpError(400, f"token id {bad[0]} is out of the vocabulary (0..{vocab - 1})", param="prompt")
            return list(items)

        if isinstance(prompt, str):
            return [tokenize(prompt, vocab)]
        if isinstance(prompt, list) and prompt:
            tokens = token_list(prompt)
            if tokens is not None:
                return [tokens]
            if all(isinstance(p, str) for p in prompt):
                return [tokenize(p, vocab) for p in prompt]
            if all(isinstance(p, list) for p in prompt):
                lists = [token_list(p) for p in prompt]
                if all(t is not None for t in lists):
                    return lists
        raise HttpError(400, "'prompt' must be a string, a list of token ids, or a list of either", param="prompt")

    def _chat_prompt(self, messages):
        if not isinstance(messages, list) or not messages:
            raise HttpError(400, "'messages' must be a non-empty list", param="messages")
        lines = []
        for m in messages:
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise HttpError(400, "each message needs a 'role' and a 'content'", param="messages")
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            if not isinstance(content, str):
                raise HttpError(400, "a message's 'content' must be a string or a list of text parts",
                                param="messages")
            lines.append(f"{m['role']}: {content}")
        lines.append("assistant:")
        return tokenize("\n".join(lines), self.args.vocab)


ROUTES = {
    "/health": ("GET", Front.health),
    "/v1/models": ("GET", Front.models),
    "/v1/completions": ("POST", Front.completions),
    "/v1/chat/completions": ("POST", Front.chat_completions),
    "/start_profile": ("POST", Front.start_profile),
    "/stop_profile": ("POST", Front.stop_profile),
}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as OpenAI clients and libcurl expect
    server_version = "kprof-serve/1"

    def log_message(self, fmt, *values):
        if self.server.front.args.access_log:
            log("front", f"{self.address_string()} {fmt % values}")

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def _dispatch(self, method):
        front = self.server.front
        with front.lock:
            front.answering += 1
        try:
            self._answer(front, method)
        finally:
            with front.lock:
                front.answering -= 1
                front.answered.notify_all()

    def _answer(self, front, method):
        try:
            body = self._read_body() if method == "POST" else b""
            path = urlsplit(self.path).path
            path = path.rstrip("/") or "/"
            route = ROUTES.get(path)
            if route is None:
                raise HttpError(404, f"no route {path}", "NotFoundError")
            if route[0] != method:
                raise HttpError(405, f"{path} takes {route[0]}", "MethodNotAllowed")
            # As vLLM's --api-key: the /v1 routes want "Authorization: Bearer KEY".
            key = front.args.api_key
            if key and path.startswith("/v1/") and self.headers.get("Authorization", "") != f"Bearer {key}":
                raise HttpError(401, "Unauthorized", "AuthenticationError")
            status, result = route[1](front, body)
        except HttpError as e:
            status, result = e.status, e.body()
        except Exception as e:  # a bug here must not kill the connection thread silently
            log("front", f"error handling {method} {self.path}:\n{traceback.format_exc()}")
            status, result = 500, HttpError(500, f"{type(e).__name__}: {e}", "InternalServerError").body()
        self._send(status, result)

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            raise HttpError(411, "chunked request bodies are not supported; send Content-Length")
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if length < 0:
                raise ValueError
        except ValueError:
            self.close_connection = True
            raise HttpError(400, "invalid Content-Length")
        return self.rfile.read(length) if length else b""

    def _send(self, status, result):
        data = b"" if result is None else json.dumps(result).encode("utf-8")
        try:
            self.send_response(status)
            if result is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # a load driver opens its connections all at once


class Server6(Server):
    address_family = socket.AF_INET6


def front_cuda_init():
    """What an API server importing torch does: the front's own CUDA context. Under
    `ncu --mode launch` this first CUDA call is where the front waits for a profiler."""
    try:
        import torch
    except ImportError as e:
        raise RuntimeError(f"the hf backend needs PyTorch and transformers ({e}); "
                           "use --backend fake where they are not installed")
    started = time.time()
    x = torch.ones(1, device="cuda")
    torch.cuda.synchronize()
    log("front", f"CUDA initialised in the front ({torch.cuda.get_device_name()}, torch {torch.__version__}) "
        f"in {time.time() - started:.1f} s; checksum {float(x.sum()):.0f}")


def run_front(args, argv):
    front = Front(args, argv)
    server_class = Server6 if ":" in args.host else Server
    try:
        server = server_class((args.host, args.port), Handler)
    except OSError as e:
        print(f"serve.py: cannot listen on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1
    server.front = front
    port = server.server_address[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    sys.stdout.write(f"listening on http://{host}:{port}\n")
    sys.stdout.flush()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda s, _frame: front.request_exit(0, f"signal {signal.Signals(s).name}: stopping"))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="http", daemon=True).start()
    log("front", f"pid {os.getpid()}, backend {args.backend}, model {args.model_name}, max batch {args.max_batch}, "
        f"max len {args.max_len}")
    try:
        if args.backend == "hf" and args.front_cuda == "on":
            try:
                front_cuda_init()
            except Exception as e:
                front.request_exit(1, f"CUDA initialisation in the front failed: {e}")
        if not front.shutdown.is_set():
            front.engine.start()
        while not front.shutdown.wait(0.5):
            pass
    finally:
        server.shutdown()
        front.engine.stop()  # fails what still waits on the engine: those handlers answer 503
        front.wait_answered(5.0)  # handler threads are daemons: let them write those answers first
        server.server_close()
        if front.request_log:
            front.request_log.close()
    return front.exit_code or 0


# ------------------------------------------------------------------------------------------------
# Engine process: the scheduler (shared by both backends) and the model runners


class Sequence:
    __slots__ = ("id", "prompt", "max_tokens", "min_tokens", "ignore_eos", "output", "finish_reason")

    def __init__(self, message):
        self.id = message["id"]
        self.prompt = message["prompt"]
        self.max_tokens = message["max_tokens"]
        self.min_tokens = message.get("min_tokens", 0)
        self.ignore_eos = message.get("ignore_eos", False)
        self.output = []
        self.finish_reason = None


class Batch:
    def __init__(self, number, sequences, state, bucket):
        self.number, self.sequences, self.state, self.bucket = number, sequences, state, bucket
        self.prompt_len = max(len(s.prompt) for s in sequences)
        self.started = time.time()
        self.prefill_s = 0.0
        self.decode_steps = 0
        self.decode_s = 0.0


def step_name(prefill_seqs, prefill_tokens, decode_seqs, decode_tokens):
    """vLLM's per-step annotation (Worker.annotate_profile, v0.2x):
    execute_context_{ctx requests}({ctx tokens})_generation_{gen requests}({gen tokens})."""
    return f"execute_context_{prefill_seqs}({prefill_tokens})_generation_{decode_seqs}({decode_tokens})"


class EngineLoop:
    """Batching kept simple: when no batch is running, take up to --max-batch waiting requests,
    prefill them together (prompts left-padded to the longest), then decode one token per step for
    the whole batch until every request has its tokens; requests that arrive meanwhile wait for the
    next prefill. A request that is done leaves (its reply is sent at once) but its row keeps being
    computed as padding, as a CUDA graph of a fixed batch size would."""

    def __init__(self, args, channel, runner):
        self.args, self.channel, self.runner = args, channel, runner
        self.inbox = queue.Queue()
        self.waiting = []
        self.batch = None
        self.batches = 0
        self.generate_count = 0
        self.stop = False
        self.parent = os.getppid()

    def run(self):
        started = time.time()
        threading.Thread(target=self._read_requests, name="requests", daemon=True).start()
        self.runner.start()
        signal.signal(signal.SIGTERM, self._on_sigterm)
        log("engine", f"start-up done in {time.time() - started:.1f} s; decode: {self.runner.describe()}")
        self.channel.send({"op": "ready", "pid": os.getpid(), "startup_s": round(time.time() - started, 3),
                           "decode": self.runner.describe()})
        try:
            while not self.stop:
                self._drain(block=self.batch is None and not self.waiting)
                if self.stop:
                    break
                if self.batch is None and self.waiting:
                    self._prefill()
                elif self.batch is not None:
                    self._decode()
        except Exception:
            log("engine", f"engine step failed:\n{traceback.format_exc()}")
            self._fail_all("engine step failed; see the engine's log")
            return 1
        finally:
            with contextlib.suppress(Exception):
                self.runner.shutdown()
        log("engine", "stopped")
        return 0

    def _on_sigterm(self, signum, frame):
        if os.getppid() != self.parent:
            os._exit(1)  # the front is gone: nobody will read a reply
        self.stop = True

    def _read_requests(self):
        while True:
            try:
                message = self.channel.receive()
            except (OSError, ValueError):
                message = None
            self.inbox.put(message if message is not None else {"op": "eof"})
            if message is None:
                return

    def _drain(self, block, timeout=None):
        """Handles what has arrived; when block, waits for at least one message (checking every
        half second that the front still lives), or until timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.stop:
            try:
                if block:
                    wait = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
                    message = self.inbox.get(timeout=wait)
                else:
                    message = self.inbox.get_nowait()
            except queue.Empty:
                if not block or (deadline is not None and time.monotonic() >= deadline):
                    return
                if os.getppid() != self.parent:
                    log("engine", "the front process is gone; stopping")
                    self.stop = True
                continue
            self._handle(message)
            if deadline is None:
                block = False  # an idle wait ends with the first message; then take what else is there
            elif len(self.waiting) >= self.args.max_batch:
                return

    def _handle(self, message):
        op = message.get("op")
        if op == "generate":
            self.generate_count += 1
            every = self.args.fake_fail_every
            if every and self.generate_count % every == 0:
                self._reply({"op": "result", "id": message["id"], "token_ids": [], "finish_reason": None,
                             "error": f"injected failure: request {self.generate_count} "
                             f"(--fake-fail-every {every})"})
                return
            self.waiting.append(Sequence(message))
        elif op in ("start_profile", "stop_profile"):
            try:
                text = self.runner.start_profile() if op == "start_profile" else self.runner.stop_profile()
                self._reply({"op": "ack", "id": message["id"], "ok": True, "message": text})
                log("engine", f"{op}: {text}")
            except Exception as e:
                log("engine", f"{op} failed:\n{traceback.format_exc()}")
                self._reply({"op": "ack", "id": message["id"], "ok": False, "message": f"{type(e).__name__}: {e}"})
        elif op in ("shutdown", "eof"):
            self.stop = True
        else:
            log("engine", f"ignoring unknown message {message!r}")

    def _reply(self, message):
        try:
            self.channel.send(message)
        except OSError:
            self.stop = True

    def _take_batch(self):
        """FIFO, up to --max-batch, skipping (for the next batch) a request whose padded prompt and
        output would not fit in --max-len together with the others."""
        chosen, rest, longest_prompt, most_tokens = [], [], 0, 0
        for seq in self.waiting:
            prompt = max(longest_prompt, len(seq.prompt))
            tokens = max(most_tokens, seq.max_tokens)
            if len(chosen) < self.args.max_batch and prompt + tokens <= self.args.max_len:
                chosen.append(seq)
                longest_prompt, most_tokens = prompt, tokens
            else:
                rest.append(seq)
        self.waiting = rest
        return chosen

    def _prefill(self):
        if self.args.batch_wait_ms > 0 and len(self.waiting) < self.args.max_batch:
            self._drain(block=True, timeout=self.args.batch_wait_ms / 1000.0)
            if self.stop:
                return
        sequences = self._take_batch()
        if not sequences:
            return
        self.batches += 1
        padded_len = max(len(s.prompt) for s in sequences)
        name = step_name(len(sequences), len(sequences) * padded_len, 0, 0)
        started = time.time()
        with self.runner.step(name, "prefill"):
            state, tokens = self.runner.prefill(sequences)
        batch = Batch(self.batches, sequences, state, self.runner.bucket_of(state))
        batch.prefill_s = time.time() - started
        log("engine", f"batch {batch.number}: {len(sequences)} requests, prefill {len(sequences)}x{padded_len} "
            f"tokens, decode batch size {batch.bucket} ({self.runner.decode_kind()})")
        self.batch = batch
        self._take_tokens(tokens)

    def _decode(self):
        batch = self.batch
        live = sum(1 for s in batch.sequences if s.finish_reason is None)
        started = time.time()
        with self.runner.step(step_name(0, 0, live, live), "decode_step"):
            tokens = self.runner.decode(batch.state)
        batch.decode_s += time.time() - started
        batch.decode_steps += 1
        self._take_tokens(tokens)

    def _take_tokens(self, tokens):
        batch = self.batch
        eos = self.args.eos_token_id
        for seq, token in zip(batch.sequences, tokens):
            if seq.finish_reason is not None:
                continue
            seq.output.append(token)
            if eos is not None and token == eos and not seq.ignore_eos and len(seq.output) >= seq.min_tokens:
                seq.finish_reason = "stop"
            elif len(seq.output) >= seq.max_tokens:
                seq.finish_reason = "length"
            if seq.finish_reason is not None:
                self._reply({"op": "result", "id": seq.id, "token_ids": seq.output,
                             "finish_reason": seq.finish_reason, "error": None})
        if all(s.finish_reason is not None for s in batch.sequences):
            out = sum(len(s.output) for s in batch.sequences)
            per_step = f" ({1000 * batch.decode_s / batch.decode_steps:.2f} ms/step)" if batch.decode_steps else ""
            log("engine", f"batch {batch.number} done: {len(batch.sequences)} requests, {out} tokens out, "
                f"prefill {1000 * batch.prefill_s:.1f} ms, {batch.decode_steps} decode steps in "
                f"{batch.decode_s:.3f} s{per_step}")
            self.runner.release(batch.state)
            self.batch = None

    def _fail_all(self, why):
        sequences = list(self.waiting) + (list(self.batch.sequences) if self.batch else [])
        for seq in sequences:
            if seq.finish_reason is None:
                with contextlib.suppress(OSError):
                    self.channel.send({"op": "result", "id": seq.id, "token_ids": [], "finish_reason": None,
                                       "error": why})


class FakeRunner:
    """No torch: sleeps --fake-ms-per-token per step and makes up tokens deterministically."""

    def __init__(self, args):
        self.args = args
        self.profiling = False

    def start(self):
        if self.args.fake_ready_after:
            log("engine", f"fake warm-up: {self.args.fake_ready_after:g} s")
            time.sleep(self.args.fake_ready_after)

    def describe(self):
        return f"fake ({self.args.fake_ms_per_token:g} ms per token)"

    def decode_kind(self):
        return "fake"

    @contextlib.contextmanager
    def step(self, name, kind):
        yield

    def bucket_of(self, state):
        return bucket_for(len(state["seeds"]), bucket_sizes(self.args.max_batch))

    def _tokens(self, state):
        span = self.args.vocab - FIRST_WORD_TOKEN_ID
        step = state["step"]
        state["step"] += 1
        return [FIRST_WORD_TOKEN_ID + (seed + 7919 * step) % span for seed in state["seeds"]]

    def prefill(self, sequences):
        time.sleep(self.args.fake_ms_per_token / 1000.0)
        state = {"seeds": [zlib.crc32(json.dumps(s.prompt).encode()) for s in sequences], "step": 0}
        return state, self._tokens(state)

    def decode(self, state):
        time.sleep(self.args.fake_ms_per_token / 1000.0)
        return self._tokens(state)

    def release(self, state):
        pass

    def start_profile(self):
        self.profiling = True
        return "profiling started (fake backend: no profiler)"

    def stop_profile(self):
        was, self.profiling = self.profiling, False
        return "profiling stopped (fake backend: no profiler)" if was else "no profiling window was open"

    def shutdown(self):
        pass


# --- hf backend: everything below imports torch lazily ---------------------------------------------


def _layer_kv(cache, i):
    """(keys, values) of layer i of a transformers cache, across the versions' layouts:
    cache.layers[i].keys (4.56+), cache.key_cache[i] (older), cache[i] (legacy indexing)."""
    layers = getattr(cache, "layers", None)
    if layers is not None and i < len(layers) and getattr(layers[i], "keys", None) is not None:
        return layers[i].keys, layers[i].values
    key_cache = getattr(cache, "key_cache", None)
    if key_cache is not None:
        return key_cache[i], cache.value_cache[i]
    entry = cache[i]
    return entry[0], entry[1]


class _EagerState:
    def __init__(self, cache, ids, pos, n):
        self.cache, self.ids, self.pos, self.n = cache, ids, pos, n


class _GraphState:
    def __init__(self, decoder, n, pos):
        self.decoder, self.n, self.pos = decoder, n, pos


class _GraphDecoder:
    """A decode step for a fixed batch size, captured once as a CUDA graph and replayed with its
    static inputs (token ids, position) updated in place. Subclasses define forward()."""

    def __init__(self, runner, batch):
        torch = runner.torch
        self.runner, self.torch, self.batch = runner, torch, batch
        self.ids = torch.zeros((batch, 1), dtype=torch.long, device=runner.device)
        self.pos = torch.zeros((1,), dtype=torch.long, device=runner.device)
        self.graph = None
        self.logits = None

    def capture(self):
        self.set_position(0)
        self.graph, self.logits = self.runner.capture_graph(self.forward, after_warmup=self.after_warmup)

    def after_warmup(self):
        pass

    def replay(self):
        self.graph.replay()
        return self.logits

    def static_kv(self, i):
        raise NotImplementedError

    def set_position(self, p):
        self.pos.fill_(p)

    def load_prefill(self, cache, n, length):
        """Copies the prefill's KV (a DynamicCache over n rows and `length` positions) into this
        decoder's static buffers and sets the position to `length`."""
        for i in range(self.runner.num_layers):
            k, v = _layer_kv(cache, i)
            static_k, static_v = self.static_kv(i)
            static_k[:n, :, :length].copy_(k)
            static_v[:n, :, :length].copy_(v)
        self.set_position(length)


class _HFStaticDecoder(_GraphDecoder):
    """transformers' own LlamaForCausalLM over a StaticCache of this batch size. Newer versions
    take no cache_position and keep the write position as a tensor in each cache layer
    (`cumulative_length`, advanced in place by the update, so the graph advances it on replay);
    older ones take cache_position, which this decoder advances inside the graph itself."""

    def __init__(self, runner, batch):
        super().__init__(runner, batch)
        self.cache = runner.make_static_cache(batch)
        self.position_layers = []

    def forward(self):
        kwargs = dict(self.runner.logits_kwargs)
        if self.runner.takes_cache_position:
            kwargs["cache_position"] = self.pos
        out = self.runner.model(input_ids=self.ids, past_key_values=self.cache, use_cache=True, **kwargs)
        if self.runner.takes_cache_position:
            self.pos.add_(1)
        return out.logits

    def after_warmup(self):
        torch = self.torch
        layers = getattr(self.cache, "layers", None) or []
        tensors = [getattr(layer, "cumulative_length", None) for layer in layers]
        if tensors and all(isinstance(t, torch.Tensor) for t in tensors):
            if not all(t.is_cuda for t in tensors):
                raise RuntimeError("this transformers version keeps the StaticCache position in a CPU tensor; "
                                   "a graph would replay one fixed position")
            self.position_layers = layers
        elif not self.runner.takes_cache_position:
            raise RuntimeError("this transformers version's model takes no cache_position and its StaticCache "
                               "keeps no position tensor: a replayed graph could not advance the position")

    def set_position(self, p):
        self.pos.fill_(p)
        for layer in self.position_layers:
            layer.cumulative_length.fill_(p)

    def static_kv(self, i):
        return _layer_kv(self.cache, i)


def _rms_norm(torch, x, weight, eps):
    xf = x.to(torch.float32)
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * xf.to(x.dtype)


def _rotate_half(torch, x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _repeat_kv(x, groups):
    if groups == 1:
        return x
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, groups, s, d).reshape(b, h * groups, s, d)


class _ManualWeights:
    """The HF model's own modules and weights, read once for the manual decoder."""

    def __init__(self, runner):
        torch, model = runner.torch, runner.model
        config = model.config
        inner = model.model
        self.embed = inner.embed_tokens.weight
        self.final_norm = inner.norm.weight
        self.lm_head = model.get_output_embeddings()
        self.eps = float(getattr(config, "rms_norm_eps", 1e-6))
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = runner.head_dim
        self.layers = [(layer.input_layernorm.weight, layer.self_attn.q_proj, layer.self_attn.k_proj,
                        layer.self_attn.v_proj, layer.self_attn.o_proj, layer.post_attention_layernorm.weight,
                        layer.mlp.gate_proj, layer.mlp.up_proj, layer.mlp.down_proj) for layer in inner.layers]
        rotary = getattr(inner, "rotary_emb", None)
        inv_freq = getattr(rotary, "inv_freq", None)
        if inv_freq is None:
            params = getattr(config, "rope_parameters", None) or {}
            theta = float(getattr(config, "rope_theta", None) or params.get("rope_theta", 10000.0))
            inv_freq = 1.0 / (theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32,
                                                     device=runner.device) / self.head_dim))
        self.inv_freq = inv_freq.to(device=runner.device, dtype=torch.float32)
        self.rope_scale = float(getattr(rotary, "attention_scaling", 1.0) or 1.0)


class _ManualDecoder(_GraphDecoder):
    """A capture-safe Llama decode step written out: RMSNorm, rotary, GQA attention with
    scaled_dot_product_attention over static KV buffers and a position mask, SiLU-gated MLP,
    lm_head — the same weights as the HF model, no host synchronisation, no data-dependent
    Python. Its KV buffers are views of the runner's buffers for the largest batch size."""

    def __init__(self, runner, batch):
        super().__init__(runner, batch)
        self.w = runner.manual_weights
        self.kv = [(k[:batch], v[:batch]) for k, v in runner.manual_kv]
        self.kv_positions = self.torch.arange(runner.args.max_len, device=runner.device)

    def static_kv(self, i):
        return self.kv[i]

    def forward(self):
        torch, w, b = self.torch, self.w, self.batch
        F = torch.nn.functional
        x = F.embedding(self.ids, w.embed)  # [b, 1, hidden]
        freqs = self.pos.to(torch.float32)[:, None] * w.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = (emb.cos() * w.rope_scale).to(x.dtype).view(1, 1, 1, -1)
        sin = (emb.sin() * w.rope_scale).to(x.dtype).view(1, 1, 1, -1)
        mask = (self.kv_positions <= self.pos).view(1, 1, 1, -1)
        groups = w.heads // w.kv_heads
        for (ln1, q_proj, k_proj, v_proj, o_proj, ln2, gate, up, down), (k_cache, v_cache) in zip(w.layers, self.kv):
            h = _rms_norm(torch, x, ln1, w.eps)
            q = F.linear(h, q_proj.weight, q_proj.bias).view(b, 1, w.heads, w.head_dim).transpose(1, 2)
            k = F.linear(h, k_proj.weight, k_proj.bias).view(b, 1, w.kv_heads, w.head_dim).transpose(1, 2)
            v = F.linear(h, v_proj.weight, v_proj.bias).view(b, 1, w.kv_heads, w.head_dim).transpose(1, 2)
            q = q * cos + _rotate_half(torch, q) * sin
            k = k * cos + _rotate_half(torch, k) * sin
            k_cache.index_copy_(2, self.pos, k)
            v_cache.index_copy_(2, self.pos, v)
            attn = F.scaled_dot_product_attention(q, _repeat_kv(k_cache, groups), _repeat_kv(v_cache, groups),
                                                  attn_mask=mask)
            x = x + F.linear(attn.transpose(1, 2).reshape(b, 1, -1), o_proj.weight, o_proj.bias)
            h = _rms_norm(torch, x, ln2, w.eps)
            x = x + F.linear(F.silu(F.linear(h, gate.weight, gate.bias)) * F.linear(h, up.weight, up.bias),
                             down.weight, down.bias)
        x = _rms_norm(torch, x, w.final_norm, w.eps)
        logits = F.linear(x, w.lm_head.weight, getattr(w.lm_head, "bias", None))
        self.pos.add_(1)
        return logits


class TorchRunner:
    """The hf backend: transformers' LlamaForCausalLM with random weights, bf16, on CUDA."""

    def __init__(self, args):
        import torch
        self.torch = torch
        self.args = args
        self.device = None
        self.model = None
        self.decode_backend = "eager"
        self.decode_reason = "--decode-graph off"
        self.decoders = {}
        self.buckets = bucket_sizes(args.max_batch)
        self.graph_pool = None
        self.capture_stream = None
        self.manual_weights = None
        self.manual_kv = []
        self.profiling = False
        self.profiler = None
        self.reserve = None

    # --- start-up: weights, profiling run, graph capture, warm-up

    def start(self):
        torch = self.torch
        torch.set_grad_enabled(False)
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device is visible to the engine")
        self.device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(self.device)
        import transformers
        log("engine", f"torch {torch.__version__}, transformers {transformers.__version__}, "
            f"{torch.cuda.get_device_name(self.device)}")
        with self._range("load_weights"):
            self._build_model()
        if self.args.reserve_gb:
            self.reserve = torch.empty(int(self.args.reserve_gb * 2 ** 30), dtype=torch.uint8, device=self.device)
            log("engine", f"reserved {self.args.reserve_gb:g} GiB of device memory (--reserve-gb)")
        with self._range("profile_run"):
            self._profile_run()
        with self._range("cuda_graph_capture"):
            self._setup_decode()
        with self._range("warmup"):
            self._warmup()
        free, total = torch.cuda.mem_get_info(self.device)
        log("engine", f"device memory: {torch.cuda.memory_allocated(self.device) / 2 ** 30:.2f} GiB allocated by "
            f"torch, {(total - free) / 2 ** 30:.2f} of {total / 2 ** 30:.2f} GiB in use on the device")

    @contextlib.contextmanager
    def _range(self, name):
        self.torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            self.torch.cuda.nvtx.range_pop()

    def _build_model(self):
        torch, args = self.torch, self.args
        from transformers import LlamaConfig, LlamaForCausalLM
        config = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
                             num_hidden_layers=args.layers, num_attention_heads=args.heads,
                             num_key_value_heads=args.kv_heads, max_position_embeddings=args.max_len,
                             use_cache=True)
        with contextlib.suppress(Exception):
            config._attn_implementation = "sdpa"
        torch.manual_seed(args.seed)
        started = time.time()
        previous_dtype = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        try:
            try:
                with torch.device(self.device):
                    model = LlamaForCausalLM(config)
                where = "initialised on the GPU"
            except Exception as e:
                log("engine", f"building the model on the GPU failed ({type(e).__name__}: {e}); "
                    "building it on the CPU and moving it")
                model = LlamaForCausalLM(config).to(self.device)
                where = "initialised on the CPU, moved to the GPU"
        finally:
            torch.set_default_dtype(previous_dtype)
        for p in model.parameters():  # parameters only: inv_freq stays float32, as HF keeps it
            if p.dtype != torch.bfloat16:
                p.data = p.data.to(torch.bfloat16)
        model.eval()
        self.model = model
        self.num_layers = config.num_hidden_layers
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        torch.cuda.synchronize()
        params = sum(p.numel() for p in model.parameters())
        forward_params = inspect.signature(type(model).forward).parameters
        if "logits_to_keep" in forward_params:
            self.logits_kwargs = {"logits_to_keep": 1}
        elif "num_logits_to_keep" in forward_params:
            self.logits_kwargs = {"num_logits_to_keep": 1}
        else:
            self.logits_kwargs = {}
        self.takes_cache_position = "cache_position" in forward_params
        attn = getattr(model.config, "_attn_implementation", "?")
        log("engine", f"weights: LlamaForCausalLM, {params / 1e6:.0f} M parameters bf16 (random, {where}) in "
            f"{time.time() - started:.1f} s; {args.layers} layers, hidden {args.hidden}, {args.heads} heads, "
            f"{self.kv_heads} KV heads, attention {attn}; forward takes cache_position: "
            f"{self.takes_cache_position}")

    def _profile_run(self):
        """vLLM's memory-profiling run: one dummy forward at the largest batch and prompt length
        before the KV cache is sized — start-up kernels with start-up shapes."""
        torch, args = self.torch, self.args
        started = time.time()
        ids = torch.randint(FIRST_WORD_TOKEN_ID, args.vocab, (args.max_batch, args.max_prefill_len),
                            device=self.device)
        out = self.model(input_ids=ids, use_cache=False, **self.logits_kwargs)
        del out, ids
        torch.cuda.synchronize()
        log("engine", f"profiling run: dummy forward of {args.max_batch} x {args.max_prefill_len} tokens in "
            f"{time.time() - started:.2f} s; peak {torch.cuda.max_memory_allocated(self.device) / 2 ** 30:.2f} GiB")

    def make_static_cache(self, batch):
        """A StaticCache for this batch size. Its constructor changed across transformers versions
        (config, max_cache_len, max_batch_size | batch_size, device, dtype, ...): pass what it takes."""
        from transformers import StaticCache
        torch, args = self.torch, self.args
        params = inspect.signature(StaticCache.__init__).parameters
        offered = {"config": self.model.config, "max_cache_len": args.max_len, "max_batch_size": batch,
                   "batch_size": batch, "device": self.device, "dtype": torch.bfloat16}
        kwargs = {name: value for name, value in offered.items() if name in params}
        if "max_batch_size" in kwargs and "batch_size" in kwargs:
            del kwargs["batch_size"]
        return StaticCache(**kwargs)

    def capture_graph(self, fn, after_warmup=None):
        """Warm-up runs (lazy allocations, cuBLAS workspaces) and the capture, all on one side
        stream, into the shared graph memory pool. A capture that fails leaves the stream as it was."""
        torch = self.torch
        stream = self.capture_stream
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        if after_warmup is not None:
            after_warmup()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream):
            graph.capture_begin(pool=self.graph_pool)
            captured = False
            try:
                output = fn()
                captured = True
            finally:
                try:
                    graph.capture_end()
                except Exception:
                    if captured:
                        raise
        torch.cuda.synchronize()
        return graph, output

    def _build_decoders(self, kind):
        torch, args = self.torch, self.args
        self.graph_pool = torch.cuda.graph_pool_handle()
        if kind == "manual":
            if self.manual_weights is None:
                self.manual_weights = _ManualWeights(self)
            shape = (self.buckets[-1], self.kv_heads, args.max_len, self.head_dim)
            self.manual_kv = [(torch.zeros(shape, dtype=torch.bfloat16, device=self.device),
                               torch.zeros(shape, dtype=torch.bfloat16, device=self.device))
                              for _ in range(self.num_layers)]
        decoder_class = _HFStaticDecoder if kind == "hf" else _ManualDecoder
        decoders = {}
        started = time.time()
        for batch in sorted(self.buckets, reverse=True):  # largest first, as vLLM does: the pool fits the rest
            decoder = decoder_class(self, batch)
            decoder.capture()
            decoders[batch] = decoder
        log("engine", f"captured {len(decoders)} decode graphs ({kind} decoder) for batch sizes "
            f"{', '.join(map(str, self.buckets))} in {time.time() - started:.1f} s")
        return decoders

    def _check_decoders(self, decoders, steps=4, prompt_len=2):
        """Graph decode against the model's own eager decode from the same prefill, feeding the
        same tokens: the largest relative logit difference per batch size. A short prompt makes
        a position that does not advance, or a mask that does not move, show."""
        torch, args = self.torch, self.args
        generator = torch.Generator(device="cpu")
        generator.manual_seed(1234)
        diffs = {}
        for batch, decoder in sorted(decoders.items()):
            prompt = torch.randint(FIRST_WORD_TOKEN_ID, args.vocab, (batch, prompt_len), generator=generator)
            feed = torch.randint(FIRST_WORD_TOKEN_ID, args.vocab, (steps, batch), generator=generator)
            prompt, feed = prompt.to(self.device), feed.to(self.device)
            out = self.model(input_ids=prompt, use_cache=True, **self.logits_kwargs)
            cache, reference = out.past_key_values, []
            for s in range(steps):
                out = self.model(input_ids=feed[s].view(batch, 1), past_key_values=cache, use_cache=True,
                                 **self.logits_kwargs)
                cache = out.past_key_values
                reference.append(out.logits[:, -1, :].float())
            out = self.model(input_ids=prompt, use_cache=True, **self.logits_kwargs)
            decoder.load_prefill(out.past_key_values, batch, prompt_len)
            worst = 0.0
            for s in range(steps):
                decoder.ids[:, 0].copy_(feed[s])
                got = decoder.replay()[:, -1, :].float()
                scale = reference[s].abs().max().clamp_min(1e-6)
                worst = max(worst, float((got - reference[s]).abs().max() / scale))
            diffs[batch] = worst
        return diffs

    def _forget_decoders(self):
        torch = self.torch
        self.decoders = {}
        self.manual_kv = []
        with contextlib.suppress(Exception):
            torch.cuda.synchronize()
        with contextlib.suppress(Exception):
            torch.cuda.empty_cache()

    def _setup_decode(self):
        args = self.args
        if args.decode_graph == "off":
            self.decode_backend, self.decode_reason = "eager", "--decode-graph off"
            log("engine", "decode: eager, the model with its dynamic cache (--decode-graph off)")
            return
        self.capture_stream = self.torch.cuda.Stream(device=self.device)
        kinds = ["hf", "manual"] if args.decode_backend == "auto" else [args.decode_backend]
        reasons = []
        for index, kind in enumerate(kinds):
            fallback_left = index + 1 < len(kinds)
            try:
                decoders = self._build_decoders(kind)
                diffs = self._check_decoders(decoders)
            except Exception as e:
                reasons.append(f"{kind} decoder: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                log("engine", f"CUDA-graph decode with the {kind} decoder failed"
                    f"{', falling back' if fallback_left else ''}:\n{traceback.format_exc()}")
                self._forget_decoders()
                continue
            worst = max(diffs.values())
            summary = ", ".join(f"{b}: {d:.3g}" for b, d in sorted(diffs.items()))
            log("engine", f"graph decode vs eager decode ({kind} decoder), largest relative logit difference "
                f"per batch size: {summary} (tolerance {args.graph_check_tol:g})")
            if worst > args.graph_check_tol and fallback_left:
                reasons.append(f"{kind} decoder: graph decode disagrees with eager decode "
                               f"(relative difference {worst:.3g} > {args.graph_check_tol:g})")
                log("engine", f"the {kind} decoder's graphs disagree with eager decode; trying the next decoder")
                self._forget_decoders()
                continue
            if worst > args.graph_check_tol:
                log("engine", f"WARNING: the {kind} decoder's graphs disagree with eager decode "
                    f"(relative difference {worst:.3g}); kernels are real, outputs may not be")
            self.decoders = decoders
            self.decode_backend = f"{kind}-graph"
            self.decode_reason = ("transformers model over StaticCache" if kind == "hf" else
                                  "built-in capture-safe decoder on the model's weights")
            if reasons:
                self.decode_reason += "; because " + "; ".join(reasons)
            log("engine", f"decode: CUDA graphs, {self.decode_reason}")
            return
        self.decode_backend = "eager"
        self.decode_reason = "no usable CUDA graph: " + "; ".join(reasons)
        log("engine", f"decode: EAGER although --decode-graph on, {self.decode_reason}")

    def _warmup(self):
        started = time.time()
        for n in sorted({1, self.args.max_batch}):
            fake = [Sequence({"id": -1, "prompt": [FIRST_WORD_TOKEN_ID] * 8, "max_tokens": 4}) for _ in range(n)]
            state, _ = self.prefill(fake)
            for _ in range(3):
                self.decode(state)
            self.release(state)
        self.torch.cuda.synchronize()
        log("engine", f"warm-up: prefill + 3 decode steps at batch sizes 1 and {self.args.max_batch} in "
            f"{time.time() - started:.2f} s")

    # --- serving

    def describe(self):
        buckets = f", batch sizes {', '.join(map(str, self.buckets))}" if self.decoders else ""
        return f"{self.decode_backend}{buckets} ({self.decode_reason})"

    def decode_kind(self):
        return self.decode_backend

    @contextlib.contextmanager
    def step(self, name, kind):
        """vLLM's step annotation (a record_function for torch traces, the same name as an NVTX
        push/pop range as its CUDA-profiler mode emits) around a `prefill`/`decode_step` range."""
        torch = self.torch
        with torch.profiler.record_function(name):
            torch.cuda.nvtx.range_push(name)
            torch.cuda.nvtx.range_push(kind)
            try:
                yield
            finally:
                torch.cuda.nvtx.range_pop()
                torch.cuda.nvtx.range_pop()

    def bucket_of(self, state):
        return state.decoder.batch if isinstance(state, _GraphState) else state.n

    def prefill(self, sequences):
        torch = self.torch
        n = len(sequences)
        length = max(len(s.prompt) for s in sequences)
        rows = [[PAD_TOKEN_ID] * (length - len(s.prompt)) + list(s.prompt) for s in sequences]
        ids = torch.tensor(rows, dtype=torch.long, device=self.device)
        out = self.model(input_ids=ids, use_cache=True, **self.logits_kwargs)
        first = out.logits[:, -1, :].argmax(-1)
        if self.decoders:
            decoder = self.decoders[bucket_for(n, self.buckets)]
            decoder.load_prefill(out.past_key_values, n, length)
            decoder.ids[:n, 0].copy_(first)
            state = _GraphState(decoder, n, length)
        else:
            state = _EagerState(out.past_key_values, first.view(n, 1), length, n)
        return state, first.tolist()

    def decode(self, state):
        if state.pos >= self.args.max_len:
            raise RuntimeError(f"decode position {state.pos} is past --max-len {self.args.max_len}")
        if isinstance(state, _GraphState):
            decoder = state.decoder
            next_ids = decoder.replay()[:, -1, :].argmax(-1)
            decoder.ids[:, 0].copy_(next_ids)
            state.pos += 1
            return next_ids[:state.n].tolist()
        out = self.model(input_ids=state.ids, past_key_values=state.cache, use_cache=True, **self.logits_kwargs)
        next_ids = out.logits[:, -1, :].argmax(-1)
        state.cache, state.ids = out.past_key_values, next_ids.view(-1, 1)
        state.pos += 1
        return next_ids.tolist()

    def release(self, state):
        if isinstance(state, _EagerState):
            state.cache = None

    # --- profiling windows (vLLM's CudaProfilerWrapper / TorchProfilerWrapper)

    def start_profile(self):
        torch = self.torch
        if self.profiling:
            return "a profiling window is already open"
        torch.cuda.synchronize()
        if self.args.profile_mode == "cuda":
            _check_cuda(torch, torch.cuda.cudart().cudaProfilerStart(), "cudaProfilerStart")
            self.profiling = True
            return "cudaProfilerStart() called in the engine"
        os.makedirs(self.args.profile_dir, exist_ok=True)
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        handler = torch.profiler.tensorboard_trace_handler(self.args.profile_dir, worker_name=f"engine-{os.getpid()}",
                                                           use_gzip=True)
        self.profiler = torch.profiler.profile(activities=activities, on_trace_ready=handler, record_shapes=True,
                                               with_stack=self.args.profile_with_stack,
                                               with_modules=self.args.profile_with_stack)
        self.profiler.start()
        self.profiling = True
        return f"PyTorch profiler started; the trace goes to {os.path.abspath(self.args.profile_dir)}"

    def stop_profile(self):
        torch = self.torch
        if not self.profiling:
            return "no profiling window was open"
        torch.cuda.synchronize()
        self.profiling = False
        if self.args.profile_mode == "cuda":
            _check_cuda(torch, torch.cuda.cudart().cudaProfilerStop(), "cudaProfilerStop")
            return "cudaProfilerStop() called in the engine"
        before = set(os.listdir(self.args.profile_dir))
        self.profiler.stop()
        self.profiler = None
        written = sorted(set(os.listdir(self.args.profile_dir)) - before)
        return "PyTorch profiler stopped; wrote " + (", ".join(os.path.join(os.path.abspath(self.args.profile_dir), f)
                                                             for f in written) or "nothing")

    def shutdown(self):
        if self.profiling:
            log("engine", "closing the open profiling window before exit")
            self.stop_profile()


def _check_cuda(torch, result, call):
    """cudart calls return an error code (torch.cuda.profiler.start() checks it the same way)."""
    check = getattr(torch.cuda, "check_error", None)
    if check is not None:
        try:
            check(result)
        except Exception as e:
            raise RuntimeError(f"{call}() failed: {e}")


def _prctl(option, value):
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def run_engine(args):
    # Identifiable: argv carries `--role engine`; the thread name (comm) is vLLM-like.
    _prctl(15, ctypes.c_char_p(b"serve::engine"))  # PR_SET_NAME
    _prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG: stop when the front dies, even by SIGKILL
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the front, which stops the engine
    if args.engine_fd < 0:
        print("serve.py: --role engine is started by the front process", file=sys.stderr)
        return 2
    channel = Channel(socket.socket(fileno=args.engine_fd))
    runner = FakeRunner(args) if args.backend == "fake" else TorchRunner(args)
    log("engine", f"pid {os.getpid()}, backend {args.backend}")
    return EngineLoop(args, channel, runner).run()


# ------------------------------------------------------------------------------------------------
# --dry-run: what the hf backend would build, computed without torch


def plan(args):
    hidden, layers, vocab = args.hidden, args.layers, args.vocab
    head_dim = hidden // args.heads
    kv_width = args.kv_heads * head_dim
    per_layer = (hidden * hidden * 2 + hidden * kv_width * 2 + 3 * hidden * args.intermediate + 2 * hidden)
    params = 2 * vocab * hidden + layers * per_layer + hidden
    kv_bytes_per_row = layers * 2 * args.kv_heads * args.max_len * head_dim * 2
    buckets = bucket_sizes(args.max_batch)
    return {
        "model": {"layers": layers, "hidden": hidden, "heads": args.heads, "kv_heads": args.kv_heads,
                  "head_dim": head_dim, "intermediate": args.intermediate, "vocab": vocab,
                  "parameters": params, "weights_bytes_bf16": 2 * params},
        "decode_graph_batch_sizes": buckets if args.decode_graph == "on" else [],
        "kv_cache_bytes_per_sequence": kv_bytes_per_row,
        "static_kv_cache_bytes_hf_decoder": kv_bytes_per_row * sum(buckets) if args.decode_graph == "on" else 0,
        "static_kv_cache_bytes_manual_decoder": kv_bytes_per_row * buckets[-1] if args.decode_graph == "on" else 0,
        "profiling_run_shape": [args.max_batch, args.max_prefill_len],
        "max_len": args.max_len, "max_prefill_len": args.max_prefill_len,
        "reserve_bytes": int(args.reserve_gb * 2 ** 30),
    }


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.dry_run:
        print(json.dumps(plan(args), indent=2))
        return 0
    if args.role == "engine":
        return run_engine(args)
    return run_front(args, argv)


if __name__ == "__main__":
    sys.exit(main())
