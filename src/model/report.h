// The report model: what Nsight Compute recorded, independent of the file format it came in.
// Plain structs; every importer fills the same fields, values in base units (ns, byte, byte/s,
// hz, %, counts), exactly as ncu computed them.
#pragma once

#include <compare>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kprof::model {

// A metric value as stored: numbers keep their integer-ness (launch__grid_size is a count,
// gpu__time_duration.sum a double), strings stay strings (device__attribute_display_name).
// 16 bytes: a report holds millions of them (a `--set full` kernel has ~2,200 metrics), and
// strings are rare, so a string value is held behind a pointer of its own.
class MetricValue {
 public:
  enum class Kind : std::uint8_t { kDouble, kUint64, kString };

  MetricValue() = default;  // the double 0
  MetricValue(const MetricValue& other);
  MetricValue(MetricValue&& other) noexcept;
  MetricValue& operator=(const MetricValue& other);
  MetricValue& operator=(MetricValue&& other) noexcept;
  ~MetricValue();

  static MetricValue of_double(double v);
  static MetricValue of_uint(std::uint64_t v);
  static MetricValue of_string(std::string v);

  Kind kind() const { return kind_; }
  double real() const { return kind_ == Kind::kDouble ? real_ : 0; }
  std::uint64_t integer() const { return kind_ == Kind::kUint64 ? integer_ : 0; }
  const std::string& text() const;  // "" unless a string
  std::string* mutable_text();      // nullptr unless a string
  bool is_number() const { return kind_ != Kind::kString; }
  std::optional<double> number() const;  // nullopt for strings
  std::string to_string() const;         // full precision, for listings
  // Same kind and value (a NaN equals nothing, as double's ==).
  friend bool operator==(const MetricValue& a, const MetricValue& b);

 private:
  Kind kind_ = Kind::kDouble;
  union {
    double real_ = 0;
    std::uint64_t integer_;
    std::string* text_;  // owned
  };
};

struct MetricInstance {
  MetricValue correlation_id;  // e.g. a PC, or the x value of an occupancy graph
  MetricValue value;
};

// A metric's name. A report repeats the same ~2,200 names in every kernel: importers intern
// them (NameInterner), so each text is stored once per report and a metric holds a shared
// handle (no allocation of its own). Copies share the text, which lives as long as any copy, so
// a metric or kernel taken out of its report stays valid. Reads as a const std::string&.
class MetricName {
 public:
  MetricName() = default;
  MetricName(std::string_view text) : text_(std::make_shared<const std::string>(text)) {}
  MetricName(const std::string& text) : MetricName(std::string_view(text)) {}
  MetricName(const char* text) : MetricName(std::string_view(text)) {}

  const std::string& str() const { return text_ ? *text_ : empty_text(); }
  operator const std::string&() const { return str(); }
  operator std::string_view() const { return str(); }
  bool empty() const { return str().empty(); }
  size_t size() const { return str().size(); }

  friend bool operator==(const MetricName& a, const MetricName& b) {
    return a.text_ == b.text_ || a.str() == b.str();
  }
  friend bool operator==(const MetricName& a, std::string_view b) { return a.str() == b; }
  friend bool operator==(const MetricName& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const MetricName& a, const char* b) { return a.str() == b; }
  friend std::strong_ordering operator<=>(const MetricName& a, const MetricName& b) {
    return a.str() <=> b.str();
  }
  friend std::strong_ordering operator<=>(const MetricName& a, std::string_view b) {
    return std::string_view(a.str()) <=> b;
  }
  friend std::strong_ordering operator<=>(const MetricName& a, const std::string& b) {
    return a.str() <=> b;
  }
  friend std::strong_ordering operator<=>(const MetricName& a, const char* b) {
    return a.str() <=> b;
  }
  friend std::ostream& operator<<(std::ostream& out, const MetricName& name);

 private:
  friend class NameInterner;
  static const std::string& empty_text();
  std::shared_ptr<const std::string> text_;
};

// One handle per distinct text: every metric of a report named by the same text shares it.
class NameInterner {
 public:
  MetricName intern(std::string_view text);

 private:
  std::unordered_map<std::string_view, MetricName> names_;  // keys view the names' own text
};

struct Metric {
  MetricName name;  // ncu's metric name, e.g. "sm__throughput.avg.pct_of_peak_sustained_elapsed"
  MetricValue value;
  // Base unit as the source stated it ("ns", "byte", "%"), interned as names are; empty when the
  // source stores none (.ncu-rep files carry no units).
  MetricName unit;
  std::vector<MetricInstance> instances;
};

enum class RuleType { kNone, kOk, kWarning, kError, kOptimization };
std::string_view rule_type_code(RuleType type);  // "OPT", "INF", "WRN", "ERR", "" as ncu prints

// One message of one ncu rule (a rule can emit several, e.g. CPIStall an OPT and an INF).
struct RuleFinding {
  std::string rule;     // identifier, e.g. "SOLBottleneck"
  std::string section;  // section identifier, e.g. "SpeedOfLight"
  RuleType type = RuleType::kNone;
  std::string message;
  std::string speedup_type;                 // "local", "global", or ""
  std::optional<double> estimated_speedup;  // percent
};

struct Dim3 {
  std::uint64_t x = 0, y = 0, z = 0;
  bool operator==(const Dim3&) const = default;
  std::string to_string() const;  // "(384, 1, 1)" as ncu prints it
};

// One profiled kernel launch.
struct Kernel {
  std::size_t id = 0;  // position in the report (ncu's "ID" column)
  std::uint32_t process_id = 0;
  std::string process_name;
  std::string host;
  std::uint32_t thread_id = 0;
  std::uint32_t context_id = 0;
  std::uint32_t stream_id = 0;
  std::uint32_t device_id = 0;
  std::string mangled_name;
  std::string function_name;
  std::string demangled_name;
  Dim3 grid;
  Dim3 block;
  std::vector<Metric> metrics;  // sorted by name (see sort_metrics)
  std::vector<RuleFinding> rules;
  // The CUDA module its code came from (.ncu-rep ProfileResult.Source): the key of a
  // Report::modules entry, when the report recorded one.
  std::optional<std::uint64_t> source_reference;

  const Metric* find(std::string_view name) const;
  std::optional<double> number(std::string_view name) const;
  // The most readable name the source recorded: function name, else demangled, else mangled.
  // A CUTLASS wrapper's function name ("Kernel", "device_kernel") with the operator class its
  // template names: "Kernel<B2bGemm>" (model/kernel_names.h, wrapper_kernel_display_name).
  std::string display_name() const;
};

struct Device {
  std::uint32_t id = 0;
  std::string name;                // "NVIDIA H200"
  std::vector<Metric> attributes;  // device__attribute_*, sorted by name

  const Metric* find(std::string_view name) const;
  std::optional<double> number(std::string_view name) const;
  std::string compute_capability() const;  // "9.0", or "" when not recorded
};

struct Process {
  std::uint32_t id = 0;
  std::string name;
  std::string host;
};

// How ncu was asked to profile. Read from the report's own settings when it stores them, else
// parsed from the recorded command line (see settings_source).
struct ProfilerSettings {
  std::string settings_source;  // "report", "command line", or "" when neither was recorded
  std::vector<std::string> sets;
  std::vector<std::string> sections;
  std::vector<std::string> metrics;
  std::string kernel_name;
  std::string kernel_name_base;
  std::string kernel_id;
  std::optional<std::uint64_t> launch_skip;
  std::optional<std::uint64_t> launch_skip_before_match;
  std::optional<std::uint64_t> launch_count;
  std::string replay_mode;
  std::string clock_control;
  std::string cache_control;
  std::string target_processes;
  std::string nvtx;
  std::string profile_from_start;
  bool disable_profiler_start_stop = false;
  std::string export_path;
  std::vector<std::string> application;  // the profiled command and its arguments
};

struct Session {
  std::string ncu_version;   // "2025.3.1.0 (build 36398880) (public-release)"
  std::string cuda_version;  // "13.0"
  std::vector<std::pair<std::string, std::string>> versions;  // all provider/version pairs
  std::string command_line;                                   // the ncu command line as recorded
  std::optional<std::uint64_t> creation_time;                 // Unix seconds
  std::optional<std::uint32_t> process_id;
  std::string host_os;
  std::string target_os;
  std::string target_cpu;
  std::string comments;
  ProfilerSettings settings;
};

// A function of a CUDA module as the report records it (.ncu-rep RelocationData): its mangled
// name, where it was loaded (absent: not loaded when the report was written) and its index in
// the cubin's symbol table (what nvdisasm -fun takes).
struct ModuleFunction {
  std::string name;
  std::optional<std::uint64_t> address;
  std::optional<std::uint32_t> symbol_index;
};

// A CUDA module's code as the report stores it (.ncu-rep SourceData): the cubin, an ELF file,
// stored once per module and shared by its kernels. Read only when asked
// (importers::ImportOptions::sources): cubins are megabytes, and only `kprof source` reads them.
struct SourceModule {
  std::uint64_t reference = 0;  // what Kernel::source_reference names
  std::string binary;           // the cubin; empty when the report stored none
  // Where the cubin starts in the report's (decompressed) bytes: errors in it name the report
  // and that byte plus their offset in the cubin.
  std::uint64_t binary_offset = 0;
  std::uint32_t sm_version = 0;  // major << 16 | minor << 8 (0x90000: sm_90); 0 when not recorded
  std::uint32_t sass_level = 0;
  std::vector<ModuleFunction> functions;

  const ModuleFunction* function(std::string_view name) const;
  std::string sm_name() const;  // "sm_90", or "" when not recorded
};

enum class SourceFormat { kNcuRep, kNcuCsvRaw, kNcuCsvDetails };
std::string_view source_format_name(SourceFormat format);

struct Report {
  std::string path;
  SourceFormat format = SourceFormat::kNcuRep;
  std::uint32_t format_version = 0;  // .ncu-rep FileHeader version; 0 for CSV
  Session session;
  std::vector<Process> processes;
  std::vector<Device> devices;
  std::vector<Kernel> kernels;
  // Results the model does not hold yet (range, command-list and CUDA-graph results), counted
  // so that outputs can say so instead of silently dropping them.
  std::size_t skipped_range_results = 0;
  std::size_t skipped_cmdlist_results = 0;
  std::size_t skipped_graph_results = 0;
  // A report of a format version kprof does not know, read with the known schema as far as it
  // went: what was left out, one line for the user (empty for a known version).
  std::string format_note;
  // What the reader left out of a file that holds more than its format: an ncu CSV export
  // captured with what ran before and after it (where the table is, how many lines around it
  // were skipped). One line for the user; empty when the file was read whole.
  std::string reading_note;
  // The modules (cubins) kernels refer to, by reference; filled only when asked for.
  std::vector<SourceModule> modules;
  // Whether the importer was asked to keep modules (a report read without stays empty).
  bool modules_read = false;

  const Device* device_of(const Kernel& kernel) const;
  const SourceModule* module_of(const Kernel& kernel) const;  // nullptr when none is recorded
  // A kernel metric, falling back to its device's attributes (device__attribute_*).
  const Metric* find(const Kernel& kernel, std::string_view name) const;
  std::optional<double> number(const Kernel& kernel, std::string_view name) const;
};

// Sorts by name and keeps the first of duplicate names; lookups rely on this order.
void sort_metrics(std::vector<Metric>& metrics);

// Replaces ill-formed UTF-8 in every string of the report with U+FFFD (names, metric names and
// string values, units, rule texts, session and settings, the path), re-sorting metrics whose
// names changed. Importers call it so that renderers can trust every string they print. No
// original bytes are kept: matching (kernel filters, trace joins, diffs) compares names that
// went through the same replacement. Returns whether anything changed.
bool make_valid_utf8(Report& report);

}  // namespace kprof::model
