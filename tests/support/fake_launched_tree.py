#!/usr/bin/env python3
"""A process tree as `ncu --mode launch` leaves it, for fake_ncu.py's attach (FAKE_NCU_WORLD).

usage: fake_launched_tree.py WORLD [--engine-name NAME] [--no-engine]
The front registers as waiting for a profiler on port 49152 (WORLD/waiting/49152 holds its pid),
as a serving front that initialises CUDA does. Once an attach client connected to it
(WORLD/attached/PID, written by fake_ncu.py) it runs on and spawns the engine, which registers on
the next port with its thread name set to NAME (default serve::engine) — an engine is not started
before its front runs. Both then sleep until killed; WORLD/tree.pids lists them. Run it with
NV_CUDA_START_SUSPENDED=1 in the environment, as ncu's launch mode sets it."""
import ctypes
import os
import subprocess
import sys
import time

world = sys.argv[1]
# Passed to the engine in its environment, so that only its thread name carries it.
engine_name = os.environ.get("FAKE_ENGINE_NAME") or (
    sys.argv[sys.argv.index("--engine-name") + 1] if "--engine-name" in sys.argv else "serve::engine")
role = "engine" if "--role-engine" in sys.argv else "front"
os.makedirs(os.path.join(world, "waiting"), exist_ok=True)
os.makedirs(os.path.join(world, "attached"), exist_ok=True)


def register(port):
    path = os.path.join(world, "waiting", str(port))
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(path + ".tmp", path)
    with open(os.path.join(world, "tree.pids"), "a") as f:
        f.write(f"{os.getpid()}\n")
    print(f"==PROF== Waiting for profiler to attach on ports 49152-49215 ({role} pid {os.getpid()})", flush=True)


def wait_attached():
    while not os.path.exists(os.path.join(world, "attached", str(os.getpid()))):
        time.sleep(0.05)


if role == "engine":
    # The engine's thread name, as vLLM's setproctitle/prctl gives its EngineCore.
    ctypes.CDLL(None).prctl(15, engine_name.encode()[:15], 0, 0, 0)
    register(49153)
    wait_attached()
else:
    register(49152)
    wait_attached()
    if "--no-engine" not in sys.argv:
        subprocess.Popen([sys.executable, os.path.abspath(__file__), world, "--role-engine"],
                         env=dict(os.environ, FAKE_ENGINE_NAME=engine_name))
while True:
    time.sleep(1)
