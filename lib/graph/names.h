// Node names and input strings: the one place where "node", "node:port" and "^node"
// are parsed and printed.
//
// Terms: a *data input* names an output of another node ("x" is port 0, "x:2" port 2);
// a *control input* ("^x") only orders execution. In a NodeDef all data inputs come
// before all control inputs. A valid node name matches TensorFlow's rule
// [A-Za-z0-9.][A-Za-z0-9_.\-/>]*, extended with a leading '_' for the internal nodes
// (_Send, _Recv, _SOURCE) that partitioned graphs contain.
#ifndef PARALLAX_LIB_GRAPH_NAMES_H_
#define PARALLAX_LIB_GRAPH_NAMES_H_

#include <optional>
#include <string>
#include <string_view>

namespace parallax {

inline constexpr int kControlPort = -1;

struct ParsedInput {
  std::string_view node;
  int port = 0;  // kControlPort for "^node"
  bool is_control() const { return port == kControlPort; }
};

// Parses an input string; nullopt when it is malformed (empty name, bad port).
std::optional<ParsedInput> ParseInput(std::string_view input);

// "x" for port 0, "x:2", "^x" for kControlPort.
std::string FormatInput(std::string_view node, int port);

bool IsValidNodeName(std::string_view name);

// Op names: a letter or '_' first, then letters, digits, '_' and '>'.
bool IsValidOpName(std::string_view op);

// `text` with quotes, backslashes and non-printable bytes escaped, cut at `max_chars`;
// for quoting names read from untrusted files in one-line error messages.
std::string QuoteForMessage(std::string_view text, size_t max_chars = 80);

}  // namespace parallax

#endif  // PARALLAX_LIB_GRAPH_NAMES_H_
