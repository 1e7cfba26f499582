#include "analysis/source_counters.h"

#include <algorithm>
#include <map>

namespace kprof::analysis {
namespace {

constexpr std::uint64_t kInstructionBytes = 16;

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

const std::vector<std::string_view>& stall_reasons() {
  static const std::vector<std::string_view> reasons = {"barrier",
                                                        "branch_resolving",
                                                        "dispatch_stall",
                                                        "drain",
                                                        "imc_miss",
                                                        "lg_throttle",
                                                        "long_scoreboard",
                                                        "math_pipe_throttle",
                                                        "membar",
                                                        "mio_throttle",
                                                        "misc",
                                                        "no_instructions",
                                                        "not_selected",
                                                        "selected",
                                                        "short_scoreboard",
                                                        "sleeping",
                                                        "tex_throttle",
                                                        "wait",
                                                        "warpgroup_arrive"};
  return reasons;
}

bool may_be_source_counter(std::string_view metric) {
  static constexpr std::string_view kPrefixes[] = {
      "smsp__pcsamp_",  // samples, by reason and not issued
      "inst_executed",
      "thread_inst_executed",
      "derived__",
      "memory_",
      "smsp__branch_targets_threads_divergent",
      "smsp__sass_inst_executed_memdesc_explicit_",
      "launch__function_pcs"};
  for (std::string_view prefix : kPrefixes) {
    if (starts_with(metric, prefix)) return true;
  }
  return false;
}

std::optional<std::uint64_t> function_start(const model::Kernel& kernel) {
  const model::Metric* metric = kernel.find(kFunctionStart);
  if (!metric || metric->instances.size() != 1) return std::nullopt;
  const model::MetricValue& value = metric->instances.front().value;
  if (value.kind() != model::MetricValue::Kind::kUint64) return std::nullopt;
  return value.integer();
}

std::optional<std::size_t> SourceCounters::metric(std::string_view name) const {
  auto it = std::lower_bound(metrics.begin(), metrics.end(), name,
                             [](const std::string& a, std::string_view b) { return a < b; });
  if (it == metrics.end() || *it != name) return std::nullopt;
  return static_cast<std::size_t>(it - metrics.begin());
}

double SourceCounters::value(std::size_t instruction, std::string_view name) const {
  auto m = metric(name);
  return m ? values[instruction][*m] : 0;
}

double SourceCounters::total(std::string_view name) const {
  auto m = metric(name);
  if (!m) return 0;
  double sum = 0;
  for (const std::vector<double>& row : values) sum += row[*m];
  return sum;
}

SourceCounters source_counters(const model::Kernel& kernel, std::uint64_t start,
                               std::uint64_t size) {
  SourceCounters counters;
  counters.start = start;
  counters.size = size;
  const std::uint64_t count = size / kInstructionBytes;
  // Only a per-PC metric's every id is an instruction's address: other instanced metrics are
  // keyed by register count, block size, opcode name or timestamp.
  std::vector<const model::Metric*> per_pc;
  for (const model::Metric& metric : kernel.metrics) {
    if (metric.instances.empty() || metric.name.str() == kFunctionStart) continue;
    bool all_pcs = std::all_of(
        metric.instances.begin(), metric.instances.end(), [&](const model::MetricInstance& i) {
          if (i.correlation_id.kind() != model::MetricValue::Kind::kUint64) return false;
          std::uint64_t pc = i.correlation_id.integer();
          return pc >= start && pc - start < count * kInstructionBytes &&
                 (pc - start) % kInstructionBytes == 0 && i.value.is_number();
        });
    if (all_pcs) per_pc.push_back(&metric);
  }
  // kernel.metrics is sorted by name, so these are too.
  for (const model::Metric* metric : per_pc) counters.metrics.push_back(metric->name.str());
  counters.values.assign(count, std::vector<double>(per_pc.size(), 0));
  for (std::size_t m = 0; m < per_pc.size(); ++m) {
    for (const model::MetricInstance& instance : per_pc[m]->instances) {
      std::uint64_t index = (instance.correlation_id.integer() - start) / kInstructionBytes;
      counters.values[index][m] = instance.value.number().value_or(0);
    }
  }
  return counters;
}

std::vector<HotInstruction> hottest_instructions(const SourceCounters& counters, std::size_t top,
                                                 bool& by_samples) {
  auto samples = counters.metric(kSamples);
  by_samples = samples && counters.total(kSamples) > 0;
  auto key = by_samples ? samples : counters.metric(kExecuted);
  std::vector<HotInstruction> hot;
  if (!key) return hot;
  std::vector<std::pair<std::size_t, std::size_t>> reasons;  // (reason, metric)
  for (std::size_t r = 0; r < stall_reasons().size(); ++r) {
    std::string name = std::string(kStallPrefix).append(stall_reasons()[r]);
    if (auto m = counters.metric(name)) reasons.emplace_back(r, *m);
  }
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < counters.instructions(); ++i) {
    if (counters.values[i][*key] > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return counters.values[a][*key] > counters.values[b][*key];
  });
  if (order.size() > top) order.resize(top);
  for (std::size_t i : order) {
    HotInstruction row;
    row.index = i;
    row.samples = samples ? counters.values[i][*samples] : 0;
    for (auto [r, m] : reasons) {
      if (counters.values[i][m] > 0) {
        row.reasons.emplace_back(std::string(stall_reasons()[r]), counters.values[i][m]);
      }
    }
    std::stable_sort(row.reasons.begin(), row.reasons.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    hot.push_back(std::move(row));
  }
  return hot;
}

std::vector<LineTotal> line_totals(const SourceCounters& counters,
                                   const std::vector<std::optional<SourceLocation>>& cuda) {
  std::map<std::pair<std::string, std::uint64_t>, LineTotal> by_line;
  auto samples = counters.metric(kSamples);
  auto executed = counters.metric(kExecuted);
  for (std::size_t i = 0; i < counters.instructions() && i < cuda.size(); ++i) {
    if (!cuda[i]) continue;
    LineTotal& total = by_line[{cuda[i]->file, cuda[i]->line}];
    total.location = *cuda[i];
    if (samples) total.samples += counters.values[i][*samples];
    if (executed) total.executed += counters.values[i][*executed];
    ++total.instructions;
  }
  std::vector<LineTotal> lines;
  for (auto& [key, total] : by_line) lines.push_back(std::move(total));
  std::stable_sort(lines.begin(), lines.end(), [](const LineTotal& a, const LineTotal& b) {
    if (a.samples != b.samples) return a.samples > b.samples;
    return a.executed > b.executed;
  });
  return lines;
}

}  // namespace kprof::analysis
