// Counts the calling thread's allocations through operator new, for tests that hold code to "no
// allocation" (the NVTX range stack's pushes and pops). The replacement operator new lives in
// allocation_counter.cpp, compiled alone so no other code sees its body; under a sanitizer that
// brings its own operator new (address, thread, memory), nothing is replaced and nothing counted.
#pragma once

#include <cstddef>

namespace kprof::tracer::testing {

bool counts_allocations();
std::size_t thread_allocations();

}  // namespace kprof::tracer::testing
