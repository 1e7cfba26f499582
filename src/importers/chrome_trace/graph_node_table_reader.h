// Reading the "graph_nodes" table of kprof's tracer's summary (graph_node_table.h; the format in
// docs/tracer.md) into the model, validated: version 1, every column the analysis reads, each row
// as long as the column list, every index pointing into its list, node ids unique, the tracer's
// bounds kept. A table that breaks any of it is refused whole (GraphNodeTableError): the trace
// reader then says so once and reads the trace as one without a table, never half a table.
#pragma once

#include <simdjson.h>

#include <stdexcept>
#include <string>
#include <string_view>

#include "importers/common/graph_node_table.h"

namespace kprof::importers {

// What is wrong and where in the table ("nodes[12]: 12 values where \"columns\" names 13").
class GraphNodeTableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The table from its value in the tracer's summary, parsed in place (the Chrome trace reader).
GraphNodeTable read_graph_node_table(simdjson::ondemand::value value);

// The same from the table's JSON text (tests).
GraphNodeTable parse_graph_node_table(std::string_view json);

}  // namespace kprof::importers
