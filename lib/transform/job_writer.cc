#include "lib/transform/job_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "lib/cluster/hostfile.h"
#include "lib/graph/graph_io.h"
#include "lib/transform/plan_io.h"
#include "lib/transform/report.h"

namespace parallax {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kJobPlaceholder = "\x01job\x01";

// Removes `path` recursively; logs (does not fail) when that is impossible.
void RemoveQuietly(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) spdlog::warn("could not remove {}: {}", path, ec.message());
}

Status WriteAll(const std::string& path, std::string_view contents, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return InvalidArgumentError("{}: cannot create: {}", path, std::strerror(errno));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return InvalidArgumentError("{}: write failed: {}", path, std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    return InvalidArgumentError("{}: write failed: {}", path, std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

std::string RankGraphFile(int rank) { return fmt::format("rank-{}.pb", rank); }

namespace {

std::string WithoutTrailingSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

Status JobWriter::CheckTarget(const std::string& target, bool force) {
  const std::string dir = WithoutTrailingSlashes(target);
  if (dir.empty()) return InvalidArgumentError("-o: the output directory name is empty");
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(dir, ec);
  if (fs::exists(status)) {
    if (!fs::is_directory(status)) {
      return AlreadyExistsError("{}: exists and is not a directory; Parallax replaces only "
                                "directories (with --force)",
                                dir);
    }
    if (!force) {
      return AlreadyExistsError("{}: already exists; pass --force to replace it", dir);
    }
    // --force deletes what it replaces: only a job (it has plan.yaml) or an empty folder.
    const bool is_job = fs::is_regular_file(fs::path(dir) / kPlanFile, ec);
    if (!is_job && !fs::is_empty(dir, ec)) {
      return AlreadyExistsError("{}: exists and is not a Parallax job (it has no {}); --force "
                                "replaces only a job directory or an empty one",
                                dir, kPlanFile);
    }
  }
  const fs::path parent = fs::path(dir).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    return InvalidArgumentError("{}: the parent directory {} does not exist", dir, parent.string());
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<JobWriter>> JobWriter::Begin(std::string dir, bool force) {
  dir = WithoutTrailingSlashes(std::move(dir));
  PX_RETURN_IF_ERROR(CheckTarget(dir, force));
  std::string temp = fmt::format("{}.tmp.{}", dir, ::getpid());
  RemoveQuietly(temp);  // a leftover of a killed run with a reused pid
  if (::mkdir(temp.c_str(), 0755) != 0) {
    return InvalidArgumentError("{}: cannot create {}: {}", dir, temp, std::strerror(errno));
  }
  return std::unique_ptr<JobWriter>(new JobWriter(std::move(dir), std::move(temp), force));
}

JobWriter::~JobWriter() {
  if (!committed_) RemoveQuietly(temp_);
}

Status JobWriter::WriteFile(std::string_view name, std::string_view contents, bool executable) {
  if (committed_) return InternalError("{}: write of {} after commit", dir_, name);
  if (name.empty() || name.find('/') != std::string_view::npos) {
    return InternalError("{}: bad file name '{}'", dir_, name);
  }
  const std::string path = fmt::format("{}/{}", temp_, name);
  if (!fail_name_.empty() && name == fail_name_) {
    return InvalidArgumentError("{}/{}: write failed: {}", dir_, name, std::strerror(ENOSPC));
  }
  Status status = WriteAll(path, contents, executable ? 0755 : 0644);
  if (!status.ok()) {
    // Name the final path: the temporary directory is an implementation detail.
    return InvalidArgumentError("{}/{}: {}", dir_, name,
                                status.message().substr(status.message().find(": ") + 2));
  }
  return Status::Ok();
}

Status JobWriter::WriteRankGraph(int rank, const Graph& graph) {
  return WriteFile(RankGraphFile(rank), SerializeGraphDef(graph));
}

Status JobWriter::WriteSourceGraph(const Graph& graph) {
  return WriteFile(kSourceGraphFile, SerializeGraphDef(graph));
}

Status JobWriter::Commit() {
  if (committed_) return Status::Ok();
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(dir_, ec));
  if (exists && !force_) {
    return AlreadyExistsError("{}: already exists; pass --force to replace it", dir_);
  }
  std::string old;
  if (exists) {
    old = fmt::format("{}.old.{}", dir_, ::getpid());
    RemoveQuietly(old);
    if (::rename(dir_.c_str(), old.c_str()) != 0) {
      return InvalidArgumentError("{}: cannot move the old directory aside: {}", dir_,
                                  std::strerror(errno));
    }
  }
  if (::rename(temp_.c_str(), dir_.c_str()) != 0) {
    const int err = errno;
    if (!old.empty() && ::rename(old.c_str(), dir_.c_str()) != 0) {
      spdlog::error("{}: the old directory is left at {}", dir_, old);
    }
    return InvalidArgumentError("{}: cannot rename {} into place: {}", dir_, temp_,
                                std::strerror(err));
  }
  committed_ = true;
  if (!old.empty()) RemoveQuietly(old);
  return Status::Ok();
}

std::string LaunchScript(const Plan& plan, const MpirunOptions& options) {
  // What depends on where and by whom the script runs is decided then, not at transform
  // time: --allow-run-as-root for root, `-x` for the variables a rank reads that are then
  // set (NCCL_*, kRankEnvironment).
  MpirunOptions script = options;
  script.as_root = false;
  std::erase_if(script.forward_env,
                [](const std::string& name) { return name != "PATH" && name != "LD_LIBRARY_PATH"; });
  std::string rank_variables = "NCCL_[A-Za-z0-9_]*";
  for (std::string_view name : kRankEnvironment) rank_variables += fmt::format("|{}", name);
  const std::vector<std::string> argv = MpirunArgv(plan, kJobPlaceholder, script);
  // After mpirun's fixed words and the -x pairs of script.forward_env.
  const size_t run_time_at =
      static_cast<size_t>(std::find(argv.begin(), argv.end(), "--tag-output") - argv.begin()) + 1 +
      2 * script.forward_env.size();
  std::string line;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& word = argv[i];
    if (i == run_time_at) line += " $forward $root";  // unquoted: split into words
    if (!line.empty()) line += " ";
    const size_t at = word.find(kJobPlaceholder);
    if (at == std::string::npos) {
      line += ShellQuote(word);
    } else {
      // The job directory, resolved when the script runs; the rest of the word is
      // made of characters that need no quoting inside double quotes.
      line += "\"" + word.substr(0, at) + "$job" + word.substr(at + kJobPlaceholder.size()) + "\"";
    }
  }
  return fmt::format(
      "#!/bin/sh\n"
      "# Starts this job's {} ranks with OpenMPI; written by `parallax transform` from {}.\n"
      "# `parallax launch <this directory>` builds the same command. Arguments are passed to\n"
      "# `parallax run` (e.g. --steps 100). The job directory must be at the same path on\n"
      "# every host (a shared file system, or copied there).\n"
      "set -e\n"
      "job=$(cd \"$(dirname \"$0\")\" && pwd)\n"
      "forward=\"\"\n"
      "for name in $(env | grep -E '^({})=' | cut -d= -f1 | sort); do\n"
      "  forward=\"$forward -x $name\"\n"
      "done\n"
      "root=\"\"\n"
      "if [ \"$(id -u)\" -eq 0 ]; then root=\"--allow-run-as-root\"; fi\n"
      "exec {} \"$@\"\n",
      plan.world_size(), CommentText(plan.source_graph), rank_variables, line);
}

Status JobWriter::WriteJobFiles(const Plan& plan, const MpirunOptions& launch) {
  PX_RETURN_IF_ERROR(WriteFile(kPlanFile, PlanToYaml(plan)));
  PX_RETURN_IF_ERROR(WriteFile(kReportFile, RenderReport(plan, dir_)));
  PX_RETURN_IF_ERROR(WriteFile(kHostfileFile, FormatHostfile(PlanHostfile(plan))));
  return WriteFile(kLaunchFile, LaunchScript(plan, launch), /*executable=*/true);
}

Status WriteJob(const std::string& dir, bool force, const Plan& plan,
                const std::vector<Graph>& graphs, const MpirunOptions& launch) {
  PX_ASSIGN_OR_RETURN(std::unique_ptr<JobWriter> writer, JobWriter::Begin(dir, force));
  for (size_t r = 0; r < graphs.size(); ++r) {
    PX_RETURN_IF_ERROR(writer->WriteRankGraph(static_cast<int>(r), graphs[r]));
  }
  PX_RETURN_IF_ERROR(writer->WriteJobFiles(plan, launch));
  return writer->Commit();
}

}  // namespace parallax
