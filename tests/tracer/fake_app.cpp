// A "CUDA program" for fake_cupti.cpp: loads libkprof_tracer.so as the driver does, calls
// InitializeInjection, then follows a script, one word per argument after the settings:
//   fake_app LIBRARY [NAME=VALUE…] -- WORD…
//   init              call InitializeInjection (as cuInit would)
//   steps:N           N steps: an NVTX range "ProfilerStep#K" around 3 kernel launches
//   launch:N          N launches outside any range
//   control:TEXT      write TEXT into $KPROF_TRACE_CONTROL (as `echo TEXT > file`)
//   wait:on, wait:off until the tracer has enabled / disabled kernel records (10 s at most)
//   files:N           until $KPROF_TRACE_DIR holds N finished traces (10 s at most)
//   threads:N:M       N threads at once, each holding its own buffer, M launches each
//   fork              fork a child that launches once and exits normally
//   sleep:MS
// CUDA graphs and NVTX as CUPTI reports them to the tracer's callbacks (fake_cupti_graph_node,
// fake_cupti_nvtx), on this thread:
//   cuda:PATH                    load a libcuda.so.1 stand-in (fake_cuda), as the driver is loaded
//   push:TEXT, pushex:TEXT, pop  nvtxRangePushA, nvtxRangePushEx (ASCII), nvtxRangePop
//   pushw:TEXT                   nvtxRangePushEx with a wide-character message
//   domain:NAME                  nvtxDomainCreateA
//   string:DOMAIN:TEXT           nvtxDomainRegisterStringA (DOMAIN empty: the default domain)
//   dpush:DOMAIN:TEXT            nvtxDomainRangePushEx, ASCII
//   dpushr:DOMAIN:TEXT           nvtxDomainRangePushEx, the handle TEXT was registered under (a
//                                handle never registered if it was not)
//   dpop:DOMAIN                  nvtxDomainRangePop
//   kernel:GRAPH:NODE:GX,GY,GZ:BX,BY,BZ:SMEM:NAME  a kernel node made in a graph (stream capture
//                                or cuGraphAddKernelNode); kern:… the same through a CUkernel
//   memcpy:GRAPH:NODE, memset:GRAPH:NODE, host:GRAPH:NODE  other nodes
//   clone:GRAPH:NODE:ORIGINAL    NODE made as a clone of ORIGINAL (instantiation)
//   thread:T:WORD                WORD on worker thread T (made on first use, kept to the end)
// It exits 0 when the script ran, 5 when a wait timed out; the tracer's exit handler then runs.
#define NVTX_NO_IMPL
#include <cupti.h>
#include <dlfcn.h>
#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern "C" int fake_cupti_enabled(int kind);
extern "C" void fake_cupti_launch(const char* name);
extern "C" void fake_cupti_range(int start, unsigned id, const char* name);
extern "C" void fake_cupti_nvtx(std::uint32_t id, const char* function, const void* params,
                                const void* return_value);
extern "C" void fake_cupti_graph_node(std::uint32_t graph, std::uint64_t node, int type,
                                      const char* name, int by_kernel, const unsigned* dims,
                                      std::uint64_t original);

namespace {

constexpr int kConcurrentKernel = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
const char* const kKernels[] = {"_Z7k_alphaPfi", "_Z6k_betaPf", "k_gamma"};

// NVTX names stay valid until the tracer's exit handler, registered after this object, has read
// them (CUPTI keeps its own copies).
std::deque<std::string> g_names;
std::mutex g_names_mutex;  // g_names, g_domains and g_strings: words run on several threads

// The handles NVTX would return: addresses of these, never freed.
struct Handle {
  std::string name;
};
std::map<std::string, Handle*> g_domains, g_strings;

const char* keep(std::string text) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  g_names.push_back(std::move(text));
  return g_names.back().c_str();
}

nvtxDomainHandle_t domain_handle(const std::string& name) {
  if (name.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(g_names_mutex);
  Handle*& handle = g_domains[name];
  if (!handle) handle = new Handle{name};  // pushed without nvtxDomainCreateA: never announced
  return reinterpret_cast<nvtxDomainHandle_t>(handle);
}

nvtxStringHandle_t string_handle(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  Handle*& handle = g_strings[text];
  if (!handle) handle = new Handle{text};
  return reinterpret_cast<nvtxStringHandle_t>(handle);
}

std::vector<std::string> fields(const std::string& text, size_t count) {
  // The first count - 1 ':'-separated fields, then the rest whole (a name may hold ':').
  std::vector<std::string> out;
  size_t at = 0;
  while (out.size() + 1 < count) {
    size_t colon = text.find(':', at);
    if (colon == std::string::npos) break;
    out.push_back(text.substr(at, colon - at));
    at = colon + 1;
  }
  out.push_back(text.substr(at));
  return out;
}

void push_ex(nvtxDomainHandle_t domain, nvtxEventAttributes_t* attributes) {
  attributes->version = NVTX_VERSION;
  attributes->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  if (domain) {
    nvtxDomainRangePushEx_params params{domain, {attributes}};
    fake_cupti_nvtx(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, "nvtxDomainRangePushEx", &params,
                    nullptr);
  } else {
    nvtxRangePushEx_params params{attributes};
    fake_cupti_nvtx(CUPTI_CBID_NVTX_nvtxRangePushEx, "nvtxRangePushEx", &params, nullptr);
  }
}

// The graph and NVTX words (see the top); false for a word that is none of them.
bool graph_word(const std::string& word, const std::string& arg) {
  std::string verb = word.substr(0, word.find(':'));
  if (verb == "cuda") {
    if (!dlopen(arg.c_str(), RTLD_NOW | RTLD_GLOBAL)) std::printf("cuda: %s\n", dlerror());
  } else if (verb == "push") {
    nvtxRangePushA_params params{keep(arg)};
    fake_cupti_nvtx(CUPTI_CBID_NVTX_nvtxRangePushA, "nvtxRangePushA", &params, nullptr);
  } else if (verb == "pushex") {
    nvtxEventAttributes_t attributes{};
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = keep(arg);
    push_ex(nullptr, &attributes);
  } else if (verb == "pushw") {
    static std::deque<std::wstring> wide;
    wide.emplace_back(arg.begin(), arg.end());
    nvtxEventAttributes_t attributes{};
    attributes.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    attributes.message.unicode = wide.back().c_str();
    push_ex(nullptr, &attributes);
  } else if (verb == "pop") {
    nvtxRangePop_params params{nullptr};
    fake_cupti_nvtx(CUPTI_CBID_NVTX_nvtxRangePop, "nvtxRangePop", &params, nullptr);
  } else if (verb == "domain") {
    nvtxDomainHandle_t handle = domain_handle(arg);
    nvtxDomainCreateA_params params{keep(arg)};
    fake_cupti_nvtx(CUPTI_CBID_NVTX_nvtxDomainCreateA, "nvtxDomainCreateA", &params, &handle);
  } else if (verb == "string") {
    auto f = fields(arg, 2);
    if (f.size() != 2) return false;
    nvtxStringHandle_t handle = string_handle(f[1]);
    nvtxDomainRegisterStringA_params params{domain_handle(f[0]), keep(f[1])};
    fake_cupti_nvtx(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, "nvtxDomainRegisterStringA", &params,
                    &handle);
  } else if (verb == "dpush" || verb == "dpushr") {
    auto f = fields(arg, 2);
    if (f.size() != 2) return false;
    nvtxEventAttributes_t attributes{};
    if (verb == "dpush") {
      attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
      attributes.message.ascii = keep(f[1]);
    } else {
      attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
      attributes.message.registered = string_handle(f[1]);
    }
    push_ex(domain_handle(f[0]), &attributes);
  } else if (verb == "dpop") {
    nvtxDomainRangePop_params params{domain_handle(arg)};
    fake_cupti_nvtx(CUPTI_CBID_NVTX_nvtxDomainRangePop, "nvtxDomainRangePop", &params, nullptr);
  } else if (verb == "kernel" || verb == "kern") {
    auto f = fields(arg, 6);
    if (f.size() != 6) return false;
    unsigned dims[7] = {};
    if (std::sscanf(f[2].c_str(), "%u,%u,%u", &dims[0], &dims[1], &dims[2]) != 3 ||
        std::sscanf(f[3].c_str(), "%u,%u,%u", &dims[3], &dims[4], &dims[5]) != 3) {
      return false;
    }
    dims[6] = static_cast<unsigned>(std::stoul(f[4]));
    fake_cupti_graph_node(static_cast<std::uint32_t>(std::stoul(f[0])), std::stoull(f[1]),
                          CU_GRAPH_NODE_TYPE_KERNEL, keep(f[5]), verb == "kern" ? 1 : 0, dims, 0);
  } else if (verb == "memcpy" || verb == "memset" || verb == "host") {
    auto f = fields(arg, 2);
    if (f.size() != 2) return false;
    int type = verb == "memcpy"   ? CU_GRAPH_NODE_TYPE_MEMCPY
               : verb == "memset" ? CU_GRAPH_NODE_TYPE_MEMSET
                                  : CU_GRAPH_NODE_TYPE_HOST;
    unsigned dims[7] = {};
    fake_cupti_graph_node(static_cast<std::uint32_t>(std::stoul(f[0])), std::stoull(f[1]), type,
                          nullptr, 0, dims, 0);
  } else if (verb == "clone") {
    auto f = fields(arg, 3);
    if (f.size() != 3) return false;
    unsigned dims[7] = {};
    fake_cupti_graph_node(static_cast<std::uint32_t>(std::stoul(f[0])), std::stoull(f[1]),
                          CU_GRAPH_NODE_TYPE_KERNEL, nullptr, 0, dims, std::stoull(f[2]));
  } else {
    return false;
  }
  return true;
}

// A thread that runs words handed to it, one at a time, while the main thread waits: its NVTX
// ranges stay open between words.
class Worker {
 public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    run({});
    thread_.join();
  }
  void run(std::function<void()> work) {
    std::unique_lock<std::mutex> lock(mutex_);
    work_ = work ? std::move(work) : [this] { stop_ = true; };
    pending_ = true;
    ready_.notify_all();
    ready_.wait(lock, [this] { return !pending_; });
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      ready_.wait(lock, [this] { return pending_; });
      lock.unlock();
      work_();
      lock.lock();
      pending_ = false;
      ready_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable ready_;
  std::function<void()> work_;
  bool pending_ = false, stop_ = false;
  std::thread thread_;
};

bool wait_for(bool on) {
  for (int i = 0; i < 1000; ++i) {
    if ((fake_cupti_enabled(kConcurrentKernel) != 0) == on) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool wait_for_files(size_t count) {
  const char* dir = std::getenv("KPROF_TRACE_DIR");
  for (int i = 0; dir && i < 1000; ++i) {
    size_t finished = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::string name = entry.path().filename().string();
      if (name.size() > 8 && name.compare(name.size() - 8, 8, ".json.gz") == 0) ++finished;
    }
    if (finished >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int i = 2;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    std::string setting = argv[i];
    size_t equals = setting.find('=');
    if (equals == std::string::npos) return 2;
    setenv(setting.substr(0, equals).c_str(), setting.substr(equals + 1).c_str(), 1);
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    std::printf("dlopen failed: %s\n", dlerror());
    return 3;
  }
  auto initialize = reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection"));
  std::map<std::string, std::unique_ptr<Worker>> workers;
  unsigned step = 0;
  for (++i; i < argc; ++i) {
    std::string word = argv[i];
    std::string arg = word.substr(word.find(':') + 1);
    if (word == "init") {
      std::printf("InitializeInjection returned %d\n", initialize());
    } else if (word.rfind("steps:", 0) == 0) {
      for (int n = std::atoi(arg.c_str()); n > 0; --n, ++step) {
        fake_cupti_range(1, step + 1, keep("ProfilerStep#" + std::to_string(step)));
        for (const char* kernel : kKernels) fake_cupti_launch(kernel);
        fake_cupti_range(0, step + 1, nullptr);
      }
    } else if (word.rfind("launch:", 0) == 0) {
      for (int n = std::atoi(arg.c_str()); n > 0; --n) fake_cupti_launch(kKernels[0]);
    } else if (word.rfind("control:", 0) == 0) {
      std::ofstream(std::getenv("KPROF_TRACE_CONTROL"), std::ios::trunc) << arg << "\n";
    } else if (word.rfind("files:", 0) == 0) {
      if (!wait_for_files(static_cast<size_t>(std::atoi(arg.c_str())))) {
        std::printf("timed out: %s\n", word.c_str());
        return 5;
      }
    } else if (word == "wait:on" || word == "wait:off") {
      if (!wait_for(word == "wait:on")) {
        std::printf("timed out: %s\n", word.c_str());
        return 5;
      }
    } else if (word.rfind("threads:", 0) == 0) {
      int count = std::atoi(arg.c_str());
      int launches = std::atoi(arg.substr(arg.find(':') + 1).c_str());
      pthread_barrier_t all_hold_a_buffer;
      pthread_barrier_init(&all_hold_a_buffer, nullptr, static_cast<unsigned>(count));
      std::vector<std::thread> threads;
      for (int t = 0; t < count; ++t) {
        threads.emplace_back([&] {
          fake_cupti_launch(kKernels[1]);  // takes this thread's buffer
          pthread_barrier_wait(&all_hold_a_buffer);
          for (int n = 1; n < launches; ++n) fake_cupti_launch(kKernels[1]);
        });
      }
      for (auto& t : threads) t.join();
      pthread_barrier_destroy(&all_hold_a_buffer);
    } else if (word == "fork") {
      std::fflush(stdout);
      pid_t child = fork();
      if (child == 0) {
        fake_cupti_launch(kKernels[2]);
        std::exit(0);  // exit handlers run in the child too
      }
      int status = 0;
      waitpid(child, &status, 0);
      std::printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    } else if (word.rfind("sleep:", 0) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(arg.c_str())));
    } else if (word.rfind("thread:", 0) == 0) {
      auto f = fields(arg, 2);
      std::string inner = f.size() == 2 ? f[1] : "";
      std::unique_ptr<Worker>& worker = workers[f[0]];
      if (!worker) worker = std::make_unique<Worker>();
      bool known = false;
      worker->run([&] { known = graph_word(inner, inner.substr(inner.find(':') + 1)); });
      if (!known) {
        std::printf("unknown word %s\n", word.c_str());
        return 2;
      }
    } else if (graph_word(word, arg)) {
    } else {
      std::printf("unknown word %s\n", word.c_str());
      return 2;
    }
  }
  std::fflush(stdout);
  return 0;
}
