#include "lib/cluster/text_util.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

namespace parallax::cluster_internal {

std::optional<int64_t> ParseInteger(std::string_view word) {
  if (word.empty()) return std::nullopt;
  const size_t digits_from = word[0] == '-' ? 1 : 0;
  if (digits_from == word.size()) return std::nullopt;
  for (size_t i = digits_from; i < word.size(); ++i) {
    if (word[i] < '0' || word[i] > '9') return std::nullopt;
  }
  int64_t value = 0;
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (error != std::errc() || end != word.data() + word.size()) return std::nullopt;
  return value;
}

std::optional<double> ParseNumber(std::string_view word) {
  if (word.empty()) return std::nullopt;
  double value = 0;
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (error != std::errc() || end != word.data() + word.size()) return std::nullopt;
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Levenshtein distance, case-insensitive; words here are a few characters long.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const size_t substitute = diagonal + (Lower(a[i - 1]) == Lower(b[j - 1]) ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::optional<std::string_view> ClosestWord(std::string_view word,
                                            const std::vector<std::string_view>& choices) {
  const size_t limit = word.size() <= 4 ? 1 : 2;
  std::optional<std::string_view> best;
  size_t best_distance = limit + 1;
  for (std::string_view choice : choices) {
    const size_t distance = EditDistance(word, choice);
    if (distance < best_distance) {
      best = choice;
      best_distance = distance;
    }
  }
  return best;
}

std::string Quoted(std::string_view word) {
  constexpr size_t kMaxShown = 40;
  std::string text = "'";
  for (size_t i = 0; i < word.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(word[i]);
    text += (c < 0x20 || c == 0x7f) ? '?' : word[i];
  }
  if (word.size() > kMaxShown) text += "...";
  return text + "'";
}

std::vector<std::string_view> SplitCommas(std::string_view text) {
  std::vector<std::string_view> items;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(',', start);
    if (end == std::string_view::npos) {
      items.push_back(text.substr(start));
      return items;
    }
    items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace parallax::cluster_internal
