// Small text helpers shared by the cluster parsers (internal to lib/cluster): strict
// number parsing, which accepts exactly the whole word, and spelling suggestions for
// unknown keys ("did you mean 'bandwidth_gbps'?").
#ifndef PARALLAX_LIB_CLUSTER_TEXT_UTIL_H_
#define PARALLAX_LIB_CLUSTER_TEXT_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parallax::cluster_internal {

// A whole word of decimal digits with an optional leading '-'; nullopt for anything
// else ("4.0", "0x10", "+3", "4 GPUs") or a value that does not fit in 64 bits.
std::optional<int64_t> ParseInteger(std::string_view word);

// A whole finite decimal number ("100", "2.5", "1e3"); nullopt for anything else,
// including "inf" and "nan".
std::optional<double> ParseNumber(std::string_view word);

// The choice closest to `word` when it is a plausible misspelling (edit distance at most
// 1 for words up to 4 characters, else at most 2, ignoring case); nullopt otherwise.
std::optional<std::string_view> ClosestWord(std::string_view word,
                                            const std::vector<std::string_view>& choices);

// The items of a comma-separated list, empty ones included: "a,,b" -> {"a", "", "b"},
// "" -> {""}. The views point into `text`.
std::vector<std::string_view> SplitCommas(std::string_view text);

// 'word' for a message: at most 40 characters, control characters shown as '?', so that
// a binary file read by mistake still gives a one-line error.
std::string Quoted(std::string_view word);

}  // namespace parallax::cluster_internal

#endif  // PARALLAX_LIB_CLUSTER_TEXT_UTIL_H_
