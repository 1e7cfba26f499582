// The Chrome trace reader's parsing threads (chrome_trace_reader.cpp, EventPipeline): a trace of
// megabytes is parsed on two threads in batches of a read buffer each, and what they give must
// reach the sink in file order, with the counts and errors a reader parsing each event as it found
// it would give. The traces here are made large enough that whole read buffers are handed to the
// threads (a trace of a few hundred kilobytes is parsed inline and would test nothing of them);
// the expected order is the events' index, written into each event's name and time.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/scratch_dir.h"

namespace kprof::importers {
namespace {

// What the sink saw, one entry per call: "e<index>" for an event, "s<ts>" for a bare span.
class OrderSink final : public TraceEventSink {
 public:
  void on_event(const TraceEvent& event) override { seen.push_back("e" + std::string(event.name)); }
  // Kernels parsed, the rest handed over as spans (as kprof rank's sink asks).
  bool wants_category(std::string_view category) const override { return category == "kernel"; }
  void on_span(double timestamp_us, double /*duration_us*/) override {
    seen.push_back("s" + std::to_string(static_cast<long long>(timestamp_us)));
  }
  std::vector<std::string> seen;
};

// Event i of the trace: kernels (parsed, some through the fast path, some with an escape that
// sends them to simdjson) and CPU operators (spans), of sizes that vary so that events straddle
// read buffers at many offsets. Its name and its time are both i.
std::string event(std::size_t i) {
  const std::string index = std::to_string(i);
  const std::string padding(i * 7919 % 700, 'p');
  if (i % 3 == 0) {
    return R"({"ph": "X", "cat": "cpu_op", "name": ")" + index + R"(", "ts": )" + index +
           R"(, "dur": 1, "args": {"pad": ")" + padding + R"("}})";
  }
  const std::string escape = i % 11 == 0 ? R"(\n)" : "";
  return R"({"ph": "X", "cat": "kernel", "name": ")" + index + R"(", "ts": )" + index +
         R"(, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": )" + index +
         R"(, "pad": ")" + padding + escape + R"("}})";
}

// What the sink must see for events [0, count): each in order, as an event or a span.
std::vector<std::string> expected(std::size_t count) {
  std::vector<std::string> seen;
  for (std::size_t i = 0; i < count; ++i) {
    seen.push_back((i % 3 == 0 ? "s" : "e") + std::to_string(i));
  }
  return seen;
}

// An error's message and byte, without the file's name (the two files' names differ).
std::string fmt_error(const InputError& error, const std::string& path) {
  std::string message = error.what();
  for (std::size_t at = message.find(path); at != std::string::npos; at = message.find(path))
    message.erase(at, path.size());
  return message + " @" + std::to_string(error.position().value);
}

constexpr std::size_t kEvents = 40000;  // about 16 MB: eight read buffers of 2 MiB

// The trace's text up to (not including) event `count`, and where each event starts.
std::string events_text(std::size_t count, std::vector<std::size_t>* starts = nullptr) {
  std::string text = R"({"traceEvents": [)";
  for (std::size_t i = 0; i < count; ++i) {
    if (i != 0) text += i % 5 == 0 ? ",\n  " : ", ";
    if (starts) starts->push_back(text.size());
    text += event(i);
  }
  return text;
}

TEST(ChromeTraceThreads, EventsReachTheSinkInFileOrder) {
  const std::string trace = events_text(kEvents) + "]}";
  ASSERT_GT(trace.size(), 8u << 20);
  // Reads of the buffer's size, and reads that put every boundary elsewhere.
  // Copied into the read buffer and scanned in place (a plain file, mapped).
  for (ReadChunks chunks : {ReadChunks{0, 0, false}, ReadChunks{12345, 0, false},
                            ReadChunks{0, (1u << 20) + 333, false}, ReadChunks{0, 0, true},
                            ReadChunks{12345, 0, true}, ReadChunks{0, (1u << 20) + 333, true}}) {
    OrderSink sink;
    TraceReadStats stats = read_chrome_trace_bytes("t.json", trace, sink, chunks);
    EXPECT_EQ(sink.seen, expected(kEvents));
    EXPECT_EQ(stats.events, kEvents);
    EXPECT_EQ(stats.bytes, trace.size());
  }
}

// An event that cannot be parsed stops the reading at that event: every event before it has
// reached the sink, none after it, and the error names its byte — also when the scan finds broken
// JSON further on while the event's batch is still being parsed.
TEST(ChromeTraceThreads, AnEventsErrorComesAfterEveryEventBeforeIt) {
  const std::size_t bad = 27001;  // a kernel's index (27001 % 3 != 0)
  std::vector<std::size_t> starts;
  std::string text = events_text(kEvents, &starts);
  // "name" a number: the simdjson parse refuses it (INCORRECT_TYPE), the fast path declines it.
  const std::string name_field = R"("name": ")" + std::to_string(bad) + R"(")";
  const std::size_t at = text.find(name_field, starts[bad]);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, name_field.size(), R"("name": 5)");
  for (const std::string& trace : {text + "]}", text + ", {\"ph\": ]}"}) {
    OrderSink sink;
    try {
      read_chrome_trace_bytes("t.json", trace, sink);
      ADD_FAILURE() << "the broken event was not refused";
    } catch (const InputError& error) {
      EXPECT_EQ(error.position().value, starts[bad]) << error.what();
      EXPECT_NE(std::string(error.what()).find("malformed trace event"), std::string::npos)
          << error.what();
    }
    EXPECT_EQ(sink.seen, expected(bad));
  }
}

// Broken JSON between events (found by the scanning thread while earlier events are still being
// parsed) is raised only after every event before it has reached the sink.
TEST(ChromeTraceThreads, AScanningErrorComesAfterEveryEventBeforeIt) {
  const std::size_t stop = 31000;
  const std::string trace = events_text(stop) + ", ]}";
  OrderSink sink;
  EXPECT_THROW(read_chrome_trace_bytes("t.json", trace, sink), InputError);
  EXPECT_EQ(sink.seen, expected(stop));
}

// A plain file is mapped and scanned in place, a gzip one read through zlib into the buffer: the
// same events in the same order either way, and the same error, at the same byte, for a broken
// one (the gzip file is the reference: the mapping is what changed).
TEST(ChromeTraceThreads, AMappedFileReadsAsItsGzipCopy) {
  const std::string good = events_text(kEvents) + "]}";
  std::string broken = events_text(kEvents);
  broken.replace(broken.rfind(R"("cat")"), 5, R"("cat" 1)");  // not JSON: no ':'
  for (const bool is_good : {true, false}) {
    const std::string& trace = is_good ? good : broken;
    const std::string plain = testing::scratch_dir() + "/trace.json";
    const std::string gzipped = testing::scratch_dir() + "/trace.json.gz";
    std::ofstream(plain, std::ios::binary) << trace;
    gzFile out = gzopen(gzipped.c_str(), "wb1");
    ASSERT_NE(out, nullptr);
    ASSERT_EQ(gzwrite(out, trace.data(), static_cast<unsigned>(trace.size())),
              static_cast<int>(trace.size()));
    ASSERT_EQ(gzclose(out), Z_OK);
    OrderSink mapped_sink, gzip_sink;
    std::string mapped_error, gzip_error;
    TraceReadStats mapped{}, gzip{};
    try {
      mapped = read_chrome_trace(plain, mapped_sink);
    } catch (const InputError& error) {
      mapped_error = fmt_error(error, plain);
    }
    try {
      gzip = read_chrome_trace(gzipped, gzip_sink);
    } catch (const InputError& error) {
      gzip_error = fmt_error(error, gzipped);
    }
    EXPECT_EQ(mapped_sink.seen, gzip_sink.seen);
    EXPECT_EQ(mapped_error, gzip_error);
    EXPECT_EQ(mapped.events, gzip.events);
    EXPECT_EQ(mapped.bytes, gzip.bytes);
    if (is_good) {
      EXPECT_EQ(mapped_error, "");
      EXPECT_EQ(mapped_sink.seen, expected(kEvents));
      EXPECT_EQ(mapped.bytes, trace.size());
    } else {  // the last event's parse refuses it, after every event before it
      EXPECT_NE(mapped_error.find("malformed trace event"), std::string::npos) << mapped_error;
      EXPECT_EQ(mapped_sink.seen, expected(kEvents - 1));
    }
  }
}

}  // namespace
}  // namespace kprof::importers
