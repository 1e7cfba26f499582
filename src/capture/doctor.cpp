#include "capture/doctor.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "capture/ncu_locator.h"
#include "capture/ncu_versions.h"
#include "capture/tracer_run.h"
#include "common/child_process.h"
#include "common/json_table.h"
#include "common/text.h"

namespace kprof::capture {
namespace {

std::optional<std::string> read_optional_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int major_of(const std::string& version) { return std::atoi(version.c_str()); }

}  // namespace

std::optional<int> driver_major_of(const std::string& driver_version) {
  static const RE2 kVersion("(\\d{3})\\.\\d{1,3}(?:\\.\\d{1,3})?");
  int major = 0;
  if (!RE2::FullMatch(driver_version, kVersion, &major) || major < 300) return std::nullopt;
  return major;
}

std::optional<int> cuda_major_of_driver(const std::string& driver_version) {
  std::optional<int> branch = driver_major_of(driver_version);
  if (!branch) return std::nullopt;
  if (*branch >= 580) return 13;
  if (*branch >= 525) return 12;
  if (*branch >= 450) return 11;
  return 10;
}

SystemFacts gather_system_facts(const std::string& root, const std::string& ncu_path,
                                const std::string& ncu_searched) {
  SystemFacts facts;
  facts.ncu_path = ncu_path;
  facts.ncu_searched = ncu_searched;
  if (!ncu_path.empty()) {
    std::ifstream in(ncu_path, std::ios::binary);
    char head[2] = {0, 0};
    in.read(head, 2);
    facts.ncu_is_script = head[0] == '#' && head[1] == '!';
    facts.ncu_version = ncu_version_line(ncu_path);
  }
  if (auto text = read_optional_text(root + "/sys/module/nvidia/version")) {
    facts.driver_version = std::string(trim(*text));
    facts.driver_version_source = "/sys/module/nvidia/version";
  } else if (auto text = read_optional_text(root + "/proc/driver/nvidia/version")) {
    std::string version;
    if (RE2::PartialMatch(*text, "Kernel Module(?: for \\S+)?\\s+(\\d+\\.\\d+(?:\\.\\d+)?)",
                          &version)) {
      facts.driver_version = version;
      facts.driver_version_source = "/proc/driver/nvidia/version";
    }
  }
  for (const char* candidate : {"/usr/local/cuda/version.json", "/usr/local/cuda/version.txt"}) {
    auto text = read_optional_text(root + candidate);
    if (!text) continue;
    std::string version;
    if (RE2::PartialMatch(*text, "\"cuda\"\\s*:\\s*\\{[^}]*\"version\"\\s*:\\s*\"([0-9.]+)\"",
                          &version) ||
        RE2::PartialMatch(*text, "CUDA Version ([0-9.]+)", &version)) {
      facts.cuda_toolkit_version = version;
      facts.cuda_toolkit_source = candidate;
      break;
    }
  }
  // Toolkits without version.json (CUDA 13.0 on the H200) still carry the runtime header.
  if (facts.cuda_toolkit_version.empty()) {
    const char* header = "/usr/local/cuda/include/cuda_runtime_api.h";
    int version = 0;
    if (auto text = read_optional_text(root + header);
        text && RE2::PartialMatch(*text, "#define CUDART_VERSION\\s+(\\d+)", &version)) {
      facts.cuda_toolkit_version = fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
      facts.cuda_toolkit_source = header;
    }
  }
  if (auto text = read_optional_text(root + "/proc/driver/nvidia/params")) {
    int value = 0;
    if (RE2::PartialMatch(*text, "RmProfilingAdminOnly: (\\d+)", &value)) {
      facts.profiling_admin_only = value;
    }
  }
  facts.effective_uid = geteuid();
  for (const char* name : {"CUDA_INJECTION64_PATH", "NV_COMPUTE_PROFILER_DISABLE_STALL_SAMPLING",
                           "CUDA_VISIBLE_DEVICES", "KUBERNETES_SERVICE_HOST"}) {
    if (const char* value = std::getenv(name)) facts.env[name] = value;
  }
  facts.proc_version = std::string(trim(read_optional_text(root + "/proc/version").value_or("")));
  std::error_code error;
  facts.device_nodes = std::filesystem::exists(root + "/dev/nvidiactl", error);
  TracerLocation tracer = locate_tracer("", own_executable());
  facts.tracer_path = tracer.path;
  facts.tracer_searched = tracer.searched;
  if (!root.empty()) {
    facts.cupti_error = "not checked with --root (libraries are loaded from this system only)";
  } else {
    const char* ld_library_path = std::getenv("LD_LIBRARY_PATH");
    std::vector<std::string> dirs = library_path_dirs(ld_library_path ? ld_library_path : "");
    if (!tracer.path.empty()) {
      dirs.push_back(std::filesystem::path(tracer.path).parent_path().string());
    }
    CuptiProbe cupti = probe_cupti(dirs);
    facts.cupti_path = cupti.path;
    facts.cupti_searched = cupti.searched;
    facts.cupti_error = cupti.error;
    facts.cupti_version = cupti.version;
  }
  if (root.empty() || std::getenv("KPROF_NVIDIA_SMI")) {
    gather_gpu_memory(facts);
  } else {
    facts.gpu_memory_error = "not read with --root (nvidia-smi asks this system's driver)";
  }
  return facts;
}

std::vector<GpuMemory> parse_gpu_memory(const std::string& text) {
  static const RE2 kLine(R"(\s*(\d+)\s*,\s*([^,]*?)\s*,\s*(\d+)\s*,\s*(\d+)\s*)");
  std::vector<GpuMemory> gpus;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (trim(line).empty()) continue;
    GpuMemory gpu;
    if (!RE2::FullMatch(line, kLine, &gpu.index, &gpu.name, &gpu.total_mib, &gpu.used_mib) ||
        gpu.total_mib == 0 || gpu.used_mib > gpu.total_mib) {
      throw std::runtime_error(fmt::format(
          "nvidia-smi line {}: expected \"INDEX, NAME, TOTAL MiB, USED MiB\", got \"{}\"", number,
          line.substr(0, 120)));
    }
    gpus.push_back(gpu);
  }
  return gpus;
}

void gather_gpu_memory(SystemFacts& facts) {
  const char* override_path = std::getenv("KPROF_NVIDIA_SMI");
  std::string smi = override_path && *override_path ? override_path : find_executable("nvidia-smi");
  if (smi.empty()) {
    facts.gpu_memory_error = "nvidia-smi not found on PATH";
    return;
  }
  ChildRequest request;
  request.argv = {smi, "--query-gpu=index,name,memory.total,memory.used",
                  "--format=csv,noheader,nounits"};
  request.timeout = std::chrono::milliseconds(15000);
  ChildResult result = run_child(request);
  if (result.timed_out) {
    facts.gpu_memory_error = fmt::format("{} did not answer within 15 s", smi);
    return;
  }
  if (!result.started || result.exit_code != 0) {
    std::string said(trim(result.err.empty() ? result.out : result.err));
    facts.gpu_memory_error = fmt::format(
        "{} failed ({}){}", smi,
        result.started ? fmt::format("exit status {}", result.exit_code) : result.start_error,
        said.empty() ? "" : ": " + said.substr(0, said.find('\n')));
    return;
  }
  // Line by line: a GPU nvidia-smi cannot read ([N/A] under MIG, [Insufficient Permissions])
  // must not hide the others' readings.
  std::istringstream lines(result.out);
  std::string line, errors;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (trim(line).empty()) continue;
    try {
      for (GpuMemory& gpu : parse_gpu_memory(line)) facts.gpu_memory.push_back(gpu);
    } catch (const std::runtime_error&) {
      errors += fmt::format("{}line {} unreadable (\"{}\")", errors.empty() ? "" : "; ", number,
                            line.substr(0, 80));
    }
  }
  if (!errors.empty()) facts.gpu_memory_error = smi + ": " + errors;
  if (facts.gpu_memory.empty() && errors.empty()) facts.gpu_memory_error = smi + " listed no GPU";
}

std::vector<Check> gpu_memory_checks(const SystemFacts& facts) {
  using S = Check::Status;
  std::vector<Check> checks;
  if (facts.gpu_memory.empty()) {
    checks.push_back({"GPU memory headroom", S::kInfo,
                      "not checked: " + (facts.gpu_memory_error.empty() ? std::string("no GPU")
                                                                        : facts.gpu_memory_error),
                      ""});
    return checks;
  }
  if (!facts.gpu_memory_error.empty()) {
    checks.push_back(
        {"GPU memory headroom", S::kInfo, "some GPUs not checked: " + facts.gpu_memory_error, ""});
  }
  for (const GpuMemory& gpu : facts.gpu_memory) {
    double total_gib = gpu.total_mib / 1024.0, used_gib = gpu.used_mib / 1024.0;
    std::string name = fmt::format("GPU {} memory headroom", gpu.index);
    std::string state =
        fmt::format("{}: {:.1f} of {:.1f} GiB in use", gpu.name, used_gib, total_gib);
    // Kernel replay saves the memory a kernel may touch before each pass and restores it after.
    // ncu keeps that copy in free device memory when it fits and in system memory when it does
    // not. On the H200 (140.4 GiB) 5, 40 and 65 GiB resident stayed on the device and 80 and
    // 100 GiB went to system memory (bench/capture-cost.sh): "more in use than free" is the
    // line between them.
    if (gpu.used_mib * 2 > gpu.total_mib) {
      checks.push_back(
          {name, S::kWarning,
           state + " — more than is free beside it, so ncu will back the replay memory up in "
                   "system memory: measured on an H200, 18 s per profiled kernel with 80 GiB "
                   "resident and 33-41 s with 100 GiB, for every preset (1-5 s up to 65 GiB)",
           "profile few kernels (-k, --launch-count), hold less device memory while capturing "
           "(vLLM --gpu-memory-utilization, SGLang --mem-fraction-static, a smaller batch), or "
           "--replay-mode application"});
    } else if (gpu.used_mib * 4 > gpu.total_mib) {
      checks.push_back({name, S::kOk,
                        state + " — the replay save fits in the free memory (H200, 40 GiB "
                                "resident: 2.0 s per kernel with triage, 5.2 s with full)",
                        ""});
    } else {
      checks.push_back({name, S::kOk, state, ""});
    }
  }
  return checks;
}

namespace {

// ncu found, and answering --version.
void ncu_check(const SystemFacts& facts, std::vector<Check>& checks) {
  using S = Check::Status;
  if (facts.ncu_path.empty()) {
    checks.push_back({"ncu", S::kFailed,
                      fmt::format("not found (looked in {})", facts.ncu_searched),
                      "install Nsight Compute (the CUDA toolkit's nsight-compute package) or "
                      "pass --ncu PATH / set KPROF_NCU"});
  } else if (facts.ncu_version.empty()) {
    checks.push_back({"ncu", S::kFailed,
                      fmt::format("{} does not answer --version", facts.ncu_path),
                      "run it by hand: a broken install or a missing library"});
  } else {
    checks.push_back(
        {"ncu", S::kOk,
         fmt::format("{}: {}{}", facts.ncu_path, facts.ncu_version,
                     facts.ncu_is_script ? " (a wrapper script: it runs the newest Nsight Compute "
                                           "installed; this is that version)"
                                         : ""),
         ""});
  }
}

// The kernel driver's version, and the CUDA major it supports.
void driver_check(const SystemFacts& facts, std::vector<Check>& checks) {
  using S = Check::Status;
  std::optional<int> driver_major = cuda_major_of_driver(facts.driver_version);
  if (facts.driver_version.empty()) {
    checks.push_back({"driver", facts.device_nodes ? S::kWarning : S::kFailed,
                      "no NVIDIA kernel driver version found (/sys/module/nvidia/version, "
                      "/proc/driver/nvidia/version)",
                      facts.device_nodes ? ""
                                         : "no GPU driver here: run on the GPU host or in a "
                                           "container that has the GPU"});
  } else if (!driver_major) {
    // A file under --root that is not what the driver writes (or a damaged install): saying
    // "supports CUDA up to 13.x" of "99999.1" would be a guess dressed as a fact.
    checks.push_back(
        {"driver", S::kFailed,
         fmt::format("{} holds {}, not a driver version (expected MAJOR.MINOR[.PATCH] with a "
                     "major of 300-999, e.g. 580.159.04)",
                     facts.driver_version_source.empty() ? "the driver version file"
                                                         : facts.driver_version_source,
                     quote_json_value(nlohmann::json(facts.driver_version))),
         "check the driver (`nvidia-smi`) and, with --root, that it points at a node's or "
         "image's root folder"});
  } else {
    checks.push_back(
        {"driver", S::kOk,
         fmt::format("{} (supports CUDA up to {}.x)", facts.driver_version, *driver_major), ""});
  }
}

// The CUDA toolkit against what the driver supports.
void cuda_versions_check(const SystemFacts& facts, std::vector<Check>& checks) {
  using S = Check::Status;
  std::optional<int> driver_major = cuda_major_of_driver(facts.driver_version);
  if (!facts.cuda_toolkit_version.empty() && driver_major) {
    int toolkit_major = major_of(facts.cuda_toolkit_version);
    if (toolkit_major > *driver_major) {
      checks.push_back(
          {"cuda versions", S::kFailed,
           fmt::format("CUDA toolkit {} ({}) is newer than the driver supports (CUDA {}.x, "
                       "driver {}): CUPTI and ncu's profiler library fail to initialise",
                       facts.cuda_toolkit_version, facts.cuda_toolkit_source, *driver_major,
                       facts.driver_version),
           fmt::format("use a toolkit/ncu for CUDA {} or upgrade the driver", *driver_major)});
    } else {
      checks.push_back({"cuda versions", S::kOk,
                        fmt::format("toolkit {} on a CUDA {}.x driver", facts.cuda_toolkit_version,
                                    *driver_major),
                        ""});
    }
  }
}

// Who may read the counters (RmProfilingAdminOnly).
void counter_permission_check(const SystemFacts& facts, std::vector<Check>& checks) {
  using S = Check::Status;
  if (!facts.profiling_admin_only) {
    checks.push_back({"counter permission", S::kInfo,
                      "RmProfilingAdminOnly not readable (/proc/driver/nvidia/params)", ""});
  } else if (*facts.profiling_admin_only == 0) {
    checks.push_back({"counter permission", S::kOk,
                      "RmProfilingAdminOnly: 0 (any user may read GPU counters)", ""});
  } else if (facts.effective_uid == 0) {
    checks.push_back({"counter permission", S::kOk,
                      "RmProfilingAdminOnly: 1, running as root (in a container, root also "
                      "needs CAP_SYS_ADMIN)",
                      ""});
  } else {
    checks.push_back(
        {"counter permission", S::kFailed,
         fmt::format("RmProfilingAdminOnly: 1 and uid {}: ncu will fail with ERR_NVGPUCTRPERM",
                     facts.effective_uid),
         "run as root (or with CAP_SYS_ADMIN), or set the driver option "
         "NVreg_RestrictProfilingToAdminUsers=0 and reload it"});
  }
}

// CUDA_INJECTION64_PATH already taken by another profiler.
void injection_check(const SystemFacts& facts, std::vector<Check>& checks) {
  using S = Check::Status;
  if (auto it = facts.env.find("CUDA_INJECTION64_PATH"); it != facts.env.end()) {
    std::string owner = injection_owner(it->second);
    checks.push_back(
        {"CUDA_INJECTION64_PATH", S::kWarning,
         fmt::format("the injection slot is taken: already set to {} ({}); ncu puts its own in "
                     "its place for the target (seen on an H200), so that tool is blind while "
                     "kprof captures, and kprof trace's tracer stays off under another tool",
                     it->second,
                     owner.empty() ? "another profiler or tracer, not recognised" : owner),
         owner == "kprof's tracer"
             ? "this shell runs under kprof's tracer: unset CUDA_INJECTION64_PATH to capture"
             : "expect a gap in the other tool's data, or pause it for the capture"});
  } else {
    checks.push_back({"CUDA_INJECTION64_PATH", S::kOk,
                      "not set: the injection slot is free (ncu, nsys or kprof trace can take it)",
                      ""});
  }
}

// kprof trace's CUPTI.
void cupti_check(const SystemFacts& facts, std::vector<Check>& checks) {
  using S = Check::Status;
  // kprof trace's needs; capture does not depend on them (ncu brings its own CUPTI), so a gap
  // here is a warning, never a failed check.
  if (facts.cupti_version && *facts.cupti_version >= kCuptiMinimumVersion) {
    checks.push_back(
        {"CUPTI", S::kOk,
         fmt::format("{}: CUPTI {} (API version {}), what kprof trace needs", facts.cupti_path,
                     cupti_version_text(facts.cupti_version), *facts.cupti_version),
         ""});
  } else if (facts.cupti_version) {
    checks.push_back(
        {"CUPTI", S::kWarning,
         fmt::format("{}: CUPTI {} (API version {}), older than the 13.0 kprof trace needs",
                     facts.cupti_path, cupti_version_text(facts.cupti_version),
                     *facts.cupti_version),
         "put CUDA 13's libcupti.so.13 first on LD_LIBRARY_PATH or beside libkprof_tracer.so"});
  } else {
    checks.push_back(
        {"CUPTI", S::kWarning,
         fmt::format("{}{}: kprof trace cannot run (capture is unaffected)", facts.cupti_error,
                     facts.cupti_searched.empty()
                         ? ""
                         : fmt::format(" (looked at {})", facts.cupti_searched)),
         "install CUDA 13's CUPTI (the toolkit, or pip's nvidia-cuda-cupti-cu13) and "
         "name its folder in LD_LIBRARY_PATH"});
  }
}

// kprof trace's own library.
void tracer_check(const SystemFacts& facts, std::vector<Check>& checks) {
  using S = Check::Status;
  if (!facts.tracer_path.empty()) {
    checks.push_back({"kprof tracer", S::kOk, facts.tracer_path, ""});
  } else {
    checks.push_back({"kprof tracer", S::kInfo,
                      fmt::format("libkprof_tracer.so not found (looked at {}): kprof trace needs "
                                  "it or --tracer-lib",
                                  facts.tracer_searched),
                      "build kprof where CUPTI 13 is installed, or install the library beside "
                      "kprof"});
  }
}

// A sandbox that blocks the counters.
void sandbox_check(const SystemFacts& facts, std::vector<Check>& checks) {
  using S = Check::Status;
  if (facts.proc_version.find("4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016") != std::string::npos) {
    checks.push_back({"sandbox", S::kFailed,
                      "running under gVisor (runsc): GPU performance counters cannot be read "
                      "through its GPU proxy",
                      "capture on a node/runtime class without gVisor (runc)"});
  } else if (facts.proc_version.find("microsoft") != std::string::npos ||
             facts.proc_version.find("Microsoft") != std::string::npos) {
    checks.push_back({"sandbox", S::kWarning,
                      "WSL: ncu needs the Windows driver's developer-mode counter access",
                      "enable GPU performance counters for all users in the NVIDIA Control "
                      "Panel (Developer settings)"});
  } else {
    checks.push_back({"sandbox", S::kOk, "no known counter-blocking sandbox", ""});
  }
}

// The GPU device nodes.
void device_check(const SystemFacts& facts, std::vector<Check>& checks) {
  using S = Check::Status;
  if (!facts.device_nodes) {
    checks.push_back({"GPU device", S::kFailed, "/dev/nvidiactl is absent: no GPU is visible here",
                      "run on a GPU host, or give the container the GPU (--gpus / a GPU "
                      "resource request)"});
  } else {
    std::vector<Check> memory = gpu_memory_checks(facts);
    checks.insert(checks.end(), memory.begin(), memory.end());
  }
}

// This ncu on these GPUs, against the table of pairings known to give wrong counters.
void pairing_check(const SystemFacts& facts, std::vector<Check>& checks) {
  using S = Check::Status;
  std::optional<NcuVersion> ncu = parse_ncu_version(facts.ncu_version);
  if (!ncu) return;  // the ncu check said why
  for (const KnownBadPairing& pairing : known_bad_pairings()) {
    std::optional<NcuVersion> from = parse_ncu_version(pairing.ncu_from);
    std::optional<NcuVersion> to = parse_ncu_version(pairing.ncu_to);
    if (!from || !to || *ncu < *from || *ncu > *to) continue;
    // A whole word of the name: "B200" is "NVIDIA B200", not "NVIDIA GB200".
    RE2 word("(?i)\\b" + RE2::QuoteMeta(pairing.gpu) + "\\b");
    for (const GpuMemory& gpu : facts.gpu_memory) {
      if (!RE2::PartialMatch(gpu.name, word)) continue;
      checks.push_back({fmt::format("ncu on GPU {}", gpu.index), S::kWarning,
                        fmt::format("ncu {} on {}: {} ({})", ncu->text(), gpu.name, pairing.what,
                                    pairing.source),
                        pairing.next});
    }
  }
}

}  // namespace

const std::vector<KnownBadPairing>& known_bad_pairings() {
  // Rules are data: one row per pairing, each with its source. No public NVIDIA note or forum
  // thread about this one was found (searched: NVIDIA's release notes and known issues, GitHub
  // issues, the web); its only source is the project's own issue.
  static const std::vector<KnownBadPairing> kPairings = {
      {"2026.2", "2026.2.99", "B200", "users report NaN counters",
       "reported in issue 30 of this project",
       "compare with another ncu version before trusting counters; kprof names NaN and "
       "infinite counters (invalid_counters) and withholds the verdicts that need them"},
  };
  return kPairings;
}

std::vector<Check> run_doctor_checks(const SystemFacts& facts) {
  std::vector<Check> checks;
  for (auto check :
       {ncu_check, driver_check, cuda_versions_check, counter_permission_check, injection_check,
        cupti_check, tracer_check, sandbox_check, device_check, pairing_check}) {
    check(facts, checks);
  }
  return checks;
}

}  // namespace kprof::capture
