#include "support/crosscheck.h"

#include <cmath>
#include <map>

#include "common/text.h"

namespace kprof::testing {

double printed_unit_factor(const std::string& unit) {
  static const std::map<std::string, double> factors = {
      {"", 1},
      {"%", 1},
      {"sector", 1},
      {"inst", 1},
      {"inst/cycle", 1},
      {"cycle", 1},
      {"warp", 1},
      {"sector/cycle", 1},
      {"thread", 1},
      {"request", 1},
      {"block", 1},
      {"byte/s", 1},
      {"byte/sector", 1},
      {"branches", 1},
      {"sectors", 1},
      {"byte/cycle", 1},
      {"byte", 1},
      {"pass", 1},
      {"register/thread", 1},
      {"%/register", 1},
      {"cluster", 1},
      {"byte/block", 1},
      {"SM", 1},
      {"sample", 1},
      {"sector/s", 1},
      {"ns", 1},
      {"us", 1e3},
      {"ms", 1e6},
      {"Kbyte", 1e3},
      {"Mbyte", 1e6},
      {"Gbyte", 1e9},
      {"Tbyte", 1e12},
      {"Kbyte/s", 1e3},
      {"Mbyte/s", 1e6},
      {"Gbyte/s", 1e9},
      {"Tbyte/s", 1e12},
      {"Khz", 1e3},
      {"Mhz", 1e6},
      {"Ghz", 1e9},
      {"sector/ns", 1e9},
      {"sector/us", 1e6},
      {"sector/ms", 1e3},
      {"Kbyte/block", 1e3},
      {"Kbyte/cycle", 1e3},
      {"%/Kbyte", 1e3},
  };
  auto it = factors.find(unit);
  return it == factors.end() ? 0 : it->second;
}

double printed_tolerance(const std::string& text, double factor) {
  size_t dot = text.find('.');
  int decimals = dot == std::string::npos ? 0 : static_cast<int>(text.size() - dot - 1);
  return 0.5 * std::pow(10.0, -decimals) * factor;
}

bool not_collected(const std::string& printed) {
  return printed.empty() || printed == "n/a" || printed == "no data";
}

Crosscheck crosscheck_raw_csv(const model::Report& report,
                              const std::vector<importers::CsvRecord>& csv) {
  Crosscheck result;
  if (csv.size() < 2) return result;
  const auto& header = csv[0].fields;
  const auto& units = csv[1].fields;
  for (size_t row = 2; row < csv.size(); ++row) {
    const auto& fields = csv[row].fields;
    size_t id = std::stoul(fields.at(0));
    if (id >= report.kernels.size()) {
      result.mismatches.push_back("CSV ID " + fields[0] + " is not in the report");
      continue;
    }
    const model::Kernel& kernel = report.kernels[id];
    ++result.kernels;
    for (size_t c = 11; c < header.size() && c < fields.size(); ++c) {
      const std::string& printed = fields[c];
      if (not_collected(printed)) {
        ++result.not_collected;
        continue;
      }
      double factor = printed_unit_factor(units[c]);
      if (factor == 0) {
        result.uncovered_units.push_back(units[c]);
        continue;
      }
      const model::Metric* metric = report.find(kernel, header[c]);
      if (!metric) {
        ++result.absent_from_report;
        continue;
      }
      std::string where = "kernel " + fields[0] + " " + header[c];
      const model::MetricValue& actual = metric->value;
      ++result.compared;
      bool ok;
      if (printed == "nan" || printed == "-nan") {
        ok = actual.kind() == model::MetricValue::Kind::kDouble && std::isnan(actual.real());
      } else if (auto number = parse_ncu_number(printed)) {
        double expected = *number * factor;
        auto value = actual.number();
        if (value && *value < 0 && printed == "0") {
          result.clamped.push_back(where);
          continue;
        }
        ok = value && std::fabs(*value - expected) <=
                          printed_tolerance(printed, factor) + 1e-12 * std::fabs(expected);
      } else {
        ok = actual.kind() == model::MetricValue::Kind::kString && actual.text() == printed;
      }
      if (!ok) {
        result.mismatches.push_back(where + ": report has " + actual.to_string() +
                                    ", ncu printed " + printed + " " + units[c]);
      }
    }
  }
  return result;
}

}  // namespace kprof::testing
