#include "lib/runtime/pipeline/queue.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "lib/ops/dtypes.h"
#include "lib/runtime/executor.h"

namespace parallax::pipeline {
namespace {

bool IsEnqueue(std::string_view op) {
  return op == "QueueEnqueueV2" || op == "QueueEnqueueManyV2" || op == "QueueEnqueue" ||
         op == "QueueEnqueueMany";
}

}  // namespace

std::string ResourceNameOf(const Node& node) {
  std::optional<tensorflow::AttrValue> shared = node.FindAttr("shared_name");
  if (shared && !shared->s().empty()) return shared->s();
  return std::string(node.name());
}

std::vector<std::string> QueueRunners(const Graph& graph, const std::string& name, bool staging) {
  std::vector<std::string> runners;
  for (NodeId id : graph.NodeIds()) {
    const Node& node = graph.node(id);
    const bool stages = staging && node.op() == "Stage" && ResourceNameOf(node) == name;
    const bool enqueues = !staging && IsEnqueue(node.op()) && node.num_data_inputs() > 0 &&
                          ResourceNameOf(graph.node(node.input(0).node)) == name;
    if (stages || enqueues) runners.push_back(std::string(node.name()));
  }
  return runners;
}

QueueResource::QueueResource(std::string name, std::string node, Options options)
    : name_(std::move(name)),
      node_(std::move(node)),
      options_(std::move(options)),
      rng_(Mix64(options_.seed)) {}

std::string QueueResource::TypeName() const {
  switch (options_.kind) {
    case Kind::kFifo: return "FIFOQueue";
    case Kind::kRandomShuffle: return "RandomShuffleQueue";
    case Kind::kPaddingFifo: return "PaddingFIFOQueue";
    case Kind::kStagingArea: return "StagingArea";
  }
  return "Queue";
}

Status QueueResource::CheckElement(const Element& element, std::string_view what) const {
  if (element.size() != options_.types.size()) {
    return InvalidArgumentError("{} '{}': {} has {} components, the queue takes {}", TypeName(),
                                name_, what, element.size(), options_.types.size());
  }
  for (size_t k = 0; k < element.size(); ++k) {
    if (element[k].dtype() != options_.types[k]) {
      return InvalidArgumentError("{} '{}': {} component {} is {}, the queue takes {}", TypeName(),
                                  name_, what, k, DataTypeShortName(element[k].dtype()),
                                  DataTypeShortName(options_.types[k]));
    }
    if (k < options_.shapes.size()) {
      const std::vector<int64_t>& want = options_.shapes[k];
      bool fits = static_cast<int>(want.size()) == element[k].rank();
      for (size_t d = 0; fits && d < want.size(); ++d) {
        fits = want[d] < 0 || want[d] == element[k].dim(static_cast<int>(d));
      }
      if (!fits) {
        return InvalidArgumentError("{} '{}': {} component {} has shape {}, the queue's is {}",
                                    TypeName(), name_, what, k, element[k].shape().DebugString(),
                                    TensorShape(want).DebugString());
      }
    }
  }
  return Status::Ok();
}

Status QueueResource::Enqueue(Element element) {
  PX_RETURN_IF_ERROR(CheckElement(element, "the element enqueued"));
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return FailedPreconditionError("{} '{}' is closed", TypeName(), name_);
  elements_.push_back(std::move(element));
  return Status::Ok();
}

Status QueueResource::EnqueueMany(const Element& batch) {
  if (batch.empty()) return Status::Ok();
  for (const Tensor& t : batch) {
    if (t.rank() == 0 || t.dim(0) != batch[0].dim(0)) {
      return InvalidArgumentError("{} '{}': EnqueueMany's components must share dimension 0",
                                  TypeName(), name_);
    }
  }
  Element row;
  for (int64_t i = 0; i < batch[0].dim(0); ++i) {
    row.clear();
    for (const Tensor& t : batch) {
      std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
      Tensor r(t.dtype(), TensorShape(dims));
      const int64_t n = r.num_elements();
      if (t.dtype() == tensorflow::DT_STRING) {
        std::copy_n(t.data<std::string>() + i * n, n, r.data<std::string>());
      } else {
        std::memcpy(r.raw_data(), static_cast<const char*>(t.raw_data()) + i * r.bytes(),
                    r.bytes());
      }
      row.push_back(std::move(r));
    }
    PX_RETURN_IF_ERROR(Enqueue(row));
  }
  return Status::Ok();
}

void QueueResource::FindRunners(Session& session) {
  runners_ = QueueRunners(session.root_graph(), name_, options_.kind == Kind::kStagingArea);
  runner_done_.assign(runners_.size(), false);
  runners_found_ = true;
}

StatusOr<bool> QueueResource::RunOneRunner(Session& session) {
  for (size_t tried = 0; tried < runners_.size(); ++tried) {
    const size_t k = next_runner_;
    next_runner_ = (next_runner_ + 1) % runners_.size();
    if (runner_done_[k]) continue;
    StatusOr<std::vector<Tensor>> ran = session.RunRoot({.targets = {runners_[k]}});
    if (ran.ok()) return true;
    if (ran.status().code() == StatusCode::kOutOfRange) {
      runner_done_[k] = true;  // this runner's input ran out; the others may go on
      continue;
    }
    return ran.status().WithPrefix(
        fmt::format("filling {} '{}' by running '{}'", TypeName(), name_, runners_[k]));
  }
  return false;
}

StatusOr<Element> QueueResource::Dequeue(int64_t n, bool up_to, Session& session) {
  const int64_t want = std::max<int64_t>(n, 1);
  const int64_t keep = options_.kind == Kind::kRandomShuffle ? options_.min_after_dequeue : 0;
  // Fill: runners run without the lock (they may enqueue here, or dequeue elsewhere).
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (static_cast<int64_t>(elements_.size()) >= want + keep || closed_) break;
      if (!runners_found_) FindRunners(session);
      if (runners_.empty()) {
        if (!elements_.empty() && static_cast<int64_t>(elements_.size()) >= want) break;
        return FailedPreconditionError(
            "{} '{}' holds {} of the {} elements asked for and no enqueue op of the graph "
            "fills it; feed the dequeue's outputs (--feed) instead",
            TypeName(), name_, elements_.size(), want);
      }
    }
    PX_ASSIGN_OR_RETURN(bool ran, RunOneRunner(session));
    if (!ran) {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;  // every runner is done: QueueRunner closes the queue
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t available = static_cast<int64_t>(elements_.size());
  if (available == 0 || (available < want && !up_to)) {
    return OutOfRangeError("{} '{}' is closed and has {} elements ({} requested)", TypeName(),
                           name_, available, want);
  }
  const int64_t take = std::min(want, available);
  std::vector<Element> taken;
  for (int64_t i = 0; i < take; ++i) {
    size_t pick = 0;
    if (options_.kind == Kind::kRandomShuffle) {
      pick = static_cast<size_t>(rng_.Below(elements_.size()));
      std::swap(elements_[pick], elements_.back());
      taken.push_back(std::move(elements_.back()));
      elements_.pop_back();
    } else {
      taken.push_back(std::move(elements_.front()));
      elements_.pop_front();
    }
  }
  if (n < 0) return std::move(taken[0]);
  if (options_.kind == Kind::kPaddingFifo) {
    Element zeros;
    for (const Tensor& t : taken[0]) {
      Tensor zero(t.dtype(), TensorShape());
      if (t.dtype() == tensorflow::DT_STRING) {
        *zero.data<std::string>() = "";
      } else {
        std::memset(zero.raw_data(), 0, zero.bytes());
      }
      zeros.push_back(std::move(zero));
    }
    return StackElements(taken, name_, options_.shapes.empty() ? nullptr : &options_.shapes,
                         &zeros);
  }
  return StackElements(taken, name_);
}

void QueueResource::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
}

bool QueueResource::closed() {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

int64_t QueueResource::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(elements_.size());
}

}  // namespace parallax::pipeline
