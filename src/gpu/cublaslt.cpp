#include "gpu/cublaslt.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace kprof::gpu {

std::vector<std::string> cublaslt_candidates() {
  std::vector<std::string> candidates;
  if (const char* chosen = std::getenv("KPROF_CUBLASLT"); chosen && *chosen) {
    // "none": kprof's own kernels only (the tests' stand-in driver, or a user who wants them).
    if (std::string(chosen) == "none") return {};
    candidates.emplace_back(chosen);
  }
  for (const char* name : {"libcublasLt.so.13", "libcublasLt.so.12"}) candidates.emplace_back(name);
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                          "/usr/local/cuda/targets/sbsa-linux/lib", "/usr/lib/x86_64-linux-gnu",
                          "/usr/lib/aarch64-linux-gnu"}) {
    for (const char* name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}) {
      candidates.push_back(std::string(dir) + "/" + name);
    }
  }
  return candidates;
}

namespace {

template <typename Function>
bool resolve(void* handle, Function*& slot, const char* name, std::string& missing) {
  slot = reinterpret_cast<Function*>(dlsym(handle, name));
  if (!slot && missing.empty()) missing = name;
  return slot != nullptr;
}

}  // namespace

std::shared_ptr<CublasLt> CublasLt::load(const std::vector<std::string>& libraries,
                                         std::string& why_not) {
  std::vector<std::string> reasons;
  for (const std::string& library : libraries) {
    // RTLD_LOCAL: cuBLAS's symbols stay out of the global namespace; RTLD_NOW: a broken install
    // fails here rather than in the middle of a measurement.
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* reason = dlerror();
      reasons.push_back(fmt::format("{}: {}", library, reason ? reason : "dlopen failed"));
      continue;
    }
    std::shared_ptr<CublasLt> lt(new CublasLt());
    lt->handle_ = handle;
    lt->library_ = library;
    CublasLtApi& api = lt->api_;
    std::string missing;
    resolve(handle, api.cublasLtCreate, "cublasLtCreate", missing);
    resolve(handle, api.cublasLtDestroy, "cublasLtDestroy", missing);
    resolve(handle, api.cublasLtGetVersion, "cublasLtGetVersion", missing);
    resolve(handle, api.cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate", missing);
    resolve(handle, api.cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy", missing);
    resolve(handle, api.cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute", missing);
    resolve(handle, api.cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate", missing);
    resolve(handle, api.cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy", missing);
    resolve(handle, api.cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate", missing);
    resolve(handle, api.cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy",
            missing);
    resolve(handle, api.cublasLtMatmulPreferenceSetAttribute,
            "cublasLtMatmulPreferenceSetAttribute", missing);
    resolve(handle, api.cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic", missing);
    resolve(handle, api.cublasLtMatmul, "cublasLtMatmul", missing);
    resolve(handle, api.cublasLtMatmulAlgoConfigGetAttribute,
            "cublasLtMatmulAlgoConfigGetAttribute", missing);
    if (!missing.empty()) {
      reasons.push_back(fmt::format("{}: lacks {}", library, missing));
      continue;  // the destructor closes it
    }
    why_not.clear();
    return lt;
  }
  if (libraries.empty()) {
    why_not = "no cuBLASLt looked for (KPROF_CUBLASLT=none)";
    return nullptr;
  }
  why_not = "no cuBLASLt found (";
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    if (i) why_not += "; ";
    why_not += reasons[i];
  }
  why_not += ")";
  return nullptr;
}

// The library stays loaded for the life of the process: libcublasLt carries its own static C++
// runtime, whose start-up allocations (the exception-handling pool) would become unreachable —
// a leak for LeakSanitizer — once it is unloaded, and unloading a CUDA library that may have
// started threads is not safe anyway. kprof loads it at most once per run.
CublasLt::~CublasLt() = default;

std::string CublasLt::version() const {
  std::size_t v = api_.cublasLtGetVersion ? api_.cublasLtGetVersion() : 0;
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

}  // namespace kprof::gpu
