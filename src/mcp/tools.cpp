#include "mcp/tools.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <stdexcept>
#include <utility>

#include "capture/capture_render.h"
#include "capture/tools_render.h"
#include "common/error.h"
#include "common/file_bytes.h"
#include "common/text.h"
#include "common/utf8.h"
#include "mcp/compact.h"
#include "pipeline/analyze.h"
#include "pipeline/diff.h"
#include "pipeline/inspect.h"
#include "pipeline/reports.h"
#include "pipeline/traces.h"

namespace kprof::mcp {
namespace {

using nlohmann::json;

constexpr double kNoLimit = std::numeric_limits<double>::infinity();

// One argument of a tool: its JSON Schema, how it is checked, and its spelling on the command
// line the call equals.
struct Param {
  // kRepeated: an array of strings, each given with the flag (a repeatable option: --pair A=B).
  enum class Kind {
    kPath,
    kPaths,
    kString,
    kWords,
    kRepeated,
    kInteger,
    kNumber,
    kBoolean,
    kChoice
  };
  std::string name;
  Kind kind;
  std::string flag;  // "" positional; kWords go after "--"
  std::string description;
  bool required = false;
  double min = -kNoLimit, max = kNoLimit;
  std::vector<std::string> choices;

  Param(std::string name_, Kind kind_, std::string flag_, std::string description_,
        bool required_ = false, double min_ = -kNoLimit, double max_ = kNoLimit,
        std::vector<std::string> choices_ = {})
      : name(std::move(name_)),
        kind(kind_),
        flag(std::move(flag_)),
        description(std::move(description_)),
        required(required_),
        min(min_),
        max(max_),
        choices(std::move(choices_)) {}
};
using Kind = Param::Kind;

// The checked arguments: paths resolved inside the roots, everything else as given.
using Values = json;

// Runs the verb once: its --json document in out, its text answer in text (text_too).
using Run = std::function<pipeline::Answer(const Values&, const std::vector<std::string>& argv)>;

struct Tool {
  std::string name, title, description;
  std::vector<Param> params;
  Run run;
};

std::string text_of(const Values& v, const char* name) {
  return v.contains(name) ? v[name].get<std::string>() : std::string();
}
std::vector<std::string> words_of(const Values& v, const char* name) {
  return v.contains(name) ? v[name].get<std::vector<std::string>>() : std::vector<std::string>{};
}
template <typename T>
void set_if(const Values& v, const char* name, T& target) {
  if (v.contains(name)) target = v[name].get<T>();
}

// A JSON document as the CLI prints it (render::json_text).
std::string json_text(const json& document) {
  return document.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

const char* kDetail =
    "compact (default): the answer cut to the token budget (kprof mcp --max-tokens), a last line "
    "saying how many rows were left out; full: all of it";

Param paths_param(const char* name, const char* description) {
  return {name, Kind::kPaths, "", description, true};
}

// The verdict options analyze and report share.
void add_verdict_params(std::vector<Param>& params) {
  params.push_back({"kernel", Kind::kString, "-k",
                    "Only kernels whose name matches this regular expression (RE2, partial)"});
  params.push_back({"compute_threshold", Kind::kNumber, "--compute-threshold",
                    "SM throughput % from which a kernel is compute-bound (default 60)", false, 0,
                    100});
  params.push_back({"memory_threshold", Kind::kNumber, "--memory-threshold",
                    "Memory throughput % from which a kernel is memory-bound (default 60)", false,
                    0, 100});
  params.push_back({"gpus", Kind::kPath, "--gpus",
                    "A GPU table or kprof calibration file (kprof.calibration/1) to use"});
  params.push_back({"stages", Kind::kPath, "--stages", "A stage-rule table to use"});
  params.push_back(
      {"expectations", Kind::kPath, "--expectations", "An expected-bottleneck table to use"});
}

void set_verdict_options(const Values& v, pipeline::AnalyzeOptions& o) {
  set_if(v, "kernel", o.kernel_regex);
  set_if(v, "compute_threshold", o.thresholds.compute_pct);
  set_if(v, "memory_threshold", o.thresholds.memory_pct);
  set_if(v, "gpus", o.gpus_path);
  set_if(v, "stages", o.stages_path);
  set_if(v, "expectations", o.expectations_path);
}

std::vector<Tool> make_tools(const ToolSettings& settings) {
  std::vector<Tool> tools;
  {
    Tool t{"analyze",
           "Kernel verdicts of Nsight Compute captures",
           "Per kernel of .ncu-rep reports (or ncu CSV exports): the verdict (compute-, memory-, "
           "latency-bound), the unit that binds it, throughput, occupancy and its limiter, the "
           "top stall, the stage; what a capture did not record is named, never estimated. "
           "structuredContent is `kprof analyze --json` (kprof.analysis/1).",
           {paths_param("reports", "Nsight Compute reports (.ncu-rep, .zst) or CSV exports")},
           {}};
    add_verdict_params(t.params);
    t.params.push_back({"sort",
                        Kind::kChoice,
                        "--sort",
                        "Row order (default duration)",
                        false,
                        -kNoLimit,
                        kNoLimit,
                        {"duration", "pipeline", "id"}});
    t.params.push_back({"trace", Kind::kPath, "--trace",
                        "A profiler trace of the same program: each kernel's share of it"});
    t.run = [](const Values& v, const std::vector<std::string>& argv) {
      pipeline::AnalyzeOptions o;
      o.paths = words_of(v, "reports");
      set_verdict_options(v, o);
      set_if(v, "sort", o.sort);
      set_if(v, "trace", o.trace_path);
      o.json = true;
      o.text_too = true;
      return pipeline::analyze(o, argv);
    };
    tools.push_back(std::move(t));
  }
  {
    Tool t{"inspect",
           "Everything a capture recorded",
           "Session, devices, and any metric of any kernel of Nsight Compute reports, selected "
           "by regular expressions; ncu's rule findings. structuredContent is `kprof inspect "
           "--json` (kprof.report/1): give `metrics` to keep it small.",
           {paths_param("reports", "Nsight Compute reports (.ncu-rep, .zst) or CSV exports"),
            {"kernel", Kind::kString, "-k", "Only kernels whose name matches (RE2, partial)"},
            {"metrics", Kind::kString, "-m", "Only metrics whose name matches (RE2, partial)"},
            {"rules", Kind::kBoolean, "--rules", "Also ncu's rule findings per kernel"},
            {"instances", Kind::kBoolean, "--instances", "Also per-instance values"},
            {"session", Kind::kBoolean, "--session",
             "Only the session and devices (not with kernel, metrics, rules, instances)"}},
           {}};
    t.run = [](const Values& v, const std::vector<std::string>& argv) {
      pipeline::InspectOptions o;
      o.paths = words_of(v, "reports");
      set_if(v, "kernel", o.kernel_regex);
      set_if(v, "metrics", o.metrics_regex);
      set_if(v, "rules", o.rules);
      set_if(v, "instances", o.instances);
      set_if(v, "session", o.session);
      if (o.session) {
        for (const char* other : {"kernel", "metrics", "rules", "instances"}) {
          if (v.contains(other)) {
            throw UsageError(fmt::format("argument 'session' excludes '{}'", other));
          }
        }
      }
      o.json = true;
      o.text_too = true;
      return pipeline::inspect(o, argv);
    };
    tools.push_back(std::move(t));
  }
  {
    Tool t{"rank",
           "Which kernels carry the GPU time of a trace",
           "Kernels (or operators, modules, stages) of a profiler trace ranked by GPU time, "
           "with shares; per step; over several ranks' traces. structuredContent is `kprof "
           "rank --json` (kprof.rank/1, every kernel).",
           {paths_param("traces",
                        "Profiler traces (PyTorch/Chrome JSON, .gz; Nsight Systems SQLite; "
                        "kprof trace); several: one per rank"),
            {"top", Kind::kInteger, "-n", "Rows to list in the text (default 20)", false, 0, 1e9},
            {"by",
             Kind::kChoice,
             "--by",
             "Rank by kernel (default), operator, module or range stack (a kprof tracer "
             "trace's graph replays by the ranges open at their capture)",
             false,
             -kNoLimit,
             kNoLimit,
             {"kernel", "op", "module", "range"}},
            {"per_step", Kind::kBoolean, "--per-step", "Rank kernels within each step"},
            {"step", Kind::kString, "--step", "Step annotations matching this regex are steps"},
            {"raw_names", Kind::kBoolean, "--raw-names", "Rank by the names exactly as traced"},
            {"stages", Kind::kPath, "--stages", "A stage-rule table to use"},
            {"graph_capture", Kind::kPath, "--graph-capture",
             "With by op, module or range: the trace of the CUDA/HIP graphs' capture, whose "
             "operators a graph replay's kernels take (not needed for a kprof tracer trace)"}},
           {}};
    t.run = [](const Values& v, const std::vector<std::string>& argv) {
      pipeline::RankOptions o;
      o.paths = words_of(v, "traces");
      set_if(v, "top", o.top);
      set_if(v, "by", o.by);
      set_if(v, "per_step", o.per_step);
      set_if(v, "step", o.step_regex);
      set_if(v, "raw_names", o.raw_names);
      set_if(v, "stages", o.stages_path);
      set_if(v, "graph_capture", o.graph_capture);
      o.json = true;
      o.text_too = true;
      return pipeline::rank(o, argv);
    };
    tools.push_back(std::move(t));
  }
  {
    Tool t{"budget",
           "Per step: is the GPU kept busy or waiting for the host",
           "Per step of a profiler trace, over its wall span (annotation start to its last GPU "
           "work): GPU busy, host gaps, device-side idle, dependency waits, communication per "
           "kind (exposed, overlapped), and the verdict (kernel-bound, host-bound). "
           "structuredContent is `kprof budget --json` (kprof.budget/1).",
           {paths_param("traces", "Profiler traces; several: one per rank"),
            {"step", Kind::kString, "--step", "Step annotations matching this regex are steps"},
            {"host_bound_below", Kind::kNumber, "--host-bound-below",
             "GPU busy % of a step below which it is host-bound (default 60)", false, 0, 100},
            {"kernel_bound_from", Kind::kNumber, "--kernel-bound-from",
             "GPU busy % from which a step is kernel-bound (default 90)", false, 0, 100}},
           {}};
    t.run = [](const Values& v, const std::vector<std::string>& argv) {
      pipeline::BudgetOptions o;
      o.paths = words_of(v, "traces");
      set_if(v, "step", o.step_regex);
      set_if(v, "host_bound_below", o.host_bound_below_pct);
      set_if(v, "kernel_bound_from", o.kernel_bound_from_pct);
      o.json = true;
      o.text_too = true;
      return pipeline::budget(o, argv);
    };
    tools.push_back(std::move(t));
  }
  {
    Tool t{"report",
           "The fix list: which kernel to fix first and what it buys",
           "Nsight Compute captures joined to a profiler trace of the same program: kernel "
           "groups ranked by estimated saving (trace time x (1 - achieved / attainable) on the "
           "binding resource), the evidence behind each, what the whole pipeline gains. "
           "structuredContent is `kprof report --json` (kprof.analysis/1 with fix_list).",
           {{"trace", Kind::kPath, "--trace", "The profiler trace of the same program", true},
            paths_param("reports", "Nsight Compute reports (.ncu-rep, .zst) or CSV exports")},
           {}};
    add_verdict_params(t.params);
    t.params.push_back(
        {"top", Kind::kInteger, "--top", "Fix-list groups to show (0: all; 15)", false, 0, 1e9});
    t.params.push_back({"per_launch", Kind::kBoolean, "--per-launch",
                        "After the fix list, every captured launch with its verdict and share"});
    t.run = [](const Values& v, const std::vector<std::string>& argv) {
      pipeline::AnalyzeOptions o;
      o.sort = "pipeline";
      o.fix_list = true;
      o.paths = words_of(v, "reports");
      o.trace_path = text_of(v, "trace");
      set_verdict_options(v, o);
      set_if(v, "top", o.top);
      set_if(v, "per_launch", o.per_launch);
      o.json = true;
      o.text_too = true;
      return pipeline::analyze(o, argv);
    };
    tools.push_back(std::move(t));
  }
  {
    Tool t{"diff",
           "What changed between two captures or two traces",
           "Two Nsight Compute captures compared kernel by kernel against threshold and "
           "measured noise, or two traces per kernel, stage and step (Welch's t-test); a "
           "regression is said (the CLI exits 6). structuredContent is `kprof diff --json`.",
           {{"baseline", Kind::kPath, "", "Capture (or trace) before the change", true},
            {"candidate", Kind::kPath, "", "Capture (or trace) after the change", true},
            {"threshold", Kind::kNumber, "--threshold",
             "Captures: % change that counts (default 5)", false, 0, 1000},
            {"noise_factor", Kind::kNumber, "--noise-factor",
             "Captures: a change must exceed this many measured noise widths", false, 0, 100},
            {"single_sample_floor_us", Kind::kNumber, "--single-sample-floor",
             "Captures: single launches must also change by this many us", false, 0, 1e9},
            {"pair", Kind::kRepeated, "--pair",
             "Captures: kernels renamed between them, each \"BASELINE=CANDIDATE\" (a kernel's "
             "name or a regex selecting one on each side)"},
            {"min_coverage", Kind::kNumber, "--min-coverage",
             "Captures: % of each side's GPU time the kernels compared must hold (default 50; "
             "below it the CLI exits 13)",
             false, 0, 100},
            {"no_auto_pair", Kind::kBoolean, "--no-auto-pair",
             "Captures: pair no unmatched kernels automatically"},
            {"alpha", Kind::kNumber, "--alpha", "Traces: significance level (default 0.01)", false,
             1e-9, 0.5},
            {"step", Kind::kString, "--step", "Traces: step annotations matching this regex"},
            {"top", Kind::kInteger, "-n", "Traces: kernels to list (default 20)", false, 0, 1e9}},
           {}};
    t.run = [](const Values& v, const std::vector<std::string>& argv) {
      pipeline::DiffOptions o;
      o.baseline = text_of(v, "baseline");
      o.candidate = text_of(v, "candidate");
      set_if(v, "threshold", o.diff.threshold_pct);
      set_if(v, "noise_factor", o.diff.noise_factor);
      set_if(v, "single_sample_floor_us", o.diff.single_sample_floor_us);
      o.pairs = words_of(v, "pair");
      set_if(v, "min_coverage", o.diff.min_coverage_pct);
      set_if(v, "no_auto_pair", o.no_auto_pair);
      set_if(v, "alpha", o.alpha);
      set_if(v, "step", o.step_regex);
      set_if(v, "top", o.top);
      o.json = true;
      o.text_too = true;
      return pipeline::diff(o, argv);
    };
    tools.push_back(std::move(t));
  }
  {
    Tool t{"explain",
           "Why an ncu run profiled nothing or failed",
           "An ncu run read back from its saved console output, its exit status and its "
           "command line: what it profiled, and each diagnosis (FAILED/warning, what to do). "
           "structuredContent is `kprof explain --json` (kprof.explain/1).",
           {{"log", Kind::kPath, "", "ncu's saved console output (stdout and stderr)", true},
            {"exit_code", Kind::kInteger, "--exit-code", "ncu's exit status (default 0)", false,
             -2147483648.0, 2147483647.0},
            {"ncu_argv", Kind::kWords, "--", "The ncu command line, one word per item"}},
           {}};
    t.run = [](const Values& v, const std::vector<std::string>& argv) {
      // capture::explain's steps, once for both answers.
      int exit_code = 0;
      set_if(v, "exit_code", exit_code);
      FileBytes log = read_input_file(text_of(v, "log"));
      capture::ExplainedRun run =
          capture::explain_ncu_run(words_of(v, "ncu_argv"), std::move(log.bytes), exit_code);
      pipeline::Answer answer;
      answer.out = json_text(capture::explain_json(run, argv));
      answer.text = capture::explain_text(run);
      answer.notes = capture::diagnoses_text(run.diagnoses);
      answer.code = run.failed() ? ExitCode::kCaptureFailed : ExitCode::kOk;
      return answer;
    };
    tools.push_back(std::move(t));
  }
  if (settings.doctor) {
    Tool t{"doctor",
           "Can this machine capture GPU counters?",
           "Gate 0 on the machine the server runs on: ncu and its version, the driver against "
           "the toolkit, counter permission, other profilers' injection, sandboxes, device "
           "nodes, GPU memory in use; what to fix. Reads the system's own files and runs `ncu "
           "--version` and `nvidia-smi --query-gpu` (queries, no GPU work). structuredContent "
           "is `kprof doctor --json` (kprof.doctor/1).",
           {},
           {}};
    t.run = [](const Values&, const std::vector<std::string>& argv) {
      // capture::doctor's steps, once for both answers (it runs ncu and nvidia-smi).
      capture::DoctorReport report = capture::check_this_machine("", "");
      pipeline::Answer answer;
      answer.out = json_text(capture::doctor_json(report, argv));
      answer.text = capture::doctor_text(report);
      answer.code = report.ready() ? ExitCode::kOk : ExitCode::kNotReady;
      return answer;
    };
    tools.push_back(std::move(t));
  }
  return tools;
}

const std::vector<Tool>& tools_for(const ToolSettings& settings) {
  static const std::vector<Tool> with_doctor = make_tools({settings.token_budget, true});
  static const std::vector<Tool> without_doctor = make_tools({settings.token_budget, false});
  return settings.doctor ? with_doctor : without_doctor;
}

const Tool* find_tool(const std::string& name, const ToolSettings& settings) {
  for (const Tool& tool : tools_for(settings)) {
    if (tool.name == name) return &tool;
  }
  return nullptr;
}

json schema_of(const Param& p) {
  json s;
  switch (p.kind) {
    case Kind::kPath:
      s = {{"type", "string"}, {"minLength", 1}};
      break;
    case Kind::kString:
      s = {{"type", "string"}};
      break;
    case Kind::kPaths:
      s = {{"type", "array"}, {"items", {{"type", "string"}, {"minLength", 1}}}, {"minItems", 1}};
      break;
    case Kind::kWords:
    case Kind::kRepeated:
      s = {{"type", "array"}, {"items", {{"type", "string"}}}};
      break;
    case Kind::kInteger:
    case Kind::kNumber:
      s = {{"type", p.kind == Kind::kInteger ? "integer" : "number"}};
      if (p.min != -kNoLimit) s["minimum"] = p.min;
      if (p.max != kNoLimit) s["maximum"] = p.max;
      if (p.kind == Kind::kInteger) {
        if (p.min != -kNoLimit) s["minimum"] = static_cast<long long>(p.min);
        if (p.max != kNoLimit) s["maximum"] = static_cast<long long>(p.max);
      }
      break;
    case Kind::kBoolean:
      s = {{"type", "boolean"}};
      break;
    case Kind::kChoice:
      s = {{"type", "string"}, {"enum", p.choices}};
      break;
  }
  s["description"] = p.description;
  return s;
}

json input_schema(const Tool& tool) {
  json properties = json::object();
  json required = json::array();
  for (const Param& p : tool.params) {
    properties[p.name] = schema_of(p);
    if (p.required) required.push_back(p.name);
  }
  properties["detail"] = {
      {"type", "string"}, {"enum", {"compact", "full"}}, {"description", kDetail}};
  json schema = {{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
  if (!required.empty()) schema["required"] = required;
  return schema;
}

const char* type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_float:
      return "a number";
    default:
      return "an integer";
  }
}

std::string range_text(const Param& p) {
  auto number = [&p](double x) {
    return p.kind == Kind::kInteger ? fmt::format("{}", static_cast<long long>(x))
                                    : format_number(x);
  };
  if (p.min != -kNoLimit && p.max != kNoLimit) {
    return fmt::format(" from {} to {}", number(p.min), number(p.max));
  }
  return "";
}

// The arguments checked against the tool's parameters, paths resolved (not opened yet: every
// argument is checked before any file is); UsageError naming the argument otherwise. The value
// itself is never quoted back (it may be anything).
Values check_arguments(const Tool& tool, const json& arguments, const Roots& roots, bool& full) {
  if (!arguments.is_object()) {
    throw UsageError(fmt::format("arguments: expected an object, got {}", type_name(arguments)));
  }
  Values values = json::object();
  full = false;
  for (auto it = arguments.begin(); it != arguments.end(); ++it) {
    if (it.key() == "detail") {
      if (!it.value().is_string() ||
          (it.value().get<std::string>() != "compact" && it.value().get<std::string>() != "full")) {
        throw UsageError("argument 'detail': expected \"compact\" or \"full\"");
      }
      full = it.value().get<std::string>() == "full";
      continue;
    }
    const Param* param = nullptr;
    for (const Param& p : tool.params) {
      if (p.name == it.key()) param = &p;
    }
    if (param == nullptr) {
      std::string names;
      for (const Param& p : tool.params) names += p.name + ", ";
      throw UsageError(fmt::format("argument '{}': {} takes no such argument (it takes {}detail)",
                                   escape_for_terminal(it.key()), tool.name, names));
    }
  }
  for (const Param& p : tool.params) {
    if (!arguments.contains(p.name)) {
      if (p.required) throw UsageError(fmt::format("argument '{}' is required", p.name));
      continue;
    }
    const json& value = arguments[p.name];
    auto wrong = [&p, &value](const std::string& expected) {
      return UsageError(
          fmt::format("argument '{}': expected {}, got {}", p.name, expected, type_name(value)));
    };
    switch (p.kind) {
      case Kind::kPath:
        if (!value.is_string()) throw wrong("a path (a string)");
        values[p.name] = roots.resolve(value.get<std::string>(), p.name);
        break;
      case Kind::kString:
        if (!value.is_string()) throw wrong("a string");
        values[p.name] = value;
        break;
      case Kind::kPaths:
      case Kind::kWords:
      case Kind::kRepeated: {
        const bool paths = p.kind == Kind::kPaths;
        if (!value.is_array()) throw wrong(paths ? "an array of paths" : "an array of strings");
        if (paths && value.empty()) {
          throw UsageError(fmt::format("argument '{}': give at least one path", p.name));
        }
        json items = json::array();
        for (const json& item : value) {
          if (!item.is_string()) {
            throw UsageError(fmt::format("argument '{}': every item must be a string, got {}",
                                         p.name, type_name(item)));
          }
          items.push_back(paths ? roots.resolve(item.get<std::string>(), p.name)
                                : item.get<std::string>());
        }
        values[p.name] = items;
        break;
      }
      case Kind::kInteger:
      case Kind::kNumber: {
        const bool integer = p.kind == Kind::kInteger;
        if (!value.is_number() || (integer && !value.is_number_integer())) {
          throw wrong((integer ? "an integer" : "a number") + range_text(p));
        }
        const double x = value.get<double>();
        if (!std::isfinite(x) || x < p.min || x > p.max) {
          throw UsageError(fmt::format("argument '{}': expected {}{}, got {}", p.name,
                                       integer ? "an integer" : "a number", range_text(p),
                                       integer ? value.dump() : format_number(x)));
        }
        values[p.name] = value;
        break;
      }
      case Kind::kBoolean:
        if (!value.is_boolean()) throw wrong("true or false");
        values[p.name] = value;
        break;
      case Kind::kChoice: {
        std::string choices;
        for (const std::string& c : p.choices) choices += (choices.empty() ? "" : ", ") + c;
        if (!value.is_string()) throw wrong("one of " + choices);
        bool known = false;
        for (const std::string& c : p.choices) known = known || value.get<std::string>() == c;
        if (!known) {
          throw UsageError(fmt::format("argument '{}': expected one of {}, got \"{}\"", p.name,
                                       choices, escape_for_terminal(value.get<std::string>())));
        }
        values[p.name] = value;
        break;
      }
    }
  }
  return values;
}

// What a path argument reads: a capture (a bundle folder holding one is read as it), a trace, or
// any other file (a table, a log).
enum class Reads { kCapture, kTrace, kFile };

Reads what_it_reads(const Param& p) {
  if (p.name == "reports" || p.name == "baseline" || p.name == "candidate") return Reads::kCapture;
  if (p.name == "trace" || p.name == "traces" || p.name == "graph_capture") return Reads::kTrace;
  return Reads::kFile;
}

// The names of a folder's entries, listed through its descriptor (not its name).
std::vector<std::string> entries_of(const Roots::Opened& folder) {
  std::vector<std::string> names;
  int fd = ::fcntl(folder.fd.get(), F_DUPFD_CLOEXEC, 0);
  DIR* dir = fd < 0 ? nullptr : ::fdopendir(fd);
  if (dir == nullptr) {
    if (fd >= 0) ::close(fd);
    throw InputError(ExitCode::kInputUnreadable, folder.path, InputPosition::none(),
                     fmt::format("cannot read the folder: {}", std::strerror(errno)));
  }
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  return names;
}

// One path argument opened beneath the roots and added to the call's files. A bundle folder,
// where a capture is read, stands for its one report: found by pipeline::bundle_report over the
// folder's entries, then opened as an argument is (a link out of the roots refused as a path
// outside them). Any other folder is refused as the reader would.
void open_input(const Param& p, const std::string& path, const Roots& roots, OpenedInputs& files) {
  Roots::Opened opened = roots.open(path, p.name);
  if (opened.folder) {
    if (what_it_reads(p) != Reads::kCapture) {
      throw InputError(ExitCode::kInputUnreadable, opened.path, InputPosition::none(),
                       what_it_reads(p) == Reads::kTrace ? "is a directory, expected a trace file"
                                                         : "is a directory, expected a file");
    }
    const std::string report = pipeline::bundle_report(opened.path, entries_of(opened));
    Roots::Opened file = roots.open(report, p.name);
    if (file.folder) {
      throw InputError(ExitCode::kInputUnreadable, report, InputPosition::none(),
                       "is a directory, expected a report file");
    }
    files.add(report, file.fd.release());
    files.add_bundle(opened.path, report);
    return;
  }
  files.add(opened.path, opened.fd.release());
}

// Every path of the call opened, in the order of the tool's parameters.
void open_inputs(const Tool& tool, const Values& values, const Roots& roots, OpenedInputs& files) {
  for (const Param& p : tool.params) {
    if (!values.contains(p.name)) continue;
    if (p.kind == Kind::kPath) {
      open_input(p, values[p.name].get<std::string>(), roots, files);
    } else if (p.kind == Kind::kPaths) {
      for (const json& item : values[p.name]) {
        open_input(p, item.get<std::string>(), roots, files);
      }
    }
  }
}

// The command line the call equals: positional paths, then options in the tool's order, then
// --json (when asked) and the words after "--".
std::vector<std::string> argv_of(const Tool& tool, const Values& values, bool json_output) {
  std::vector<std::string> argv = {"kprof", tool.name};
  std::vector<std::string> after;
  for (const Param& p : tool.params) {
    if (!values.contains(p.name)) continue;
    const json& value = values[p.name];
    switch (p.kind) {
      case Kind::kBoolean:
        if (value.get<bool>()) argv.push_back(p.flag);
        break;
      case Kind::kWords:
        after = value.get<std::vector<std::string>>();
        break;
      case Kind::kPaths:
        for (const json& item : value) argv.push_back(item.get<std::string>());
        break;
      case Kind::kRepeated:
        for (const json& item : value) {
          argv.push_back(p.flag);
          argv.push_back(item.get<std::string>());
        }
        break;
      default:
        if (!p.flag.empty()) argv.push_back(p.flag);
        argv.push_back(value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  if (json_output) argv.push_back("--json");
  if (!after.empty()) {
    argv.push_back("--");
    argv.insert(argv.end(), after.begin(), after.end());
  }
  return argv;
}

std::string exit_meaning(ExitCode code) {
  switch (code) {
    case ExitCode::kRegression:
      return "a regression";
    case ExitCode::kCoverageLow:
      return "the kernels compared cover too little of a side's GPU time";
    case ExitCode::kCaptureFailed:
      return "the ncu run failed or profiled nothing";
    case ExitCode::kNotReady:
      return "not ready: a check failed";
    default:
      return "see kprof --help";
  }
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty() || from == to) return text;
  for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// The call's paths as a terminal shows them: where a verb's text shows one raw (a line break,
// an escape in a file name), it shows it escaped.
std::string with_paths_escaped(std::string text, const Tool& tool, const Values& values) {
  for (const Param& p : tool.params) {
    if (!values.contains(p.name) || (p.kind != Kind::kPath && p.kind != Kind::kPaths)) continue;
    const json& value = values[p.name];
    for (const json& item : value.is_array() ? value : json::array({value})) {
      const std::string& path = item.get_ref<const std::string&>();
      text = replace_all(std::move(text), path, escape_for_terminal(path));
    }
  }
  return text;
}

// The compact text: the command line, the verb's own text answer inside the budget, what "—"
// means, the exit status where it is not 0, the notes. Every user string escaped: the command
// line whole, the paths wherever the text shows them.
std::string compose(const Tool& tool, const std::vector<std::string>& argv, const Values& values,
                    const pipeline::Answer& answer, std::size_t budget_chars, bool full) {
  std::string head = "$ " + escape_for_terminal(quoted_command(argv)) + "\n";
  const std::string out = with_paths_escaped(answer.text, tool, values);
  std::string tail;
  if (out.find("—") != std::string::npos) {
    tail +=
        "— : not in this report: the recording does not hold what the figure needs, or holds "
        "too little to support one; kprof never estimates it\n";
  }
  if (answer.code != ExitCode::kOk) {
    tail += fmt::format("exit {}: {} (kprof {} exits {})\n", static_cast<int>(answer.code),
                        exit_meaning(answer.code), tool.name, static_cast<int>(answer.code));
  }
  std::string notes =
      answer.notes.empty() ? "" : "notes:\n" + with_paths_escaped(answer.notes, tool, values);
  if (full) return head + out + tail + notes;
  const std::size_t fixed = head.size() + tail.size();
  const std::size_t room = budget_chars > fixed ? budget_chars - fixed : 0;
  notes = cut_to_budget(notes, room / 4);
  const std::size_t body = room > notes.size() ? room - notes.size() : 0;
  return head + cut_to_budget(out, body) + tail + notes;
}

ToolResult failure(const std::string& message, ExitCode code) {
  return tool_failure(message, static_cast<int>(code));
}

// Runs `body`, mapping what it throws as run_cli does: a failure result with kprof's line.
template <typename Body>
ToolResult answered(Body&& body) {
  try {
    return body();
  } catch (const InputError& error) {
    return failure(error.what(), error.code());
  } catch (const UsageError& error) {
    return failure(error.what(), ExitCode::kUsage);
  } catch (const std::invalid_argument& error) {
    return failure(error.what(), ExitCode::kUsage);
  } catch (const NothingSelected& error) {
    return failure(error.what(), ExitCode::kNothingSelected);
  } catch (const NotReady& error) {
    return failure(error.what(), ExitCode::kNotReady);
  } catch (const std::bad_alloc&) {
    return failure("out of memory", ExitCode::kInternal);
  } catch (const std::exception& error) {
    return failure(fmt::format("internal error (please report it): {}", error.what()),
                   ExitCode::kInternal);
  }
}

}  // namespace

ToolResult tool_failure(const std::string& message, int exit_code) {
  ToolResult result;
  result.is_error = true;
  // kprof's one line, as the CLI prints it on stderr — and one line whatever the message holds:
  // a line break in a file name is shown as \n, never as a line of its own.
  result.text = "kprof: " + escape_for_terminal(message);
  result.structured = json{{"exit_code", exit_code}, {"message", result.text}};
  return result;
}

nlohmann::json result_json(ToolResult result) {
  json reply = {{"content", json::array({{{"type", "text"}, {"text", std::move(result.text)}}})},
                {"isError", result.is_error}};
  if (result.structured) reply["structuredContent"] = std::move(*result.structured);
  return reply;
}

nlohmann::json tool_list(const ToolSettings& settings) {
  json list = json::array();
  for (const Tool& tool : tools_for(settings)) {
    list.push_back({{"name", tool.name},
                    {"title", tool.title},
                    {"description", tool.description},
                    {"inputSchema", input_schema(tool)},
                    {"annotations",
                     {{"title", tool.title},
                      {"readOnlyHint", true},
                      {"destructiveHint", false},
                      {"idempotentHint", true},
                      {"openWorldHint", false}}}});
  }
  return list;
}

std::vector<std::string> tool_names(const ToolSettings& settings) {
  std::vector<std::string> names;
  for (const Tool& tool : tools_for(settings)) names.push_back(tool.name);
  return names;
}

std::vector<std::string> cli_argv(const std::string& name, const nlohmann::json& arguments,
                                  const Roots& roots, const ToolSettings& settings) {
  const Tool* tool = find_tool(name, settings);
  if (tool == nullptr) throw UsageError("unknown tool");
  bool full = false;
  return argv_of(*tool, check_arguments(*tool, arguments, roots, full), true);
}

std::variant<ToolResult, PreparedCall> prepare_call(const std::string& name,
                                                    const nlohmann::json& arguments,
                                                    const Roots& roots,
                                                    const ToolSettings& settings) {
  const Tool* tool = find_tool(name, settings);
  if (tool == nullptr) {
    std::string names;
    for (const std::string& n : tool_names(settings)) names += (names.empty() ? "" : ", ") + n;
    return failure(
        fmt::format("unknown tool \"{}\"; the tools are {}", escape_for_terminal(name), names),
        ExitCode::kUsage);
  }
  PreparedCall call;
  call.tool = tool->name;
  ToolResult refused = answered([&] {
    call.values = check_arguments(*tool, arguments, roots, call.full);
    open_inputs(*tool, call.values, roots, call.files);
    return ToolResult{};
  });
  if (refused.is_error) return refused;
  return call;
}

ToolResult run_call(const PreparedCall& call, const ToolSettings& settings) {
  const Tool* tool = find_tool(call.tool, settings);
  if (tool == nullptr) return failure("unknown tool", ExitCode::kUsage);
  return answered([&] {
    InputScope scope(call.files);
    const std::vector<std::string> json_argv = argv_of(*tool, call.values, true);
    // One run: the structured answer is the verb's --json output exactly as the CLI prints it,
    // parsed back; the text answer is its text output, from the same run. Secrets were redacted
    // where they entered (the argv of the envelope, command lines, environments, URLs): no
    // pattern runs over the finished answer, which would corrupt a kernel's name or the JSON.
    pipeline::Answer answer = tool->run(call.values, json_argv);
    ToolResult result;
    result.structured = json::parse(answer.out);
    result.text =
        compose(*tool, json_argv, call.values, answer, settings.token_budget * 4, call.full);
    return result;
  });
}

ToolResult call_tool(const std::string& name, const nlohmann::json& arguments, const Roots& roots,
                     const ToolSettings& settings) {
  std::variant<ToolResult, PreparedCall> prepared = prepare_call(name, arguments, roots, settings);
  if (ToolResult* refused = std::get_if<ToolResult>(&prepared)) return std::move(*refused);
  return run_call(std::get<PreparedCall>(prepared), settings);
}

}  // namespace kprof::mcp
