#include "lib/graph/graph.h"

#include <algorithm>
#include <cstring>

#include "lib/graph/wire.h"

namespace parallax {

// ---- StringArena ----

std::string_view StringArena::Store(std::string_view text) {
  if (text.empty()) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  constexpr size_t kChunk = 64 * 1024;
  if (text.size() > kChunk / 4) {  // big strings get a chunk of their own
    auto chunk = std::make_unique<char[]>(text.size());
    std::memcpy(chunk.get(), text.data(), text.size());
    std::string_view stored(chunk.get(), text.size());
    chunks_.insert(chunks_.begin(), std::move(chunk));  // keep the open chunk last
    bytes_used_ += text.size();
    return stored;
  }
  if (chunks_.empty() || chunk_size_ - chunk_used_ < text.size()) {
    chunks_.push_back(std::make_unique<char[]>(kChunk));
    chunk_size_ = kChunk;
    chunk_used_ = 0;
  }
  char* dest = chunks_.back().get() + chunk_used_;
  std::memcpy(dest, text.data(), text.size());
  chunk_used_ += text.size();
  bytes_used_ += text.size();
  return std::string_view(dest, text.size());
}

size_t StringArena::bytes_used() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_used_;
}

// ---- Node ----

namespace {

// Calls fn(key, value_bytes) for each serialized attr record; stops when fn returns
// false. Records were validated at load or written by AppendAttrRecord.
template <typename Fn>
void ForEachAttrRecord(std::string_view records, Fn&& fn) {
  wire::Reader reader(records);
  wire::Field record;
  while (!reader.done() && reader.Next(&record).ok()) {
    wire::Reader entry(record.bytes);
    std::string_view key, value;
    wire::Field field;
    while (!entry.done() && entry.Next(&field).ok()) {
      if (field.number == 1 && field.type == wire::WireType::kLengthDelimited) key = field.bytes;
      if (field.number == 2 && field.type == wire::WireType::kLengthDelimited) value = field.bytes;
    }
    if (!fn(key, value)) return;
  }
}

}  // namespace

std::optional<tensorflow::AttrValue> Node::FindAttr(std::string_view key) const {
  std::optional<tensorflow::AttrValue> result;
  ForEachAttrRecord(attrs_, [&](std::string_view k, std::string_view v) {
    if (k != key) return true;
    tensorflow::AttrValue value;
    if (value.ParseFromArray(v.data(), static_cast<int>(v.size()))) result = std::move(value);
    return false;
  });
  return result;
}

bool Node::HasAttr(std::string_view key) const {
  bool found = false;
  ForEachAttrRecord(attrs_, [&](std::string_view k, std::string_view) {
    found = k == key;
    return !found;
  });
  return found;
}

std::map<std::string, tensorflow::AttrValue> Node::DecodeAttrs() const {
  std::map<std::string, tensorflow::AttrValue> attrs;
  ForEachAttrRecord(attrs_, [&](std::string_view k, std::string_view v) {
    tensorflow::AttrValue value;
    value.ParseFromArray(v.data(), static_cast<int>(v.size()));
    attrs[std::string(k)] = std::move(value);  // a later duplicate wins, as in protobuf
    return true;
  });
  return attrs;
}

void AppendAttrRecord(std::string* out, std::string_view key,
                      const tensorflow::AttrValue& value) {
  std::string entry;
  wire::AppendLengthDelimited(&entry, 1, key);
  wire::AppendLengthDelimited(&entry, 2, value.SerializeAsString());
  wire::AppendLengthDelimited(out, 5, entry);
}

// ---- Graph ----

Graph::Graph() : arena_(std::make_shared<StringArena>()) {}

std::vector<NodeId> Graph::NodeIds() const {
  std::vector<NodeId> ids;
  ids.reserve(static_cast<size_t>(num_live_));
  for (const Node& n : nodes_) {
    if (!n.removed_) ids.push_back(n.id_);
  }
  return ids;
}

NodeId Graph::FindNode(std::string_view name) const {
  return name_index_.Find(name, NameOf());
}

std::string Graph::InputString(OutputRef ref) const {
  return FormatInput(node(ref.node).name(), ref.port);
}

std::string Graph::TensorName(OutputRef ref) const {
  if (ref.is_control()) return FormatInput(node(ref.node).name(), ref.port);
  return fmt::format("{}:{}", node(ref.node).name(), ref.port);
}

StatusOr<NodeId> Graph::AddNode(const NodeSpec& spec) {
  if (!IsValidNodeName(spec.name)) {
    return InvalidArgumentError("cannot add node '{}': not a valid node name",
                                QuoteForMessage(spec.name));
  }
  if (FindNode(spec.name) != kNoNode) {
    return InvalidArgumentError("cannot add node '{}': the name is taken", spec.name);
  }
  if (!IsValidOpName(spec.op)) {
    return InvalidArgumentError("cannot add node '{}': '{}' is not a valid op name", spec.name,
                                QuoteForMessage(spec.op));
  }
  bool seen_control = false;
  int num_data = 0;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const OutputRef& in = spec.inputs[i];
    if (!IsLive(in.node)) {
      return InvalidArgumentError("cannot add node '{}': input {} names node id {}, which "
                                  "does not exist",
                                  spec.name, i, in.node);
    }
    if (in.port < kControlPort) {
      return InvalidArgumentError("cannot add node '{}': input {} has port {}", spec.name, i,
                                  in.port);
    }
    if (in.is_control()) {
      seen_control = true;
    } else if (seen_control) {
      return InvalidArgumentError("cannot add node '{}': data input {} comes after a control "
                                  "input",
                                  spec.name, i);
    } else {
      ++num_data;
    }
  }
  const NodeId id = id_limit();
  Node n;
  n.id_ = id;
  n.name_ = arena_->Store(spec.name);
  n.op_ = arena_->Store(spec.op);
  n.device_ = arena_->Store(spec.device);
  std::string attrs;
  for (const auto& [key, value] : spec.attrs) AppendAttrRecord(&attrs, key, value);
  n.attrs_ = arena_->Store(attrs);
  n.inputs_ = spec.inputs;
  n.num_data_inputs_ = num_data;
  nodes_.push_back(std::move(n));
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    nodes_[static_cast<size_t>(spec.inputs[i].node)].fanout_.push_back(
        InputRef{id, static_cast<int32_t>(i)});
  }
  name_index_.Insert(nodes_.back().name_, id, NameOf());
  ++num_live_;
  ++structure_version_;
  return id;
}

namespace {
void EraseFanout(std::vector<InputRef>& fanout, InputRef ref) {
  auto it = std::find(fanout.begin(), fanout.end(), ref);
  if (it != fanout.end()) {
    *it = fanout.back();
    fanout.pop_back();
  }
}
}  // namespace

Status Graph::ReplaceInput(NodeId consumer, int index, OutputRef source) {
  if (!IsLive(consumer) || !IsLive(source.node)) {
    return InternalError("ReplaceInput: node id {} or {} does not exist", consumer, source.node);
  }
  Node& n = nodes_[static_cast<size_t>(consumer)];
  if (index < 0 || index >= static_cast<int>(n.inputs_.size())) {
    return InternalError("ReplaceInput: node '{}' has no input {}", n.name_, index);
  }
  const bool control_slot = index >= n.num_data_inputs_;
  if (control_slot != source.is_control() || source.port < kControlPort) {
    return InternalError("ReplaceInput: node '{}' input {} is a {} slot; cannot point it at "
                         "'{}'",
                         n.name_, index, control_slot ? "control" : "data",
                         FormatInput(node(source.node).name(), source.port));
  }
  OutputRef old = n.inputs_[static_cast<size_t>(index)];
  EraseFanout(nodes_[static_cast<size_t>(old.node)].fanout_, InputRef{consumer, index});
  n.inputs_[static_cast<size_t>(index)] = source;
  nodes_[static_cast<size_t>(source.node)].fanout_.push_back(InputRef{consumer, index});
  ++structure_version_;
  return Status::Ok();
}

Status Graph::AddControlInput(NodeId consumer, NodeId source) {
  if (!IsLive(consumer) || !IsLive(source)) {
    return InternalError("AddControlInput: node id {} or {} does not exist", consumer, source);
  }
  Node& n = nodes_[static_cast<size_t>(consumer)];
  for (const OutputRef& in : n.control_inputs()) {
    if (in.node == source) return Status::Ok();
  }
  n.inputs_.push_back(OutputRef{source, kControlPort});
  nodes_[static_cast<size_t>(source)].fanout_.push_back(
      InputRef{consumer, static_cast<int32_t>(n.inputs_.size() - 1)});
  ++structure_version_;
  return Status::Ok();
}

Status Graph::RemoveControlInput(NodeId consumer, NodeId source) {
  if (!IsLive(consumer)) return InternalError("RemoveControlInput: node id {} does not exist", consumer);
  Node& n = nodes_[static_cast<size_t>(consumer)];
  for (size_t i = static_cast<size_t>(n.num_data_inputs_); i < n.inputs_.size(); ++i) {
    if (n.inputs_[i].node != source) continue;
    EraseFanout(nodes_[static_cast<size_t>(source)].fanout_,
                InputRef{consumer, static_cast<int32_t>(i)});
    // The control inputs after it move down one slot; so do their fanout entries.
    for (size_t j = i + 1; j < n.inputs_.size(); ++j) {
      for (InputRef& ref : nodes_[static_cast<size_t>(n.inputs_[j].node)].fanout_) {
        if (ref == InputRef{consumer, static_cast<int32_t>(j)}) {
          ref.index = static_cast<int32_t>(j - 1);
          break;
        }
      }
    }
    n.inputs_.erase(n.inputs_.begin() + static_cast<std::ptrdiff_t>(i));
    ++structure_version_;
    return Status::Ok();
  }
  return Status::Ok();
}

Status Graph::RemoveNode(NodeId id) {
  if (!IsLive(id)) return InternalError("RemoveNode: node id {} does not exist", id);
  Node& n = nodes_[static_cast<size_t>(id)];
  if (!n.fanout_.empty()) {
    const Node& reader = node(n.fanout_.front().node);
    return InternalError("cannot remove node '{}': node '{}' still reads it", n.name_,
                         reader.name_);
  }
  for (size_t i = 0; i < n.inputs_.size(); ++i) {
    EraseFanout(nodes_[static_cast<size_t>(n.inputs_[i].node)].fanout_,
                InputRef{id, static_cast<int32_t>(i)});
  }
  name_index_.Erase(n.name_, NameOf());
  n.inputs_.clear();
  n.inputs_.shrink_to_fit();
  n.num_data_inputs_ = 0;
  n.removed_ = true;
  --num_live_;
  ++structure_version_;
  return Status::Ok();
}

void Graph::SetDevice(NodeId id, std::string_view device) {
  Node& n = nodes_[static_cast<size_t>(id)];
  if (n.device_ == device) return;
  // Passes set one device on many nodes in a row: store each run's string once (the
  // arena is shared by copies and locked, so a store per node costs time and memory).
  if (device != last_device_) last_device_ = arena_->Store(device);
  n.device_ = last_device_;
}

void Graph::SetAttr(NodeId id, std::string_view key, const tensorflow::AttrValue& value) {
  Node& n = nodes_[static_cast<size_t>(id)];
  std::string records;
  bool replaced = false;
  wire::Reader reader(n.attrs_);
  wire::Field record;
  while (!reader.done() && reader.Next(&record).ok()) {
    std::string_view record_key;
    wire::Reader entry(record.bytes);
    wire::Field field;
    while (!entry.done() && entry.Next(&field).ok()) {
      if (field.number == 1) record_key = field.bytes;
    }
    if (record_key == key) {
      if (!replaced) AppendAttrRecord(&records, key, value);
      replaced = true;
    } else {
      records.append(record.record);
    }
  }
  if (!replaced) AppendAttrRecord(&records, key, value);
  n.attrs_ = arena_->Store(records);
  ++structure_version_;
}

std::string Graph::UniqueName(std::string_view base) const {
  if (FindNode(base) == kNoNode) return std::string(base);
  for (int suffix = 1;; ++suffix) {
    std::string candidate = fmt::format("{}_{}", base, suffix);
    if (FindNode(candidate) == kNoNode) return candidate;
  }
}

size_t Graph::ApproximateBytes() const {
  size_t bytes = nodes_.capacity() * sizeof(Node);
  for (const Node& n : nodes_) {
    bytes += n.inputs_.capacity() * sizeof(OutputRef) + n.fanout_.capacity() * sizeof(InputRef);
  }
  bytes += name_index_.bytes();
  return bytes + other_fields_.capacity() + arena_->bytes_used();
}

}  // namespace parallax
