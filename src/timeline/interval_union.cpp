#include "timeline/interval_union.h"

#include <algorithm>
#include <iterator>

namespace kprof::timeline {

void IntervalUnion::add(double start, double end) {
  if (closed_any_ && start < frontier_) {
    ++late_;
    start = frontier_;
  }
  if (!(end > start)) return;
  // In time order (most intervals of a trace): the new one touches at most the last piece, which
  // is extended in place or followed, instead of being looked up, erased and put back. The same
  // sums in the same order as the general case below, so the length is the same to the bit.
  if (!open_.empty()) {
    auto last = std::prev(open_.end());
    if (start >= last->first) {
      if (last->second >= start) {
        const double merged_end = std::max(end, last->second);
        open_length_ -= last->second - last->first;
        last->second = merged_end;
        open_length_ += merged_end - last->first;
      } else {
        open_.emplace_hint(open_.end(), start, end);
        open_length_ += end - start;
      }
      close_earliest();
      return;
    }
  }
  // The first piece that could touch [start, end]: the last one starting at or before start.
  auto it = open_.upper_bound(start);
  if (it != open_.begin() && std::prev(it)->second >= start) --it;
  while (it != open_.end() && it->first <= end) {
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    open_length_ -= it->second - it->first;
    it = open_.erase(it);
  }
  open_.emplace(start, end);
  open_length_ += end - start;
  close_earliest();
}

void IntervalUnion::close_earliest() {
  while (open_.size() > window_) {
    auto first = open_.begin();
    closed_length_ += first->second - first->first;
    open_length_ -= first->second - first->first;
    frontier_ = first->second;
    closed_any_ = true;
    open_.erase(first);
  }
}

double IntervalUnion::length() const { return closed_length_ + open_length_; }

}  // namespace kprof::timeline
