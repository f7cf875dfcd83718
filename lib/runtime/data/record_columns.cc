#include "lib/runtime/data/record_columns.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/base/crc32c.h"
#include "lib/base/file.h"
#include "lib/graph/names.h"
#include "lib/runtime/data/tfrecord.h"
#include "protos/example.pb.h"

namespace parallax {
namespace {

// Splits one CSV line into fields (quotes with "" escapes).
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else {
      field.push_back(c);
    }
  }
  fields.push_back(std::move(field));
  return fields;
}

// The first 12 bytes of a file are a TFRecord frame's length and its masked crc32c.
bool StartsWithTFRecordFrame(std::string_view contents) {
  if (contents.size() < 12) return false;
  uint32_t stored = 0;
  std::memcpy(&stored, contents.data() + 8, 4);
  return MaskCrc32c(Crc32c(contents.substr(0, 8))) == stored;
}

}  // namespace

std::optional<std::pair<std::string, std::string>> SplitKeyedSource(const std::string& source) {
  std::error_code error;
  if (std::filesystem::exists(source, error)) return std::nullopt;
  const size_t colon = source.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == source.size()) return std::nullopt;
  std::string file = source.substr(0, colon);
  if (!std::filesystem::is_regular_file(file, error)) return std::nullopt;
  return std::make_pair(std::move(file), source.substr(colon + 1));
}

StatusOr<std::shared_ptr<TensorColumn>> LoadCsvColumn(const std::string& path,
                                                      const std::string& column) {
  PX_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  return ParseCsvColumn(text, column, path);
}

StatusOr<std::shared_ptr<TensorColumn>> ParseCsvColumn(std::string_view text,
                                                       const std::string& column,
                                                       const std::string& source) {
  // Lines as std::getline gives them: split at '\n', a last line without one included.
  size_t next = 0;
  const auto next_line = [&](std::string* line) {
    if (next >= text.size()) return false;
    const size_t end = std::min(text.find('\n', next), text.size());
    line->assign(text.substr(next, end - next));
    next = end + 1;
    if (!line->empty() && line->back() == '\r') line->pop_back();
    return true;
  };
  std::string line;
  if (!next_line(&line)) return InvalidArgumentError("{}: empty CSV file (no header row)", source);
  const std::vector<std::string> header = SplitCsv(line);
  const auto found = std::find(header.begin(), header.end(), column);
  if (found == header.end()) {
    std::vector<std::string> shown;
    for (const std::string& name : header) shown.push_back(QuoteForMessage(name));
    return InvalidArgumentError("{}: no column '{}' (the header has: {})", source, column,
                                fmt::join(shown, ", "));
  }
  const size_t index = static_cast<size_t>(found - header.begin());
  struct Value {
    int64_t row;
    std::string text;
  };
  std::vector<Value> values;
  int64_t row = 1;
  while (next_line(&line)) {
    ++row;
    if (line.empty()) continue;
    std::vector<std::string> fields = SplitCsv(line);
    if (fields.size() != header.size()) {
      return InvalidArgumentError("{}: row {} has {} fields, the header {}", source, row,
                                  fields.size(), header.size());
    }
    if (fields[index].empty()) {
      return InvalidArgumentError("{}: row {}: column '{}' is empty", source, row, column);
    }
    values.push_back(Value{row, std::move(fields[index])});
  }
  if (values.empty()) return InvalidArgumentError("{}: no data rows", source);
  const int64_t n = static_cast<int64_t>(values.size());
  bool integers = true;
  for (const Value& v : values) {
    int64_t x = 0;
    auto [end, error] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), x);
    if (error != std::errc() || end != v.text.data() + v.text.size()) {
      integers = false;
      break;
    }
  }
  if (integers) {
    Tensor data(tensorflow::DT_INT64, TensorShape({n}));
    for (int64_t i = 0; i < n; ++i) {
      const std::string& v = values[static_cast<size_t>(i)].text;
      std::from_chars(v.data(), v.data() + v.size(), data.data<int64_t>()[i]);
    }
    return TensorColumn::Create(source + ":" + column, std::move(data));
  }
  Tensor data(tensorflow::DT_DOUBLE, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) {
    const Value& v = values[static_cast<size_t>(i)];
    char* end = nullptr;
    data.data<double>()[i] = std::strtod(v.text.c_str(), &end);
    if (end != v.text.c_str() + v.text.size()) {
      return InvalidArgumentError("{}: row {}: column '{}' holds '{}', not a number", source,
                                  v.row, column, QuoteForMessage(v.text));
    }
  }
  return TensorColumn::Create(source + ":" + column, std::move(data));
}

StatusOr<std::shared_ptr<TensorColumn>> LoadExampleColumn(const std::string& path,
                                                          const std::string& feature) {
  PX_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordReader> reader, TFRecordReader::Open(path));
  return ReadExampleColumn(*reader, feature);
}

StatusOr<std::shared_ptr<TensorColumn>> ReadExampleColumn(TFRecordReader& reader,
                                                          const std::string& feature) {
  const std::string& path = reader.path();
  std::string record;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  int64_t length = -1, records = 0;
  bool is_float = false;
  for (;;) {
    PX_ASSIGN_OR_RETURN(bool more, reader.Next(&record));
    if (!more) break;
    tensorflow::Example example;
    if (!example.ParseFromString(record)) {
      return InvalidArgumentError("{}: record {} is not a tf.train.Example", path, records);
    }
    auto it = example.features().feature().find(feature);
    if (it == example.features().feature().end()) {
      std::vector<std::string> keys;
      for (const auto& [key, value] : example.features().feature()) {
        keys.push_back(QuoteForMessage(key));
      }
      std::sort(keys.begin(), keys.end());
      return InvalidArgumentError("{}: record {} has no feature '{}' (it has: {})", path, records,
                                  feature, fmt::join(keys, ", "));
    }
    const tensorflow::Feature& f = it->second;
    int64_t n = 0;
    if (f.has_int64_list()) {
      if (records > 0 && is_float) {
        return InvalidArgumentError("{}: record {}: feature '{}' is int64, earlier records' float",
                                    path, records, feature);
      }
      n = f.int64_list().value_size();
      ints.insert(ints.end(), f.int64_list().value().begin(), f.int64_list().value().end());
    } else if (f.has_float_list()) {
      if (records > 0 && !is_float) {
        return InvalidArgumentError("{}: record {}: feature '{}' is float, earlier records' int64",
                                    path, records, feature);
      }
      is_float = true;
      n = f.float_list().value_size();
      floats.insert(floats.end(), f.float_list().value().begin(), f.float_list().value().end());
    } else {
      return InvalidArgumentError("{}: record {}: feature '{}' holds bytes; decode it in the "
                                  "graph, or feed a decoded .npy file",
                                  path, records, feature);
    }
    if (length >= 0 && n != length) {
      return InvalidArgumentError("{}: record {}: feature '{}' has {} values, earlier records {}",
                                  path, records, feature, n, length);
    }
    length = n;
    ++records;
  }
  if (records == 0) return InvalidArgumentError("{}: no records", path);
  std::vector<int64_t> dims = {records};
  if (length != 1) dims.push_back(length);
  Tensor data(is_float ? tensorflow::DT_FLOAT : tensorflow::DT_INT64, TensorShape(dims));
  if (is_float) {
    std::copy(floats.begin(), floats.end(), data.data<float>());
  } else {
    std::copy(ints.begin(), ints.end(), data.data<int64_t>());
  }
  return TensorColumn::Create(path + ":" + feature, std::move(data));
}

StatusOr<std::shared_ptr<TensorColumn>> LoadKeyedColumn(const std::string& path,
                                                        const std::string& key) {
  PX_ASSIGN_OR_RETURN(const std::string head, ReadFileRange(path, 0, 12));
  if (StartsWithTFRecordFrame(head)) return LoadExampleColumn(path, key);
  return LoadCsvColumn(path, key);
}

StatusOr<std::shared_ptr<TensorColumn>> ParseKeyedColumn(std::string contents,
                                                         const std::string& key,
                                                         const std::string& source) {
  if (!StartsWithTFRecordFrame(contents)) return ParseCsvColumn(contents, key, source);
  PX_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordReader> reader,
                      TFRecordReader::OpenString(std::move(contents), source));
  return ReadExampleColumn(*reader, key);
}

}  // namespace parallax
