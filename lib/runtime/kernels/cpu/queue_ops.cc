// Queue ops of TF1 input pipelines over pipeline/queue.h: the queues (V1 ops output a
// Ref(string) handle, V2 ops a resource handle; both name the queue), enqueue, dequeue
// (one, many, up to), close, size, and tf.contrib.staging's Stage/Unstage.
#include <fmt/format.h>

#include "lib/runtime/kernel.h"
#include "lib/runtime/pipeline/queue.h"

namespace parallax {
namespace {

using namespace pipeline;  // NOLINT: the kernels of the pipeline module

constexpr DeviceType kCpu = DeviceType::kCpu;

std::string ResourceName(const KernelInit& init) {
  std::string shared;
  if (init.FindAttr("shared_name") != nullptr && init.GetAttr("shared_name", &shared).ok() &&
      !shared.empty()) {
    return shared;
  }
  return std::string(init.node().name());
}

// The name held by a queue handle input: a resource handle, or a V1 string handle
// ([container, name]).
StatusOr<std::string> HandleName(const KernelContext& context, int index) {
  const Tensor& t = context.input(index);
  if (t.dtype() == tensorflow::DT_RESOURCE && t.num_elements() == 1) return t.resource_name();
  if (t.dtype() == tensorflow::DT_STRING && t.num_elements() == 2) {
    return t.data<std::string>()[1];
  }
  return InvalidArgumentError("input {} is not a queue handle", index);
}

StatusOr<std::shared_ptr<QueueResource>> QueueAt(KernelContext& context, int index) {
  PX_ASSIGN_OR_RETURN(std::string name, HandleName(context, index));
  return context.resources().Lookup<QueueResource>(name);
}

Tensor HandleFor(const std::string& name, bool v2) {
  if (v2) return Tensor::ResourceHandle(name);
  Tensor t(tensorflow::DT_STRING, TensorShape({2}));  // TF's V1 handle: [container, name]
  t.data<std::string>()[0] = "";
  t.data<std::string>()[1] = name;
  return t;
}

class QueueOp : public OpKernel {
 public:
  QueueOp(const KernelInit& init, Status* status)
      : name_(ResourceName(init)), node_(init.node().name()) {
    const std::string_view op = init.node().op();
    v2_ = op.ends_with("V2");
    options_.kind = op.starts_with("RandomShuffle") ? QueueResource::Kind::kRandomShuffle
                    : op.starts_with("Padding")     ? QueueResource::Kind::kPaddingFifo
                                                    : QueueResource::Kind::kFifo;
    *status = init.GetAttr("component_types", &options_.types);
    if (!status->ok()) return;
    std::vector<const tensorflow::TensorShapeProto*> shapes;
    if (init.FindAttr("shapes") != nullptr) *status = init.GetAttr("shapes", &shapes);
    for (const tensorflow::TensorShapeProto* shape : shapes) {
      std::vector<int64_t> dims;
      for (const auto& d : shape->dim()) dims.push_back(d.size());
      options_.shapes.push_back(std::move(dims));
    }
    if (!options_.shapes.empty() && options_.shapes.size() != options_.types.size()) {
      *status = InvalidArgumentError("shapes has {} entries, component_types {}",
                                     options_.shapes.size(), options_.types.size());
      return;
    }
    if (options_.kind == QueueResource::Kind::kRandomShuffle) {
      *status = init.GetAttrOr("min_after_dequeue", &options_.min_after_dequeue, int64_t{0});
      if (status->ok()) *status = init.GetAttrOr("seed", &seed_, int64_t{0});
      if (status->ok()) *status = init.GetAttrOr("seed2", &seed2_, int64_t{0});
    }
  }

  Status Compute(KernelContext& context) const override {
    QueueResource::Options options = options_;
    options.seed = DatasetSeeds(seed_, seed2_, context.session(), node_).first;
    PX_RETURN_IF_ERROR(context.resources()
                           .LookupOrCreate<QueueResource>(
                               name_,
                               [&]() -> StatusOr<std::shared_ptr<QueueResource>> {
                                 return std::make_shared<QueueResource>(name_, node_, options);
                               })
                           .status());
    context.set_output(0, HandleFor(name_, v2_));
    return Status::Ok();
  }

 private:
  std::string name_, node_;
  bool v2_ = true;
  QueueResource::Options options_;
  int64_t seed_ = 0, seed2_ = 0;
};
PX_REGISTER_KERNEL(QueueOp, "FIFOQueueV2", kCpu);
PX_REGISTER_KERNEL(QueueOp, "FIFOQueue", kCpu);
PX_REGISTER_KERNEL(QueueOp, "RandomShuffleQueueV2", kCpu);
PX_REGISTER_KERNEL(QueueOp, "RandomShuffleQueue", kCpu);
PX_REGISTER_KERNEL(QueueOp, "PaddingFIFOQueueV2", kCpu);
PX_REGISTER_KERNEL(QueueOp, "PaddingFIFOQueue", kCpu);

class EnqueueOp : public OpKernel {
 public:
  EnqueueOp(const KernelInit& init, Status*) : many_(init.node().op().find("Many") != std::string::npos) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<QueueResource> queue, QueueAt(context, 0));
    Element element;
    for (int i = 1; i < context.num_inputs(); ++i) element.push_back(context.input(i));
    return many_ ? queue->EnqueueMany(element) : queue->Enqueue(std::move(element));
  }

 private:
  bool many_;
};
PX_REGISTER_KERNEL(EnqueueOp, "QueueEnqueueV2", kCpu);
PX_REGISTER_KERNEL(EnqueueOp, "QueueEnqueue", kCpu);
PX_REGISTER_KERNEL(EnqueueOp, "QueueEnqueueManyV2", kCpu);
PX_REGISTER_KERNEL(EnqueueOp, "QueueEnqueueMany", kCpu);

class DequeueOp : public OpKernel {
 public:
  DequeueOp(const KernelInit& init, Status*) {
    const std::string_view op = init.node().op();
    many_ = op.find("Many") != std::string_view::npos || op.find("UpTo") != std::string_view::npos;
    up_to_ = op.find("UpTo") != std::string_view::npos;
  }
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<QueueResource> queue, QueueAt(context, 0));
    int64_t n = -1;
    if (many_) {
      const Tensor& count = context.input(1);
      if (count.dtype() != tensorflow::DT_INT32 || count.num_elements() != 1) {
        return InvalidArgumentError("n must be an int32 scalar");
      }
      n = count.data<int32_t>()[0];
      if (n < 0) return InvalidArgumentError("n must not be negative, not {}", n);
    }
    PX_ASSIGN_OR_RETURN(Element element, queue->Dequeue(n, up_to_, context.session()));
    if (static_cast<int>(element.size()) != context.num_outputs()) {
      return InvalidArgumentError("the queue's elements have {} components, the op {} outputs",
                                  element.size(), context.num_outputs());
    }
    for (size_t k = 0; k < element.size(); ++k) {
      context.set_output(static_cast<int>(k), std::move(element[k]));
    }
    return Status::Ok();
  }

 private:
  bool many_ = false, up_to_ = false;
};
PX_REGISTER_KERNEL(DequeueOp, "QueueDequeueV2", kCpu);
PX_REGISTER_KERNEL(DequeueOp, "QueueDequeue", kCpu);
PX_REGISTER_KERNEL(DequeueOp, "QueueDequeueManyV2", kCpu);
PX_REGISTER_KERNEL(DequeueOp, "QueueDequeueMany", kCpu);
PX_REGISTER_KERNEL(DequeueOp, "QueueDequeueUpToV2", kCpu);
PX_REGISTER_KERNEL(DequeueOp, "QueueDequeueUpTo", kCpu);

class QueueCloseOp : public OpKernel {
 public:
  QueueCloseOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<QueueResource> queue, QueueAt(context, 0));
    queue->Close();
    return Status::Ok();
  }
};
PX_REGISTER_KERNEL(QueueCloseOp, "QueueCloseV2", kCpu);
PX_REGISTER_KERNEL(QueueCloseOp, "QueueClose", kCpu);

class QueueSizeOp : public OpKernel {
 public:
  QueueSizeOp(const KernelInit& init, Status*) : is_closed_(init.node().op().starts_with("QueueIsClosed")) {}
  Status Compute(KernelContext& context) const override {
    PX_ASSIGN_OR_RETURN(std::shared_ptr<QueueResource> queue, QueueAt(context, 0));
    if (is_closed_) {
      context.set_output(0, Tensor::Scalar<bool>(queue->closed()));
    } else {
      context.set_output(0, Tensor::Scalar<int32_t>(static_cast<int32_t>(queue->size())));
    }
    return Status::Ok();
  }

 private:
  bool is_closed_;
};
PX_REGISTER_KERNEL(QueueSizeOp, "QueueSizeV2", kCpu);
PX_REGISTER_KERNEL(QueueSizeOp, "QueueSize", kCpu);
PX_REGISTER_KERNEL(QueueSizeOp, "QueueIsClosedV2", kCpu);

// Stage/Unstage: a staging area named by shared_name (else the node's name) shared by
// the Stage ops that fill it and the Unstage ops that drain it.
std::shared_ptr<QueueResource> StagingArea(KernelContext& context, const std::string& name,
                                           const std::vector<DataType>& types,
                                           const std::string& node) {
  QueueResource::Options options;
  options.kind = QueueResource::Kind::kStagingArea;
  options.types = types;
  return context.resources()
      .LookupOrCreate<QueueResource>(name,
                                     [&]() -> StatusOr<std::shared_ptr<QueueResource>> {
                                       return std::make_shared<QueueResource>(name, node, options);
                                     })
      .value();
}

class StageOp : public OpKernel {
 public:
  StageOp(const KernelInit& init, Status* status)
      : name_(ResourceName(init)), node_(init.node().name()), unstage_(init.node().op() == "Unstage") {
    *status = init.GetAttr("dtypes", &types_);
  }
  Status Compute(KernelContext& context) const override {
    std::shared_ptr<QueueResource> area = StagingArea(context, name_, types_, node_);
    if (!unstage_) {
      Element element;
      for (int i = 0; i < context.num_inputs(); ++i) element.push_back(context.input(i));
      return area->Enqueue(std::move(element));
    }
    PX_ASSIGN_OR_RETURN(Element element, area->Dequeue(-1, false, context.session()));
    for (size_t k = 0; k < element.size(); ++k) {
      context.set_output(static_cast<int>(k), std::move(element[k]));
    }
    return Status::Ok();
  }

 private:
  std::string name_, node_;
  bool unstage_;
  std::vector<DataType> types_;
};
PX_REGISTER_KERNEL(StageOp, "Stage", kCpu);
PX_REGISTER_KERNEL(StageOp, "Unstage", kCpu);

}  // namespace
}  // namespace parallax
