#include "model/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

#include "common/utf8.h"
#include "model/kernel_names.h"

namespace kprof::model {

MetricValue::MetricValue(const MetricValue& other) : kind_(other.kind_) {
  if (kind_ == Kind::kString) {
    text_ = new std::string(*other.text_);
  } else {
    integer_ = other.integer_;  // the 8 bytes, whichever number they hold
  }
}

MetricValue::MetricValue(MetricValue&& other) noexcept : kind_(other.kind_) {
  integer_ = other.integer_;
  if (kind_ == Kind::kString) {
    other.kind_ = Kind::kDouble;
    other.real_ = 0;
  }
}

MetricValue& MetricValue::operator=(const MetricValue& other) {
  if (this != &other) *this = MetricValue(other);
  return *this;
}

MetricValue& MetricValue::operator=(MetricValue&& other) noexcept {
  if (this == &other) return *this;
  if (kind_ == Kind::kString) delete text_;
  kind_ = other.kind_;
  integer_ = other.integer_;
  if (kind_ == Kind::kString) {
    other.kind_ = Kind::kDouble;
    other.real_ = 0;
  }
  return *this;
}

MetricValue::~MetricValue() {
  if (kind_ == Kind::kString) delete text_;
}

MetricValue MetricValue::of_double(double v) {
  MetricValue value;
  value.real_ = v;
  return value;
}

MetricValue MetricValue::of_uint(std::uint64_t v) {
  MetricValue value;
  value.kind_ = Kind::kUint64;
  value.integer_ = v;
  return value;
}

MetricValue MetricValue::of_string(std::string v) {
  MetricValue value;
  value.text_ = new std::string(std::move(v));
  value.kind_ = Kind::kString;
  return value;
}

const std::string& MetricValue::text() const {
  static const std::string empty;
  return kind_ == Kind::kString ? *text_ : empty;
}

std::string* MetricValue::mutable_text() { return kind_ == Kind::kString ? text_ : nullptr; }

bool operator==(const MetricValue& a, const MetricValue& b) {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case MetricValue::Kind::kDouble:
      return a.real_ == b.real_;
    case MetricValue::Kind::kUint64:
      return a.integer_ == b.integer_;
    case MetricValue::Kind::kString:
      break;
  }
  return *a.text_ == *b.text_;
}

std::optional<double> MetricValue::number() const {
  switch (kind_) {
    case Kind::kDouble:
      return real_;
    case Kind::kUint64:
      return static_cast<double>(integer_);
    case Kind::kString:
      break;
  }
  return std::nullopt;
}

std::string MetricValue::to_string() const {
  switch (kind_) {
    case Kind::kDouble:
      return fmt::format("{}", real_);
    case Kind::kUint64:
      return fmt::format("{}", integer_);
    case Kind::kString:
      break;
  }
  return *text_;
}

const std::string& MetricName::empty_text() {
  static const std::string empty;
  return empty;
}

std::ostream& operator<<(std::ostream& out, const MetricName& name) { return out << name.str(); }

MetricName NameInterner::intern(std::string_view text) {
  auto it = names_.find(text);
  if (it != names_.end()) return it->second;
  MetricName name(text);
  names_.emplace(name.str(), name);
  return name;
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

std::string Kernel::display_name() const {
  if (!function_name.empty()) {
    if (is_wrapper_kernel_base(function_name)) {
      for (const std::string* name : {&demangled_name, &mangled_name}) {
        if (name->empty()) continue;
        std::string shown = wrapper_kernel_display_name(*name);
        if (!shown.empty()) return shown;
      }
    }
    return function_name;
  }
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

const SourceModule* Report::module_of(const Kernel& kernel) const {
  if (!kernel.source_reference) return nullptr;
  auto it = std::lower_bound(
      modules.begin(), modules.end(), *kernel.source_reference,
      [](const SourceModule& module, std::uint64_t key) { return module.reference < key; });
  return it != modules.end() && it->reference == *kernel.source_reference ? &*it : nullptr;
}

const ModuleFunction* SourceModule::function(std::string_view name) const {
  for (const ModuleFunction& entry : functions) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

std::string SourceModule::sm_name() const {
  if (sm_version == 0) return "";
  return "sm_" + std::to_string(sm_version >> 16) + std::to_string((sm_version >> 8) & 0xff);
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

namespace {

// Each string field below, in declaration order of the structs in report.h; a field added there
// belongs here too.
bool fix(std::string& text) { return kprof::make_valid_utf8(text); }

bool fix(std::vector<std::string>& texts) {
  bool changed = false;
  for (std::string& text : texts) changed |= fix(text);
  return changed;
}

bool fix(MetricValue& value) {
  std::string* text = value.mutable_text();
  return text != nullptr && fix(*text);
}

bool fix(MetricName& name) {
  if (is_valid_utf8(name.str())) return false;
  name = to_valid_utf8(name.str());
  return true;
}

bool fix(ProfilerSettings& s);
bool fix(Session& s);

// Every field is repaired, whatever the others did (no short-circuit).
template <typename... Fields>
bool fix_all(Fields&... fields) {
  bool changed = false;
  ((changed |= fix(fields)), ...);
  return changed;
}

bool fix_metrics(std::vector<Metric>& metrics) {
  bool renamed = false, changed = false;
  for (Metric& metric : metrics) {
    renamed |= fix(metric.name);
    changed |= fix_all(metric.value, metric.unit);
    for (MetricInstance& instance : metric.instances) {
      changed |= fix_all(instance.correlation_id, instance.value);
    }
  }
  if (renamed) sort_metrics(metrics);
  return renamed || changed;
}

bool fix(ProfilerSettings& s) {
  return fix_all(s.settings_source, s.sets, s.sections, s.metrics, s.kernel_name,
                 s.kernel_name_base, s.kernel_id, s.replay_mode, s.clock_control, s.cache_control,
                 s.target_processes, s.nvtx, s.profile_from_start, s.export_path, s.application);
}

bool fix(Session& s) {
  bool changed = fix_all(s.ncu_version, s.cuda_version, s.command_line, s.host_os, s.target_os,
                         s.target_cpu, s.comments, s.settings);
  for (auto& [provider, version] : s.versions) changed |= fix_all(provider, version);
  return changed;
}

}  // namespace

bool make_valid_utf8(Report& report) {
  // Every field is fixed, none skipped by short-circuiting (fix_all, |=).
  bool changed = fix_all(report.path, report.session);
  for (Process& process : report.processes) changed |= fix_all(process.name, process.host);
  for (Device& device : report.devices) {
    changed |= fix(device.name);
    changed |= fix_metrics(device.attributes);
  }
  for (Kernel& kernel : report.kernels) {
    changed |= fix_all(kernel.process_name, kernel.host, kernel.mangled_name, kernel.function_name,
                       kernel.demangled_name);
    changed |= fix_metrics(kernel.metrics);
    for (RuleFinding& rule : kernel.rules) {
      changed |= fix_all(rule.rule, rule.section, rule.message, rule.speedup_type);
    }
  }
  // A cubin is bytes, not text; only the function names it lists are names.
  for (SourceModule& module : report.modules) {
    for (ModuleFunction& function : module.functions) changed |= fix(function.name);
  }
  return changed;
}

}  // namespace kprof::model
