// The Chrome trace reader's boundary scanner (skip_value: 16 bytes at a time, then byte by byte
// to the end of a read) on what makes finding where an event ends hard: a read that ends inside
// an event at every offset (the event is then carried over into the next read), quotes and
// backslashes escaped inside strings, and braces and brackets inside strings. The expected
// events are written out by hand from the JSON text below, not read back by the code under test.
// Each reading is made twice: the bytes copied into the reader's buffer read by read (a gzip
// file's way) and scanned where they lie (a plain file's, mapped), with the same reads' ends.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "importers/chrome_trace/chrome_trace_reader.h"

namespace kprof::importers {
namespace {

struct Seen {
  std::string category, name;
  double timestamp_us, duration_us;
  bool operator==(const Seen&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Seen& seen) {
  return out << seen.category << "/" << seen.name << "@" << seen.timestamp_us << "+"
             << seen.duration_us;
}

class RecordingSink final : public TraceEventSink {
 public:
  void on_event(const TraceEvent& event) override {
    seen.push_back({std::string(event.category), std::string(event.name), event.timestamp_us,
                    event.duration_us});
  }
  std::vector<Seen> seen;
};

// Top-level values the reader skips (with strings that look like the end of a value), then
// events whose names and arguments hold escaped quotes, backslashes, and brackets.
const std::string kTrace =
    R"({"schemaVersion": 1, "deviceProperties": [{"name": "H200 \"}]\\", "x": [[{}]]}],)"
    R"( "note": "a \\\" } ] string",)"
    "\n"
    R"( "traceEvents": [)"
    R"({"ph": "X", "cat": "kernel", "name": "k\"}{quoted", "ts": 10, "dur": 2,)"
    R"( "args": {"text": "}}]]\\\\", "nested": {"a": ["{", "]", "\\"]}}},)"
    "\n  "
    R"({"ph": "X", "cat": "kernel", "name": "ends\\", "ts": 20.5, "dur": 1.25},)"
    R"({"ph": "X", "cat": "cpu_op", "name": "[{\\\"}]", "ts": 30, "dur": 0, "args": {}},)"
    R"({"ph": "i", "cat": "marker", "name": "instant \"{\"", "ts": 31},)"
    R"({"ph": "X", "cat": "gpu_memcpy", "name": "\\\\\\\"", "ts": 40, "dur": 3,)"
    R"( "args": {"s": "\u007b\"\\"}})"
    R"(], "displayTimeUnit": "ns \"]}"})";

// What the JSON above says, unescaped by hand.
const std::vector<Seen> kExpected = {
    {"kernel", "k\"}{quoted", 10, 2},
    {"kernel", "ends\\", 20.5, 1.25},
    {"cpu_op", "[{\\\"}]", 30, 0},
    {"gpu_memcpy", "\\\\\\\"", 40, 3},
};

// Both ways (copied and in place) must see the same events and counts: the copied one's.
std::vector<Seen> read(const std::string& trace, ReadChunks chunks,
                       TraceReadStats* stats = nullptr) {
  RecordingSink sink, in_place_sink;
  chunks.in_place = false;
  TraceReadStats read = read_chrome_trace_bytes("t.json", trace, sink, chunks);
  chunks.in_place = true;
  TraceReadStats in_place = read_chrome_trace_bytes("t.json", trace, in_place_sink, chunks);
  EXPECT_EQ(in_place_sink.seen, sink.seen);
  EXPECT_EQ(in_place.events, read.events);
  EXPECT_EQ(in_place.other_events, read.other_events);
  EXPECT_EQ(in_place.bytes, read.bytes);
  if (stats) *stats = read;
  return sink.seen;
}

TEST(ChromeTraceScanner, EscapedQuotesBackslashesAndBracketsInStrings) {
  TraceReadStats stats;
  EXPECT_EQ(read(kTrace, {}, &stats), kExpected);
  EXPECT_EQ(stats.events, 4u);
  EXPECT_EQ(stats.other_events, 1u);  // the instant event
  EXPECT_EQ(stats.bytes, kTrace.size());
}

// The first read ends at every offset of the trace: inside keys, strings, escapes, between the
// two bytes of an escape, on a bracket inside a string, between events. The rest comes in one
// read, so the 16-byte path and the byte-by-byte tail both meet the boundary.
TEST(ChromeTraceScanner, AReadEndingAtEveryOffsetChangesNothing) {
  for (size_t split = 1; split < kTrace.size(); ++split) {
    SCOPED_TRACE("first read of " + std::to_string(split) + " bytes");
    TraceReadStats stats;
    ASSERT_EQ(read(kTrace, {split, 0, false}, &stats), kExpected);
    EXPECT_EQ(stats.bytes, kTrace.size());
  }
}

// Every read short: an event spans many reads (one byte each at the extreme), each carried over.
TEST(ChromeTraceScanner, ReadsOfEverySmallSizeChangeNothing) {
  for (size_t size = 1; size <= 64; ++size) {
    SCOPED_TRACE("reads of " + std::to_string(size) + " bytes");
    ASSERT_EQ(read(kTrace, {0, size, false}), kExpected);
  }
}

// An event longer than 16 bytes after the split, so that the boundary falls inside the vector
// loop's window at each of its 16 positions, for events at each alignment.
TEST(ChromeTraceScanner, BoundaryAtEachPositionOfTheSixteenByteWindow) {
  for (size_t pad = 0; pad < 16; ++pad) {
    std::string trace = R"({"traceEvents": [)" + std::string(pad, ' ') +
                        R"({"ph": "X", "cat": "kernel", "name": "a\\\"b}\"]c", "ts": 1, )"
                        R"("dur": 1, "args": {"t": "\\\\\\\\\\\\\\\\\\\\\"}"}}]})";
    for (size_t split = 17 + pad; split < trace.size(); ++split) {
      SCOPED_TRACE("pad " + std::to_string(pad) + ", split " + std::to_string(split));
      std::vector<Seen> seen = read(trace, {split, 16, false});
      ASSERT_EQ(seen.size(), 1u);
      EXPECT_EQ(seen[0].name, "a\\\"b}\"]c");
    }
  }
}

// A trace cut anywhere is refused (never a crash or a partial answer passed off as whole), also
// when the cut falls right after a backslash or inside a string holding brackets.
TEST(ChromeTraceScanner, ATraceCutAnywhereIsRefused) {
  for (size_t length = 0; length < kTrace.size(); ++length) {
    SCOPED_TRACE("cut at " + std::to_string(length));
    for (bool in_place : {false, true}) {
      RecordingSink sink;
      EXPECT_THROW(
          read_chrome_trace_bytes("t.json", kTrace.substr(0, length), sink, {0, 7, in_place}),
          InputError);
    }
  }
}

}  // namespace
}  // namespace kprof::importers
