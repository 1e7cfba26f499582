// A stand-in for libcupti.so.13 (same soname, same symbol version) so that libkprof_tracer.so's
// injection — its threads, buffer pool, windows, control file, cap, flushes and exit — runs for
// real on a machine without a GPU. It implements what the tracer calls, the way CUPTI documents
// it: buffers are asked for on the thread that produces records (one per thread), handed back
// when full or on cuptiActivityFlushAll, records dropped and counted when no buffer is given,
// API records only for the callback ids enabled. The program driving it (fake_app.cpp) "launches"
// kernels through fake_cupti_launch() and NVTX ranges through fake_cupti_range(); it makes graph
// nodes through fake_cupti_graph_node() and plays NVTX through fake_cupti_nvtx(), which call the
// subscriber back as CUPTI does, for the callback ids it enabled only.
//
// Its behaviour is set by environment variables: FAKE_CUPTI_VERSION (what cuptiGetVersion says),
// FAKE_CUPTI_HOLDER (another subscriber holds the slot, under this name),
// FAKE_CUPTI_REFUSE_RESOURCE_CALLBACKS (enabling a resource-domain callback fails).
#include <cupti.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "fake_cuda_objects.h"

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
CUpti_CallbackFunc g_callback = nullptr;
void* g_callback_data = nullptr;
std::set<std::pair<int, std::uint32_t>> g_enabled_callbacks;  // (domain, id)

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

CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                              void* data, CUpti_SubscriberParams* params) {
  if (const char* holder = std::getenv("FAKE_CUPTI_HOLDER")) {
    if (params && params->oldSubscriberName && params->oldSubscriberSize > 0) {
      std::strncpy(params->oldSubscriberName, holder, params->oldSubscriberSize - 1);
      params->oldSubscriberName[params->oldSubscriberSize - 1] = '\0';
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_callback = callback;
  g_callback_data = data;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&g_mutex);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_callback = nullptr;
  g_enabled_callbacks.clear();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&g_mutex)) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && std::getenv("FAKE_CUPTI_REFUSE_RESOURCE_CALLBACKS")) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (enable)
    g_enabled_callbacks.emplace(domain, cbid);
  else
    g_enabled_callbacks.erase({domain, cbid});
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t* id) {
  if (!node || !id) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = node->id;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetGraphId(CUgraph graph, uint32_t* id) {
  if (!graph || !id) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = graph->id;
  return CUPTI_SUCCESS;
}
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

// Calls the subscriber back, as CUPTI does, if it enabled this callback id.
static void call_back(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  CUpti_CallbackFunc callback = nullptr;
  void* callback_data = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_enabled_callbacks.count({domain, id})) return;
    callback = g_callback;
    callback_data = g_callback_data;
  }
  if (callback) callback(callback_data, domain, id, data);
}

// One NVTX call reaching CUPTI (which implements NVTX for a tool): its parameters and what it
// returns, as CUpti_NvtxData carries them. fake_app builds the parameter structs.
void fake_cupti_nvtx(std::uint32_t id, const char* function, const void* params,
                     const void* return_value) {
  CUpti_NvtxData data{};
  data.functionName = function;
  data.functionParams = params;
  data.functionReturnValue = return_value;
  call_back(CUPTI_CB_DOMAIN_NVTX, id, &data);
}

// A graph node made in graph `graph` on the calling thread (GRAPHNODE_CREATED), of `type`; kernel
// nodes run the function `name` (through a CUkernel handle when by_kernel is set) with
// dims = grid x, y, z, block x, y, z, dynamic shared bytes. With original != 0 the node is made as
// a clone of that node instead (instantiation, cudaGraphClone): GRAPHNODE_CREATED for the new
// node, then GRAPHNODE_CLONED, as CUPTI's graph sample describes them. The nodes live as long as
// the process, reachable from `made` (the tracer may ask fake_cuda about them).
void fake_cupti_graph_node(std::uint32_t graph, std::uint64_t node, int type, const char* name,
                           int by_kernel, const unsigned* dims, std::uint64_t original) {
  static std::mutex made_mutex;
  static std::vector<CUgraphNode>& made = *new std::vector<CUgraphNode>;
  auto* created = new CUgraphNode_st{};
  created->id = node;
  created->type = static_cast<CUgraphNodeType>(type);
  CUgraphNode from = nullptr;
  {
    std::lock_guard<std::mutex> lock(made_mutex);
    for (CUgraphNode earlier : made) {
      if (original != 0 && earlier->id == original) from = earlier;
    }
    made.push_back(created);
  }
  if (from) {
    created->type = from->type;
    created->params = from->params;
  } else if (created->type == CU_GRAPH_NODE_TYPE_KERNEL) {
    if (by_kernel) {
      created->params.kern = new CUkern_st{name};
    } else {
      created->params.func = new CUfunc_st{name};
    }
    created->params.gridDimX = dims[0];
    created->params.gridDimY = dims[1];
    created->params.gridDimZ = dims[2];
    created->params.blockDimX = dims[3];
    created->params.blockDimY = dims[4];
    created->params.blockDimZ = dims[5];
    created->params.sharedMemBytes = dims[6];
  }
  CUgraph_st in_graph{graph};  // asked about only during the callbacks
  CUpti_GraphData data{};
  data.graph = &in_graph;
  data.node = created;
  data.nodeType = created->type;
  CUpti_ResourceData resource{};
  resource.resourceDescriptor = &data;
  call_back(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, &resource);
  if (original != 0) {
    CUgraphNode_st unknown{};  // an original made before the tracer: only its id is known
    unknown.id = original;
    unknown.type = created->type;
    data.originalNode = from ? from : &unknown;
    call_back(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, &resource);
  }
}

}  // extern "C"
