#include "lib/launch/restarts.h"

#include <algorithm>

namespace parallax {

std::optional<std::string> CheckpointDirOfRunArgs(const std::vector<std::string>& run_args) {
  constexpr std::string_view kFlag = "--checkpoint-dir";
  std::optional<std::string> dir;
  for (size_t i = 0; i < run_args.size(); ++i) {
    const std::string& arg = run_args[i];
    if (arg == kFlag && i + 1 < run_args.size()) {
      dir = run_args[++i];
    } else if (arg.starts_with(kFlag) && arg.size() > kFlag.size() && arg[kFlag.size()] == '=') {
      dir = arg.substr(kFlag.size() + 1);
    }
  }
  return dir;
}

std::vector<std::string> RelaunchRunArgs(const std::vector<std::string>& run_args) {
  std::vector<std::string> args = run_args;
  std::erase_if(args, [](const std::string& arg) {
    return arg == "--resume" || arg.starts_with("--resume=");
  });
  args.push_back("--resume=if-exists");
  return args;
}

}  // namespace parallax
