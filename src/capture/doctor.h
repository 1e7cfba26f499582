// kprof doctor (Gate 0): can this machine capture counters at all? Each check reads what the
// system exposes (files under a root folder, the environment, `ncu --version`), so the checks
// are pure functions of a SystemFacts value and testable on recorded facts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kprof::capture {

// One GPU's memory as nvidia-smi reports it (MiB): what a capture's replay must save per pass.
struct GpuMemory {
  int index = 0;
  std::string name;
  std::uint64_t total_mib = 0, used_mib = 0;
};

struct SystemFacts {
  std::string ncu_path;               // empty: not found
  std::string ncu_searched;           // where kprof looked
  bool ncu_is_script = false;         // starts with "#!": a wrapper picking an install
  std::string ncu_version;            // "Version 2025.3.1.0 (build …)"
  std::string driver_version;         // "580.159.04", as read (checked by the driver check)
  std::string driver_version_source;  // the file it was read from
  std::string cuda_toolkit_version;   // "13.0.88" from the toolkit's version.json
  std::string cuda_toolkit_source;
  std::optional<int> profiling_admin_only;  // RmProfilingAdminOnly from the driver's params
  unsigned effective_uid = 0;
  std::map<std::string, std::string> env;  // the variables doctor looks at
  std::string proc_version;                // /proc/version
  bool device_nodes = false;               // /dev/nvidiactl present
  // For kprof trace: its library and the libcupti.so.13 it needs (loaded and asked its version;
  // on this system only, not under --root).
  std::string tracer_path, tracer_searched;
  std::string cupti_path, cupti_searched, cupti_error;
  std::optional<std::uint32_t> cupti_version;
  // GPU memory in use, from `nvidia-smi --query-gpu` (NVML: no CUDA context is created, so a
  // busy server is not disturbed). Empty with gpu_memory_error saying why when not read.
  std::vector<GpuMemory> gpu_memory;
  std::string gpu_memory_error;
};

struct Check {
  std::string name;
  enum class Status { kOk, kWarning, kFailed, kInfo } status;
  std::string detail;
  std::string next;  // what to do; empty when nothing
};

// Parses `nvidia-smi --query-gpu=index,name,memory.total,memory.used --format=csv,noheader,
// nounits` ("0, NVIDIA H200, 143771, 1234" per GPU); a line that is not that is an error
// naming the line.
std::vector<GpuMemory> parse_gpu_memory(const std::string& text);

// The headroom check on its own (doctor runs it, and capture before it starts): per GPU, ok,
// or a warning with the capture cost measured on an H200 when the memory in use exceeds what is
// free beside it (ncu then backs the replay save up in system memory).
std::vector<Check> gpu_memory_checks(const SystemFacts& facts);

// nvidia-smi's reading of this system's GPUs, into facts.gpu_memory (or gpu_memory_error).
// KPROF_NVIDIA_SMI names another nvidia-smi (tests).
void gather_gpu_memory(SystemFacts& facts);

// Reads the facts from the running system; root prefixes every absolute path read (tests and
// container images), env is the process environment.
SystemFacts gather_system_facts(const std::string& root, const std::string& ncu_path,
                                const std::string& ncu_searched);

std::vector<Check> run_doctor_checks(const SystemFacts& facts);

// An ncu version range and a GPU known to give wrong counters together, with where that is
// said: the one table doctor's pairing check reads (known_bad_pairings()).
struct KnownBadPairing {
  std::string ncu_from, ncu_to;  // versions, inclusive ("2026.2", "2026.2.99")
  std::string gpu;               // a word of the GPU's name as nvidia-smi prints it ("B200")
  std::string what;              // what goes wrong
  std::string source;            // who says so
  std::string next;              // what to do
};
const std::vector<KnownBadPairing>& known_bad_pairings();

// The newest CUDA major a driver branch supports (580 → 13, 525..575 → 12, 450..520 → 11);
// nullopt for anything that is not a plausible driver version.
std::optional<int> cuda_major_of_driver(const std::string& driver_version);

// A driver version as NVIDIA numbers them: MAJOR.MINOR[.PATCH], a major of 300-999 (R300 to
// today's 5xx), two or three digits after each point. nullopt for anything else.
std::optional<int> driver_major_of(const std::string& driver_version);

}  // namespace kprof::capture
