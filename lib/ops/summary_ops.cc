// Summaries: the TF1 ops that serialise Summary protos (pure functions of their inputs)
// and the TF2 writer ops that write them to event files (stateful).
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

OpSchemaBuilder WriteSummaryOp(std::string name, std::string_view value_spec) {
  OpSchemaBuilder b(std::move(name));
  b.Input("writer: resource").Input("step: int64").Input("tag: string").Input(value_spec)
      .Attr("T: realnumbertype = DT_FLOAT").Stateful();
  return b;
}

PX_REGISTER_OP(OpSchemaBuilder("ScalarSummary").Input("tags: string").Input("values: T")
                   .Output("summary: string").Attr("T: realnumbertype"));
PX_REGISTER_OP(OpSchemaBuilder("HistogramSummary").Input("tag: string").Input("values: T")
                   .Output("summary: string").Attr("T: realnumbertype = DT_FLOAT"));
PX_REGISTER_OP(OpSchemaBuilder("ImageSummary").Input("tag: string").Input("tensor: T")
                   .Output("summary: string").Attr("max_images: int >= 1 = 3")
                   .Attr("T: {uint8, float, half, float64} = DT_FLOAT")
                   .Attr("bad_color: tensor = { dtype: DT_UINT8 tensor_shape: { dim { size: 4 "
                         "} } int_val: 255 int_val: 0 int_val: 0 int_val: 255 }"));
PX_REGISTER_OP(OpSchemaBuilder("AudioSummaryV2").Input("tag: string").Input("tensor: float")
                   .Input("sample_rate: float").Output("summary: string")
                   .Attr("max_outputs: int >= 1 = 3"));
PX_REGISTER_OP(OpSchemaBuilder("MergeSummary").Input("inputs: N * string")
                   .Output("summary: string").Attr("N: int >= 1"));
PX_REGISTER_OP(OpSchemaBuilder("TensorSummary").Input("tensor: T").Output("summary: string")
                   .Attr("T: type").Attr("description: string = ''")
                   .Attr("labels: list(string) = []").Attr("display_name: string = ''"));
PX_REGISTER_OP(OpSchemaBuilder("TensorSummaryV2").Input("tag: string").Input("tensor: T")
                   .Input("serialized_summary_metadata: string").Output("summary: string")
                   .Attr("T: type"));

// Writers.
PX_REGISTER_OP(OpSchemaBuilder("SummaryWriter").Output("writer: resource")
                   .Attr("shared_name: string = ''").Attr("container: string = ''")
                   .Stateful());
PX_REGISTER_OP(OpSchemaBuilder("CreateSummaryFileWriter").Input("writer: resource")
                   .Input("logdir: string").Input("max_queue: int32")
                   .Input("flush_millis: int32").Input("filename_suffix: string").Stateful());
PX_REGISTER_OP(WriteSummaryOp("WriteScalarSummary", "value: T"));
PX_REGISTER_OP(WriteSummaryOp("WriteHistogramSummary", "values: T"));
PX_REGISTER_OP(OpSchemaBuilder("WriteSummary").Input("writer: resource").Input("step: int64")
                   .Input("tensor: T").Input("tag: string").Input("summary_metadata: string")
                   .Attr("T: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("FlushSummaryWriter").Input("writer: resource").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("CloseSummaryWriter").Input("writer: resource").Stateful());

}  // namespace
}  // namespace parallax
