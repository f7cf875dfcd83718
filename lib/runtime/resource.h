// Resources: the stateful objects of a graph's run other than variables — queues,
// readers, iterators, staging areas, tensor arrays, stacks, tables — kept by name for as
// long as the run's Session lives (TensorFlow's ResourceMgr).
//
// Terms: a resource op (FIFOQueueV2, TFRecordReaderV2, IteratorV2, ...) creates its
// resource on first run under its `shared_name` attr, else its node name, and outputs a
// handle naming it: a DT_RESOURCE scalar (V2 ops) or a DT_STRING scalar (the V1 ops'
// Ref(string) handles). Ops that use a resource look it up by that name.
//
// Per-step resources (TensorArrays, stacks: TensorFlow's per-step container) are made
// anew each time their op runs, under a name unique in the store, and erased when the
// step that made them ends (StepResources, held by Executor::Run).
//
// Thread-safe: kernels of input pipelines may run on other threads.
#ifndef PARALLAX_LIB_RUNTIME_RESOURCE_H_
#define PARALLAX_LIB_RUNTIME_RESOURCE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace parallax {

class Resource {
 public:
  virtual ~Resource() = default;
  virtual std::string TypeName() const = 0;  // "FIFOQueue", for messages
};

class ResourceStore {
 public:
  // The resource named `name`, made by `make` when there is none yet. Errors: `make`'s,
  // or a resource of another type under that name.
  template <typename T>
  StatusOr<std::shared_ptr<T>> LookupOrCreate(
      const std::string& name, const std::function<StatusOr<std::shared_ptr<T>>()>& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = resources_.find(name);
    if (it == resources_.end()) {
      PX_ASSIGN_OR_RETURN(std::shared_ptr<T> made, make());
      resources_.emplace(name, made);
      return made;
    }
    return Cast<T>(name, it->second);
  }

  // The resource named `name`. Errors: none (NotFound naming it), another type.
  template <typename T>
  StatusOr<std::shared_ptr<T>> Lookup(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = resources_.find(name);
    if (it == resources_.end()) {
      return NotFoundError("resource '{}' does not exist (its creating op has not run)", name);
    }
    return Cast<T>(name, it->second);
  }

  // Replaces (or adds) the resource named `name`.
  void Put(const std::string& name, std::shared_ptr<Resource> resource) {
    std::lock_guard<std::mutex> lock(mu_);
    resources_[name] = std::move(resource);
  }

  void Erase(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    resources_.erase(name);
  }

  // A number not returned before by this store: makes per-step resource names unique.
  uint64_t NextUniqueId() { return next_unique_id_.fetch_add(1, std::memory_order_relaxed); }

 private:
  template <typename T>
  static StatusOr<std::shared_ptr<T>> Cast(const std::string& name,
                                           const std::shared_ptr<Resource>& resource) {
    std::shared_ptr<T> typed = std::dynamic_pointer_cast<T>(resource);
    if (!typed) {
      return InvalidArgumentError("resource '{}' is a {}, not what this op uses", name,
                                  resource->TypeName());
    }
    return typed;
  }

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Resource>> resources_;
  std::atomic<uint64_t> next_unique_id_{0};
};

// The resources one step made; erased from their store when the step ends.
class StepResources {
 public:
  explicit StepResources(ResourceStore& store) : store_(store) {}
  ~StepResources() {
    for (const std::string& name : names_) store_.Erase(name);
  }
  StepResources(const StepResources&) = delete;
  StepResources& operator=(const StepResources&) = delete;

  // Adds `resource` under a new name, `base` + "/_" + a unique number, and returns it.
  std::string Add(const std::string& base, std::shared_ptr<Resource> resource) {
    std::string name = base + "/_" + std::to_string(store_.NextUniqueId());
    store_.Put(name, std::move(resource));
    std::lock_guard<std::mutex> lock(mu_);
    names_.push_back(name);
    return name;
  }

 private:
  ResourceStore& store_;
  std::mutex mu_;
  std::vector<std::string> names_;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_RESOURCE_H_
