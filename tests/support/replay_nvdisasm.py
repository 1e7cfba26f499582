#!/usr/bin/env python3
"""A stand-in for `nvdisasm -c -fun INDEX CUBIN` (there is no CUDA toolkit where the tests run):
prints what nvdisasm 13.0 printed on the H200 for symbol 32 (k_stream_copy) of
data/h200/two_kernels_full.ncu-rep.zst's cubin, data/h200/ncu-source/two_kernels_full_nvdisasm_c_fun32.txt."""
import os
import sys

args = sys.argv[1:]
if len(args) != 4 or args[0] != "-c" or args[1] != "-fun" or not os.path.isfile(args[3]):
    sys.exit("replay_nvdisasm: expected -c -fun INDEX CUBIN, got %r" % args)
if args[2] != "32":
    sys.exit("replay_nvdisasm: no recording for symbol %s" % args[2])
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "..", "data", "h200", "ncu-source",
                       "two_kernels_full_nvdisasm_c_fun32.txt")) as recorded:
    sys.stdout.write(recorded.read())
