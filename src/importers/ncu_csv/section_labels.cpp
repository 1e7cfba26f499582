#include "importers/ncu_csv/section_labels.h"

#include <initializer_list>
#include <utility>

namespace kprof::importers {
namespace {

struct LabelRow {
  std::string_view section;
  std::string_view label;
  std::string_view metric;
  std::initializer_list<std::pair<int, int>> architectures;  // empty: every architecture
};

const LabelRow kLabels[] = {
#include "importers/ncu_csv/section_labels.inc"
};

bool applies(const LabelRow& row, int cc) {
  if (row.architectures.size() == 0) return true;
  for (auto [low, high] : row.architectures) {
    if (cc >= low && cc <= high) return true;
  }
  return false;
}

}  // namespace

std::string_view metric_for_label(std::string_view section, std::string_view label, int cc) {
  for (const LabelRow& row : kLabels) {
    if (row.section == section && row.label == label && applies(row, cc)) return row.metric;
  }
  return {};
}

}  // namespace kprof::importers
