// A stand-in for libcupti.so.13 (same soname, same symbol version) so that libkprof_tracer.so's
// injection — its threads, buffer pool, windows, control file, cap, flushes and exit — runs for
// real on a machine without a GPU. It implements what the tracer calls, the way CUPTI documents
// it: buffers are asked for on the thread that produces records (one per thread), handed back
// when full or on cuptiActivityFlushAll, records dropped and counted when no buffer is given,
// API records only for the callback ids enabled. The program driving it (fake_app.cpp) "launches"
// kernels through fake_cupti_launch() and NVTX ranges through fake_cupti_range().
//
// Its behaviour is set by environment variables: FAKE_CUPTI_VERSION (what cuptiGetVersion says),
// FAKE_CUPTI_HOLDER (another subscriber holds the slot, under this name).
#include <cupti.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

namespace {

struct ThreadBuffer {
  std::mutex mutex;
  std::uint8_t* data = nullptr;
  std::size_t size = 0, used = 0;
};

std::mutex g_mutex;  // the sets below and the list of thread buffers
std::set<int> g_enabled_kinds;
std::set<std::uint32_t> g_runtime_apis, g_driver_apis;
// Never destroyed: the buffers must stay reachable (and flushable) through the exit handlers.
std::vector<ThreadBuffer*>& g_buffers = *new std::vector<ThreadBuffer*>;
CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
std::atomic<std::size_t> g_dropped{0};
std::atomic<std::uint32_t> g_correlation{0};

std::uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(t.tv_nsec);
}

bool enabled(int kind) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_enabled_kinds.count(kind) != 0;
}

ThreadBuffer& this_thread_buffer() {
  thread_local ThreadBuffer* buffer = [] {
    auto* b = new ThreadBuffer;  // lives as long as the process: CUPTI's do too
    std::lock_guard<std::mutex> lock(g_mutex);
    g_buffers.push_back(b);
    return b;
  }();
  return *buffer;
}

void complete_locked(ThreadBuffer& b) {
  if (b.data && g_complete) g_complete(nullptr, 0, b.data, b.size, b.used);
  b.data = nullptr;
  b.size = b.used = 0;
}

// Appends one record to this thread's buffer, asking for a buffer on this thread as CUPTI does.
template <class Record>
void append(const Record& record) {
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (b.data && b.used + sizeof(Record) > b.size) complete_locked(b);
  if (!b.data) {
    std::size_t max_records = 0;
    if (g_request) g_request(&b.data, &b.size, &max_records);
    if (!b.data || b.size < sizeof(Record)) {
      b.data = nullptr;
      ++g_dropped;
      return;
    }
    b.used = 0;
  }
  std::memcpy(b.data + b.used, &record, sizeof(Record));
  b.used += sizeof(Record);
}

std::size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_MARKER:
      return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    default:
      return 0;
  }
}

}  // namespace

extern "C" {

CUptiResult cuptiGetVersion(uint32_t* version) {
  const char* forced = std::getenv("FAKE_CUPTI_VERSION");
  *version = forced ? static_cast<uint32_t>(std::strtoul(forced, nullptr, 10)) : CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char** text) {
  *text = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
              ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
              : "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc, void*,
                              CUpti_SubscriberParams* params) {
  if (const char* holder = std::getenv("FAKE_CUPTI_HOLDER")) {
    if (params && params->oldSubscriberName && params->oldSubscriberSize > 0) {
      std::strncpy(params->oldSubscriberName, holder, params->oldSubscriberSize - 1);
      params->oldSubscriberName[params->oldSubscriberSize - 1] = '\0';
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_mutex);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) { return CUPTI_SUCCESS; }
CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute, size_t*, void*) {
  return CUPTI_SUCCESS;
}
CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType) { return CUPTI_SUCCESS; }
CUptiResult cuptiNvtxInitialize(void*) { return CUPTI_SUCCESS; }
CUptiResult cuptiNvtxInitialize2(void*) { return CUPTI_SUCCESS; }

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  g_request = request;
  g_complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
      cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
    *name = "cudaLaunchKernel_v7000";
  } else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
             cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020) {
    *name = "cudaStreamSynchronize_v3020";
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
             cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {
    *name = "cuLaunchKernel";
  } else {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_enabled_kinds.insert(kind);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_enabled_kinds.erase(kind);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (enable)
    g_runtime_apis.insert(cbid);
  else
    g_runtime_apis.erase(cbid);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (enable)
    g_driver_apis.insert(cbid);
  else
    g_driver_apis.erase(cbid);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t) {
  std::vector<ThreadBuffer*> buffers;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    buffers = g_buffers;
  }
  for (ThreadBuffer* b : buffers) {
    std::lock_guard<std::mutex> lock(b->mutex);
    complete_locked(*b);
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  std::size_t offset = 0;
  if (*record) {
    auto* current = reinterpret_cast<uint8_t*>(*record);
    offset = static_cast<std::size_t>(current - buffer) + record_size((*record)->kind);
  }
  if (offset >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  if (record_size(next->kind) == 0 || offset + record_size(next->kind) > valid) {
    return CUPTI_ERROR_INVALID_KIND;
  }
  *record = next;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  *dropped = g_dropped.exchange(0);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  *timestamp = now_ns();
  return CUPTI_SUCCESS;
}

// ---- the fake GPU, driven by fake_app.cpp ----

int fake_cupti_enabled(int kind) { return enabled(kind) ? 1 : 0; }

// One cudaLaunchKernel of `name` (a string that outlives the process's tracing, as CUPTI's are):
// its API record if that callback id is enabled, its kernel record if kernels are.
void fake_cupti_launch(const char* name) {
  std::uint32_t correlation = ++g_correlation;
  std::uint64_t start = now_ns();
  bool api;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    api = g_runtime_apis.count(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) != 0;
  }
  if (api) {
    CUpti_ActivityAPI a{};
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    a.start = start;
    a.end = start + 2000;
    a.processId = static_cast<uint32_t>(getpid());
    a.threadId = static_cast<uint32_t>(syscall(SYS_gettid));
    a.correlationId = correlation;
    append(a);
  }
  if (enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.name = name;
    k.start = start + 3000;
    k.end = start + 8000;
    k.streamId = 7;
    k.contextId = 1;
    k.correlationId = correlation;
    k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
    append(k);
  }
}

// An NVTX range's START (with its name) or END record, if markers are enabled.
void fake_cupti_range(int start, std::uint32_t id, const char* name) {
  if (!enabled(CUPTI_ACTIVITY_KIND_MARKER)) return;
  CUpti_ActivityMarker2 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = start ? CUPTI_ACTIVITY_FLAG_MARKER_START : CUPTI_ACTIVITY_FLAG_MARKER_END;
  m.timestamp = now_ns();
  m.id = id;
  m.name = start ? name : nullptr;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = static_cast<uint32_t>(getpid());
  m.objectId.pt.threadId = static_cast<uint32_t>(syscall(SYS_gettid));
  append(m);
}

}  // extern "C"
