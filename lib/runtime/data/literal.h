// Literal feeds: `--feed NAME=VALUE` where VALUE is written out on the command line —
// a hyper-parameter placeholder (`dropout_keep_prob=0.9`, `is_training=false`,
// `lr=1e-3`), a string (`mode="train"`), or a small tensor (`[1,2,3]`, `[[1,0],[0,1]]`).
// The same value is fed at every step.
//
// Syntax: a number (decimal integer, or floating point with '.', an exponent, inf or
// nan), true/false, a string in double or single quotes (with \" \' \\ \n \t escapes),
// or a bracketed list of those, nested for more dimensions (rows of equal length). A
// VALUE that is none of these is not a literal (it names a file).
//
// Conversion to the fed tensor's dtype: numbers to any numeric dtype (an integer dtype
// takes only integers that fit), true/false to bool, strings to string. The shape is
// the literal's (a scalar for a single value); a fed tensor whose shape the graph knows
// must have that shape (-1 dimensions take any size).
#ifndef PARALLAX_LIB_RUNTIME_DATA_LITERAL_H_
#define PARALLAX_LIB_RUNTIME_DATA_LITERAL_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/tensor.h"

namespace parallax {

struct Literal {
  enum class Kind { kNumber, kBool, kString };
  Kind kind = Kind::kNumber;
  std::vector<int64_t> dims;          // empty: a scalar
  std::vector<std::string> numbers;   // the numbers' text, row-major
  std::vector<bool> bools;
  std::vector<std::string> strings;
  std::string text;                   // as written, for messages
};

// nullopt when `text` does not look like a literal (a file name); an error when it looks
// like one but is malformed ("[1,2" , "[1,\"a\"]", rows of different lengths).
StatusOr<std::optional<Literal>> ParseLiteral(std::string_view text);

// The tensor `literal` gives a feed of `dtype` whose graph shape is `dims` (nullopt:
// unknown rank; -1: unknown dimension). Errors name `what` (e.g. "--feed lr").
StatusOr<Tensor> LiteralToTensor(const Literal& literal, DataType dtype,
                                 const std::optional<std::vector<int64_t>>& dims,
                                 std::string_view what);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DATA_LITERAL_H_
