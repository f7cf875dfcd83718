// CPU kernels of StringSplit and StringSplitV2 (tf.strings.split): a vector of strings
// split into tokens, returned as a SparseTensor (indices [T, 2] of (row, position),
// values [T], dense_shape [rows, most tokens in a row]).
//
// Semantics (TF's kernels):
//  - StringSplit(input, delimiter): every byte of `delimiter` is a split point; an empty
//    delimiter splits into single bytes. skip_empty (default true) drops empty tokens. An
//    empty input string gives no tokens, whatever skip_empty says.
//  - StringSplitV2(input, sep), Python's str.split: a non-empty `sep` is one multi-byte
//    separator and empty tokens are kept ("1,,2" -> "1", "", "2"; "" -> ""); an empty
//    `sep` splits at runs of ASCII whitespace and drops leading and trailing ones ("" and
//    "  " -> no tokens). maxsplit > 0 stops after that many splits, the rest of the
//    string (after the whitespace that follows the last split) being the last token;
//    maxsplit 0 keeps the string whole.
// input must be a vector, delimiter/sep a scalar; errors are TF's messages.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernel.h"

namespace parallax {
namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

// StringSplit's tokens of one string.
void SplitOnBytes(std::string_view text, std::string_view delimiters, bool skip_empty,
                  std::vector<std::string_view>* tokens) {
  if (text.empty()) return;
  if (delimiters.empty()) {
    for (size_t i = 0; i < text.size(); ++i) tokens->push_back(text.substr(i, 1));
    return;
  }
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && delimiters.find(text[i]) == std::string_view::npos) continue;
    if (!skip_empty || i > start) tokens->push_back(text.substr(start, i - start));
    start = i + 1;
  }
}

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// StringSplitV2's tokens of one string.
void SplitPythonStyle(std::string_view text, std::string_view sep, int64_t maxsplit,
                      std::vector<std::string_view>* tokens) {
  if (maxsplit == 0) {
    tokens->push_back(text);
    return;
  }
  int64_t splits = 0;
  if (sep.empty()) {
    size_t at = 0;
    auto skip_space = [&] {
      while (at < text.size() && IsSpace(text[at])) ++at;
    };
    skip_space();
    while (at < text.size()) {
      const size_t start = at;
      while (at < text.size() && !IsSpace(text[at])) ++at;
      tokens->push_back(text.substr(start, at - start));
      skip_space();
      if (maxsplit > 0 && ++splits == maxsplit) {
        tokens->push_back(text.substr(at));
        return;
      }
    }
    return;
  }
  for (size_t found = text.find(sep); found != std::string_view::npos; found = text.find(sep)) {
    tokens->push_back(text.substr(0, found));
    text.remove_prefix(found + sep.size());
    if (maxsplit > 0 && ++splits == maxsplit) break;
  }
  tokens->push_back(text);
}

// Checks the inputs both ops share: a vector of strings and a scalar separator.
Status CheckSplitInputs(const Tensor& input, const Tensor& sep, const char* sep_name) {
  if (input.dtype() != tensorflow::DT_STRING || sep.dtype() != tensorflow::DT_STRING) {
    return InvalidArgumentError("input and {} must be strings, got {} and {}", sep_name,
                                DataTypeShortName(input.dtype()), DataTypeShortName(sep.dtype()));
  }
  if (input.rank() != 1) {
    return InvalidArgumentError("input must be a vector, got shape: {}",
                                input.shape().DebugString());
  }
  if (sep.rank() != 0) {
    return InvalidArgumentError("{} must be a scalar, got shape: {}", sep_name,
                                sep.shape().DebugString());
  }
  return Status::Ok();
}

// Writes the SparseTensor of `rows` (the tokens of each input string).
void OutputTokens(KernelContext& context, const std::vector<std::vector<std::string_view>>& rows) {
  int64_t total = 0;
  int64_t widest = 0;
  for (const auto& row : rows) {
    total += static_cast<int64_t>(row.size());
    widest = std::max(widest, static_cast<int64_t>(row.size()));
  }
  int64_t* indices = context.AllocateOutput(0, tensorflow::DT_INT64, TensorShape({total, 2}))
                         ->data<int64_t>();
  std::string* values =
      context.AllocateOutput(1, tensorflow::DT_STRING, TensorShape({total}))->data<std::string>();
  int64_t* shape = context.AllocateOutput(2, tensorflow::DT_INT64, TensorShape({2}))->data<int64_t>();
  shape[0] = static_cast<int64_t>(rows.size());
  shape[1] = widest;
  int64_t k = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t j = 0; j < rows[r].size(); ++j, ++k) {
      indices[2 * k] = static_cast<int64_t>(r);
      indices[2 * k + 1] = static_cast<int64_t>(j);
      values[k].assign(rows[r][j].data(), rows[r][j].size());
    }
  }
}

class StringSplitOp : public OpKernel {
 public:
  StringSplitOp(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("skip_empty", &skip_empty_, true);
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const Tensor& delimiter = context.input(1);
    PX_RETURN_IF_ERROR(CheckSplitInputs(input, delimiter, "delimiter"));
    const std::string& delimiters = *delimiter.data<std::string>();
    std::vector<std::vector<std::string_view>> rows(static_cast<size_t>(input.dim(0)));
    for (size_t r = 0; r < rows.size(); ++r) {
      SplitOnBytes(input.data<std::string>()[r], delimiters, skip_empty_, &rows[r]);
    }
    OutputTokens(context, rows);
    return Status::Ok();
  }

 private:
  bool skip_empty_ = true;
};
PX_REGISTER_KERNEL(StringSplitOp, "StringSplit", kCpu);

class StringSplitV2Op : public OpKernel {
 public:
  StringSplitV2Op(const KernelInit& init, Status* status) {
    *status = init.GetAttrOr("maxsplit", &maxsplit_, int64_t{-1});
  }

  Status Compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const Tensor& sep = context.input(1);
    PX_RETURN_IF_ERROR(CheckSplitInputs(input, sep, "sep"));
    const std::string& separator = *sep.data<std::string>();
    std::vector<std::vector<std::string_view>> rows(static_cast<size_t>(input.dim(0)));
    for (size_t r = 0; r < rows.size(); ++r) {
      SplitPythonStyle(input.data<std::string>()[r], separator, maxsplit_, &rows[r]);
    }
    OutputTokens(context, rows);
    return Status::Ok();
  }

 private:
  int64_t maxsplit_ = -1;
};
PX_REGISTER_KERNEL(StringSplitV2Op, "StringSplitV2", kCpu);

}  // namespace
}  // namespace parallax
