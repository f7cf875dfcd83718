// Loading and saving graphs.
//
// Input files are recognised by content, never by extension: binary or text protobuf;
// GraphDef, MetaGraphDef (its graph_def) or SavedModel (the first meta graph's
// graph_def). Text is converted to binary once and then loaded like binary, so there is
// one path that builds the IR. Structural errors that make a graph unbuildable are
// reported here, naming the file, node and input: malformed wire data, nodes without
// names or ops, invalid or duplicate names, malformed input strings, inputs naming no
// node, data inputs after control inputs. Everything else is the verifier's job.
//
// Saving writes a binary GraphDef (byte-identical to a canonical input after a load) or
// protobuf text format; file writes are atomic.
#ifndef PARALLAX_LIB_GRAPH_GRAPH_IO_H_
#define PARALLAX_LIB_GRAPH_GRAPH_IO_H_

#include <memory>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/graph/graph.h"

namespace parallax {

// Protobuf refuses messages of 2 GiB and more.
inline constexpr uint64_t kMaxGraphFileBytes = (uint64_t{1} << 31) - 1;

// Reads and parses `path`; errors start with the path.
StatusOr<Graph> LoadGraph(const std::string& path);

// Parses file contents; `source` names the file in messages.
StatusOr<Graph> ParseGraph(std::string contents, std::string_view source);

// Builds the graph from a binary GraphDef inside `bytes` (the span `graph_def`).
StatusOr<Graph> GraphFromBinaryGraphDef(std::shared_ptr<const std::string> bytes,
                                        std::string_view graph_def, std::string_view source);

// Binary GraphDef: nodes in id order, then the other top-level fields.
std::string SerializeGraphDef(const Graph& graph);
// The same graph as a protobuf message.
StatusOr<tensorflow::GraphDef> ToGraphDef(const Graph& graph);
// Protobuf text format.
StatusOr<std::string> SerializeGraphDefText(const Graph& graph);

Status SaveGraph(const Graph& graph, const std::string& path, GraphFileFormat format);

std::string_view GraphFileFormatName(GraphFileFormat format);
std::string_view GraphContainerName(GraphContainer container);

}  // namespace parallax

#endif  // PARALLAX_LIB_GRAPH_GRAPH_IO_H_
