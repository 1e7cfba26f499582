// A "CUDA program" for fake_cupti.cpp: loads libkprof_tracer.so as the driver does, calls
// InitializeInjection, then follows a script, one word per argument after the settings:
//   fake_app LIBRARY [NAME=VALUE…] -- WORD…
//   init              call InitializeInjection (as cuInit would)
//   steps:N           N steps: an NVTX range "ProfilerStep#K" around 3 kernel launches
//   launch:N          N launches outside any range
//   control:TEXT      write TEXT into $KPROF_TRACE_CONTROL (as `echo TEXT > file`)
//   wait:on, wait:off until the tracer has enabled / disabled kernel records (10 s at most)
//   threads:N:M       N threads at once, each holding its own buffer, M launches each
//   fork              fork a child that launches once and exits normally
//   sleep:MS
// It exits 0 when the script ran, 5 when a wait timed out; the tracer's exit handler then runs.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern "C" int fake_cupti_enabled(int kind);
extern "C" void fake_cupti_launch(const char* name);
extern "C" void fake_cupti_range(int start, unsigned id, const char* name);

namespace {

constexpr int kConcurrentKernel = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
const char* const kKernels[] = {"_Z7k_alphaPfi", "_Z6k_betaPf", "k_gamma"};

// NVTX names stay valid until the tracer's exit handler, registered after this object, has read
// them (CUPTI keeps its own copies).
std::deque<std::string> g_names;

bool wait_for(bool on) {
  for (int i = 0; i < 1000; ++i) {
    if ((fake_cupti_enabled(kConcurrentKernel) != 0) == on) return true;
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
  auto& names = g_names;
  unsigned step = 0;
  for (++i; i < argc; ++i) {
    std::string word = argv[i];
    std::string arg = word.substr(word.find(':') + 1);
    if (word == "init") {
      std::printf("InitializeInjection returned %d\n", initialize());
    } else if (word.rfind("steps:", 0) == 0) {
      for (int n = std::atoi(arg.c_str()); n > 0; --n, ++step) {
        names.push_back("ProfilerStep#" + std::to_string(step));
        fake_cupti_range(1, step + 1, names.back().c_str());
        for (const char* kernel : kKernels) fake_cupti_launch(kernel);
        fake_cupti_range(0, step + 1, nullptr);
      }
    } else if (word.rfind("launch:", 0) == 0) {
      for (int n = std::atoi(arg.c_str()); n > 0; --n) fake_cupti_launch(kKernels[0]);
    } else if (word.rfind("control:", 0) == 0) {
      std::ofstream(std::getenv("KPROF_TRACE_CONTROL"), std::ios::trunc) << arg << "\n";
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
    } else {
      std::printf("unknown word %s\n", word.c_str());
      return 2;
    }
  }
  std::fflush(stdout);
  return 0;
}
