#include "lib/graph/names.h"

#include <charconv>

#include <fmt/format.h>

namespace parallax {

std::optional<ParsedInput> ParseInput(std::string_view input) {
  ParsedInput parsed;
  if (!input.empty() && input.front() == '^') {
    parsed.node = input.substr(1);
    parsed.port = kControlPort;
    if (!IsValidNodeName(parsed.node)) return std::nullopt;
    return parsed;
  }
  const size_t colon = input.rfind(':');
  if (colon == std::string_view::npos) {
    parsed.node = input;
  } else {
    parsed.node = input.substr(0, colon);
    std::string_view port = input.substr(colon + 1);
    if (port.empty() || port.size() > 9) return std::nullopt;
    auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), parsed.port);
    if (error != std::errc() || end != port.data() + port.size() || parsed.port < 0) {
      return std::nullopt;
    }
  }
  if (!IsValidNodeName(parsed.node)) return std::nullopt;
  return parsed;
}

std::string FormatInput(std::string_view node, int port) {
  if (port == kControlPort) return fmt::format("^{}", node);
  if (port == 0) return std::string(node);
  return fmt::format("{}:{}", node, port);
}

namespace {
bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
}  // namespace

bool IsValidNodeName(std::string_view name) {
  if (name.empty()) return false;
  if (!IsAlnum(name[0]) && name[0] != '.' && name[0] != '_') return false;
  for (char c : name.substr(1)) {
    if (!IsAlnum(c) && c != '_' && c != '.' && c != '-' && c != '/' && c != '>') return false;
  }
  return true;
}

bool IsValidOpName(std::string_view op) {
  if (op.empty()) return false;
  if (!IsAlnum(op[0]) && op[0] != '_') return false;
  if (op[0] >= '0' && op[0] <= '9') return false;
  for (char c : op) {
    if (!IsAlnum(c) && c != '_' && c != '>') return false;
  }
  return true;
}

std::string QuoteForMessage(std::string_view text, size_t max_chars) {
  std::string out;
  for (char c : text) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace parallax
