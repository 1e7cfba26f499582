#include "model/report.h"

#include <fmt/format.h>

#include <algorithm>

namespace kprof::model {

std::optional<double> MetricValue::number() const {
  switch (kind) {
    case Kind::kDouble:
      return real;
    case Kind::kUint64:
      return static_cast<double>(integer);
    case Kind::kString:
      break;
  }
  return std::nullopt;
}

std::string MetricValue::to_string() const {
  switch (kind) {
    case Kind::kDouble:
      return fmt::format("{}", real);
    case Kind::kUint64:
      return fmt::format("{}", integer);
    case Kind::kString:
      break;
  }
  return text;
}

std::string_view rule_type_code(RuleType type) {
  switch (type) {
    case RuleType::kOk:
      return "INF";
    case RuleType::kWarning:
      return "WRN";
    case RuleType::kError:
      return "ERR";
    case RuleType::kOptimization:
      return "OPT";
    case RuleType::kNone:
      break;
  }
  return "";
}

std::string Dim3::to_string() const { return fmt::format("({}, {}, {})", x, y, z); }

static const Metric* find_sorted(const std::vector<Metric>& metrics, std::string_view name) {
  auto it = std::lower_bound(metrics.begin(), metrics.end(), name,
                             [](const Metric& m, std::string_view n) { return m.name < n; });
  return it != metrics.end() && it->name == name ? &*it : nullptr;
}

const Metric* Kernel::find(std::string_view name) const { return find_sorted(metrics, name); }

std::optional<double> Kernel::number(std::string_view name) const {
  const Metric* metric = find(name);
  return metric ? metric->value.number() : std::nullopt;
}

const std::string& Kernel::display_name() const {
  if (!function_name.empty()) return function_name;
  if (!demangled_name.empty()) return demangled_name;
  return mangled_name;
}

const Metric* Device::find(std::string_view name) const { return find_sorted(attributes, name); }

std::optional<double> Device::number(std::string_view name) const {
  const Metric* metric = find(name);
  return metric ? metric->value.number() : std::nullopt;
}

std::string Device::compute_capability() const {
  auto major = number("device__attribute_compute_capability_major");
  auto minor = number("device__attribute_compute_capability_minor");
  if (!major || !minor) return {};
  return fmt::format("{}.{}", *major, *minor);
}

std::string_view source_format_name(SourceFormat format) {
  switch (format) {
    case SourceFormat::kNcuRep:
      return "ncu-rep";
    case SourceFormat::kNcuCsvRaw:
      return "ncu-csv-raw";
    case SourceFormat::kNcuCsvDetails:
      return "ncu-csv-details";
  }
  return "unknown";
}

const Device* Report::device_of(const Kernel& kernel) const {
  for (const Device& device : devices) {
    if (device.id == kernel.device_id) return &device;
  }
  return nullptr;
}

const Metric* Report::find(const Kernel& kernel, std::string_view name) const {
  if (const Metric* metric = kernel.find(name)) return metric;
  const Device* device = device_of(kernel);
  return device ? device->find(name) : nullptr;
}

std::optional<double> Report::number(const Kernel& kernel, std::string_view name) const {
  const Metric* metric = find(kernel, name);
  return metric ? metric->value.number() : std::nullopt;
}

void sort_metrics(std::vector<Metric>& metrics) {
  auto by_name = [](const Metric& a, const Metric& b) { return a.name < b.name; };
  if (std::adjacent_find(metrics.begin(), metrics.end(), [&](const Metric& a, const Metric& b) {
        return !by_name(a, b);
      }) == metrics.end()) {
    return;  // already strictly ordered: nothing to sort, no duplicates
  }
  // Metric is large; sort indices and move each element once.
  std::vector<size_t> order(metrics.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return by_name(metrics[a], metrics[b]); });
  std::vector<Metric> sorted;
  sorted.reserve(metrics.size());
  for (size_t i : order) {
    if (!sorted.empty() && sorted.back().name == metrics[i].name) continue;  // keep the first
    sorted.push_back(std::move(metrics[i]));
  }
  metrics = std::move(sorted);
}

}  // namespace kprof::model
