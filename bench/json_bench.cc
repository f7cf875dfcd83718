// Benchmark: Parallax's JSON reader and writer against nlohmann-json's own trees (the
// issue: move the hand-written ones to the maintained library unless it is slower).
// The reader now parses with nlohmann (SAX into its own tree); the writer stays
// hand-written because nlohmann's was slower (bench/results.md has the figures).
//
// (a) Reading a safetensors header, as `parallax run --resume`, checkpoint_diff and
// `parallax checkpoint ls` do. Data: the header EncodeSafetensors writes for --tensors
// float tensors (default 10,000, about 8x the variables and Adam slots of BERT-large)
// named like a model's (`model/layer_0123/attention/query/kernel/Adam_1`), ranks 1-2,
// plus a __metadata__ of 5 strings (about 1 MB of JSON).
//   parse                     ParseJson (lib/runtime/checkpoint/json_value.h):
//                             nlohmann::json::sax_parse into a JsonValue tree; baseline;
//   parse_nlohmann            nlohmann::json::parse (objects as std::map);
//   parse_nlohmann_ordered    nlohmann::ordered_json::parse (objects in file order);
//   parse_nlohmann_callback   nlohmann::json::parse with a callback on every key, which
//                             rejecting duplicate tensor names needs (nlohmann keeps
//                             the last of duplicate keys silently);
//   parse_nlohmann_sax        nlohmann::json::sax_parse with a handler that only counts
//                             the tensors: the floor of any reader built on nlohmann;
//   decode                    DecodeSafetensors of the whole file: parse, every header
//                             check, tensor copies: baseline for
//   decode_nlohmann           the same checks and copies on nlohmann's tree, as
//                             safetensors.cc would do them: a SAX pass for duplicate
//                             names, then nlohmann::json::parse.
// (b) Writing inspect's JSON (docs/inspect-json.md) for a graph of --variables variables
// (default 100,000: twice those of the 1M-node graph of graph_load_bench), each with
// shape, role, one update (10 fields) and two slot names; 200 op counts (about 105 MB).
//   write                     JsonWriter (lib/base/json_writer.h), indent 2: baseline;
//   write_nlohmann            nlohmann::ordered_json built the same way, dump(2). The
//                             bench checks that both give the same bytes.
// Each figure is the median of --runs rounds (the machine is shared).
//
// Output lines follow scripts/bench.sh: `json.<metric>: <value> <unit> (<note>)`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/base/crc32c.h"
#include "lib/base/json_writer.h"
#include "lib/base/status.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/checkpoint/json_value.h"
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/runtime/tensor.h"

namespace parallax {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

struct Options {
  int tensors = 10000;
  int variables = 100000;
  int runs = 5;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The median time (seconds) of each of fns over `runs` rounds. Each round runs every fn
// once, in turn, so a busy spell on the shared machine hits them alike. fn's errors end
// the benchmark.
StatusOr<std::vector<double>> Medians(int runs, const std::vector<std::function<Status()>>& fns) {
  std::vector<std::vector<double>> times(fns.size());
  for (int i = 0; i < runs; ++i) {
    for (size_t f = 0; f < fns.size(); ++f) {
      const auto start = std::chrono::steady_clock::now();
      PX_RETURN_IF_ERROR(fns[f]());
      times[f].push_back(SecondsSince(start));
    }
  }
  std::vector<double> medians;
  for (std::vector<double>& t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t[t.size() / 2]);
  }
  return medians;
}

void PrintTime(std::string_view metric, double seconds, double baseline, std::string_view note) {
  if (baseline <= 0) {
    std::printf("json.%.*s: %.2f ms (baseline: %.*s)\n", static_cast<int>(metric.size()),
                metric.data(), seconds * 1e3, static_cast<int>(note.size()), note.data());
  } else {
    std::printf("json.%.*s: %.2f ms (%.2fx %.*s)\n", static_cast<int>(metric.size()),
                metric.data(), seconds * 1e3, seconds / baseline, static_cast<int>(note.size()),
                note.data());
  }
}

// ---- (a) reading --------------------------------------------------------------------

SafetensorsContents MakeCheckpoint(int count) {
  static constexpr const char* kParts[] = {
      "attention/query/kernel", "attention/query/bias", "attention/key/kernel",
      "attention/key/bias",     "attention/value/kernel", "attention/value/bias",
      "attention/output/kernel", "attention/output/bias", "intermediate/kernel",
      "intermediate/bias",      "output/kernel",         "output/bias",
      "layer_norm/gamma",       "layer_norm/beta",       "layer_norm_1/gamma",
      "layer_norm_1/beta"};
  static constexpr const char* kSlots[] = {"", "/Adam", "/Adam_1"};
  SafetensorsContents c;
  for (int i = 0; i < count; ++i) {
    const std::string part = kParts[i % 16];
    const std::string name =
        fmt::format("model/layer_{:04d}/{}{}", i / 48, part, kSlots[(i / 16) % 3]);
    // Small dims keep the data section (copied by both readers alike) at a few MB.
    const int64_t d = 1 + i % 37;
    TensorShape shape = part.ends_with("kernel") ? TensorShape({d, 8}) : TensorShape({d});
    Tensor t(tensorflow::DT_FLOAT, shape);
    std::memset(t.raw_data(), 0, t.bytes());
    c.tensors.emplace(name, std::move(t));
  }
  c.metadata = {{"step", "120000"},
                {"graph_fingerprint", "9f86d081884c7d65"},
                {"job_size", "4"},
                {"data_position", "1843200"},
                {"shuffle_seed", "20240601"}};
  return c;
}

// A SAX handler that ignores everything: subclasses see what they need.
class IgnoreAll : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return ++depth_, true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return ++depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool parse_error(std::size_t, const std::string&, const Json::exception&) override {
    return false;
  }

 protected:
  int depth_ = 0;
};

// Counts the members of the top-level object.
class CountMembers : public IgnoreAll {
 public:
  size_t members() const { return members_; }
  bool key(string_t&) override { return members_ += depth_ == 1, true; }

 private:
  size_t members_ = 0;
};

// The first key of the top-level object that appears twice.
class TopLevelKeys : public IgnoreAll {
 public:
  const std::string& duplicate() const { return duplicate_; }
  bool key(string_t& key) override {
    if (depth_ == 1 && duplicate_.empty() && !keys_.insert(key).second) duplicate_ = key;
    return true;
  }

 private:
  std::set<std::string> keys_;
  std::string duplicate_;
};

// DecodeSafetensors on nlohmann's tree: the checks of safetensors.cc (F32 only, as the
// bench's tensors; shorter messages).
struct Entry {
  std::string name;
  DataType dtype;
  TensorShape shape;
  uint64_t begin, end;
};

StatusOr<SafetensorsContents> DecodeWithNlohmann(std::string_view bytes,
                                                 std::string_view source) {
  if (bytes.size() < 8) return InvalidArgumentError("{}: truncated", source);
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | static_cast<uint8_t>(bytes[i]);
  if (header_length > bytes.size() - 8) return InvalidArgumentError("{}: bad header length", source);
  const std::string_view text = bytes.substr(8, header_length);
  // nlohmann keeps the last of duplicate keys silently, and a parse callback costs time
  // quadratic in the tensors (parse_nlohmann_callback), so a first SAX pass finds them.
  TopLevelKeys keys;
  if (!Json::sax_parse(text, &keys)) return InvalidArgumentError("{}: header is not valid JSON", source);
  if (!keys.duplicate().empty()) {
    return InvalidArgumentError("{}: '{}' appears twice in the header", source, keys.duplicate());
  }
  const Json header = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return InvalidArgumentError("{}: header is not a JSON object", source);
  const std::string_view data = bytes.substr(8 + header_length);

  SafetensorsContents contents;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) return InvalidArgumentError("{}: __metadata__ is not an object", source);
      for (const auto& [key, item] : value.items()) {
        if (!item.is_string()) {
          return InvalidArgumentError("{}: __metadata__ '{}' is not a string", source, key);
        }
        contents.metadata[key] = item.get<std::string>();
      }
      continue;
    }
    auto bad = [&](std::string_view what) {
      return InvalidArgumentError("{}: tensor '{}': {}", source, name, what);
    };
    if (!value.is_object()) return bad("entry is not an object");
    const auto dtype = value.find("dtype");
    const auto shape = value.find("shape");
    const auto offsets = value.find("data_offsets");
    if (dtype == value.end() || !dtype->is_string()) return bad("no string 'dtype'");
    if (shape == value.end() || !shape->is_array()) return bad("no 'shape' array");
    if (offsets == value.end() || !offsets->is_array()) return bad("no 'data_offsets' array");
    Entry entry{name, tensorflow::DT_INVALID, TensorShape(), 0, 0};
    const std::string& dtype_name = dtype->get_ref<const std::string&>();
    if (dtype_name == "F32") entry.dtype = tensorflow::DT_FLOAT;
    if (entry.dtype == tensorflow::DT_INVALID) return bad("unsupported dtype");
    uint64_t elements = 1;
    for (const Json& dim : *shape) {
      if (!dim.is_number_unsigned() || dim.get<uint64_t>() > (uint64_t{1} << 48)) {
        return bad("'shape' must hold non-negative integers");
      }
      const uint64_t n = dim.get<uint64_t>();
      if (n > 0 && elements > (uint64_t{1} << 48) / n) return bad("'shape' is too large");
      elements *= n;
      entry.shape.AddDim(static_cast<int64_t>(n));
    }
    if (offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned() ||
        (*offsets)[0].get<uint64_t>() > (*offsets)[1].get<uint64_t>()) {
      return bad("'data_offsets' must be [begin, end] with begin <= end");
    }
    entry.begin = (*offsets)[0].get<uint64_t>();
    entry.end = (*offsets)[1].get<uint64_t>();
    if (entry.end > data.size()) return bad("data_offsets are outside the data section");
    if (entry.end - entry.begin != elements * static_cast<uint64_t>(DataTypeSize(entry.dtype))) {
      return bad("byte count");
    }
    entries.push_back(std::move(entry));
  }
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t cursor = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != cursor) return InvalidArgumentError("{}: overlap or gap", source);
    cursor = e->end;
  }
  if (cursor != data.size()) return InvalidArgumentError("{}: bytes after the last tensor", source);
  // Each tensor's CRC-32C (EncodeSafetensors writes "crc32c:NAME" metadata), checked and
  // taken out of the metadata as DecodeSafetensors does.
  for (const Entry& e : entries) {
    const auto it = contents.metadata.find(fmt::format("{}{}", kTensorChecksumPrefix, e.name));
    if (it == contents.metadata.end()) continue;
    if (it->second != fmt::format("{:08x}", Crc32c(data.substr(e.begin, e.end - e.begin)))) {
      return InvalidArgumentError("{}: tensor '{}': CRC-32C mismatch", source, e.name);
    }
  }
  std::erase_if(contents.metadata,
                [](const auto& entry) { return entry.first.starts_with(kTensorChecksumPrefix); });
  for (const Entry& e : entries) {
    Tensor tensor(e.dtype, e.shape);
    if (e.end > e.begin) std::memcpy(tensor.raw_data(), data.data() + e.begin, e.end - e.begin);
    contents.tensors.emplace(e.name, std::move(tensor));
  }
  return contents;
}

Status BenchRead(const Options& options) {
  const SafetensorsContents checkpoint = MakeCheckpoint(options.tensors);
  PX_ASSIGN_OR_RETURN(const std::string file, EncodeSafetensors(checkpoint));
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | static_cast<uint8_t>(file[i]);
  const std::string_view header = std::string_view(file).substr(8, header_length);
  std::printf("json.safetensors_header: %.2f MB (%d tensors; data section %.2f MB)\n",
              static_cast<double>(header_length) / 1e6, options.tensors,
              static_cast<double>(file.size() - 8 - header_length) / 1e6);

  size_t members = 0;
  const auto check_members = [&](size_t n) -> Status {
    if (n != members) return InternalError("{} top-level members, ParseJson found {}", n, members);
    return Status::Ok();
  };
  PX_ASSIGN_OR_RETURN(const std::vector<double> parse, Medians(options.runs, {
    [&]() -> Status {
      PX_ASSIGN_OR_RETURN(const JsonValue v, ParseJson(header));
      members = v.object.size();
      return Status::Ok();
    },
    [&]() -> Status { return check_members(Json::parse(header, nullptr, false).size()); },
    [&]() -> Status { return check_members(OrderedJson::parse(header, nullptr, false).size()); },
    [&]() -> Status {
      size_t keys = 0;
      const Json v = Json::parse(header, [&](int depth, Json::parse_event_t event, Json&) {
        keys += depth == 1 && event == Json::parse_event_t::key;
        return true;
      }, false);
      PX_RETURN_IF_ERROR(check_members(keys));
      return check_members(v.size());
    },
    [&]() -> Status {
      CountMembers counter;
      if (!Json::sax_parse(header, &counter)) return InternalError("sax_parse failed");
      return check_members(counter.members());
    },
  }));
  PrintTime("parse", parse[0], 0, "ParseJson: nlohmann SAX into JsonValue");
  PrintTime("parse_nlohmann", parse[1], parse[0], "ParseJson; nlohmann::json::parse");
  PrintTime("parse_nlohmann_ordered", parse[2], parse[0],
            "ParseJson; nlohmann::ordered_json::parse, file order");
  PrintTime("parse_nlohmann_callback", parse[3], parse[0],
            "ParseJson; nlohmann::json::parse with a key callback");
  PrintTime("parse_nlohmann_sax", parse[4], parse[0],
            "ParseJson; nlohmann::json::sax_parse, members counted, no tree");

  PX_ASSIGN_OR_RETURN(const std::vector<double> decode, Medians(options.runs, {
    [&]() -> Status {
      PX_ASSIGN_OR_RETURN(const SafetensorsContents c, DecodeSafetensors(file, "bench"));
      if (c.tensors.size() != checkpoint.tensors.size()) return InternalError("tensors lost");
      return Status::Ok();
    },
    [&]() -> Status {
      PX_ASSIGN_OR_RETURN(const SafetensorsContents c, DecodeWithNlohmann(file, "bench"));
      if (c.tensors.size() != checkpoint.tensors.size() || c.metadata != checkpoint.metadata) {
        return InternalError("tensors lost");
      }
      return Status::Ok();
    },
  }));
  PrintTime("decode", decode[0], 0, "DecodeSafetensors: parse, header checks, tensor copies");
  PrintTime("decode_nlohmann", decode[1], decode[0],
            "DecodeSafetensors; the same on nlohmann::json");
  return Status::Ok();
}

// ---- (b) writing --------------------------------------------------------------------

struct Update {
  std::string op, type, gradient;
  std::vector<std::string> slots;
};
struct Variable {
  std::string name, dtype, role, gradient, initializer;
  std::vector<int64_t> shape;
  int64_t bytes;
  std::vector<Update> updates;
  std::vector<std::string> slots;
};
struct Report {
  std::map<std::string, int> ops;
  std::vector<Variable> variables;
};

Report MakeReport(int count) {
  Report r;
  for (int i = 0; i < 200; ++i) r.ops[fmt::format("Op{:03d}", i)] = 1 + i * 37 % 5000;
  for (int i = 0; i < count; ++i) {
    Variable v;
    v.name = fmt::format("model/layer_{:05d}/dense_{}/kernel", i / 4, i % 4);
    v.dtype = "float";
    v.role = "trainable";
    v.gradient = "dense";
    v.initializer = v.name + "/Assign";
    v.shape = {1024, 1 + i % 4096};
    v.bytes = 4 * v.shape[0] * v.shape[1];
    v.slots = {v.name + "/Adam", v.name + "/Adam_1"};
    v.updates.push_back({"Adam/update_" + v.name + "/ApplyAdam", "ApplyAdam",
                         "gradients/" + v.name + "/MatMul_grad/tuple/control_dependency_1:0",
                         v.slots});
    r.variables.push_back(std::move(v));
  }
  return r;
}

// The fields and order of RenderInspectJson (cmd/parallax/inspect_report.cc).
std::string WriteWithJsonWriter(const Report& r) {
  JsonWriter json;
  json.BeginObject();
  json.Field("schema", 1);
  json.Field("parallax_version", "0.1.0");
  json.Key("ops").BeginObject();
  for (const auto& [op, count] : r.ops) json.Field(op, count);
  json.EndObject();
  json.Key("variables").BeginArray();
  for (const Variable& v : r.variables) {
    json.BeginObject();
    json.Field("name", v.name);
    json.Field("kind", "ref");
    json.Field("dtype", v.dtype);
    json.Key("shape").BeginArray();
    for (int64_t d : v.shape) json.Int(d);
    json.EndArray();
    json.Field("bytes", v.bytes);
    json.Field("role", v.role);
    json.Field("trainable", true);
    json.Field("gradient", v.gradient);
    json.Key("updates").BeginArray();
    for (const Update& u : v.updates) {
      json.BeginObject();
      json.Field("op", u.op);
      json.Field("type", u.type);
      json.Field("pattern", "apply");
      json.Field("sparse", false);
      json.Field("gradient", u.gradient);
      json.Key("aggregation").Null();
      json.Key("indices").Null();
      json.Key("unique").Null();
      json.Key("segment_sum").Null();
      json.Key("slots").BeginArray();
      for (const std::string& s : u.slots) json.String(s);
      json.EndArray();
      json.EndObject();
    }
    json.EndArray();
    json.Key("slots").BeginArray();
    for (const std::string& s : v.slots) json.String(s);
    json.EndArray();
    json.Key("slot_of").Null();
    json.Field("initializer", v.initializer);
    json.EndObject();
  }
  json.EndArray();
  json.Key("problems").BeginArray().EndArray();
  json.EndObject();
  return json.str() + "\n";
}

std::string WriteWithNlohmann(const Report& r) {
  OrderedJson doc;
  doc["schema"] = 1;
  doc["parallax_version"] = "0.1.0";
  OrderedJson& ops = doc["ops"] = OrderedJson::object();
  for (const auto& [op, count] : r.ops) ops[op] = count;
  OrderedJson& variables = doc["variables"] = OrderedJson::array();
  for (const Variable& v : r.variables) {
    OrderedJson j;
    j["name"] = v.name;
    j["kind"] = "ref";
    j["dtype"] = v.dtype;
    j["shape"] = v.shape;
    j["bytes"] = v.bytes;
    j["role"] = v.role;
    j["trainable"] = true;
    j["gradient"] = v.gradient;
    OrderedJson& updates = j["updates"] = OrderedJson::array();
    for (const Update& u : v.updates) {
      OrderedJson ju;
      ju["op"] = u.op;
      ju["type"] = u.type;
      ju["pattern"] = "apply";
      ju["sparse"] = false;
      ju["gradient"] = u.gradient;
      ju["aggregation"] = nullptr;
      ju["indices"] = nullptr;
      ju["unique"] = nullptr;
      ju["segment_sum"] = nullptr;
      ju["slots"] = u.slots;
      updates.push_back(std::move(ju));
    }
    j["slots"] = v.slots;
    j["slot_of"] = nullptr;
    j["initializer"] = v.initializer;
    variables.push_back(std::move(j));
  }
  doc["problems"] = OrderedJson::array();
  // replace: invalid UTF-8 becomes U+FFFD, as JsonWriter does (the default throws).
  return doc.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

Status BenchWrite(const Options& options) {
  const Report report = MakeReport(options.variables);
  const std::string expected = WriteWithJsonWriter(report);
  if (WriteWithNlohmann(report) != expected) {
    return InternalError("nlohmann's output differs from JsonWriter's");
  }
  std::printf("json.inspect_output: %.1f MB (%d variables, 200 ops; identical bytes from "
              "both writers)\n",
              static_cast<double>(expected.size()) / 1e6, options.variables);
  size_t size = 0;
  PX_ASSIGN_OR_RETURN(const std::vector<double> write, Medians(options.runs, {
    [&] { return size = WriteWithJsonWriter(report).size(), Status::Ok(); },
    [&] { return size = WriteWithNlohmann(report).size(), Status::Ok(); },
  }));
  if (size != expected.size()) return InternalError("output size changed");
  PrintTime("write", write[0], 0, "JsonWriter, lib/base/json_writer.h");
  PrintTime("write_nlohmann", write[1], write[0],
            "JsonWriter; nlohmann::ordered_json built, then dump(2)");
  return Status::Ok();
}

}  // namespace
}  // namespace parallax

int main(int argc, char** argv) {
  parallax::Options options;
  CLI::App app{"Times Parallax's JSON reader and writer against nlohmann-json's trees."};
  app.allow_extras();  // scripts/bench.sh passes BENCH_ARGS to every benchmark
  app.add_option("--tensors", options.tensors, "tensors in the safetensors header")
      ->check(CLI::PositiveNumber);
  app.add_option("--variables", options.variables, "variables in the inspect JSON")
      ->check(CLI::PositiveNumber);
  app.add_option("--runs", options.runs, "rounds per variant; the median is reported")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  parallax::Status status = parallax::BenchRead(options);
  if (status.ok()) status = parallax::BenchWrite(options);
  if (!status.ok()) {
    std::fprintf(stderr, "json_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
