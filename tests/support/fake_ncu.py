#!/usr/bin/env python3
"""A stand-in for ncu in tests: replays what a real ncu printed, wrote and returned.

FAKE_NCU_RECORDING names a recording: either a kprof evidence bundle recorded on a GPU
(ncu-stdout.txt, ncu-stderr.txt, manifest.json with ncu.exit_code, report.ncu-rep[.zst],
raw.csv[.zst], speed_of_light.csv[.zst]) or an ncu-outputs prefix (NAME.out, NAME.err, NAME.rc).
  ncu --version                       → FAKE_NCU_VERSION's file (ncu's recorded banner)
  ncu --import R --csv --page raw     → the recording's raw.csv
  ncu --import R --csv --page details → the recording's speed_of_light.csv
  ncu … --export PATH …               → stdout/stderr replayed, the report copied to PATH.ncu-rep,
                                        the recorded exit status returned
In attach mode (--mode attach) the output up to the last "==PROF== Profiling" line is printed,
the report written, and then — as the real attach client does — it waits for SIGINT before
printing the rest and exiting with the recorded status.
FAKE_NCU_TARGET_PID: the pid printed in place of the recorded target's ("Connected to process
PID", "Attaching to process '…' (PID)").
FAKE_NCU_WORLD: a directory where fake_launched_tree.py registers waiting processes: an attach
takes the lowest unheld port's process (WORLD/held-PORT while connected), logs it to
WORLD/attach-log, marks it WORLD/attached/PID; with kprof's release filter it profiles nothing
and waits for SIGINT, otherwise it replays the recording as that process. FAKE_NCU_ORDER=highest:
the highest unheld port's process instead (on the H200 a second attach to a released tree
connected to the engine, on the higher port, before its front).
FAKE_NCU_LOG: a file to append {"argv": …, "env": {…}} to. FAKE_NCU_LINE_DELAY: seconds between
lines. FAKE_NCU_STALL_PID, FAKE_NCU_STALL_S (attach mode): after the first kernel's "Profiling"
line, the process FAKE_NCU_STALL_PID is stopped (SIGSTOP: held, as ncu holds its target while it
replays a kernel) for FAKE_NCU_STALL_S seconds or until SIGINT, then continued (SIGCONT); on
SIGINT the kernels after the first are not printed, as a detach cuts them off.
FAKE_NCU_HANG=1: after the output, start a child (the "target") in the same process
group, write its pid to FAKE_NCU_HANG_PIDFILE, and wait forever.
ncu 2026.2.1's in-process route, taken only when FAKE_NCU_VERSION's banner says 2026.2.1 or newer
(older: "==ERROR== unrecognised option '--process-id'", as 2025.3.1 answers an option it lacks):
  ncu --list-injection-path-64        → FAKE_NCU_INJECTION_DIR (a folder), as nsight-python reads it
  ncu --mode attach --process-id PID  → the process must have libcuda-injection.so in its
                                        /proc/PID/maps (it loaded the library); then the recording
                                        is replayed in attach mode as that process. Otherwise
                                        "No attachable process found" (kprof's stand-in wording:
                                        what ncu 2026.2.1 prints there was not recorded)."""
import json
import os
import signal
import subprocess
import sys
import time

argv = sys.argv[1:]
log = os.environ.get("FAKE_NCU_LOG")
if log:
    with open(log, "a") as f:
        watched = ("FOO", "CUDA_INJECTION64_PATH", "KPROF_TEST_VALUE")
        f.write(json.dumps({"argv": sys.argv, "env": {k: os.environ[k] for k in watched if k in os.environ}}) + "\n")

if "--version" in argv:
    sys.stdout.write(open(os.environ["FAKE_NCU_VERSION"]).read())
    sys.exit(0)

def version():
    import re
    found = re.search(r"Version (\d+)\.(\d+)\.(\d+)", open(os.environ["FAKE_NCU_VERSION"]).read())
    return tuple(int(x) for x in found.groups()) if found else (0, 0, 0)


for new_option in ("--process-id", "--list-injection-path-64", "--list-injection-path-32"):
    if new_option in argv and version() < (2026, 2, 1):
        sys.stdout.write(f"==ERROR== unrecognised option '{new_option}'\n")
        sys.exit(1)

if "--list-injection-path-64" in argv:
    sys.stdout.write(os.environ.get("FAKE_NCU_INJECTION_DIR", "/nonexistent") + "\n")
    sys.exit(0)

if "--process-id" in argv:
    attach_pid = argv[argv.index("--process-id") + 1]
    try:
        loaded = "/libcuda-injection.so\n" in open(f"/proc/{attach_pid}/maps").read()
    except OSError:
        loaded = False
    if not loaded:
        sys.stdout.write("==ERROR== No attachable process found.\n"
                         "==ERROR== An error occurred while trying to profile.\n")
        sys.exit(1)
    os.environ["FAKE_NCU_TARGET_PID"] = attach_pid

rec = os.environ.get("FAKE_NCU_RECORDING", "")


def read(name):
    for path in (os.path.join(rec, name), rec + "." + name):
        if os.path.exists(path):
            return open(path, "rb").read()
        if os.path.exists(path + ".zst"):
            return subprocess.run(["zstd", "-dc", path + ".zst"], check=True, capture_output=True).stdout
    return None


def option(name):
    return argv[argv.index(name) + 1] if name in argv else None


if "--import" in argv:
    page = option("--page")
    data = read("raw.csv" if page == "raw" else "speed_of_light.csv")
    if data is None:
        sys.stderr.write("==ERROR== no recorded export for this page\n")
        sys.exit(1)
    sys.stdout.buffer.write(data)
    sys.exit(0)

if os.path.isdir(rec):
    out, err = read("ncu-stdout.txt") or b"", read("ncu-stderr.txt") or b""
    rc = json.loads(read("manifest.json"))["ncu"]["exit_code"]
    report = read("report.ncu-rep")
else:
    out, err = read("out") or b"", read("err") or b""
    rc = int((read("rc") or b"0").strip())
    report = None
export = option("--export")
delay = float(os.environ.get("FAKE_NCU_LINE_DELAY", "0"))


def write_report():
    if report is not None and export:
        path = export if export.endswith(".ncu-rep") else export + ".ncu-rep"
        with open(path, "wb") as f:
            f.write(report)


def replay(lines, stream):
    for line in lines:
        stream.buffer.write(line)
        stream.flush()
        if delay:
            time.sleep(delay)


world = os.environ.get("FAKE_NCU_WORLD")
if world and option("--mode") == "attach":
    # A launched tree (fake_launched_tree.py): attach to the waiting process of the lowest port
    # that no other client holds, as ncu offers a process to one client at a time.
    import atexit
    held = None
    waiting = os.path.join(world, "waiting")
    ports = sorted((int(p) for p in os.listdir(waiting) if p.isdigit()) if os.path.isdir(waiting) else [],
                   reverse=os.environ.get("FAKE_NCU_ORDER") == "highest")
    for port in ports:
        pid = open(os.path.join(waiting, str(port))).read().strip()
        if not os.path.exists(f"/proc/{pid}"):
            continue
        try:
            fd = os.open(os.path.join(world, f"held-{port}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            continue
        os.close(fd)
        held = (port, pid)
        break
    if held is None:
        sys.stdout.write("==PROF== Finding attachable processes on host 127.0.0.1.\n"
                         "==WARNING== No processes found on 127.0.0.1 (ports 49152-49215).\n"
                         "==ERROR== No attachable process found.\n"
                         "==ERROR== An error occurred while trying to profile.\n")
        sys.exit(1)
    port, pid = held
    def log_event(event):
        with open(os.path.join(world, "attach-log"), "a") as f:
            f.write(json.dumps({"event": event, "pid": int(pid), "port": port, "t": time.time(),
                                "kernel_name": option("--kernel-name")}) + "\n")

    def detach():
        log_event("detach")
        os.remove(os.path.join(world, f"held-{port}"))

    atexit.register(detach)
    log_event("attach")
    open(os.path.join(world, "attached", pid), "w").close()
    if option("--kernel-name") == "regex:^kprof_release_nothing$":
        stop = []
        signal.signal(signal.SIGINT, lambda *_: stop.append(1))
        sys.stdout.write("==PROF== Finding attachable processes on host 127.0.0.1.\n"
                         f"==PROF== Attaching to process '/usr/bin/python3' ({pid}) on port {port}.\n"
                         f"==PROF== Connected to process {pid} (/usr/bin/python3)\n")
        sys.stdout.flush()
        while not stop:
            time.sleep(0.05)
        sys.stdout.write("==PROF== Trying to shutdown target application\n"
                         "==WARNING== No kernels were profiled.\n")
        sys.exit(130)
    os.environ["FAKE_NCU_TARGET_PID"] = pid

target_pid = os.environ.get("FAKE_NCU_TARGET_PID")
if target_pid:
    # The recorded target's pid replaced by a process of this machine (alive or gone).
    import re
    out = re.sub(rb"(Connected to process |\()\d+(\)| \()", lambda m: m.group(1) + target_pid.encode() + m.group(2), out)
out_lines = out.splitlines(keepends=True)
if "--mode" in argv and option("--mode") == "attach" and rc == 130:
    last = max((i for i, l in enumerate(out_lines) if l.startswith(b"==PROF== Profiling")), default=-1)
    interrupted = []
    signal.signal(signal.SIGINT, lambda *_: interrupted.append(1))

    def profile_until_interrupted(start):
        """ncu's lines from `start` to the last kernel profiled, the report, then ncu attached
        until the SIGINT that detaches it: the rest of its output and its exit status."""
        replay(out_lines[start: last + 1], sys.stdout)
        write_report()
        while not interrupted:
            time.sleep(0.05)
        replay(out_lines[last + 1:], sys.stdout)
        replay(err.splitlines(keepends=True), sys.stderr)
        sys.exit(rc)

    stall_pid = os.environ.get("FAKE_NCU_STALL_PID")
    if stall_pid:
        first = min(i for i, l in enumerate(out_lines) if l.startswith(b"==PROF== Profiling"))
        replay(out_lines[: first + 1], sys.stdout)
        os.kill(int(stall_pid), signal.SIGSTOP)
        until = time.time() + float(os.environ.get("FAKE_NCU_STALL_S", "5"))
        while not interrupted and time.time() < until:
            time.sleep(0.05)
        os.kill(int(stall_pid), signal.SIGCONT)
        if interrupted:
            write_report()
            replay([l for l in out_lines[first + 1:] if not l.startswith(b"==PROF== Profiling")],
                   sys.stdout)
            replay(err.splitlines(keepends=True), sys.stderr)
            sys.exit(rc)
        profile_until_interrupted(first + 1)
    profile_until_interrupted(0)

replay(out_lines, sys.stdout)
replay(err.splitlines(keepends=True), sys.stderr)
if os.environ.get("FAKE_NCU_HANG"):
    target = subprocess.Popen(["sleep", "600"])
    pidfile = os.environ.get("FAKE_NCU_HANG_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as f:
            f.write(str(target.pid))
    while True:
        time.sleep(1)
write_report()
sys.exit(rc)
