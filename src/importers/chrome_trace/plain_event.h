// The Chrome trace reader's fast path for the events profilers write: one event object read in a
// single forward pass over its text, without simdjson's copy, index and unescaping. Each event the
// reader parses fully went through simdjson before (~6,500 instructions for a 600-byte kernel
// event); kernels, memcpy and launch calls are a third of a PyTorch trace's events, so that parse
// was most of `kprof rank`'s time and more of `kprof budget`'s.
//
// It answers only where it is sure to answer as the simdjson parse does: any text outside the
// plain shape it checks (an escape, a byte that is not printable ASCII inside a string, a literal
// or a nested value where a field is read, a number std::from_chars cannot read or that leaves
// double's range, deeper than 32 levels, anything that is not JSON) is declined, and the reader
// parses that event with simdjson as before. tests/importers/plain_event_test.cpp holds the two
// to the same events.
#pragma once

#include <string_view>

#include "importers/common/trace_event.h"

namespace kprof::importers {

// The number at [p, end) as std::from_chars(p, end, value) reads it (chars_format::general): the
// same value and the same end, nullptr where from_chars fails (then value is unspecified).
// Faster where the text is a JSON number of at most 19 digits and an exponent within ±22 that
// nothing could extend: then one exact multiplication or division rounds it correctly.
const char* read_double(const char* p, const char* end, double& value);

// The end of the number at [p, end) as std::from_chars(p, end, value) would read it, without its
// value: where from_chars succeeds, the same end; nullptr where it fails. Faster where the text is
// a JSON number without an exponent and of at most 300 digits (in double's range, so from_chars
// reads it whole and succeeds).
const char* double_end(const char* p, const char* end);

// The first quote or backslash at or after p (before end), or end.
const char* quote_or_backslash(const char* p, const char* end);

// Parses one event object (text: its '{' to its '}') into `event`, which must be default
// constructed, and `complete` ("ph" is "X"), exactly as the reader's simdjson parse does — the
// fields it keeps, the same values, a later duplicate key overriding an earlier one — and returns
// true; or returns false for a text outside the plain shape (see above), leaving `event` and
// `complete` unspecified. The views point into text.
bool parse_plain_event(std::string_view text, TraceEvent& event, bool& complete);

}  // namespace kprof::importers
