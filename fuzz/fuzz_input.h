// What every harness of fuzz/ shares: the fuzzer's bytes as text (or as several parts),
// and the one outcome of a parser that is a bug even when it returns instead of crashing.
//
// A parser handed any bytes returns a value or an error Status. kInternal means a broken
// invariant (lib/base/status.h), never bad input; and every error for bad input is one
// line. A harness that gets an internal or a multi-line error aborts, which the fuzzer
// reports as a crash with the input that caused it.
#ifndef PARALLAX_FUZZ_FUZZ_INPUT_H_
#define PARALLAX_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace parallax::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// Harnesses whose input is several files (a checkpoint's index and data) take them
// as parts joined by this line; a corpus file without it is one part.
inline constexpr std::string_view kPartSeparator = "\n--PARALLAX-FUZZ-PART--\n";

inline std::vector<std::string_view> SplitParts(std::string_view input) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  while (true) {
    const size_t end = input.find(kPartSeparator, begin);
    parts.push_back(input.substr(begin, end == std::string_view::npos ? end : end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + kPartSeparator.size();
  }
}

// Aborts on kInternal or a message of several lines (see the file comment); every other
// outcome is fine.
inline void CheckStatus(const Status& status) {
  if (status.code() == StatusCode::kInternal) {
    std::fprintf(stderr, "parser returned an internal error for this input: %s\n",
                 status.ToString().c_str());
    std::abort();
  }
  if (status.message().find('\n') != std::string::npos) {
    std::fprintf(stderr, "parser returned an error of several lines for this input:\n%s\n",
                 status.ToString().c_str());
    std::abort();
  }
}

template <typename T>
void CheckStatus(const StatusOr<T>& value) {
  CheckStatus(value.status());
}

}  // namespace parallax::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#endif  // PARALLAX_FUZZ_FUZZ_INPUT_H_
