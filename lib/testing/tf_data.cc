#include "lib/testing/tf_data.h"

#include <cmath>
#include <filesystem>
#include <map>

#include "lib/analysis/training_analysis.h"
#include "lib/base/file.h"
#include "lib/runtime/checkpoint/tf_checkpoint.h"
#include "lib/runtime/data/dataset.h"
#include "lib/runtime/data/random.h"
#include "lib/runtime/data/tfrecord.h"
#include "lib/runtime/kernels/cpu/image_codec.h"
#include "lib/runtime/tensor.h"
#include "lib/testing/testdata.h"
#include "protos/example.pb.h"

namespace parallax::testing {

Status WriteSlimMnist(const std::string& path, int n) {
  const std::string dir = kFashionMnistDir;
  PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorColumn> images,
                      LoadColumnFromFile(dir + "/train-images-idx3-ubyte.gz"));
  PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorColumn> labels,
                      LoadColumnFromFile(dir + "/train-labels-idx1-ubyte.gz"));
  const Tensor& pixels = images->data();
  const Tensor& classes = labels->data();
  std::vector<std::string> records;
  for (int i = 0; i < n && i < pixels.dim(0); ++i) {
    const uint8_t* image = pixels.data<uint8_t>() + static_cast<int64_t>(i) * 28 * 28;
    PX_ASSIGN_OR_RETURN(std::string png, image::EncodePng(image, 28, 28, 1, 1, 6));
    tensorflow::Example example;
    auto& f = *example.mutable_features()->mutable_feature();
    f["image/encoded"].mutable_bytes_list()->add_value(png);
    f["image/format"].mutable_bytes_list()->add_value("png");
    f["image/class/label"].mutable_int64_list()->add_value(classes.data<uint8_t>()[i]);
    f["image/height"].mutable_int64_list()->add_value(28);
    f["image/width"].mutable_int64_list()->add_value(28);
    records.push_back(example.SerializeAsString());
  }
  return WriteTFRecordFile(path, records);
}

Status WriteSoftmaxExamples(const std::string& path, int n, uint64_t seed) {
  DataRng rng(Mix64(seed));
  std::vector<std::string> records;
  for (int i = 0; i < n; ++i) {
    tensorflow::Example example;
    auto& f = *example.mutable_features()->mutable_feature();
    float x[4];
    for (float& v : x) {
      v = static_cast<float>(rng.Uniform());
      f["x"].mutable_float_list()->add_value(v);
    }
    const int64_t y = x[0] >= x[1] && x[0] >= x[2] ? 0 : x[1] >= x[2] ? 1 : 2;
    f["y"].mutable_int64_list()->add_value(y);
    records.push_back(example.SerializeAsString());
  }
  return WriteTFRecordFile(path, records);
}

StatusOr<int> WriteGraphImages(const Graph& graph, const std::string& dir, int height,
                               int width, int distinct) {
  std::vector<std::string> names;
  for (NodeId id : graph.NodeIds()) {
    const Node& node = graph.node(id);
    if (node.op() != "Const") continue;
    std::optional<tensorflow::AttrValue> value = node.FindAttr("value");
    if (!value || value->tensor().dtype() != tensorflow::DT_STRING) continue;
    for (const std::string& s : value->tensor().string_val()) {
      if (s.ends_with(".jpg") || s.ends_with(".jpeg")) {
        names.push_back(std::filesystem::path(s).filename().string());
      }
    }
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  DataRng rng(Mix64(11));
  std::vector<std::string> images;
  for (int k = 0; k < distinct; ++k) {
    std::vector<uint8_t> pixels(static_cast<size_t>(height) * width * 3);
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        for (int c = 0; c < 3; ++c) {
          const double smooth = 127.0 * (1 + std::sin(0.01 * (x + 3 * k) * (c + 1) + 0.013 * y));
          pixels[(static_cast<size_t>(y) * width + x) * 3 + c] =
              static_cast<uint8_t>(std::min(255.0, smooth + 20 * rng.Uniform()));
        }
      }
    }
    PX_ASSIGN_OR_RETURN(std::string jpeg,
                        image::EncodeJpeg(pixels.data(), height, width, 3, image::JpegEncodeOptions{}));
    const std::string path = dir + "/image-" + std::to_string(k) + ".jpeg";
    PX_RETURN_IF_ERROR(WriteFileAtomically(path, jpeg));
    images.push_back(path);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const std::filesystem::path link = std::filesystem::path(dir) / names[i];
    std::filesystem::remove(link, error);
    std::filesystem::create_symlink(images[i % images.size()], link, error);
    if (error) return InternalError("{}: cannot link to {}: {}", link.string(), images[i % images.size()], error.message());
  }
  return static_cast<int>(names.size());
}

StatusOr<int> WriteRandomCheckpoint(const Graph& graph, const std::string& prefix, bool all,
                                    uint64_t seed) {
  PX_ASSIGN_OR_RETURN(TrainingAnalysis analysis, AnalyzeTraining(graph));
  // The checkpoint name of each variable: what its checkpoint_initializer restores, or
  // (all) its own name.
  std::map<std::string, const Variable*> by_node;
  std::map<std::string, const Variable*> wanted;
  for (const Variable& v : analysis.variables) {
    if (v.kind == VariableKind::kFrozen) continue;
    by_node.emplace(std::string(graph.node(v.node).name()), &v);
    if (all) wanted.emplace(v.name, &v);
  }
  // Assign(var, RestoreV2:k): var starts from tensor k of the RestoreV2's names.
  for (NodeId id : graph.NodeIds()) {
    const Node& assign = graph.node(id);
    if ((assign.op() != "Assign" && assign.op() != "AssignVariableOp") ||
        assign.num_data_inputs() < 2) {
      continue;
    }
    const OutputRef value = assign.input(1);
    const Node& restore = graph.node(value.node);
    auto variable = by_node.find(std::string(graph.node(assign.input(0).node).name()));
    if (restore.op() != "RestoreV2" || restore.num_data_inputs() < 2 ||
        variable == by_node.end()) {
      continue;
    }
    const Node& names = graph.node(restore.input(1).node);
    std::optional<tensorflow::AttrValue> tensor = names.FindAttr("value");
    if (!tensor) continue;
    StatusOr<Tensor> list = Tensor::FromProto(tensor->tensor());
    if (!list.ok() || list->dtype() != tensorflow::DT_STRING ||
        value.port >= list->num_elements()) {
      continue;
    }
    wanted.emplace(list->data<std::string>()[value.port], variable->second);
  }
  std::map<std::string, Tensor> tensors;
  DataRng rng(Mix64(seed));
  for (const auto& [name, v] : wanted) {
    if (!v->shape.known_rank) {
      return InvalidArgumentError("variable '{}' has no known shape", v->name);
    }
    for (int64_t d : v->shape.dims) {
      if (d < 0) return InvalidArgumentError("variable '{}' has an unknown dimension", v->name);
    }
    Tensor t(v->dtype, TensorShape(v->shape.dims));
    const int64_t n = t.num_elements();
    switch (v->dtype) {
      case tensorflow::DT_FLOAT:
        for (int64_t i = 0; i < n; ++i) {
          // A sum of uniforms: bell-shaped, bounded like a truncated normal.
          double u = rng.Uniform() + rng.Uniform() + rng.Uniform() - 1.5;
          t.data<float>()[i] = static_cast<float>(0.02 * u * 2.0);
        }
        break;
      case tensorflow::DT_INT64: std::fill_n(t.data<int64_t>(), n, 0); break;
      case tensorflow::DT_INT32: std::fill_n(t.data<int32_t>(), n, 0); break;
      case tensorflow::DT_DOUBLE: std::fill_n(t.data<double>(), n, 0.0); break;
      default:
        return UnimplementedError("variable '{}': no random values for its dtype", v->name);
    }
    tensors.emplace(name, std::move(t));
  }
  PX_RETURN_IF_ERROR(WriteTfCheckpoint(prefix, tensors));
  return static_cast<int>(tensors.size());
}

}  // namespace parallax::testing
