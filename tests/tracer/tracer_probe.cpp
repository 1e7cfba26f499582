// Loads libkprof_tracer.so as the CUDA driver (and NVTX) do and calls one of its entry points:
//   tracer_probe LIBRARY ENTRY [--twice] [NAME=VALUE…]
// The variables are set first; what the entry returns goes to stdout, the tracer's messages to
// stderr. Exits normally, so the tracer's exit handler runs.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tracer_probe LIBRARY ENTRY [--twice] [NAME=VALUE...]\n");
    return 2;
  }
  int calls = 1;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--twice") == 0) {
      calls = 2;
      continue;
    }
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
  std::string entry = argv[2];
  void* symbol = dlsym(library, entry.c_str());
  if (!symbol) {
    std::printf("no symbol %s\n", entry.c_str());
    return 4;
  }
  for (int i = 0; i < calls; ++i) {
    int result = entry == "InitializeInjection" ? reinterpret_cast<int (*)()>(symbol)()
                                                : reinterpret_cast<int (*)(void*)>(symbol)(nullptr);
    std::printf("returned %d\n", result);
  }
  std::fflush(stdout);
  return 0;
}
