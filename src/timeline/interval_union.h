// The length of a union of time intervals, built one interval at a time in bounded memory: what
// GPU busy and exposed communication need from a stream of trace events that is not held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace kprof::timeline {

// Intervals merge as they arrive. Trace readers hand events over roughly in time order (a
// profiler writes each device's activities as its buffers fill), so the open set stays small;
// when it holds more than `window` disjoint pieces the earliest are closed (summed and dropped)
// and the union's memory stays bounded whatever the trace's size. An interval that arrives
// starting before what was closed is counted (`late_intervals`) and only its part after the
// closed frontier is added: the length is then a lower bound, and says so through the count.
class IntervalUnion {
 public:
  explicit IntervalUnion(std::size_t window = 1 << 14) : window_(window) {}
  void add(double start, double end);
  double length() const;
  std::uint64_t late_intervals() const { return late_; }

 private:
  void close_earliest();  // past `window` pieces, the earliest closed

  std::size_t window_;
  std::map<double, double> open_;  // start -> end, disjoint, not touching
  double open_length_ = 0;
  double closed_length_ = 0;
  double frontier_ = 0;  // everything before it is closed
  bool closed_any_ = false;
  std::uint64_t late_ = 0;
};

}  // namespace kprof::timeline
