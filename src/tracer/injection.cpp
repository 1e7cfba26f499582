// libkprof_tracer.so: the CUDA and NVTX injection entry points and everything that needs CUPTI
// attached to a live process. The design keeps the application's threads free of work:
//
//   application threads  CUPTI's buffer request: a pop from a pool of buffers allocated, zeroed
//                        and faulted in beforehand (an empty pool refuses, and the refusal is
//                        counted); NVTX push/pop callbacks: the thread's own range stack, no lock,
//                        no allocation after its first push; graph node made or cloned: one
//                        short lock of the node table (tracer/graph_node_table), and for a
//                        kernel node two driver calls that read its name and shape;
//   CUPTI's worker       the buffer-completed callback queues the buffer and returns;
//   control thread       polls the control file every 100 ms, keeps time (delay, duration),
//                        watches the event cap, enables and disables activity kinds, flushes,
//                        tops up the pool; it makes no CUDA calls;
//   writer thread        (niced) converts records to trace events (tracer/record_converter),
//                        writes the gzip'd trace (tracer/trace_file) and the raw dump, recycles
//                        buffers.
//
// Inactive means no activity kind and no API record enabled. Only kernel, memcpy, memset, NVTX
// and launch/copy/set API records are collected (never the whole RUNTIME/DRIVER kinds). The
// graph node table is kept from the start, windows or not: graphs are captured at start-up.
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// NVTX's parameter structs, without NVTX's implementation (this library is a tool, not a user).
#define NVTX_NO_IMPL
#include <generated_nvtx_meta.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tracer/control_file.h"
#include "tracer/cupti_support.h"
#include "tracer/graph_node_table.h"
#include "tracer/raw_dump.h"
#include "tracer/record_converter.h"
#include "tracer/trace_file.h"
#include "tracer/tracer_config.h"
#include "tracer/window_policy.h"

// Exported by libcupti.so.13 but declared in no header; CUPTI's guide (§2.5.3.1, "For your
// CUPTI-based profiling library") has the tool forward its NVTX entry points to them.
extern "C" CUptiResult CUPTIAPI cuptiNvtxInitialize(void* get_export_table);
extern "C" CUptiResult CUPTIAPI cuptiNvtxInitialize2(void* get_export_table);

#define KPROF_TRACER_EXPORT extern "C" __attribute__((visibility("default")))

KPROF_TRACER_EXPORT int InitializeInjection(void);

namespace kprof::tracer {
namespace {

using namespace std::chrono_literals;

constexpr auto kPollInterval = 100ms;
// UNVERIFIED on the H200: time for kernels launched just before a stop to finish, so the forced
// flush finds their records complete (those still incomplete are counted, not written).
constexpr auto kStopGrace = 100ms;
// While a window is open, buffers whose records are all complete are collected this often
// (cuptiActivityFlushAll(0)): the writer keeps up, the cap is seen in time, buffers come back to
// the pool. CUPTI's guide advises rare flushes; once a second is rare. UNVERIFIED: its cost.
constexpr auto kFlushInterval = std::chrono::seconds(1);
constexpr std::size_t kInitialBuffers = 8;
constexpr std::size_t kLowWaterBuffers = 4;
constexpr std::size_t kFlushEventBytes = std::size_t{1} << 20;

constexpr CUpti_ActivityKind kActivityKinds[] = {
    CUPTI_ACTIVITY_KIND_MARKER,  // before MARKER_DATA, were it ever enabled (CUPTI guide §2.5.1)
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API};

void say(const std::string& message) noexcept {
  try {
    std::string line = "kprof-tracer: " + message + "\n";
    ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
    (void)written;
  } catch (...) {
    static const char kLost[] = "kprof-tracer: (a message was lost: out of memory)\n";
    ssize_t written = ::write(STDERR_FILENO, kLost, sizeof kLost - 1);
    (void)written;
  }
}

// say() from an exception handler, where building the message may itself fail.
void say_failure(const char* what, const std::exception& error) noexcept {
  try {
    say(std::string(what) + " (" + error.what() + ")");
  } catch (...) {
    say(what);
  }
}

std::uint64_t clock_ns(clockid_t clock) {
  timespec now{};
  ::clock_gettime(clock, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(now.tv_nsec);
}

ClockAnchor read_anchor() {
  ClockAnchor anchor;
  std::uint64_t cupti_ns = 0;
  if (cuptiGetTimestamp(&cupti_ns) == CUPTI_SUCCESS) anchor.cupti_ns = cupti_ns;
  anchor.realtime_ns = clock_ns(CLOCK_REALTIME);
  anchor.monotonic_ns = clock_ns(CLOCK_MONOTONIC);
  return anchor;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "host";
  std::string host = name;
  for (char& c : host) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.';
    if (!plain) c = '_';
  }
  return host;
}

const char* kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_MARKER:
      return "MARKER";
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "MEMSET";
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API:
      return "INTERNAL_LAUNCH_API";
    default:
      return "activity kind";
  }
}

// Whether an injection variable's value names this library (the driver and NVTX dlopen it:
// a path, or a bare name found through the library search path).
bool names_this_library(const char* value, const std::string& self) {
  struct stat named {
  }, own{};
  if (::stat(value, &named) == 0 && ::stat(self.c_str(), &own) == 0) {
    return named.st_dev == own.st_dev && named.st_ino == own.st_ino;
  }
  auto base = [](std::string_view path) {
    size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
  };
  return base(value) == base(self);
}

std::string own_path() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&InitializeInjection), &info) != 0 && info.dli_fname) {
    return info.dli_fname;
  }
  return "libkprof_tracer.so";
}

std::string folder_problem(const std::string& folder) {
  struct stat info {};
  if (::stat(folder.c_str(), &info) != 0) return std::strerror(errno);
  if (!S_ISDIR(info.st_mode)) return "not a folder";
  if (::access(folder.c_str(), W_OK | X_OK) != 0) return std::strerror(errno);
  return {};
}

struct Work {
  enum class Kind { kBuffer, kOpen, kClose, kShutdown } kind = Kind::kBuffer;
  std::uint8_t* data = nullptr;
  std::size_t valid = 0;
  ClockAnchor anchor;
  StopReason reason = StopReason::kControl;
  std::uint64_t buffers_refused = 0;
  std::uint64_t records_lost = 0;
};

class Writer;

// Everything the tracer holds lives here, reachable from g_tracer for the life of the process
// (also in a fork child, where the tracer's threads are gone).
struct Tracer {
  TracerConfig config;
  pid_t pid = 0;
  std::string host;
  std::uint32_t cupti_version = 0;
  std::uint64_t base_ns = 0;
  ApiNames api_names;
  std::vector<CUpti_CallbackId> runtime_cbids, driver_cbids;

  // The pool: the request callback only pops (the vector's capacity is reserved up front).
  std::mutex pool_mutex;
  std::vector<std::uint8_t*> free_buffers;
  std::size_t allocated = 0, max_buffers = 0;
  std::atomic<std::uint64_t> buffers_refused{0};
  std::atomic<std::uint64_t> records_lost{0};  // buffers the tracer could not queue (no memory)

  std::mutex queue_mutex;
  std::condition_variable queue_ready;
  std::deque<Work> queue;

  std::mutex control_mutex;
  std::condition_variable control_wake;
  std::atomic<bool> stopping{false};
  std::atomic<bool> cap_hit{false};
  std::atomic<bool> writer_failed{false};
  WindowPolicy policy{StartMode::kNow, 0, 0};  // control thread; at exit after it ended
  bool kind_failure_reported[std::size(kActivityKinds)] = {};

  // Made before CUPTI calls back, never freed (CUPTI may call back until the process ends);
  // nullptr where CUPTI would not report graph nodes: traces then carry no "graph_nodes".
  GraphNodeTable* graph_nodes = nullptr;

  std::unique_ptr<ControlFileWatcher> watcher;
  std::unique_ptr<Writer> writer_state;
  std::thread control, writer;
};

std::atomic<Tracer*> g_tracer{nullptr};  // set once, before any kind is enabled

void post(Tracer& t, Work work) {
  {
    std::lock_guard<std::mutex> lock(t.queue_mutex);
    t.queue.push_back(work);
  }
  t.queue_ready.notify_one();
}

// ---- buffers ------------------------------------------------------------------------------

std::uint8_t* new_zeroed_buffer() {
  // Zeroed here (control thread) so CUPTI need not zero it on the application thread
  // (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER), and faulted in by the same writes.
  auto* buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  if (buffer) std::memset(buffer, 0, kBufferBytes);
  return buffer;
}

void top_up_pool(Tracer& t, std::size_t wanted_free) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(t.pool_mutex);
      if (t.allocated >= t.max_buffers || t.free_buffers.size() >= wanted_free) return;
    }
    std::uint8_t* buffer = new_zeroed_buffer();
    if (!buffer) return;
    std::lock_guard<std::mutex> lock(t.pool_mutex);
    t.free_buffers.push_back(buffer);
    ++t.allocated;
  }
}

void recycle(Tracer& t, std::uint8_t* buffer) {
  std::memset(buffer, 0, kBufferBytes);
  std::lock_guard<std::mutex> lock(t.pool_mutex);
  t.free_buffers.push_back(buffer);
}

void CUPTIAPI on_buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                  std::size_t* max_records) {
  // An application thread: no allocation, no I/O, no waiting beyond a short lock.
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  Tracer* t = g_tracer;
  if (!t || ::getpid() != t->pid) return;  // a fork child keeps nothing of ours
  std::lock_guard<std::mutex> lock(t->pool_mutex);
  if (t->free_buffers.empty()) {
    t->buffers_refused.fetch_add(1, std::memory_order_relaxed);  // CUPTI drops and counts
    return;
  }
  *buffer = t->free_buffers.back();
  t->free_buffers.pop_back();
  *size = kBufferBytes;
}

void CUPTIAPI on_buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                                  std::size_t valid) {
  Tracer* t = g_tracer;
  if (!t || !buffer || ::getpid() != t->pid) return;
  Work work;
  work.data = buffer;
  work.valid = valid;
  try {
    post(*t, work);
  } catch (...) {  // out of memory: never let an exception reach CUPTI's thread
    std::uint64_t records = 0;
    for_each_record(buffer, valid, [&](const CUpti_Activity&) { ++records; });
    t->records_lost += records;
    recycle(*t, buffer);
  }
}

// ---- graph nodes and NVTX ranges: CUPTI's callbacks, on application threads ---------------

pid_t g_callback_pid = 0;  // set before any callback is enabled

// Each thread's open NVTX ranges, made on its first push and freed when it exits (a pthread key's
// destructor; the main thread's lives as long as the process). The thread_local is a plain
// pointer: nothing with a C++ destructor that a late NVTX call of an exiting thread could find
// already destroyed.
pthread_key_t g_ranges_key;
std::atomic<bool> g_ranges_key_made{false};
thread_local RangeStack* t_ranges = nullptr;

void free_ranges(void* stack) {
  t_ranges = nullptr;
  delete static_cast<RangeStack*>(stack);
}

RangeStack* thread_ranges(bool make) noexcept {
  if (t_ranges || !make || !g_ranges_key_made.load(std::memory_order_acquire)) return t_ranges;
  auto* stack = new (std::nothrow) RangeStack();
  if (!stack) return nullptr;  // out of memory: this push goes unseen
  if (::pthread_setspecific(g_ranges_key, stack) != 0) {
    delete stack;
    return nullptr;
  }
  return t_ranges = stack;
}

void push_attributes(const void* domain, const nvtxEventAttributes_t* attributes) noexcept {
  RangeStack* stack = thread_ranges(true);
  if (!stack) return;
  if (!attributes) return stack->push_text(domain, nullptr);
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return stack->push_text(domain, attributes->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return stack->push_wide(domain, attributes->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return stack->push_registered(domain, attributes->message.registered);
    default:
      return stack->push_text(domain, nullptr);
  }
}

void pop_range(const void* domain) noexcept {
  if (RangeStack* stack = thread_ranges(false)) stack->pop(domain);
}

constexpr CUpti_CallbackId kNvtxCallbacks[] = {CUPTI_CBID_NVTX_nvtxRangePushA,
                                               CUPTI_CBID_NVTX_nvtxRangePushEx,
                                               CUPTI_CBID_NVTX_nvtxRangePop,
                                               CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
                                               CUPTI_CBID_NVTX_nvtxDomainRangePop,
                                               CUPTI_CBID_NVTX_nvtxDomainCreateA,
                                               CUPTI_CBID_NVTX_nvtxDomainRegisterStringA};

// Every push and pop of the process comes here, windows or not: a switch and the thread's own
// stack (copying at most 256 bytes of name), nothing shared.
void on_nvtx(GraphNodeTable& table, CUpti_CallbackId id, const CUpti_NvtxData& data) noexcept {
  if (id == CUPTI_CBID_NVTX_nvtxRangePop) return pop_range(nullptr);  // needs no parameters
  const void* params = data.functionParams;
  if (!params) return;
  switch (id) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      if (RangeStack* stack = thread_ranges(true))
        stack->push_text(nullptr, static_cast<const nvtxRangePushA_params*>(params)->message);
      return;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      return push_attributes(nullptr,
                             static_cast<const nvtxRangePushEx_params*>(params)->eventAttrib);
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      const auto* push = static_cast<const nvtxDomainRangePushEx_params*>(params);
      return push_attributes(push->domain, push->core.eventAttrib);
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      return pop_range(static_cast<const nvtxDomainRangePop_params*>(params)->domain);
    // The handle NVTX returns is CUPTI's functionReturnValue. UNVERIFIED on a GPU: that CUPTI
    // fills it before calling back (else ranges of that domain read "(unknown domain)" and
    // registered names "(registered string)"). These take the table's lock: not in a fork child,
    // where a thread that held it at the fork is gone.
    case CUPTI_CBID_NVTX_nvtxDomainCreateA:
      if (const auto* handle = static_cast<const nvtxDomainHandle_t*>(data.functionReturnValue);
          handle && ::getpid() == g_callback_pid)
        table.domain_created(*handle, static_cast<const nvtxDomainCreateA_params*>(params)->name);
      return;
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
      if (const auto* handle = static_cast<const nvtxStringHandle_t*>(data.functionReturnValue);
          handle && ::getpid() == g_callback_pid)
        table.string_registered(
            *handle, static_cast<const nvtxDomainRegisterStringA_params*>(params)->string);
      return;
    default:
      return;
  }
}

// The CUDA driver calls that read a kernel node, looked up in the libcuda already loaded (this
// library never links it) when the driver calls InitializeInjection; absent ones leave names ""
// (counted "unnamed").
struct DriverCalls {
  CUresult (*kernel_node_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*) = nullptr;
  CUresult (*function_name)(const char**, CUfunction) = nullptr;
  CUresult (*kernel_name)(const char**, CUkernel) = nullptr;
};
DriverCalls g_driver_calls;
std::atomic<bool> g_driver_calls_ready{false};
std::mutex g_driver_calls_mutex;

void find_driver_calls() noexcept {
  std::lock_guard<std::mutex> lock(g_driver_calls_mutex);
  if (g_driver_calls_ready.load(std::memory_order_relaxed)) return;
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY | RTLD_LOCAL);
  if (!driver) return;  // not loaded yet (an NVTX call came first): again at cuInit
  g_driver_calls.kernel_node_params = reinterpret_cast<decltype(DriverCalls::kernel_node_params)>(
      ::dlsym(driver, "cuGraphKernelNodeGetParams_v2"));
  g_driver_calls.function_name =
      reinterpret_cast<decltype(DriverCalls::function_name)>(::dlsym(driver, "cuFuncGetName"));
  g_driver_calls.kernel_name =
      reinterpret_cast<decltype(DriverCalls::kernel_name)>(::dlsym(driver, "cuKernelGetName"));
  g_driver_calls_ready.store(true, std::memory_order_release);  // the handle is kept: never closed
}

// The one place that asks the driver about a node, inside CUPTI's GRAPHNODE_CREATED callback on
// the thread that made it. UNVERIFIED on a GPU: that the driver allows these calls there (it
// holds the node); if not, this moves (e.g. to the writer, by node handle) and nothing else does.
void read_kernel_node(CUgraphNode handle, CreatedNode* node) noexcept {
  if (!g_driver_calls_ready.load(std::memory_order_acquire)) return;
  const DriverCalls& calls = g_driver_calls;
  if (!calls.kernel_node_params) return;
  CUDA_KERNEL_NODE_PARAMS params;
  std::memset(&params, 0, sizeof params);
  if (calls.kernel_node_params(handle, &params) != CUDA_SUCCESS) return;
  node->grid = {{params.gridDimX, params.gridDimY, params.gridDimZ}};
  node->block = {{params.blockDimX, params.blockDimY, params.blockDimZ}};
  node->shared_bytes = params.sharedMemBytes;
  const char* name = nullptr;
  if (params.func && calls.function_name) {
    if (calls.function_name(&name, params.func) != CUDA_SUCCESS) name = nullptr;
  } else if (params.kern && calls.kernel_name) {
    if (calls.kernel_name(&name, params.kern) != CUDA_SUCCESS) name = nullptr;
  }
  if (name) node->kernel = name;  // the driver's string, copied by the table before returning
}

GraphNodeKind node_kind(CUgraphNodeType type) {
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return GraphNodeKind::kKernel;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return GraphNodeKind::kMemcpy;
    case CU_GRAPH_NODE_TYPE_MEMSET:
      return GraphNodeKind::kMemset;
    default:
      return GraphNodeKind::kOther;
  }
}

// A node made (stream capture, the graph API, or as a clone) or cloned: on the thread doing it,
// at capture or instantiation time, never while graphs replay.
void on_graph_node(GraphNodeTable& table, CUpti_CallbackId id,
                   const CUpti_ResourceData& resource) noexcept {
  const auto* graph = static_cast<const CUpti_GraphData*>(resource.resourceDescriptor);
  if (!graph || !graph->node || ::getpid() != g_callback_pid) return;  // a fork child: not ours
  GraphNodeKind kind = node_kind(graph->nodeType);
  std::uint64_t node_id = 0;
  if (cuptiGetGraphNodeId(graph->node, &node_id) != CUPTI_SUCCESS) {
    if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) table.node_unread(kind);
    return;
  }
  if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    std::uint64_t original_id = 0;
    if (graph->originalNode &&
        cuptiGetGraphNodeId(graph->originalNode, &original_id) == CUPTI_SUCCESS) {
      table.node_cloned(node_id, original_id, kind);
    } else {
      table.clone_unread(kind);
    }
    return;
  }
  CreatedNode node;
  node.node = node_id;
  node.kind = kind;
  std::uint32_t graph_id = 0;
  if (graph->graph && cuptiGetGraphId(graph->graph, &graph_id) == CUPTI_SUCCESS)
    node.graph = graph_id;
  node.tid = static_cast<std::uint32_t>(::gettid());
  if (kind == GraphNodeKind::kKernel) read_kernel_node(graph->node, &node);
  table.node_created(node, thread_ranges(false));
}

void CUPTIAPI on_callback(void* table, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const void* data) {
  if (!table || !data) return;
  try {
    if (domain == CUPTI_CB_DOMAIN_NVTX) {
      on_nvtx(*static_cast<GraphNodeTable*>(table), id, *static_cast<const CUpti_NvtxData*>(data));
    } else if (domain == CUPTI_CB_DOMAIN_RESOURCE && (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
                                                      id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)) {
      on_graph_node(*static_cast<GraphNodeTable*>(table), id,
                    *static_cast<const CUpti_ResourceData*>(data));
    }
  } catch (...) {  // nothing above throws; never let anything reach CUPTI or the application
  }
}

// After subscribing: node callbacks, then NVTX's. False where the nodes cannot be followed.
bool enable_graph_callbacks(CUpti_SubscriberHandle subscriber) {
  for (CUpti_CallbackId id :
       {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED}) {
    CUptiResult result = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, id);
    if (result != CUPTI_SUCCESS) {
      say("cannot follow CUDA graph nodes (" + cupti_error_text(result) +
          "): traces carry no graph node table");
      cuptiEnableCallback(0, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                          CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
      return false;
    }
  }
  for (CUpti_CallbackId id : kNvtxCallbacks) {
    CUptiResult result = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_NVTX, id);
    if (result != CUPTI_SUCCESS) {
      say("cannot follow NVTX ranges (" + cupti_error_text(result) +
          "): graph nodes are tabled without the ranges they were captured in");
      for (CUpti_CallbackId enabled : kNvtxCallbacks)
        cuptiEnableCallback(0, subscriber, CUPTI_CB_DOMAIN_NVTX, enabled);
      break;
    }
  }
  return true;
}

// ---- writer thread ------------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(Tracer& t) : t_(t), converter_(t.api_names, strings_, options(t)) {}

  void run() noexcept {
    try {
      loop();
    } catch (const std::exception& error) {
      say_failure("the tracer's writer failed, no more traces from this process", error);
      t_.writer_failed = true;
      drain();
    }
  }

 private:
  // After a failure: keep handing buffers back to CUPTI until the process ends.
  void drain() noexcept {
    for (;;) {
      std::unique_lock<std::mutex> lock(t_.queue_mutex);
      t_.queue_ready.wait(lock, [&] { return !t_.queue.empty(); });
      Work work = t_.queue.front();
      t_.queue.pop_front();
      lock.unlock();
      if (work.kind == Work::Kind::kShutdown) return;
      if (work.kind == Work::Kind::kBuffer) recycle(t_, work.data);
    }
  }

  void loop() {
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);  // this thread only
    start_raw_dump();
    for (;;) {
      Work work;
      {
        std::unique_lock<std::mutex> lock(t_.queue_mutex);
        t_.queue_ready.wait(lock, [&] { return !t_.queue.empty(); });
        work = t_.queue.front();
        t_.queue.pop_front();
      }
      switch (work.kind) {
        case Work::Kind::kBuffer:
          buffer(work.data, work.valid);
          break;
        case Work::Kind::kOpen:
          open(work.anchor);
          break;
        case Work::Kind::kClose:
          close(work);
          break;
        case Work::Kind::kShutdown:
          if (late_records_ > 0) {
            say("pid " + std::to_string(t_.pid) + ": " + std::to_string(late_records_) +
                " records arrived after the last window closed: not written");
          }
          return;
      }
    }
  }

  static ConverterOptions options(const Tracer& t) {
    ConverterOptions options;
    options.base_ns = t.base_ns;
    options.max_events = t.config.max_events;
    options.flows = t.config.flows;
    return options;
  }

  void start_raw_dump() {
    if (t_.config.raw_dump_dir.empty()) return;
    std::vector<std::pair<std::string, std::string>> meta = {
        {"format", "kprof.cupti-raw/1"},
        {"tracer_version", KPROF_TRACER_VERSION},
        {"cupti_version", std::to_string(t_.cupti_version)},
        {"cupti_api_version", std::to_string(CUPTI_API_VERSION)},
        {"host", t_.host},
        {"pid", std::to_string(t_.pid)},
        {"base_ns", std::to_string(t_.base_ns)},
        {"sizeof_kernel", std::to_string(sizeof(CUpti_ActivityKernel10))},
        {"sizeof_memcpy", std::to_string(sizeof(CUpti_ActivityMemcpy6))},
        {"sizeof_memset", std::to_string(sizeof(CUpti_ActivityMemset4))},
        {"sizeof_api", std::to_string(sizeof(CUpti_ActivityAPI))},
        {"sizeof_marker", std::to_string(sizeof(CUpti_ActivityMarker2))}};
    std::string error;
    raw_ = RawDumpWriter::create(t_.config.raw_dump_dir, t_.host, t_.pid, meta, &error);
    if (!raw_) say(error + ": no raw dump");
  }

  void dump(std::uint8_t* data, std::size_t valid) {
    if (!raw_) return;
    std::vector<std::pair<const char*, std::string_view>> strings;
    for_each_record(data, valid, [&](const CUpti_Activity& record) {
      for (const char* pointer : record_strings(record)) {
        if (pointer) strings.emplace_back(pointer, std::string_view(pointer));
      }
    });
    std::string error;
    if (!raw_->write_buffer(data, valid, strings, &error)) {
      say(error + ": raw dump stopped");
      raw_.reset();
    }
  }

  void flush_events() {
    if (file_ && !events_.empty()) {
      std::string error;
      if (!file_->write(events_, &error)) {
        say(error + ": window " + std::to_string(header_.window) + " abandoned");
        file_.reset();
      }
    }
    events_.clear();
  }

  void buffer(std::uint8_t* data, std::size_t valid) {
    dump(data, valid);
    std::string walk_error;
    if (window_open_) {
      walk_error = for_each_record(data, valid, [&](const CUpti_Activity& record) {
        converter_.convert(record, events_);
        if (events_.size() >= kFlushEventBytes) flush_events();
      });
      flush_events();
      if (converter_.cap_reached()) t_.cap_hit = true;
    } else {
      walk_error = for_each_record(data, valid, [&](const CUpti_Activity&) { ++late_records_; });
    }
    if (!walk_error.empty() && !walk_error_reported_) {
      walk_error_reported_ = true;
      say("pid " + std::to_string(t_.pid) + ": " + walk_error);
    }
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) {
      cupti_dropped_ += dropped;
    }
    recycle(t_, data);
  }

  void open(const ClockAnchor& anchor) {
    header_.base_ns = t_.base_ns;
    header_.cupti_version = t_.cupti_version;
    header_.pid = t_.pid;
    header_.host = t_.host;
    std::string path;
    header_.window = next_free_window(t_.config.output_dir, t_.config.name_pattern, t_.host, t_.pid,
                                      next_window_, &path);
    next_window_ = header_.window + 1;
    std::string error;
    file_ = TraceFile::create(path, header_, &error);
    if (!file_) say(error + ": window " + std::to_string(header_.window) + " not recorded");
    converter_.start_window();
    window_open_ = true;
    start_ = anchor;
    window_late_records_ = late_records_;  // arrived since the previous window: reported here
    late_records_ = 0;
    cupti_dropped_ = 0;
  }

  void close(const Work& work) {
    if (!window_open_) return;
    flush_events();
    WindowSummary summary;
    summary.tracer_version = KPROF_TRACER_VERSION;
    summary.stop_reason = stop_reason_name(work.reason);
    summary.start = start_;
    summary.stop = work.anchor;
    summary.max_events = t_.config.max_events;
    summary.counts = converter_.finish_window();
    summary.cupti_dropped = cupti_dropped_;
    summary.buffers_refused = work.buffers_refused;
    summary.late_records = window_late_records_;
    summary.records_lost = work.records_lost;
    window_open_ = false;
    if (!file_) return;  // already said why
    add_graph_nodes(summary);
    std::string error;
    if (file_->finish(summary, &error)) {
      say(summary_line(file_->final_path(), header_, summary));
    } else if (file_->complete()) {
      say(error + "; " + summary_line(file_->partial_path(), header_, summary));
    } else {
      say(error + ": window " + std::to_string(header_.window) + " abandoned");
    }
    file_.reset();
  }

  // The whole node table, every window: copied under its lock, serialised here without it.
  void add_graph_nodes(WindowSummary& summary) {
    if (!t_.graph_nodes) return;
    try {
      GraphNodeSnapshot snapshot = t_.graph_nodes->snapshot();
      summary.graph_nodes_not_kept = snapshot.counts.not_kept;
      summary.graph_clones_not_kept = snapshot.counts.clones_not_kept;
      summary.graph_nodes = graph_nodes_json(snapshot);
    } catch (const std::exception& error) {
      summary.graph_nodes.clear();
      say_failure(
          ("window " + std::to_string(header_.window) + ": the graph node table is left out")
              .c_str(),
          error);
    }
  }

  Tracer& t_;
  LiveStrings strings_;
  RecordConverter converter_;
  std::unique_ptr<TraceFile> file_;
  std::unique_ptr<RawDumpWriter> raw_;
  TraceHeader header_;
  ClockAnchor start_;
  std::string events_;
  bool window_open_ = false, walk_error_reported_ = false;
  unsigned next_window_ = 1;
  std::uint64_t cupti_dropped_ = 0, late_records_ = 0, window_late_records_ = 0;
};

// ---- windows (control thread) -------------------------------------------------------------

void set_kinds(Tracer& t, bool enable) {
  for (size_t i = 0; i < std::size(kActivityKinds); ++i) {
    CUpti_ActivityKind kind = kActivityKinds[i];
    if (kind == CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API && !t.config.api_records) continue;
    CUptiResult result = enable ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
    if (result != CUPTI_SUCCESS && !t.kind_failure_reported[i]) {
      t.kind_failure_reported[i] = true;
      say(std::string("cannot ") + (enable ? "enable " : "disable ") + kind_name(kind) + ": " +
          cupti_error_text(result) + (enable ? " (its records will be missing)" : ""));
    }
  }
  // Per call, never cuptiActivityEnable(RUNTIME/DRIVER): enabling a whole kind overrides these.
  for (CUpti_CallbackId id : t.runtime_cbids) cuptiActivityEnableRuntimeApi(id, enable ? 1 : 0);
  for (CUpti_CallbackId id : t.driver_cbids) cuptiActivityEnableDriverApi(id, enable ? 1 : 0);
}

void open_window(Tracer& t) {
  top_up_pool(t, std::min(kInitialBuffers, t.max_buffers));
  t.cap_hit = false;
  Work work;
  work.kind = Work::Kind::kOpen;
  work.anchor = read_anchor();
  post(t, work);  // queued before any buffer of this window can complete
  set_kinds(t, true);
}

void close_window(Tracer& t, StopReason reason) {
  set_kinds(t, false);
  std::this_thread::sleep_for(kStopGrace);
  CUptiResult flushed = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // blocking
  if (flushed != CUPTI_SUCCESS)
    say("flushing CUPTI's buffers failed: " + cupti_error_text(flushed));
  Work work;
  work.kind = Work::Kind::kClose;
  work.anchor = read_anchor();
  work.reason = reason;
  work.buffers_refused = t.buffers_refused.exchange(0);
  work.records_lost = t.records_lost.exchange(0);
  post(t, work);
}

void control_loop(Tracer& t) {
  ControlFileWatcher& watcher = *t.watcher;
  auto started = std::chrono::steady_clock::now();
  auto last_flush = started;
  while (!t.stopping) {
    if (t.writer_failed) {
      if (t.policy.active()) set_kinds(t, false);
      return;
    }
    std::string content;
    ControlCommand command = watcher.poll(&content);
    if (command == ControlCommand::kUnknown) {
      while (!content.empty() && (content.back() == '\n' || content.back() == '\r'))
        content.pop_back();
      say("control file " + t.config.control_path + ": \"" + content.substr(0, 32) +
          "\" is neither start nor stop: ignored");
    }
    auto seconds = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    WindowDecision decision = t.policy.step(seconds(), command, t.cap_hit.load());
    if (decision.action == WindowDecision::Action::kStart) {
      open_window(t);
      t.policy.opened_at(seconds());  // the duration counts from here, buffers ready
    }
    if (decision.action == WindowDecision::Action::kStop) close_window(t, decision.reason);
    auto now = std::chrono::steady_clock::now();
    if (decision.action != WindowDecision::Action::kNothing) last_flush = now;
    if (t.policy.active() && now - last_flush >= kFlushInterval) {
      cuptiActivityFlushAll(0);
      last_flush = now;
    }
    if (t.policy.active()) top_up_pool(t, kLowWaterBuffers);
    std::unique_lock<std::mutex> lock(t.control_mutex);
    t.control_wake.wait_for(lock, kPollInterval, [&] { return t.stopping.load(); });
  }
}

void control_main(Tracer& t) noexcept {
  try {
    control_loop(t);
  } catch (const std::exception& error) {
    say_failure("the tracer's control thread failed, tracing stopped", error);
    try {
      set_kinds(t, false);
    } catch (...) {
    }
  }
}

void at_exit_unguarded() {
  Tracer* t = g_tracer;
  if (!t || ::getpid() != t->pid) return;  // a fork child: not ours to flush
  {
    std::lock_guard<std::mutex> lock(t->control_mutex);
    t->stopping = true;
  }
  t->control_wake.notify_all();
  if (t->control.joinable()) t->control.join();
  if (t->policy.at_exit().action == WindowDecision::Action::kStop)
    close_window(*t, StopReason::kExit);
  Work shutdown;
  shutdown.kind = Work::Kind::kShutdown;
  post(*t, shutdown);
  if (t->writer.joinable()) t->writer.join();
}

void at_exit() {
  try {
    at_exit_unguarded();
  } catch (const std::exception& error) {
    say_failure("the last window could not be finished", error);
  }
}

// ---- start --------------------------------------------------------------------------------

bool start_tracer() {
  ConfigResult parsed = parse_tracer_config([](const char* name) { return std::getenv(name); });
  if (!parsed.config) {
    say(parsed.error + ": the tracer stays off");
    return false;
  }
  auto tracer = std::make_unique<Tracer>();
  Tracer& t = *tracer;
  t.config = *parsed.config;
  t.pid = ::getpid();
  t.host = host_name();

  std::string self = own_path();
  const char* cuda_injection = std::getenv("CUDA_INJECTION64_PATH");
  if (cuda_injection && *cuda_injection && !names_this_library(cuda_injection, self)) {
    say(std::string("CUDA_INJECTION64_PATH names ") + cuda_injection +
        ", another tool's injection (Nsight Compute, Nsight Systems or another profiler): the "
        "tracer stays off");
    return false;
  }
  for (auto [variable, folder] : {std::pair{"KPROF_TRACE_DIR", t.config.output_dir},
                                  std::pair{"KPROF_TRACE_DUMP_RAW", t.config.raw_dump_dir}}) {
    if (folder.empty()) continue;
    std::string problem = folder_problem(folder);
    if (!problem.empty()) {
      say(std::string(variable) + "=\"" + folder + "\": " + problem +
          " (need a writable folder): the tracer stays off");
      return false;
    }
  }

  CUptiResult result = cuptiGetVersion(&t.cupti_version);
  if (result != CUPTI_SUCCESS) {
    say("libcupti is unusable (" + cupti_error_text(result) + "): the tracer stays off");
    return false;
  }
  if (t.cupti_version < CUPTI_API_VERSION) {
    // Records are read as the 13.0 structs (CUpti_ActivityKernel10 …): an older libcupti
    // writes shorter ones.
    say("libcupti reports version " + std::to_string(t.cupti_version) + ", older than the " +
        std::to_string(CUPTI_API_VERSION) + " this tracer was built for: the tracer stays off");
    return false;
  }
  // CUPTI has one subscriber slot per process (CUPTI guide §2.2): taken by Nsight Systems or
  // Compute, cuda-gdb, compute-sanitizer or a profiler already running, subscribing fails and
  // names the holder. Only graph node and NVTX push/pop callbacks are enabled (below), none of
  // the API domains.
  auto graph_nodes = std::make_unique<GraphNodeTable>();
  g_callback_pid = t.pid;
  CUpti_SubscriberHandle subscriber = nullptr;
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "kprof tracer";
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN;
  result = cuptiSubscribe_v2(&subscriber, on_callback, graph_nodes.get(), &params);
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    say(std::string("another CUPTI client is attached to this process (") +
        (holder[0] ? holder : "it did not give its name") + "): the tracer stays off");
    return false;
  }
  if (result != CUPTI_SUCCESS) {
    say("CUPTI cannot attach (" + cupti_error_text(result) + "): the tracer stays off");
    return false;
  }
  // Before any context exists (inside cuInit, or before it for NVTX): device buffer sizes apply
  // to contexts created later (cupti_activity.h, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE).
  if (t.config.device_buffer_mb > 0) {
    std::size_t bytes = t.config.device_buffer_mb << 20, size = sizeof bytes;
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &bytes);
  }
  std::uint8_t zeroed = 1;
  std::size_t zeroed_size = sizeof zeroed;
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size, &zeroed);
  cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);  // gettid(), as PyTorch's tids
  // No cuptiActivityRegisterTimestampCallback: on 13.0 it can zero kernel timestamps (fixed in
  // 13.1), and CUPTI's own clock is already CLOCK_REALTIME, the base Kineto converts to.
  result = cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed);
  if (result != CUPTI_SUCCESS) {
    say("cannot register CUPTI's buffer callbacks (" + cupti_error_text(result) +
        "): the tracer stays off");
    cuptiUnsubscribe(subscriber);
    return false;
  }
  if (!g_ranges_key_made.load() && ::pthread_key_create(&g_ranges_key, free_ranges) == 0)
    g_ranges_key_made.store(true, std::memory_order_release);
  find_driver_calls();  // libcuda is loaded when the driver starts the tracer (cuInit)
  GraphNodeTable* table = graph_nodes.release();  // CUPTI holds it from here: never freed
  if (enable_graph_callbacks(subscriber)) t.graph_nodes = table;

  const char* nvtx_injection = std::getenv("NVTX_INJECTION64_PATH");
  if (!nvtx_injection || !*nvtx_injection) {
    say("NVTX_INJECTION64_PATH is not set to this library: NVTX ranges (steps, and those graphs "
        "are captured in) are not recorded");
  } else if (!names_this_library(nvtx_injection, self)) {
    say(std::string("NVTX_INJECTION64_PATH names ") + nvtx_injection +
        ", not this library: NVTX ranges (steps, and those graphs are captured in) are not "
        "recorded");
  }
  t.api_names = load_api_names();
  if (t.config.api_records) {  // otherwise no API id is ever enabled
    for (std::uint32_t id = 1; id < t.api_names.runtime.size(); ++id) {
      if (is_traced_api(t.api_names.runtime[id])) t.runtime_cbids.push_back(id);
    }
    for (std::uint32_t id = 1; id < t.api_names.driver.size(); ++id) {
      if (is_traced_api(t.api_names.driver[id])) t.driver_cbids.push_back(id);
    }
  }
  t.base_ns = t.config.base_ns ? *t.config.base_ns : kineto_base_time_ns(clock_ns(CLOCK_REALTIME));
  t.max_buffers = std::max<std::size_t>(2, (t.config.memory_mb << 20) / kBufferBytes);
  t.free_buffers.reserve(t.max_buffers);
  t.policy = WindowPolicy(t.config.start, t.config.delay_s, t.config.duration_s);

  t.watcher = std::make_unique<ControlFileWatcher>(t.config.control_path);
  t.writer_state = std::make_unique<Writer>(t);
  g_tracer = tracer.release();  // lives until the process ends: CUPTI may call back any time
  std::atexit(at_exit);
  // Our threads take no signal meant for the application (they inherit this mask).
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  try {
    g_tracer.load()->writer = std::thread([] { g_tracer.load()->writer_state->run(); });
    g_tracer.load()->control = std::thread([] { control_main(*g_tracer.load()); });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return true;
}

std::once_flag g_once;
bool g_running = false;
pid_t g_started_in = 0;
std::atomic<bool> g_fork_reported{false};

// Whichever entry point comes first (cuInit, or an NVTX call before it) starts the tracer.
bool ensure_started() noexcept {
  std::call_once(g_once, [] {
    g_started_in = ::getpid();
    try {
      g_running = start_tracer();
    } catch (const std::exception& error) {
      say_failure("cannot start, the tracer stays off", error);
      g_running = false;
    }
  });
  if (::getpid() != g_started_in) {
    if (g_running && !g_fork_reported.exchange(true)) {
      say("pid " + std::to_string(::getpid()) + " was forked from pid " +
          std::to_string(g_started_in) +
          " after the tracer started there; CUPTI's state does not survive a fork: not traced");
    }
    return false;
  }
  return g_running;
}

void start_nvtx(CUptiResult (*initialize)(void*), void* get_export_table) noexcept {
  if (!ensure_started()) return;  // NVTX then makes every call a no-op
  CUptiResult result = initialize(get_export_table);
  static std::atomic<bool> reported{false};
  if (result != CUPTI_SUCCESS && !reported.exchange(true)) {
    try {
      say("CUPTI does not take NVTX (" + cupti_error_text(result) +
          "): NVTX ranges (steps, and those graphs are captured in) are not recorded");
    } catch (...) {
    }
  }
}

}  // namespace
}  // namespace kprof::tracer

// Called by the CUDA driver inside cuInit when CUDA_INJECTION64_PATH names this library. Always
// 1: the tracer never fails the application's CUDA initialisation, it stays off and says why.
KPROF_TRACER_EXPORT int InitializeInjection(void) {
  if (kprof::tracer::ensure_started()) kprof::tracer::find_driver_calls();
  return 1;
}

// Called by NVTX v3 on the first NVTX call of each module that uses it, when
// NVTX_INJECTION64_PATH names this library (CUPTI guide §2.5.3.1). 1 even when off: 0 would make
// NVTX dlclose a library whose exit handler may be registered.
KPROF_TRACER_EXPORT int InitializeInjectionNvtx(void* get_export_table) {
  kprof::tracer::start_nvtx(cuptiNvtxInitialize, get_export_table);
  return 1;
}

KPROF_TRACER_EXPORT int InitializeInjectionNvtx2(void* get_export_table) {
  kprof::tracer::start_nvtx(cuptiNvtxInitialize2, get_export_table);
  return 1;
}
