// kprof-tracer-replay DUMP_FOLDER OUT.json.gz: converts a raw buffer dump written by
// libkprof_tracer.so (KPROF_TRACE_DUMP_RAW) into a trace, on any machine with the same CUPTI.
#include <cstdio>
#include <string>

#include "tracer/cupti_support.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: kprof-tracer-replay DUMP_FOLDER OUT.json.gz\n");
    return 2;
  }
  std::string error;
  if (!kprof::tracer::convert_raw_dump(argv[1], argv[2], &error)) {
    std::fprintf(stderr, "kprof-tracer-replay: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
