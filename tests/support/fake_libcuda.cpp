// A stand-in for libcuda.so.1 for host-side tests of kprof's driver loader and selftest runner:
// it exports the entry points kprof resolves, under the names the real library exports, and
// behaves like an H200 without running anything. What it checks on its own (independently of
// kprof's code): PTX is accepted only up to a PTX ISA version and for a target not newer than
// the device; kernel arguments are read with the sizes its own parse of the PTX entry gives;
// anything that looks like a device address must lie inside a live allocation; dynamic shared
// memory above 48 KB needs the opt-in attribute. Time is virtual: each launch advances a clock by
// the kernel's configured duration, and events read that clock.
//
// Environment: KPROF_FAKE_CUDA_CC ("9.0"), KPROF_FAKE_CUDA_NO_DEVICE (cuInit fails with
// CUDA_ERROR_NO_DEVICE), KPROF_FAKE_CUDA_MAX_PTX_ISA ("9.0": newer PTX is refused with
// CUDA_ERROR_UNSUPPORTED_PTX_VERSION), KPROF_FAKE_CUDA_KERNEL_US ("k_a=500,k_b=2"; others 100).
// kprof_fake_cuda_log() returns what happened, one line per event.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Result = int;
constexpr Result kSuccess = 0;
constexpr Result kInvalidValue = 1;
constexpr Result kNotInitialized = 3;
constexpr Result kNoDevice = 100;
constexpr Result kInvalidDevice = 101;
constexpr Result kNoBinaryForGpu = 209;
constexpr Result kInvalidPtx = 218;
constexpr Result kUnsupportedPtxVersion = 222;
constexpr Result kInvalidHandle = 400;
constexpr Result kNotFound = 500;

constexpr std::uint64_t kDeviceBase = 0x7f0000000000ull;

struct Entry {
  std::string name;
  std::vector<std::size_t> param_sizes;
  int max_dynamic_shared = 48 * 1024;
};

struct Module {
  std::vector<Entry*> entries;
};

struct State {
  std::mutex mutex;
  bool initialized = false;
  int cc_major = 9, cc_minor = 0;
  int retained = 0;
  std::map<std::uint64_t, std::uint64_t> allocations;  // base -> bytes
  std::uint64_t next_address = kDeviceBase;
  std::vector<Module*> modules;
  std::map<void*, double> events;  // recorded virtual time, seconds
  double clock = 0;                // virtual GPU time, seconds
  std::vector<std::string> log;
  std::string log_text;
};

State& state() {
  static State s;
  return s;
}

std::string env(const char* name, const char* fallback = "") {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

// "9.0" -> 90; "8.4" -> 84.
int version_number(const std::string& text) {
  int major = 0, minor = 0;
  if (std::sscanf(text.c_str(), "%d.%d", &major, &minor) != 2) return 0;
  return major * 10 + minor;
}

[[maybe_unused]] double kernel_seconds(const std::string& name) {
  std::stringstream list(env("KPROF_FAKE_CUDA_KERNEL_US"));
  std::string item;
  while (std::getline(list, item, ',')) {
    auto eq = item.find('=');
    if (eq != std::string::npos && item.substr(0, eq) == name) {
      return std::atof(item.c_str() + eq + 1) * 1e-6;
    }
  }
  return 100e-6;
}

bool inside_allocation(const State& s, std::uint64_t address, std::uint64_t bytes) {
  auto it = s.allocations.upper_bound(address);
  if (it == s.allocations.begin()) return false;
  --it;
  return address >= it->first && address + bytes <= it->first + it->second;
}

[[maybe_unused]] std::string describe_address(const State& s, std::uint64_t address) {
  int index = 0;
  for (const auto& [base, bytes] : s.allocations) {
    if (address >= base && address < base + bytes) {
      return "buf" + std::to_string(index) + "[" + std::to_string(bytes) + "]+" +
             std::to_string(address - base);
    }
    ++index;
  }
  return "?";
}

// The fake's own reading of PTX entries: `.entry NAME(` then `.param .TYPE NAME[N]` lines up to
// `)`. Sizes from the type's bit count (u64 -> 8) times the array length.
std::vector<Entry> parse_entries(const std::string& ptx) {
  std::vector<Entry> entries;
  std::size_t at = 0;
  while ((at = ptx.find(".entry ", at)) != std::string::npos) {
    at += 7;
    std::size_t open = ptx.find('(', at);
    std::size_t close = ptx.find(')', open);
    if (open == std::string::npos || close == std::string::npos) break;
    Entry entry;
    entry.name = ptx.substr(at, open - at);
    entry.name.erase(entry.name.find_last_not_of(" \t\n") + 1);
    std::string params = ptx.substr(open + 1, close - open - 1);
    std::size_t p = 0;
    while ((p = params.find(".param", p)) != std::string::npos) {
      p += 6;
      std::size_t type = params.find('.', p);
      if (params.compare(type, 7, ".align ") == 0) type = params.find('.', type + 1);
      std::size_t bits_at = type + 2;
      int bits = std::atoi(params.c_str() + bits_at);
      std::size_t end = params.find_first_of(",\n", bits_at);
      std::string rest =
          params.substr(bits_at, end == std::string::npos ? std::string::npos : end - bits_at);
      std::size_t count = 1;
      if (auto bracket = rest.find('['); bracket != std::string::npos) {
        count = std::strtoul(rest.c_str() + bracket + 1, nullptr, 10);
      }
      entry.param_sizes.push_back(static_cast<std::size_t>(bits / 8) * count);
    }
    entries.push_back(entry);
    at = close;
  }
  return entries;
}

void note(State& s, std::string line) { s.log.push_back(std::move(line)); }

}  // namespace

extern "C" {

Result cuInit(unsigned) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!env("KPROF_FAKE_CUDA_NO_DEVICE").empty()) return kNoDevice;
  std::string cc = env("KPROF_FAKE_CUDA_CC", "9.0");
  std::sscanf(cc.c_str(), "%d.%d", &s.cc_major, &s.cc_minor);
  s.initialized = true;
  return kSuccess;
}

Result cuDriverGetVersion(int* version) {
  *version = 13000;
  return kSuccess;
}

Result cuDeviceGetCount(int* count) {
  if (!state().initialized) return kNotInitialized;
  *count = 1;
  return kSuccess;
}

Result cuDeviceGet(int* device, int ordinal) {
  if (!state().initialized) return kNotInitialized;
  if (ordinal != 0) return kInvalidDevice;
  *device = 0;
  return kSuccess;
}

Result cuDeviceGetName(char* name, int length, int) {
  std::snprintf(name, static_cast<std::size_t>(length), "%s",
                env("KPROF_FAKE_CUDA_NAME", "NVIDIA H200").c_str());
  return kSuccess;
}

// The H200's values, as ncu recorded them (data/h200/bottleneck_suite_full.ncu-rep.zst).
Result cuDeviceGetAttribute(int* value, int attribute, int) {
  State& s = state();
  switch (attribute) {
    case 16:
      *value = 132;
      return kSuccess;  // multiprocessors
    case 38:
      *value = 62914560;
      return kSuccess;  // L2 bytes
    case 39:
      *value = 2048;
      return kSuccess;  // threads per SM
    case 75:
      *value = s.cc_major;
      return kSuccess;
    case 76:
      *value = s.cc_minor;
      return kSuccess;
    case 81:
      *value = 233472;
      return kSuccess;  // shared memory per SM
    case 97:
      *value = 232448;
      return kSuccess;  // opt-in shared memory per block
    case 106:
      *value = 32;
      return kSuccess;  // blocks per SM
    default:
      return kInvalidValue;
  }
}

Result cuDeviceTotalMem_v2(std::size_t* bytes, int) {
  *bytes = 150754820096ull;
  return kSuccess;
}

Result cuDevicePrimaryCtxRetain(void** context, int) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  ++s.retained;
  *context = &s;
  note(s, "context retained");
  return kSuccess;
}

Result cuDevicePrimaryCtxRelease_v2(int) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.retained == 0) return kInvalidValue;
  --s.retained;
  note(s, "context released");
  return kSuccess;
}

Result cuCtxSetCurrent(void*) { return kSuccess; }
Result cuCtxSynchronize() { return kSuccess; }

Result cuModuleLoadDataEx(void** module, const void* image, unsigned, int*, void**) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::string ptx(static_cast<const char*>(image));
  std::size_t version_at = ptx.find("\n.version ");
  std::size_t target_at = ptx.find("\n.target sm_");
  if (version_at == std::string::npos || target_at == std::string::npos) return kInvalidPtx;
  int isa = version_number(ptx.substr(version_at + 10, 4));
  int target = std::atoi(ptx.c_str() + target_at + 12);
  note(s, "module load: PTX ISA " + std::to_string(isa / 10) + "." + std::to_string(isa % 10) +
              " target sm_" + std::to_string(target));
  if (isa > version_number(env("KPROF_FAKE_CUDA_MAX_PTX_ISA", "9.0"))) {
    return kUnsupportedPtxVersion;
  }
  if (target > s.cc_major * 10 + s.cc_minor) return kNoBinaryForGpu;
  auto* loaded = new Module();
  for (Entry& entry : parse_entries(ptx)) loaded->entries.push_back(new Entry(entry));
  s.modules.push_back(loaded);
  *module = loaded;
  return kSuccess;
}

Result cuModuleUnload(void* module) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = std::find(s.modules.begin(), s.modules.end(), module);
  if (it == s.modules.end()) return kInvalidHandle;
  for (Entry* entry : (*it)->entries) delete entry;
  delete *it;
  s.modules.erase(it);
  note(s, "module unloaded");
  return kSuccess;
}

Result cuModuleGetFunction(void** function, void* module, const char* name) {
  auto* m = static_cast<Module*>(module);
  for (Entry* entry : m->entries) {
    if (entry->name == name) {
      *function = entry;
      return kSuccess;
    }
  }
  return kNotFound;
}

Result cuFuncGetAttribute(int* value, int attribute, void*) {
  if (attribute != 4) return kInvalidValue;  // only the register count is asked for
  *value = 32;
  return kSuccess;
}

Result cuFuncSetAttribute(void* function, int attribute, int value) {
  if (attribute != 8 || value < 0 || value > 232448) return kInvalidValue;
  static_cast<Entry*>(function)->max_dynamic_shared = value;
  return kSuccess;
}

#ifndef KPROF_FAKE_CUDA_WITHOUT_PARAM_INFO
Result cuFuncGetParamInfo(void* function, std::size_t index, std::size_t* offset,
                          std::size_t* size) {
  const Entry& entry = *static_cast<Entry*>(function);
  if (index >= entry.param_sizes.size()) return kInvalidValue;
  // Each parameter at the next multiple of its own size (its alignment for scalars).
  std::size_t at = 0;
  for (std::size_t i = 0;; ++i) {
    std::size_t align = std::min<std::size_t>(entry.param_sizes[i], 8);
    at = (at + align - 1) / align * align;
    if (i == index) break;
    at += entry.param_sizes[i];
  }
  *offset = at;
  *size = entry.param_sizes[index];
  return kSuccess;
}
#endif

#ifndef KPROF_FAKE_CUDA_WITHOUT_LAUNCH
Result cuLaunchKernel(void* function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                      unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                      void* stream, void** params, void** extra) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const Entry& entry = *static_cast<Entry*>(function);
  if (grid_x == 0 || grid_y != 1 || grid_z != 1 || block_x == 0 || block_x > 1024 || block_y != 1 ||
      block_z != 1 || stream != nullptr || extra != nullptr) {
    return kInvalidValue;
  }
  if (shared_bytes > static_cast<unsigned>(entry.max_dynamic_shared)) return kInvalidValue;
  if (!entry.param_sizes.empty() && !params) return kInvalidValue;
  std::string args;
  for (std::size_t i = 0; i < entry.param_sizes.size(); ++i) {
    std::uint64_t value = 0;
    std::memcpy(&value, params[i], entry.param_sizes[i]);
    if (value >= kDeviceBase && value < kDeviceBase + (1ull << 44)) {
      if (!inside_allocation(s, value, 1)) return kInvalidValue;
      args += (i ? "," : "") + describe_address(s, value);
    } else {
      args += (i ? "," : "") + std::to_string(value);
    }
  }
  s.clock += kernel_seconds(entry.name);
  note(s, "launch " + entry.name + " grid=" + std::to_string(grid_x) +
              " block=" + std::to_string(block_x) + " shared=" + std::to_string(shared_bytes) +
              " args=" + args);
  return kSuccess;
}
#endif

Result cuMemAlloc_v2(std::uint64_t* pointer, std::size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (bytes == 0) return kInvalidValue;
  *pointer = s.next_address;
  s.allocations[s.next_address] = bytes;
  s.next_address += (bytes + 0xffff) & ~0xffffull;
  return kSuccess;
}

Result cuMemFree_v2(std::uint64_t pointer) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.allocations.erase(pointer) ? kSuccess : kInvalidValue;
}

Result cuMemsetD8_v2(std::uint64_t pointer, unsigned char, std::size_t count) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return inside_allocation(s, pointer, count) ? kSuccess : kInvalidValue;
}

Result cuMemcpyHtoD_v2(std::uint64_t destination, const void* source, std::size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!source || !inside_allocation(s, destination, bytes)) return kInvalidValue;
  note(s, "copy to device: " + std::to_string(bytes) + " bytes");
  return kSuccess;
}

Result cuMemcpyDtoH_v2(void* destination, std::uint64_t source, std::size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!inside_allocation(s, source, bytes)) return kInvalidValue;
  std::memset(destination, 0, bytes);
  return kSuccess;
}

Result cuEventCreate(void** event, unsigned flags) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (flags != 0) return kInvalidValue;
  *event = new char;
  s.events[*event] = -1;
  return kSuccess;
}

Result cuEventRecord(void* event, void*) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.events.find(event);
  if (it == s.events.end()) return kInvalidHandle;
  it->second = s.clock;
  return kSuccess;
}

Result cuEventSynchronize(void* event) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.events.count(event) ? kSuccess : kInvalidHandle;
}

Result cuEventElapsedTime_v2(float* milliseconds, void* start, void* end) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto a = s.events.find(start), b = s.events.find(end);
  if (a == s.events.end() || b == s.events.end() || a->second < 0 || b->second < 0) {
    return kInvalidHandle;
  }
  *milliseconds = static_cast<float>((b->second - a->second) * 1e3);
  return kSuccess;
}

Result cuEventDestroy_v2(void* event) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.events.erase(event)) return kInvalidHandle;
  delete static_cast<char*>(event);
  return kSuccess;
}

Result cuGetErrorName(Result error, const char** name) {
  static const std::map<Result, const char*> kNames = {
      {kSuccess, "CUDA_SUCCESS"},
      {kInvalidValue, "CUDA_ERROR_INVALID_VALUE"},
      {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED"},
      {kNoDevice, "CUDA_ERROR_NO_DEVICE"},
      {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE"},
      {kNoBinaryForGpu, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
      {kInvalidPtx, "CUDA_ERROR_INVALID_PTX"},
      {kUnsupportedPtxVersion, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
      {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE"},
      {kNotFound, "CUDA_ERROR_NOT_FOUND"}};
  auto it = kNames.find(error);
  if (it == kNames.end()) return kInvalidValue;
  *name = it->second;
  return kSuccess;
}

Result cuGetErrorString(Result error, const char** text) {
  static const std::map<Result, const char*> kTexts = {
      {kInvalidValue, "invalid argument"},
      {kNoDevice, "no CUDA-capable device is detected"},
      {kUnsupportedPtxVersion, "the provided PTX was compiled with an unsupported toolchain."},
      {kNoBinaryForGpu, "no kernel image is available for execution on the device"}};
  auto it = kTexts.find(error);
  if (it == kTexts.end()) return kInvalidValue;
  *text = it->second;
  return kSuccess;
}

// For the tests: the log so far (one line per event), and a fresh start.
const char* kprof_fake_cuda_log() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.log_text.clear();
  for (const std::string& line : s.log) s.log_text += line + "\n";
  return s.log_text.c_str();
}

int kprof_fake_cuda_live_allocations() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return static_cast<int>(s.allocations.size()) + static_cast<int>(s.modules.size()) +
         static_cast<int>(s.events.size()) + s.retained;
}

void kprof_fake_cuda_reset() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.log.clear();
  s.clock = 0;
  s.initialized = false;
}

}  // extern "C"
