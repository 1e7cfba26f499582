#include "mcp/compact.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace kprof::mcp {

std::size_t estimated_tokens(const std::string& text) { return (text.size() + 3) / 4; }

std::string cut_to_budget(const std::string& text, std::size_t budget_chars) {
  if (text.size() <= budget_chars) return text;
  std::vector<std::string_view> lines;
  std::string_view rest(text);
  while (!rest.empty()) {
    std::size_t end = rest.find('\n');
    std::size_t take = end == std::string_view::npos ? rest.size() : end + 1;
    lines.push_back(rest.substr(0, take));
    rest.remove_prefix(take);
  }
  auto more_line = [](std::size_t n) {
    return fmt::format("… {} more {}; call again with detail=full\n", n, n == 1 ? "row" : "rows");
  };
  std::size_t non_blank = 0;
  for (std::string_view line : lines) non_blank += line.find_first_not_of(" \n") != line.npos;
  std::string kept;
  std::size_t kept_non_blank = 0;
  for (std::string_view line : lines) {
    const bool blank = line.find_first_not_of(" \n") == line.npos;
    const std::size_t left = non_blank - kept_non_blank - (blank ? 0 : 1);
    if (kept.size() + line.size() + (line.back() != '\n') +
            more_line(std::max<std::size_t>(left, 1)).size() >
        budget_chars) {
      break;
    }
    kept += line;
    if (!kept.empty() && kept.back() != '\n') kept += '\n';
    kept_non_blank += !blank;
  }
  const std::size_t left = non_blank - kept_non_blank;
  return left == 0 ? kept : kept + more_line(left);
}

}  // namespace kprof::mcp
