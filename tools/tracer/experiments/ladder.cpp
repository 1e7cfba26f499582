// Where a CUPTI tracer's cost per kernel launch comes from, one step at a time (issue 15).
//
// An injection library (CUDA_INJECTION64_PATH) that does what kprof's tracer does at start-up
// up to step KPROF_LADDER_STEP and nothing else, so that ladder.py can time the same eager
// decode step under each and attribute the tracer's 2.1x (and its 1.44x while inactive) to a
// step. Records are counted and thrown away: writing is not what is measured here.
//
//   0  loaded; libcupti not even asked its version (the library still links it)
//   1  cuptiGetVersion
//   2  + cuptiSubscribe_v2 with no callback domain enabled (the tracer's conflict check)
//   3  + cuptiActivityRegisterCallbacks (8 MB buffers, recycled)
//   4  + CONCURRENT_KERNEL records
//   5  + MEMCPY and MEMSET
//   6  + runtime API records of the launch/memcpy/memset calls only (per callback id)
//   7  + driver API records of the same (per callback id)
//   8  + INTERNAL_LAUNCH_API
// Modifiers: KPROF_LADDER_NO_SUBSCRIBE=1 skips step 2's subscription; KPROF_LADDER_RUNTIME_ALL=1
// enables the whole RUNTIME kind at step 6 (as the PyTorch profiler does) instead of per id;
// KPROF_LADDER_SHARED_BUFFERS=1 sets PER_THREAD_ACTIVITY_BUFFER to 0 first.
//
// Build (CUDA 13's CUPTI headers and library): g++ -std=c++17 -O2 -shared -fPIC -o ladder.so
//   ladder.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti
// Results of 2026-12-01 on the H200: docs/tracer.md, "Overhead, measured on the H200".
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace {

constexpr std::size_t kBufferBytes = 8u << 20;
std::mutex g_pool_mutex;
std::vector<std::uint8_t*> g_pool;
std::atomic<std::uint64_t> g_records{0}, g_dropped{0};

void CUPTIAPI on_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  std::uint8_t* b = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    if (!g_pool.empty()) {
      b = g_pool.back();
      g_pool.pop_back();
    }
  }
  if (!b) b = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *buffer = b;
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI on_completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer,
                           std::size_t, std::size_t valid) {
  CUpti_Activity* record = nullptr;
  std::uint64_t n = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) ++n;
  g_records += n;
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS)
    g_dropped += dropped;
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  g_pool.push_back(buffer);
}

void CUPTIAPI ignore(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

bool flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

bool traced_api(const char* name) {
  while (*name == '_') ++name;
  for (const char* prefix : {"cudaLaunch", "cuLaunch", "cudaMemcpy", "cuMemcpy", "cudaMemset",
                             "cuMemset", "cudaGraphLaunch", "cuGraphLaunch"}) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

void enable_api_ids(CUpti_CallbackDomain domain, CUpti_CallbackId last) {
  int enabled = 0;
  for (CUpti_CallbackId id = 1; id < last; ++id) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || !name) continue;
    if (!traced_api(name)) continue;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
      cuptiActivityEnableRuntimeApi(id, 1);
    else
      cuptiActivityEnableDriverApi(id, 1);
    ++enabled;
  }
  std::fprintf(stderr, "kprof-ladder: %d %s API ids enabled\n", enabled,
               domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime" : "driver");
}

void report_at_exit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::fprintf(stderr, "kprof-ladder: %llu records, %llu dropped\n",
               static_cast<unsigned long long>(g_records.load()),
               static_cast<unsigned long long>(g_dropped.load()));
}

int step_from_env() {
  const char* v = std::getenv("KPROF_LADDER_STEP");
  return v ? std::atoi(v) : 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static bool done = false;
  if (done) return 1;
  done = true;
  const int step = step_from_env();
  std::fprintf(stderr, "kprof-ladder: step %d%s%s%s\n", step,
               flag("KPROF_LADDER_NO_SUBSCRIBE") ? " no-subscribe" : "",
               flag("KPROF_LADDER_RUNTIME_ALL") ? " runtime-all" : "",
               flag("KPROF_LADDER_SHARED_BUFFERS") ? " shared-buffers" : "");
  if (step < 1) return 1;
  std::uint32_t version = 0;
  cuptiGetVersion(&version);
  if (step < 2) return 1;
  if (!flag("KPROF_LADDER_NO_SUBSCRIBE")) {
    CUpti_SubscriberHandle subscriber = nullptr;
    if (cuptiSubscribe(&subscriber, ignore, nullptr) != CUPTI_SUCCESS)
      std::fprintf(stderr, "kprof-ladder: subscribe failed\n");
  }
  if (step < 3) return 1;
  if (flag("KPROF_LADDER_SHARED_BUFFERS")) {
    std::uint8_t off = 0;
    std::size_t size = sizeof off;
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &off);
  }
  cuptiActivityRegisterCallbacks(on_requested, on_completed);
  std::atexit(report_at_exit);
  if (step < 4) return 1;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (step < 5) return 1;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  if (step < 6) return 1;
  if (flag("KPROF_LADDER_RUNTIME_ALL"))
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  else
    enable_api_ids(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
  if (step < 7) return 1;
  enable_api_ids(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
  if (step < 8) return 1;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API);
  return 1;
}
