// tf.data iterators: resources that hold a dataset's iterator (pipeline/dataset.h).
//
// IteratorV2 / Iterator / AnonymousIterator create the resource; MakeIterator(dataset,
// iterator) starts it over the dataset — sharded for this rank of a job (the session's
// input options); IteratorGetNext yields the next element, or OutOfRange ("end of
// sequence") at the end; OneShotIterator makes its dataset by calling its
// dataset_factory function on first use; IteratorToStringHandle /
// IteratorFromStringHandle(V2) turn a handle into its name and back.
#include <mutex>

#include <fmt/format.h>

#include "lib/ops/dtypes.h"
#include "lib/runtime/function.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/pipeline/dataset.h"

namespace parallax {
namespace {

using namespace pipeline;  // NOLINT: the kernels of the pipeline module

constexpr DeviceType kCpu = DeviceType::kCpu;

class IteratorResource : public Resource {
 public:
  IteratorResource(std::string name, std::vector<DataType> types)
      : name_(std::move(name)), types_(std::move(types)) {}
  std::string TypeName() const override { return "Iterator"; }

  // Starts over `dataset`, sharded as the session's input options say.
  Status Reset(std::shared_ptr<const Dataset> dataset, Session& session) {
    const InputOptions& input = session.input();
    if (input.shard_count > 1) {
      PX_ASSIGN_OR_RETURN(dataset, dataset->Sharded(input.shard_index, input.shard_count));
    }
    PX_ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> iterator, dataset->MakeIterator(session));
    std::lock_guard<std::mutex> lock(mu_);
    dataset_ = std::move(dataset);
    iterator_ = std::move(iterator);
    return Status::Ok();
  }

  bool initialised() {
    std::lock_guard<std::mutex> lock(mu_);
    return iterator_ != nullptr;
  }

  Status GetNext(Element* element) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!iterator_) {
      return FailedPreconditionError("iterator '{}' is not initialised: run its initializer "
                                     "(MakeIterator) first",
                                     name_);
    }
    bool end = false;
    PX_RETURN_IF_ERROR(iterator_->GetNext(element, &end));
    if (end) return OutOfRangeError("end of sequence (iterator '{}')", name_);
    if (!types_.empty()) {
      if (element->size() != types_.size()) {
        return InvalidArgumentError("iterator '{}': {} yields {} components, the iterator "
                                    "declares {}",
                                    name_, dataset_->name(), element->size(), types_.size());
      }
      for (size_t k = 0; k < types_.size(); ++k) {
        if ((*element)[k].dtype() != types_[k]) {
          return InvalidArgumentError("iterator '{}': component {} is {}, the iterator declares "
                                      "{}",
                                      name_, k, DataTypeShortName((*element)[k].dtype()),
                                      DataTypeShortName(types_[k]));
        }
      }
    }
    return Status::Ok();
  }

 private:
  std::string name_;
  std::vector<DataType> types_;
  std::mutex mu_;
  std::shared_ptr<const Dataset> dataset_;
  std::unique_ptr<DatasetIterator> iterator_;
};

// The resource name of an iterator op: its shared_name, else its node name.
std::string ResourceName(const KernelInit& init) {
  std::string shared;
  if (init.FindAttr("shared_name") != nullptr && init.GetAttr("shared_name", &shared).ok() &&
      !shared.empty()) {
    return shared;
  }
  return std::string(init.node().name());
}

StatusOr<std::shared_ptr<IteratorResource>> IteratorAt(KernelContext& context, int index) {
  const Tensor& handle = context.input(index);
  if ((handle.dtype() != tensorflow::DT_RESOURCE && handle.dtype() != tensorflow::DT_STRING) ||
      handle.num_elements() != 1) {
    return InvalidArgumentError("input {} is not an iterator handle", index);
  }
  return context.resources().Lookup<IteratorResource>(*static_cast<const std::string*>(
      handle.raw_data()));
}

class IteratorOp : public OpKernel {
 public:
  IteratorOp(const KernelInit& init, Status* status) : name_(ResourceName(init)) {
    *status = init.GetAttrOr("output_types", &types_, {});
  }
  Status Compute(KernelContext& context) const override {
    std::vector<DataType> types = types_;
    std::string name = name_;
    PX_RETURN_IF_ERROR(context.resources()
                           .LookupOrCreate<IteratorResource>(
                               name,
                               [&]() -> StatusOr<std::shared_ptr<IteratorResource>> {
                                 return std::make_shared<IteratorResource>(name, types);
                               })
                           .status());
    context.set_output(0, Tensor::ResourceHandle(name_));
    if (context.num_outputs() > 1) context.set_output(1, Tensor::VariantScalar(nullptr));
    return Status::Ok();
  }

 private:
  std::string name_;
  std::vector<DataType> types_;
};
PX_REGISTER_KERNEL(IteratorOp, "IteratorV2", kCpu);
PX_REGISTER_KERNEL(IteratorOp, "Iterator", kCpu);
PX_REGISTER_KERNEL(IteratorOp, "AnonymousIterator", kCpu);
PX_REGISTER_KERNEL(IteratorOp, "AnonymousIteratorV2", kCpu);

class MakeIteratorOp : public OpKernel {
 public:
  MakeIteratorOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset,
                        DatasetFromTensor(context.input(0), "input 0 (dataset)"));
    PX_ASSIGN_OR_RETURN(std::shared_ptr<IteratorResource> iterator, IteratorAt(context, 1));
    return iterator->Reset(std::move(dataset), context.session());
  }
};
PX_REGISTER_KERNEL(MakeIteratorOp, "MakeIterator", kCpu);

class DeleteIteratorOp : public OpKernel {
 public:
  DeleteIteratorOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    context.resources().Erase(context.input(0).resource_name());
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(DeleteIteratorOp, "DeleteIterator", kCpu);

class IteratorGetNextOp : public OpKernel {
 public:
  IteratorGetNextOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<IteratorResource> iterator, IteratorAt(context, 0));
    Element element;
    PX_RETURN_IF_ERROR(iterator->GetNext(&element));
    if (static_cast<int>(element.size()) != context.num_outputs()) {
      return InvalidArgumentError("the iterator yields {} components, the op has {} outputs",
                                  element.size(), context.num_outputs());
    }
    for (size_t k = 0; k < element.size(); ++k) {
      context.set_output(static_cast<int>(k), std::move(element[k]));
    }
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(IteratorGetNextOp, "IteratorGetNext", kCpu);
PX_REGISTER_KERNEL(IteratorGetNextOp, "IteratorGetNextSync", kCpu);

// Makes its dataset once, by calling dataset_factory (no args, returns one dataset).
class OneShotIteratorOp : public OpKernel {
 public:
  OneShotIteratorOp(const KernelInit& init, Status* status) : name_(ResourceName(init)) {
    const tensorflow::NameAttrList* factory = nullptr;
    *status = init.GetAttr("dataset_factory", &factory);
    if (status->ok()) factory_ = *factory;
    if (status->ok()) *status = init.GetAttrOr("output_types", &types_, {});
  }
  Status Compute(KernelContext& context) const override {
    std::vector<DataType> types = types_;
    std::string name = name_;
    PX_ASSIGN_OR_RETURN(std::shared_ptr<IteratorResource> iterator,
                        context.resources().LookupOrCreate<IteratorResource>(
                            name, [&]() -> StatusOr<std::shared_ptr<IteratorResource>> {
                              return std::make_shared<IteratorResource>(name, types);
                            }));
    if (!iterator->initialised()) {
      PX_ASSIGN_OR_RETURN(FunctionRunner * factory, context.session().Function(factory_));
      PX_ASSIGN_OR_RETURN(std::vector<Tensor> made, factory->Run({}));
      if (made.size() != 1) {
        return InvalidArgumentError("dataset_factory '{}' returns {} values, not one dataset",
                                    factory_.name(), made.size());
      }
      PX_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset,
                          DatasetFromTensor(made[0], "dataset_factory's result"));
      PX_RETURN_IF_ERROR(iterator->Reset(std::move(dataset), context.session()));
    }
    context.set_output(0, Tensor::ResourceHandle(name_));
    return Status::Ok();
  }

 private:
  std::string name_;
  tensorflow::NameAttrList factory_;
  std::vector<DataType> types_;
};
PX_REGISTER_KERNEL(OneShotIteratorOp, "OneShotIterator", kCpu);

class IteratorToStringHandleOp : public OpKernel {
 public:
  IteratorToStringHandleOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    Tensor out(tensorflow::DT_STRING, TensorShape());
    *out.data<std::string>() = context.input(0).resource_name();
    context.set_output(0, std::move(out));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(IteratorToStringHandleOp, "IteratorToStringHandle", kCpu);

class IteratorFromStringHandleOp : public OpKernel {
 public:
  IteratorFromStringHandleOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    const Tensor& text = context.input(0);
    if (text.dtype() != tensorflow::DT_STRING || text.num_elements() != 1) {
      return InvalidArgumentError("string_handle must be a string scalar");
    }
    context.set_output(0, Tensor::ResourceHandle(text.data<std::string>()[0]));
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(IteratorFromStringHandleOp, "IteratorFromStringHandle", kCpu);
PX_REGISTER_KERNEL(IteratorFromStringHandleOp, "IteratorFromStringHandleV2", kCpu);

}  // namespace
}  // namespace parallax
