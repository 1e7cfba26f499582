#include "importers/ncu_csv/section_labels.h"

namespace kprof::importers {
namespace {

struct LabelRow {
  std::string_view section;
  std::string_view label;
  std::string_view metric;
};

constexpr LabelRow kLabels[] = {
#include "importers/ncu_csv/section_labels.inc"
};

}  // namespace

std::string_view metric_for_label(std::string_view section, std::string_view label) {
  for (const LabelRow& row : kLabels) {
    if (row.section == section && row.label == label) return row.metric;
  }
  return {};
}

}  // namespace kprof::importers
