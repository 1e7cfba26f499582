#include "tracer/allocation_counter.h"

#include <cstdlib>
#include <new>

// The sanitizers that bring their own operator new (GCC names two; clang answers __has_feature).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KPROF_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer) || __has_feature(hwaddress_sanitizer)
#define KPROF_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef KPROF_COUNT_ALLOCATIONS
#define KPROF_COUNT_ALLOCATIONS 1
#endif

namespace {
thread_local std::size_t t_allocations = 0;
}

namespace kprof::tracer::testing {
bool counts_allocations() { return KPROF_COUNT_ALLOCATIONS != 0; }
std::size_t thread_allocations() { return t_allocations; }
}  // namespace kprof::tracer::testing

#if KPROF_COUNT_ALLOCATIONS
// The replaceable forms (the array and nothrow ones call these).
void* operator new(std::size_t size) {
  ++t_allocations;
  if (void* memory = std::malloc(size ? size : 1)) return memory;
  throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
#endif
