#include "lib/graph/graph_io.h"

#include <sys/stat.h>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/utf8.h"
#include "lib/graph/wire.h"

namespace parallax {

std::string_view GraphFileFormatName(GraphFileFormat format) {
  return format == GraphFileFormat::kBinary ? "binary" : "text";
}

std::string_view GraphContainerName(GraphContainer container) {
  switch (container) {
    case GraphContainer::kGraphDef: return "GraphDef";
    case GraphContainer::kMetaGraphDef: return "MetaGraphDef";
    case GraphContainer::kSavedModel: return "SavedModel";
  }
  return "GraphDef";
}

namespace {

// `text` quoted for a message with every byte outside printable ASCII as \xNN (text
// that is not valid UTF-8 cannot be printed as it is).
std::string EscapeNonAscii(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= 80) return out + "...";
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

// Builds a Graph from a binary GraphDef in one pass over the bytes, then resolves
// input names once every node is known (real graphs are not topologically ordered).
class GraphBuilder {
 public:
  GraphBuilder(std::shared_ptr<const std::string> bytes, std::string_view source)
      : bytes_(std::move(bytes)) {
    graph_.set_source(std::string(source));
    graph_.file_bytes_ = bytes_;
  }

  StatusOr<Graph> Build(std::string_view graph_def) {
    wire::Reader reader(graph_def);
    wire::Field field;
    size_t node_count_hint = graph_def.size() / 128 + 16;
    graph_.nodes_.reserve(node_count_hint);
    pending_inputs_.reserve(node_count_hint * 2);
    while (!reader.done()) {
      PX_RETURN_IF_ERROR(Wrap(reader.Next(&field)));
      if (field.number == 1) {
        if (field.type != wire::WireType::kLengthDelimited) {
          return Error("GraphDef field 'node' at byte {} has wire type {}", field.offset,
                       wire::WireTypeName(field.type));
        }
        PX_RETURN_IF_ERROR(AddNode(field.bytes, field.offset));
      } else {
        graph_.other_fields_.append(field.record);
      }
    }
    PX_RETURN_IF_ERROR(IndexNames());
    PX_RETURN_IF_ERROR(ResolveInputs());
    graph_.num_live_ = static_cast<int>(graph_.nodes_.size());
    return std::move(graph_);
  }

 private:
  template <typename... Args>
  Status Error(fmt::format_string<Args...> format, Args&&... args) {
    return InvalidArgumentError("{}: {}", graph_.source(),
                                fmt::format(format, std::forward<Args>(args)...));
  }
  Status Wrap(const Status& status) {
    if (status.ok()) return status;
    return Error("malformed binary GraphDef: {}", status.message());
  }

  // Keeps repeated records of one kind as a single span: a view of the input when they
  // are adjacent (the canonical encoding), else a copy in the graph's arena.
  struct RecordSpan {
    const char* begin = nullptr;
    const char* end = nullptr;
    std::string copy;
    bool copied = false;
    void Add(std::string_view record) {
      if (begin == nullptr) {
        begin = record.data();
        end = record.data() + record.size();
      } else if (!copied && record.data() == end) {
        end += record.size();
      } else {
        if (!copied) copy.assign(begin, end);
        copied = true;
        copy.append(record);
      }
    }
    std::string_view Finish(StringArena& arena) const {
      if (copied) return arena.Store(copy);
      return begin == nullptr ? std::string_view() : std::string_view(begin, end - begin);
    }
  };

  Status AddNode(std::string_view node_def, size_t offset) {
    const size_t index = graph_.nodes_.size();
    Node node;
    node.id_ = static_cast<NodeId>(index);
    RecordSpan attrs, extra;
    std::optional<std::string_view> non_utf8_attr_key;
    const size_t first_input = pending_inputs_.size();
    wire::Reader reader(node_def);
    wire::Field field;
    while (!reader.done()) {
      Status status = reader.Next(&field);
      if (!status.ok()) {
        return Error("malformed binary GraphDef: node #{} (at byte {}): {}", index, offset,
                     status.message());
      }
      const bool is_bytes = field.type == wire::WireType::kLengthDelimited;
      if (field.number >= 1 && field.number <= 5 && !is_bytes) {
        return Error("malformed binary GraphDef: node #{} (at byte {}): field {} has wire "
                     "type {}, expected length-delimited",
                     index, offset, field.number, wire::WireTypeName(field.type));
      }
      switch (field.number) {
        case 1: node.name_ = field.bytes; break;
        case 2: node.op_ = field.bytes; break;
        case 3: pending_inputs_.push_back(Span(field.bytes)); break;
        case 4: node.device_ = field.bytes; break;
        case 5:
          PX_RETURN_IF_ERROR(CheckAttrRecord(field.bytes, index, offset, &non_utf8_attr_key));
          attrs.Add(field.record);
          break;
        default: extra.Add(field.record); break;
      }
    }
    if (node.name_.empty()) {
      return Error("node #{} (op '{}') has no name", index, QuoteForMessage(node.op_));
    }
    if (!IsValidNodeName(node.name_)) {
      return Error("node #{}: '{}' is not a valid node name (allowed: letters, digits, "
                   "'.', '_', then also '-', '/', '>')",
                   index, QuoteForMessage(node.name_));
    }
    if (node.op_.empty()) return Error("node '{}' has no op", node.name_);
    if (!IsValidOpName(node.op_)) {
      return Error("node '{}': '{}' is not a valid op name", node.name_,
                   QuoteForMessage(node.op_));
    }
    // String fields that are not UTF-8, which protobuf refuses to parse: TensorFlow
    // could not read the graph, nor could it be printed as text.
    if (non_utf8_attr_key) {
      return Error("node '{}': attr key '{}' is not valid UTF-8", node.name_,
                   EscapeNonAscii(*non_utf8_attr_key));
    }
    if (!IsValidUtf8(node.device_)) {
      return Error("node '{}': device '{}' is not valid UTF-8", node.name_,
                   EscapeNonAscii(node.device_));
    }
    node.attrs_ = attrs.Finish(*graph_.arena_);
    node.extra_ = extra.Finish(*graph_.arena_);
    input_begin_.push_back(static_cast<uint32_t>(first_input));
    graph_.nodes_.push_back(std::move(node));
    return Status::Ok();
  }

  // An attr record is a map entry: key (field 1) and an AttrValue (field 2). The first
  // key of the node that is not valid UTF-8 goes to *non_utf8_key (reported once the
  // node's name is known).
  Status CheckAttrRecord(std::string_view entry, size_t index, size_t offset,
                         std::optional<std::string_view>* non_utf8_key) {
    wire::Reader reader(entry);
    wire::Field field;
    bool has_key = false;
    while (!reader.done()) {
      Status status = reader.Next(&field);
      if (!status.ok() || (field.number <= 2 && field.type != wire::WireType::kLengthDelimited)) {
        return Error("malformed binary GraphDef: node #{} (at byte {}): malformed attr entry{}",
                     index, offset, status.ok() ? "" : ": " + status.message());
      }
      if (field.number == 1) {
        has_key = true;
        if (!non_utf8_key->has_value() && !IsValidUtf8(field.bytes)) {
          *non_utf8_key = field.bytes;
        }
      }
    }
    if (!has_key) {
      return Error("malformed binary GraphDef: node #{} (at byte {}): attr entry without a key",
                   index, offset);
    }
    return Status::Ok();
  }

  Status IndexNames() {
    NameIndex& index = graph_.name_index_;
    const NameIndex::NameOf name_of = graph_.NameOf();
    index.Reserve(graph_.nodes_.size());
    for (const Node& node : graph_.nodes_) {
      const NodeId existing = index.Insert(node.name_, node.id_, name_of);
      if (existing != NameIndex::kAbsent) {
        return Error("node '{}' is defined twice (nodes #{} and #{})", node.name_, existing,
                     node.id_);
      }
    }
    return Status::Ok();
  }

  Status ResolveInputs() {
    input_begin_.push_back(static_cast<uint32_t>(pending_inputs_.size()));
    auto& nodes = graph_.nodes_;
    for (size_t i = 0; i < nodes.size(); ++i) {
      Node& node = nodes[i];
      const uint32_t begin = input_begin_[i], end = input_begin_[i + 1];
      node.inputs_.reserve(end - begin);
      std::string_view first_control;
      for (uint32_t k = begin; k < end; ++k) {
        const std::string_view text = View(pending_inputs_[k]);
        const int slot = static_cast<int>(k - begin);
        std::optional<ParsedInput> parsed = ParseInput(text);
        if (!parsed) {
          return Error("node '{}': input {} '{}' is malformed; expected 'node', 'node:port' or "
                       "'^node'",
                       node.name_, slot, QuoteForMessage(text));
        }
        if (!parsed->is_control() && !first_control.empty()) {
          return Error("node '{}': data input {} '{}' comes after control input '{}'; control "
                       "inputs must come last",
                       node.name_, slot, text, first_control);
        }
        if (parsed->is_control() && first_control.empty()) first_control = text;
        const NodeId source = graph_.FindNode(parsed->node);
        if (source == kNoNode) {
          return Error("node '{}': input {} '{}' names no node in the graph", node.name_, slot,
                       text);
        }
        node.inputs_.push_back(OutputRef{source, parsed->port});
        if (!parsed->is_control()) ++node.num_data_inputs_;
      }
    }
    // Fanout in a second sweep so each list is sized once.
    std::vector<uint32_t> fanout_count(nodes.size(), 0);
    for (const Node& node : nodes) {
      for (const OutputRef& in : node.inputs_) ++fanout_count[static_cast<size_t>(in.node)];
    }
    for (size_t i = 0; i < nodes.size(); ++i) nodes[i].fanout_.reserve(fanout_count[i]);
    for (const Node& node : nodes) {
      for (size_t k = 0; k < node.inputs_.size(); ++k) {
        nodes[static_cast<size_t>(node.inputs_[k].node)].fanout_.push_back(
            InputRef{node.id_, static_cast<int32_t>(k)});
      }
    }
    pending_inputs_ = {};
    input_begin_ = {};
    return Status::Ok();
  }

  // An input string as a span of the file bytes: half the size of a string_view, which
  // matters at a million nodes (files are under 2 GiB, so offsets fit in 32 bits).
  struct InputSpan {
    uint32_t offset;
    uint32_t size;
  };
  InputSpan Span(std::string_view text) const {
    return InputSpan{static_cast<uint32_t>(text.data() - bytes_->data()),
                     static_cast<uint32_t>(text.size())};
  }
  std::string_view View(InputSpan span) const {
    return std::string_view(bytes_->data() + span.offset, span.size);
  }

  std::shared_ptr<const std::string> bytes_;
  Graph graph_;
  std::vector<InputSpan> pending_inputs_;  // every node's input strings, in order
  std::vector<uint32_t> input_begin_;              // node i's inputs start here
};

StatusOr<Graph> GraphFromBinaryGraphDef(std::shared_ptr<const std::string> bytes,
                                        std::string_view graph_def, std::string_view source) {
  GraphBuilder builder(std::move(bytes), source);
  return builder.Build(graph_def);
}

namespace {

// ---- Recognising what a file holds ----

// Text format has no control bytes other than whitespace; binary protobuf always does
// (every NodeDef starts with tag 0x0a and carries its op under tag 0x12).
bool LooksLikeText(std::string_view contents) {
  std::string_view head = contents.substr(0, 64 * 1024);
  for (char c : head) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\r' && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

// Returns the payload of the first length-delimited field `number`, if the message
// scans cleanly.
std::optional<std::string_view> FirstField(std::string_view message, uint32_t number) {
  wire::Reader reader(message);
  wire::Field field;
  while (!reader.done()) {
    if (!reader.Next(&field).ok()) return std::nullopt;
    if (field.number == number && field.type == wire::WireType::kLengthDelimited) {
      return field.bytes;
    }
  }
  return std::nullopt;
}

// A binary GraphDef whose first node has a valid op name.
bool IsPlausibleGraphDef(std::string_view message) {
  std::optional<std::string_view> node = FirstField(message, 1);
  if (!node) return false;
  std::optional<std::string_view> op = FirstField(*node, 2);
  return op && IsValidOpName(*op);
}

struct Located {
  GraphContainer container = GraphContainer::kGraphDef;
  std::string_view graph_def;
};

std::optional<Located> LocateBinaryGraphDef(std::string_view contents) {
  if (IsPlausibleGraphDef(contents)) return Located{GraphContainer::kGraphDef, contents};
  if (auto graph = FirstField(contents, 2); graph && IsPlausibleGraphDef(*graph)) {
    return Located{GraphContainer::kMetaGraphDef, *graph};
  }
  if (auto meta = FirstField(contents, 2)) {
    if (auto graph = FirstField(*meta, 2); graph && IsPlausibleGraphDef(*graph)) {
      return Located{GraphContainer::kSavedModel, *graph};
    }
  }
  return std::nullopt;
}

// The first field name of a text-format file, skipping whitespace and # comments.
std::string_view FirstTextToken(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
      ++i;
    } else {
      break;
    }
  }
  size_t end = i;
  while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) ||
                               text[end] == '_')) {
    ++end;
  }
  return text.substr(i, end == i ? 1 : end - i);
}

class CollectFirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (error.empty()) error = fmt::format("{}:{}: {}", line + 1, column + 1, message);
  }
  void AddWarning(int, int, const std::string&) override {}
  std::string error;
};

template <typename Message>
Status ParseText(std::string_view text, std::string_view source, std::string_view type_name,
                 bool allow_unknown_fields, Message* message) {
  google::protobuf::TextFormat::Parser parser;
  CollectFirstError errors;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(allow_unknown_fields);
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  if (!parser.Parse(&input, message)) {
    return InvalidArgumentError("{}:{} (text-format {})", source,
                                errors.error.empty() ? " parse error" : errors.error, type_name);
  }
  return Status::Ok();
}

// A string field (not bytes) that is not valid UTF-8: its path from the message
// ("node[1].attr[0].key") and its value.
struct NonUtf8String {
  std::string path;
  std::string value;
};

// The first such field of `message`, depth first. Text format accepts them, but protobuf
// logs an error line to stderr when it serializes one (and refuses to parse it back), so
// a text graph is checked before it is converted to binary.
std::optional<NonUtf8String> FindNonUtf8String(const google::protobuf::Message& message) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const std::string path =
          field->is_repeated() ? fmt::format("{}[{}]", field->name(), i) : field->name();
      if (field->type() == FieldDescriptor::TYPE_STRING) {
        const std::string value = field->is_repeated()
                                      ? reflection->GetRepeatedString(message, field, i)
                                      : reflection->GetString(message, field);
        if (!IsValidUtf8(value)) return NonUtf8String{path, value};
      } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const google::protobuf::Message& inner =
            field->is_repeated() ? reflection->GetRepeatedMessage(message, field, i)
                                 : reflection->GetMessage(message, field);
        if (std::optional<NonUtf8String> found = FindNonUtf8String(inner)) {
          found->path = path + "." + found->path;
          return found;
        }
      }
    }
  }
  return std::nullopt;
}

StatusOr<Graph> ParseTextGraph(std::string contents, std::string_view source) {
  const std::string_view token = FirstTextToken(contents);
  tensorflow::GraphDef graph_def;
  GraphContainer container;
  if (token == "node" || token == "versions" || token == "library" || token == "version" ||
      token == "debug_info") {
    container = GraphContainer::kGraphDef;
    PX_RETURN_IF_ERROR(ParseText(contents, source, "GraphDef", false, &graph_def));
  } else if (token == "meta_info_def" || token == "graph_def" || token == "saver_def" ||
             token == "collection_def" || token == "signature_def" ||
             token == "asset_file_def" || token == "object_graph_def") {
    container = GraphContainer::kMetaGraphDef;
    tensorflow::MetaGraphDef meta;
    PX_RETURN_IF_ERROR(ParseText(contents, source, "MetaGraphDef", true, &meta));
    if (!meta.has_graph_def()) {
      return InvalidArgumentError("{}: MetaGraphDef has no graph_def", source);
    }
    graph_def = std::move(*meta.mutable_graph_def());
  } else if (token == "saved_model_schema_version" || token == "meta_graphs") {
    container = GraphContainer::kSavedModel;
    tensorflow::SavedModel model;
    PX_RETURN_IF_ERROR(ParseText(contents, source, "SavedModel", true, &model));
    if (model.meta_graphs_size() == 0 || !model.meta_graphs(0).has_graph_def()) {
      return InvalidArgumentError("{}: SavedModel has no meta graph with a graph_def", source);
    }
    graph_def = std::move(*model.mutable_meta_graphs(0)->mutable_graph_def());
  } else if (token.empty()) {
    return InvalidArgumentError("{}: file holds only whitespace and comments; expected a "
                                "GraphDef, MetaGraphDef or SavedModel",
                                source);
  } else {
    return InvalidArgumentError("{}: text starts with '{}', which is not a field of GraphDef, "
                                "MetaGraphDef or SavedModel",
                                source, QuoteForMessage(token, 40));
  }
  if (std::optional<NonUtf8String> bad = FindNonUtf8String(graph_def)) {
    return InvalidArgumentError("{}: {} '{}' is not valid UTF-8", source, bad->path,
                                EscapeNonAscii(bad->value));
  }
  contents.clear();
  contents.shrink_to_fit();
  auto bytes = std::make_shared<std::string>();
  {
    google::protobuf::io::StringOutputStream stream(bytes.get());
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    graph_def.SerializeToCodedStream(&coded);
  }
  std::string_view view(*bytes);
  PX_ASSIGN_OR_RETURN(Graph graph, GraphFromBinaryGraphDef(bytes, view, source));
  graph.set_origin(GraphFileFormat::kText, container);
  return graph;
}

}  // namespace

StatusOr<Graph> ParseGraph(std::string contents, std::string_view source) {
  if (contents.empty()) {
    return InvalidArgumentError("{}: file is empty; expected a GraphDef, MetaGraphDef or "
                                "SavedModel",
                                source);
  }
  if (contents.size() > kMaxGraphFileBytes) {
    return InvalidArgumentError("{}: file is {}; protobuf messages are limited to 2 GiB", source,
                                HumanBytes(contents.size()));
  }
  if (LooksLikeText(contents)) return ParseTextGraph(std::move(contents), source);

  auto bytes = std::make_shared<const std::string>(std::move(contents));
  std::string_view all(*bytes);
  std::optional<Located> located = LocateBinaryGraphDef(all);
  if (!located) {
    // Not recognisably any container: report the first wire-level fault if there is
    // one, else what the GraphDef reading stumbles on.
    wire::Reader reader(all);
    wire::Field field;
    while (!reader.done()) {
      Status status = reader.Next(&field);
      if (!status.ok()) {
        return InvalidArgumentError("{}: neither text format nor a valid binary protobuf: {}",
                                    source, status.message());
      }
    }
    StatusOr<Graph> as_graph = GraphFromBinaryGraphDef(bytes, all, source);
    if (!as_graph.ok()) return as_graph.status();
    return InvalidArgumentError("{}: binary protobuf without nodes; expected a GraphDef, "
                                "MetaGraphDef or SavedModel",
                                source);
  }
  PX_ASSIGN_OR_RETURN(Graph graph, GraphFromBinaryGraphDef(bytes, located->graph_def, source));
  graph.set_origin(GraphFileFormat::kBinary, located->container);
  return graph;
}

StatusOr<Graph> LoadGraph(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    // A SavedModel directory (TF's export layout): its saved_model.pb or .pbtxt.
    for (const char* name : {"saved_model.pb", "saved_model.pbtxt"}) {
      const std::string file = (std::filesystem::path(path) / name).string();
      if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return LoadGraph(file);
    }
    return InvalidArgumentError("{}: is a directory without saved_model.pb or "
                                "saved_model.pbtxt; name a graph file or a SavedModel directory",
                                path);
  }
  if (::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) &&
      static_cast<uint64_t>(st.st_size) > kMaxGraphFileBytes) {
    return InvalidArgumentError("{}: file is {}; protobuf messages are limited to 2 GiB", path,
                                HumanBytes(static_cast<uint64_t>(st.st_size)));
  }
  PX_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path, kMaxGraphFileBytes));
  return ParseGraph(std::move(contents), path);
}

// ---- Saving ----

std::string SerializeGraphDef(const Graph& graph) {
  std::string out;
  out.reserve(static_cast<size_t>(graph.num_nodes()) * 96 + graph.other_fields().size());
  std::string node_def;
  std::string input;
  for (NodeId id = 0; id < graph.id_limit(); ++id) {
    if (!graph.IsLive(id)) continue;
    const Node& node = graph.node(id);
    node_def.clear();
    wire::AppendLengthDelimited(&node_def, 1, node.name());
    wire::AppendLengthDelimited(&node_def, 2, node.op());
    for (const OutputRef& ref : node.inputs()) {
      input.clear();
      if (ref.is_control()) input.push_back('^');
      input.append(graph.node(ref.node).name());
      if (ref.port > 0) fmt::format_to(std::back_inserter(input), ":{}", ref.port);
      wire::AppendLengthDelimited(&node_def, 3, input);
    }
    if (!node.device().empty()) wire::AppendLengthDelimited(&node_def, 4, node.device());
    node_def.append(node.serialized_attrs());
    node_def.append(node.serialized_extra_fields());
    wire::AppendLengthDelimited(&out, 1, node_def);
  }
  out.append(graph.other_fields());
  return out;
}

StatusOr<tensorflow::GraphDef> ToGraphDef(const Graph& graph) {
  tensorflow::GraphDef graph_def;
  const std::string bytes = SerializeGraphDef(graph);
  if (graph_def.ParseFromString(bytes)) return graph_def;
  // The loader checks the fields it reads; attr values and fields it keeps as bytes
  // (function libraries, debug info) are checked only by protobuf, here. Name the part
  // protobuf refuses.
  // SerializeGraphDef writes the live nodes in id order, then the other fields.
  wire::Reader reader(bytes);
  wire::Field field;
  for (NodeId id = 0; id < graph.id_limit(); ++id) {
    if (!graph.IsLive(id)) continue;
    if (reader.done() || !reader.Next(&field).ok() || field.number != 1) break;
    tensorflow::NodeDef node_def;
    if (!node_def.ParseFromString(std::string(field.bytes))) {
      return InvalidArgumentError("{}: node '{}' is not a NodeDef protobuf can parse (an attr "
                                  "value is malformed or a string in it is not UTF-8)",
                                  graph.source(), graph.node(id).name());
    }
  }
  return InvalidArgumentError("{}: the graph's fields other than its nodes (versions, function "
                              "library, debug info) are not a GraphDef protobuf can parse",
                              graph.source());
}

StatusOr<std::string> SerializeGraphDefText(const Graph& graph) {
  PX_ASSIGN_OR_RETURN(tensorflow::GraphDef graph_def, ToGraphDef(graph));
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.SetExpandAny(true);
  if (!printer.PrintToString(graph_def, &text)) {
    return InternalError("{}: cannot print the graph as text", graph.source());
  }
  return text;
}

Status SaveGraph(const Graph& graph, const std::string& path, GraphFileFormat format) {
  if (format == GraphFileFormat::kBinary) {
    return WriteFileAtomically(path, SerializeGraphDef(graph));
  }
  PX_ASSIGN_OR_RETURN(std::string text, SerializeGraphDefText(graph));
  return WriteFileAtomically(path, text);
}

}  // namespace parallax
