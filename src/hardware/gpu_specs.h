// The hardware database: datasheet figures per GPU with their sources, embedded from
// data/gpus.json and overridable by a user file of the same shape.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace re2 {
class RE2;
}

namespace kprof::hardware {

struct GpuSpec {
  std::string name;   // "H200 SXM"
  std::string match;  // regex (RE2, partial) over the device name a report records
  std::string compute_capability;
  std::optional<double> sms, boost_clock_mhz, memory_gb, memory_bandwidth_tbs, l2_mb;
  std::optional<double> smem_per_sm_kb, smem_per_block_kb, registers_per_sm, max_warps_per_sm,
      max_blocks_per_sm;
  std::map<std::string, double> peak_tflops;  // dense: fp64, fp64_tensor, fp32, tf32, bf16, fp8, fp4, int8
  std::map<std::string, std::string> sources;  // figure group -> source ids
  std::shared_ptr<const re2::RE2> match_regex;  // compiled match, null if it does not compile
};

struct GpuDatabase {
  std::vector<GpuSpec> gpus;
  std::map<std::string, std::string> sources;  // source id -> citation
  std::string origin;                          // "built-in" or "built-in + FILE"

  // The first GPU whose match regex finds the device name ("NVIDIA H200"), or null.
  const GpuSpec* find_for_device(const std::string& device_name) const;
  const GpuSpec* find_by_name(const std::string& name) const;
};

// The built-in database; with override_path, entries of that file replace built-in ones of
// the same name and new ones are added. Throws InputError for an unreadable or invalid file.
GpuDatabase load_gpu_database(const std::string& override_path = "");

// The embedded data/gpus.json.
const char* builtin_gpus_json();

}  // namespace kprof::hardware
