// The in-memory graph IR that every analysis, pass and the runtime work on.
//
// A Graph is a TensorFlow GraphDef held for fast analysis and editing:
//  - nodes have dense integer ids (NodeId) in file order; a removed node leaves an empty
//    slot, so ids stay stable while passes edit. Names are data for files and messages
//    (looked up through FindNode), not identity.
//  - an edge goes from a producer's output (OutputRef: node, port) to a consumer's
//    input slot (InputRef: node, index). Control edges have port kControlPort and come
//    after the data inputs, as in a NodeDef.
//  - fanout (the consumers of each node) is kept in step with fanin: only the Graph's
//    edit functions change edges.
//  - attrs and the NodeDef fields Parallax does not interpret (debug info, full type,
//    unknown fields) stay in their serialized form and are decoded on demand, so that
//    loading is cheap and saving reproduces the input byte for byte. Strings point into
//    the loaded file or into the graph's append-only arena; copies of a Graph share both.
#ifndef PARALLAX_LIB_GRAPH_GRAPH_H_
#define PARALLAX_LIB_GRAPH_GRAPH_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/name_index.h"
#include "lib/graph/names.h"
#include "protos/graph.pb.h"

namespace parallax {

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

// A producer endpoint: output `port` of `node`, or its control edge (kControlPort).
struct OutputRef {
  NodeId node = kNoNode;
  int32_t port = 0;
  bool is_control() const { return port == kControlPort; }
  friend bool operator==(const OutputRef&, const OutputRef&) = default;
};

// A consumer endpoint: input slot `index` of `node` (data inputs first, then control).
struct InputRef {
  NodeId node = kNoNode;
  int32_t index = 0;
  friend bool operator==(const InputRef&, const InputRef&) = default;
};

// Append-only storage for strings created after load (new names, attrs, devices).
// Thread-safe; addresses are stable for the arena's lifetime.
class StringArena {
 public:
  std::string_view Store(std::string_view text);
  size_t bytes_used() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t chunk_used_ = 0;
  size_t chunk_size_ = 0;
  size_t bytes_used_ = 0;
};

class Node {
 public:
  NodeId id() const { return id_; }
  std::string_view name() const { return name_; }
  std::string_view op() const { return op_; }
  std::string_view device() const { return device_; }

  // Data inputs (port >= 0) followed by control inputs (port == kControlPort).
  std::span<const OutputRef> inputs() const { return inputs_; }
  int num_data_inputs() const { return num_data_inputs_; }
  std::span<const OutputRef> data_inputs() const {
    return std::span<const OutputRef>(inputs_).first(num_data_inputs_);
  }
  std::span<const OutputRef> control_inputs() const {
    return std::span<const OutputRef>(inputs_).subspan(num_data_inputs_);
  }
  OutputRef input(int index) const { return inputs_[index]; }

  // Every consumer slot that reads this node (data or control), in no particular order.
  std::span<const InputRef> fanout() const { return fanout_; }

  // The attr named `key`, decoded from the serialized NodeDef; nullopt when absent.
  std::optional<tensorflow::AttrValue> FindAttr(std::string_view key) const;
  // All attrs, decoded, sorted by key.
  std::map<std::string, tensorflow::AttrValue> DecodeAttrs() const;
  bool HasAttr(std::string_view key) const;

  // Serialized NodeDef field-5 records (the attr map) and the other fields that
  // Parallax keeps verbatim (experimental_debug_info, experimental_type, unknown).
  std::string_view serialized_attrs() const { return attrs_; }
  std::string_view serialized_extra_fields() const { return extra_; }

 private:
  friend class Graph;
  friend class GraphBuilder;

  NodeId id_ = kNoNode;
  bool removed_ = false;
  int32_t num_data_inputs_ = 0;
  std::string_view name_, op_, device_;
  std::string_view attrs_, extra_;
  std::vector<OutputRef> inputs_;
  std::vector<InputRef> fanout_;
};

// What a new node looks like; see Graph::AddNode.
struct NodeSpec {
  std::string name;
  std::string op;
  std::string device;
  std::vector<OutputRef> inputs;  // data inputs, then control inputs
  std::map<std::string, tensorflow::AttrValue> attrs;
};

// Where a graph came from, for messages and `inspect`.
enum class GraphFileFormat { kBinary, kText };
enum class GraphContainer { kGraphDef, kMetaGraphDef, kSavedModel };

class Graph {
 public:
  Graph();
  Graph(const Graph&) = default;
  Graph& operator=(const Graph&) = default;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  // The file or label used to prefix error messages ("graph.pb").
  const std::string& source() const { return source_; }
  void set_source(std::string source) { source_ = std::move(source); }
  GraphFileFormat file_format() const { return file_format_; }
  GraphContainer container() const { return container_; }
  void set_origin(GraphFileFormat format, GraphContainer container) {
    file_format_ = format;
    container_ = container;
  }

  // Ids run from 0 to id_limit() - 1; removed ids are skipped by IsLive.
  NodeId id_limit() const { return static_cast<NodeId>(nodes_.size()); }
  int num_nodes() const { return num_live_; }
  bool IsLive(NodeId id) const {
    return id >= 0 && id < id_limit() && !nodes_[static_cast<size_t>(id)].removed_;
  }
  const Node& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  // Live node ids in id order (a snapshot: safe to edit the graph while iterating).
  std::vector<NodeId> NodeIds() const;

  NodeId FindNode(std::string_view name) const;

  // The name of `ref`'s producer as a NodeDef input string ("x", "x:1", "^x").
  std::string InputString(OutputRef ref) const;
  // "name:port" for messages and plan files.
  std::string TensorName(OutputRef ref) const;

  // Serialized GraphDef fields other than `node` (versions, library, debug info,
  // unknown), in their original order. Saved after the nodes.
  std::string_view other_fields() const { return other_fields_; }
  void set_other_fields(std::string fields) { other_fields_ = std::move(fields); }

  // ---- Edits. Each keeps fanout in step with fanin. ----

  // Adds a node. Errors: invalid or duplicate name, invalid op, an input naming a
  // removed or out-of-range node, a data input after a control input.
  StatusOr<NodeId> AddNode(const NodeSpec& spec);
  // Points data or control input `index` of `consumer` at `source`. A control slot
  // stays a control slot (source.port must then be kControlPort) and a data slot a data
  // slot.
  Status ReplaceInput(NodeId consumer, int index, OutputRef source);
  // Adds a control input "^source" to `consumer` unless it already has one.
  Status AddControlInput(NodeId consumer, NodeId source);
  // Removes the control input "^source" of `consumer`; a no-op when it has none.
  Status RemoveControlInput(NodeId consumer, NodeId source);
  // Removes the node and its input edges. Fails while other nodes still read it.
  Status RemoveNode(NodeId id);
  void SetDevice(NodeId id, std::string_view device);
  // Sets (adds or replaces) one attr.
  void SetAttr(NodeId id, std::string_view key, const tensorflow::AttrValue& value);
  // A name not used by any node: `base` itself if free, else base_1, base_2, ...
  std::string UniqueName(std::string_view base) const;

  // Memory held by the graph's own structures (not the shared file bytes), for benches.
  size_t ApproximateBytes() const;

  // Counts the edits that can change what VerifyGraph checks: added and removed nodes,
  // rewired inputs and attrs (an attr can change an op's output count). SetDevice does
  // not count. Equal versions before and after a pass: nothing it did needs verifying.
  uint64_t structure_version() const { return structure_version_; }

 private:
  friend class GraphBuilder;

  std::string source_ = "<graph>";
  GraphFileFormat file_format_ = GraphFileFormat::kBinary;
  GraphContainer container_ = GraphContainer::kGraphDef;
  std::vector<Node> nodes_;
  int num_live_ = 0;
  uint64_t structure_version_ = 0;
  NameIndex::NameOf NameOf() const {
    return [this](int32_t id) { return nodes_[static_cast<size_t>(id)].name_; };
  }

  NameIndex name_index_;
  std::string other_fields_;
  // Owners of the bytes that the nodes' string_views point into.
  std::shared_ptr<const std::string> file_bytes_;
  std::shared_ptr<StringArena> arena_;
  std::string_view last_device_;  // in arena_: the string SetDevice stored last
};

// Serializes one attr map entry (NodeDef field 5) for Node's serialized form.
void AppendAttrRecord(std::string* out, std::string_view key, const tensorflow::AttrValue& value);

}  // namespace parallax

#endif  // PARALLAX_LIB_GRAPH_GRAPH_H_
