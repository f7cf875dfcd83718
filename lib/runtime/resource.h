// Resources: the stateful objects of a graph's run other than variables — queues,
// readers, iterators, staging areas, tensor arrays, stacks, tables — kept by name for as
// long as the run's Session lives (TensorFlow's ResourceMgr).
//
// Terms: a resource op (FIFOQueueV2, TFRecordReaderV2, IteratorV2, ...) creates its
// resource on first run under its `shared_name` attr, else its node name, and outputs a
// handle naming it: a DT_RESOURCE scalar (V2 ops) or a DT_STRING scalar (the V1 ops'
// Ref(string) handles). Ops that use a resource look it up by that name.
//
// Thread-safe: kernels of input pipelines may run on other threads.
#ifndef PARALLAX_LIB_RUNTIME_RESOURCE_H_
#define PARALLAX_LIB_RUNTIME_RESOURCE_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

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
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_RESOURCE_H_
