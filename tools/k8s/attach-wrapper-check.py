#!/usr/bin/env python3
"""The attach wrapper kprof runs inside a pod (kAttachScript of src/k8s/pod_capture.cpp, read from
the source so that the very text kprof sends is what runs), with a real ncu on a GPU machine:
does the stop file detach ncu's attach client, and how fast? The same run with the wrapper
as it was before (ncu a plain background job, SIGINT to its pid alone) shows why it changed: on the
H200 (2026-12-01) that one never detached — `ncu` is a shell script whose child is the real ncu.

A CUDA target (PyTorch, a small kernel every 50 ms) is started under `ncu --mode launch`; each
wrapper attaches with kprof's match-nothing filter, waits until ncu says it is connected, then
kprof's stop file is written and the time until the wrapper ends is measured; the target must
still run afterwards. Prints one JSON object; exit 0 when the current wrapper detached.

usage: tools/k8s/attach-wrapper-check.py OUT_DIR [NCU]"""
import json
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def attach_script():
    source = open(os.path.join(ROOT, "src/k8s/pod_capture.cpp")).read()
    body = source[source.index("kAttachScript ="):]
    body = body[:body.index(";\n")]
    text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', body))
    return text.encode().decode("unicode_escape")


def run_wrapper(script, ncu, report, log):
    # As kprof's holder does: an attach that found nobody waiting (yet) is tried again.
    for attempt in range(15):
        result = attach_once(script, ncu, report, log)
        if result["connected_after_s"] is not None:
            result["attempts"] = attempt + 1
            return result
        time.sleep(1)
    return result


def attach_once(script, ncu, report, log):
    argv = ["sh", "-c", script, "kprof-attach", report, ncu, "--config-file", "off", "--mode",
            "attach", "--hostname", "127.0.0.1", "--kernel-name", "regex:^kprof_release_nothing$",
            "--clock-control", "none"]
    began = time.time()
    out = open(log, "w")
    wrapper = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    connected = None
    while time.time() - began < 90 and wrapper.poll() is None:
        if "Connected to process" in open(log).read():
            connected = time.time() - began
            break
        time.sleep(0.2)
    result = {"connected_after_s": connected}
    if connected is None:
        result["ended_unconnected"] = wrapper.poll()
        try:
            os.killpg(wrapper.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        wrapper.wait()
        return result
    time.sleep(3)
    open(report + ".stop", "w").close()
    stop = time.time()
    try:
        result["exit_code"] = wrapper.wait(timeout=45)
        result["detached_after_stop_s"] = round(time.time() - stop, 2)
    except subprocess.TimeoutExpired:
        result["exit_code"] = None
        result["detached_after_stop_s"] = None  # still attached 45 s after the stop file
        try:
            os.killpg(wrapper.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        wrapper.wait()
    result["output_tail"] = open(log).read()[-600:]
    return result


def main():
    out = os.path.abspath(sys.argv[1])
    ncu = sys.argv[2] if len(sys.argv) > 2 else "ncu"
    os.makedirs(out, exist_ok=True)
    target_code = ("import torch, time\n"
                   "x = torch.ones(1 << 20, device='cuda')\n"
                   "end = time.time() + 300\n"
                   "while time.time() < end:\n"
                   "    x.mul_(1.0000001); torch.cuda.synchronize(); time.sleep(0.05)\n")
    target = subprocess.Popen([ncu, "--mode", "launch", sys.executable, "-c", target_code],
                              stdout=open(os.path.join(out, "target.log"), "w"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    for _ in range(300):
        if "Waiting for profiler" in open(os.path.join(out, "target.log")).read():
            break
        time.sleep(0.2)
    current = attach_script()
    # The wrapper as kprof sent it before 2026-12-01 (f2c8b6a): ncu a plain background job, the
    # SIGINT to its pid alone.
    before = ('report=$1; shift; "$@" & pid=$!; while kill -0 "$pid" 2>/dev/null; do '
              'if [ -s "$report.ncu-rep" ] || [ -e "$report.stop" ]; then sleep 1; kill -INT "$pid"; '
              'wait "$pid"; exit $?; fi; sleep 0.5; done; wait "$pid"')
    report = {"wrapper": current, "env_default_signal": subprocess.run(
        ["env", "--default-signal=INT", "true"], capture_output=True).returncode == 0}
    report["current"] = run_wrapper(current, ncu, os.path.join(out, "hold-1"), os.path.join(out, "current.log"))
    report["before"] = run_wrapper(before, ncu, os.path.join(out, "hold-2"), os.path.join(out, "before.log"))
    report["current_again"] = run_wrapper(current, ncu, os.path.join(out, "hold-3"), os.path.join(out, "again.log"))
    report["target_running_after"] = target.poll() is None
    os.killpg(target.pid, signal.SIGKILL)
    subprocess.run(["pkill", "-KILL", "-f", "x.mul_"], capture_output=True)
    target.wait()
    json.dump(report, open(os.path.join(out, "report.json"), "w"), indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "wrapper"}, indent=1))
    ok = report["current"].get("detached_after_stop_s") is not None and report["target_running_after"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
