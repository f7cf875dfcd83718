#include "lib/runtime/session.h"

#include <algorithm>
#include <filesystem>

#include "lib/runtime/executor.h"
#include "lib/runtime/function.h"

namespace parallax {

Tensor* VariableStore::Slot(const std::string& name) {
  std::unique_ptr<Tensor>& slot = slots_[name];
  if (!slot) slot = std::make_unique<Tensor>();
  return slot.get();
}

Tensor* VariableStore::Find(const std::string& name) {
  auto it = slots_.find(name);
  return it == slots_.end() ? nullptr : it->second.get();
}

Session::Session(const Graph& root_graph, Device& device, InputOptions input)
    : root_graph_(root_graph), device_(device), input_(std::move(input)), random_(input_.seed) {}

Session::~Session() = default;

std::string Session::ResolveInputPath(const std::string& name) const {
  std::error_code error;
  if (name.empty() || std::filesystem::exists(name, error)) return name;
  for (const auto& [from, to] : input_.input_map) {
    if (name.starts_with(from)) return to + name.substr(from.size());
  }
  if (!input_.input_dir.empty()) {
    return (std::filesystem::path(input_.input_dir) / std::filesystem::path(name).filename())
        .string();
  }
  return name;
}

StatusOr<FunctionRunner*> Session::Function(const tensorflow::NameAttrList& func) {
  std::lock_guard<std::mutex> lock(functions_mu_);
  if (!library_) {
    PX_ASSIGN_OR_RETURN(library_, FunctionLibrary::FromGraph(root_graph_));
  }
  const std::string key = FunctionKey(func);
  auto it = functions_.find(key);
  if (it == functions_.end()) {
    PX_ASSIGN_OR_RETURN(FunctionBody body, library_->Instantiate(func));
    it = functions_.emplace(key, std::make_unique<FunctionRunner>(std::move(body), device_, *this))
             .first;
  }
  return it->second.get();
}

StatusOr<std::vector<Tensor>> Session::RunRoot(const RunRequest& request) {
  if (root_ == nullptr) return InternalError("the session has no root executor");
  if (step_feeds_ == nullptr || step_feeds_->empty()) return root_->Run(request);
  RunRequest nested = request;
  for (const auto& feed : *step_feeds_) {
    const bool own = std::any_of(request.feeds.begin(), request.feeds.end(),
                                 [&](const auto& f) { return f.first == feed.first; });
    if (!own) nested.feeds.push_back(feed);
  }
  return root_->Run(nested);
}

}  // namespace parallax
