// The hardware database: datasheet figures per GPU with their sources, embedded from
// data/gpus.json and overridable by a user file of the same shape — or by a calibration file
// (kprof.calibration/1), whose measured ceilings are attached to the GPU it was measured on.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace re2 {
class RE2;
}

namespace kprof::hardware {

// A ceiling measured on a real GPU by kprof's calibration (not a datasheet figure).
struct MeasuredCeiling {
  double figure = 0;
  std::string unit;    // "byte/s", "flop/s", "s"
  std::string method;  // what ran and how the figure was computed
  int repeats = 0;     // the figure is the best of this many runs
};

// Throws std::invalid_argument naming the ceiling when a calibration's figure cannot be one:
// the unit of a ceiling kprof measures is fixed (dram_bandwidth and l2_bandwidth byte/s, the
// *_flops rates flop/s, the latencies s: a DRAM ceiling in flop/s would be dropped silently by
// the verdicts; launch_* the launch latencies in s), any other is byte/s, flop/s or s; and a
// figure lies where a real GPU's can (a
// bandwidth from 1 GB/s to 1 PB/s, a rate from 1 GFLOP/s to 1 EFLOP/s, a latency from 10 ns to
// 1 s: 1e308 is none). Read by `kprof calibrate --from` and `--gpus CALIBRATION` alike.
void check_measured_ceiling(const std::string& name, double figure, const std::string& unit);

struct GpuSpec {
  std::string name;  // "H200 SXM"
  // RE2 regex over the device name a report records, matched as device_match_length says.
  std::string match;
  std::string compute_capability;
  std::optional<double> sms, boost_clock_mhz, memory_gb, memory_bandwidth_tbs, l2_mb;
  std::optional<double> smem_per_sm_kb, smem_per_block_kb, registers_per_sm, max_warps_per_sm,
      max_blocks_per_sm;
  std::map<std::string, double>
      peak_tflops;  // dense: fp64, fp64_tensor, fp32, tf32, bf16, fp8, fp4, int8
  std::map<std::string, std::string> sources;  // figure group -> source ids
  // `match` compiled for device_match_length, null if it does not compile.
  std::shared_ptr<const re2::RE2> match_regex;
  // From a calibration file: name (dram_bandwidth, fp32_flops, …) -> what was measured, and
  // where, when and on which GPU and driver ("FILE: NVIDIA H200, 2026-11-30T…Z, CUDA 13.0").
  std::map<std::string, MeasuredCeiling> measured;
  std::string measured_source;
};

struct GpuDatabase {
  std::vector<GpuSpec> gpus;
  std::map<std::string, std::string> sources;  // source id -> citation
  std::string origin;                          // "built-in" or "built-in + FILE"

  // The entry for a device name as a report records it ("NVIDIA GH200 480GB"), or null: of the
  // entries whose match finds it (device_match_length), the one matching the most of the name;
  // among equals the first (a user file's entries come first).
  const GpuSpec* find_for_device(const std::string& device_name) const;
  // `kprof gpus NAME`: the entry named NAME (case aside); else the entry a device of that name
  // gets (find_for_device: the same rule as the analyses, so that `kprof gpus "NVIDIA GH200
  // 480GB"` shows what `analyze` uses); else the entries whose name holds NAME as whole words
  // ("H100": H100 SXM, H100 PCIe, H100 NVL). Empty when none.
  std::vector<const GpuSpec*> find_named(const std::string& name) const;
  // find_named's entry when it finds exactly one, else null.
  const GpuSpec* find_by_name(const std::string& name) const;
};

// How much of `device_name` an entry's match covers, or nullopt when it does not match. The
// match is case-insensitive and must cover whole words: it starts at the start of the name or
// after a character that is not a letter or digit, and ends at the end of the name or before one
// ("H200" finds "NVIDIA H200" and "NVIDIA H200 NVL", not "NVIDIA GH200 480GB").
std::optional<size_t> device_match_length(const GpuSpec& spec, std::string_view device_name);

// The built-in database; with override_path, entries of that file replace built-in ones of
// the same name and new ones are added. A calibration file (schema kprof.calibration/1) instead
// adds its measured ceilings to the GPU whose match finds the calibrated device's name, or to a
// new entry for that name when none does. Any other file is checked against
// docs/kprof.gpus.schema.json (and its match regexes and compute capabilities read). Throws
// InputError naming the file (and the entry) for an unreadable or invalid file.
GpuDatabase load_gpu_database(const std::string& override_path = "");
// The same from the user file's text (path names it in errors).
GpuDatabase load_gpu_database_text(const std::string& path, std::string_view text);

// The embedded data/gpus.json and docs/kprof.gpus.schema.json.
const char* builtin_gpus_json();
const char* gpus_schema_json();

}  // namespace kprof::hardware
