// Input and checkpoint I/O: queues, readers, example parsing, decoders, iterators and
// datasets, and the save/restore subgraph.
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

// V2 ops hold resources; the V1 ops they replaced pass a Ref(string) handle.
std::string Handle(bool v2) { return v2 ? "resource" : "Ref(string)"; }
std::string Versioned(std::string name, bool v2) { return v2 ? name + "V2" : name; }

OpSchemaBuilder Queue(std::string name, bool v2) {
  OpSchemaBuilder b(Versioned(std::move(name), v2));
  b.Output("handle: " + Handle(v2)).Attr("component_types: list(type) >= 1")
      .Attr("shapes: list(shape) >= 0 = []").Attr("capacity: int = -1")
      .Attr("container: string = ''").Attr("shared_name: string = ''").Stateful()
      .InputPipeline();
  return b;
}

OpSchemaBuilder RandomShuffleQueue(bool v2) {
  OpSchemaBuilder b = Queue("RandomShuffleQueue", v2);
  b.Attr("min_after_dequeue: int = 0").Attr("seed: int = 0").Attr("seed2: int = 0");
  return b;
}

OpSchemaBuilder QueueEnqueue(std::string name, bool v2) {
  OpSchemaBuilder b(Versioned(std::move(name), v2));
  b.Input("handle: " + Handle(v2)).Input("components: Tcomponents")
      .Attr("Tcomponents: list(type) >= 1").Attr("timeout_ms: int = -1").Stateful()
      .InputPipeline();
  return b;
}

// Dequeue, DequeueMany (with "n"), DequeueUpTo (with "n").
OpSchemaBuilder QueueDequeue(std::string name, bool v2, bool many) {
  OpSchemaBuilder b(Versioned(std::move(name), v2));
  b.Input("handle: " + Handle(v2));
  if (many) b.Input("n: int32");
  b.Output("components: component_types").Attr("component_types: list(type) >= 1")
      .Attr("timeout_ms: int = -1").Stateful().InputPipeline();
  return b;
}

OpSchemaBuilder QueueOp(std::string name, bool v2, std::string_view output) {
  OpSchemaBuilder b(Versioned(std::move(name), v2));
  b.Input("handle: " + Handle(v2)).Stateful().InputPipeline();
  if (!output.empty()) b.Output(output);
  return b;
}

OpSchemaBuilder Reader(std::string name, bool v2) {
  OpSchemaBuilder b(Versioned(std::move(name), v2));
  b.Output("reader_handle: " + Handle(v2)).Attr("container: string = ''")
      .Attr("shared_name: string = ''").Stateful().InputPipeline();
  return b;
}

OpSchemaBuilder ReaderRead(bool v2) {
  OpSchemaBuilder b(Versioned("ReaderRead", v2));
  b.Input("reader_handle: " + Handle(v2)).Input("queue_handle: " + Handle(v2))
      .Output("key: string").Output("value: string").Stateful().InputPipeline();
  return b;
}

OpSchemaBuilder Decoder(std::string name, std::string_view output) {
  OpSchemaBuilder b(std::move(name));
  b.Input("contents: string").Output(output).InputPipeline();
  return b;
}

OpSchemaBuilder IteratorResource(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Output("handle: resource").Attr("shared_name: string").Attr("container: string")
      .Attr("output_types: list(type) >= 1").Attr("output_shapes: list(shape) >= 1")
      .Stateful().InputPipeline();
  return b;
}

OpSchemaBuilder IteratorGetNext(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("iterator: resource").Output("components: output_types")
      .Attr("output_types: list(type) >= 1").Attr("output_shapes: list(shape) >= 1")
      .Stateful().InputPipeline();
  return b;
}

// TensorSliceDataset, TensorDataset: a dataset from in-graph tensors.
OpSchemaBuilder TensorDataset(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("components: Toutput_types").Output("handle: variant")
      .Attr("Toutput_types: list(type) >= 1").Attr("output_shapes: list(shape) >= 1")
      .Attr("metadata: string = ''").InputPipeline();
  return b;
}

// Queues, in their resource (V2) and ref (V1) forms.
PX_REGISTER_OP(Queue("FIFOQueue", true));
PX_REGISTER_OP(Queue("FIFOQueue", false));
PX_REGISTER_OP(Queue("PaddingFIFOQueue", true));
PX_REGISTER_OP(Queue("PaddingFIFOQueue", false));
PX_REGISTER_OP(RandomShuffleQueue(true));
PX_REGISTER_OP(RandomShuffleQueue(false));
PX_REGISTER_OP(QueueEnqueue("QueueEnqueue", true));
PX_REGISTER_OP(QueueEnqueue("QueueEnqueue", false));
PX_REGISTER_OP(QueueEnqueue("QueueEnqueueMany", true));
PX_REGISTER_OP(QueueEnqueue("QueueEnqueueMany", false));
PX_REGISTER_OP(QueueDequeue("QueueDequeue", true, false));
PX_REGISTER_OP(QueueDequeue("QueueDequeue", false, false));
PX_REGISTER_OP(QueueDequeue("QueueDequeueMany", true, true));
PX_REGISTER_OP(QueueDequeue("QueueDequeueMany", false, true));
PX_REGISTER_OP(QueueDequeue("QueueDequeueUpTo", true, true));
PX_REGISTER_OP(QueueDequeue("QueueDequeueUpTo", false, true));
PX_REGISTER_OP(QueueOp("QueueClose", true, "").Attr("cancel_pending_enqueues: bool = false"));
PX_REGISTER_OP(QueueOp("QueueClose", false, "").Attr("cancel_pending_enqueues: bool = false"));
PX_REGISTER_OP(QueueOp("QueueSize", true, "size: int32"));
PX_REGISTER_OP(QueueOp("QueueSize", false, "size: int32"));
PX_REGISTER_OP(QueueOp("QueueIsClosed", true, "is_closed: bool"));

// Readers.
PX_REGISTER_OP(Reader("TFRecordReader", true).Attr("compression_type: string = ''"));
PX_REGISTER_OP(Reader("TFRecordReader", false).Attr("compression_type: string = ''"));
PX_REGISTER_OP(Reader("TextLineReader", true).Attr("skip_header_lines: int = 0"));
PX_REGISTER_OP(Reader("TextLineReader", false).Attr("skip_header_lines: int = 0"));
PX_REGISTER_OP(Reader("WholeFileReader", true));
PX_REGISTER_OP(Reader("WholeFileReader", false));
PX_REGISTER_OP(Reader("IdentityReader", true));
PX_REGISTER_OP(Reader("FixedLengthRecordReader", true).Attr("header_bytes: int = 0")
                   .Attr("record_bytes: int").Attr("footer_bytes: int = 0")
                   .Attr("hop_bytes: int = 0").Attr("encoding: string = ''"));
PX_REGISTER_OP(ReaderRead(true));
PX_REGISTER_OP(ReaderRead(false));
PX_REGISTER_OP(OpSchemaBuilder("ReaderReadUpToV2").Input("reader_handle: resource")
                   .Input("queue_handle: resource").Input("num_records: int64")
                   .Output("keys: string").Output("values: string").Stateful()
                   .InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("ReadFile").Input("filename: string")
                   .Output("contents: string").InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("MatchingFiles").Input("pattern: string")
                   .Output("filenames: string").InputPipeline());

// Example parsing. ParseExample's outputs: Nsparse indices, one value tensor per sparse
// type, Nsparse shapes, one dense tensor per Tdense type.
PX_REGISTER_OP(OpSchemaBuilder("ParseExample").Input("serialized: string")
                   .Input("names: string").Input("sparse_keys: Nsparse * string")
                   .Input("dense_keys: Ndense * string").Input("dense_defaults: Tdense")
                   .Output("sparse_indices: Nsparse * int64")
                   .Output("sparse_values: sparse_types")
                   .Output("sparse_shapes: Nsparse * int64").Output("dense_values: Tdense")
                   .Attr("Nsparse: int >= 0").Attr("Ndense: int >= 0")
                   .Attr("sparse_types: list({float, int64, string}) >= 0")
                   .Attr("Tdense: list({float, int64, string}) >= 0")
                   .Attr("dense_shapes: list(shape) >= 0").InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("ParseExampleV2").Input("serialized: string")
                   .Input("names: string").Input("sparse_keys: string")
                   .Input("dense_keys: string").Input("ragged_keys: string")
                   .Input("dense_defaults: Tdense")
                   .Output("sparse_indices: num_sparse * int64")
                   .Output("sparse_values: sparse_types")
                   .Output("sparse_shapes: num_sparse * int64").Output("dense_values: Tdense")
                   .Output("ragged_values: ragged_value_types")
                   .Output("ragged_row_splits: ragged_split_types")
                   .Attr("Tdense: list({float, int64, string}) >= 0")
                   .Attr("num_sparse: int >= 0")
                   .Attr("sparse_types: list({float, int64, string}) >= 0")
                   .Attr("ragged_value_types: list({float, int64, string}) >= 0")
                   .Attr("ragged_split_types: list({int32, int64}) >= 0")
                   .Attr("dense_shapes: list(shape) >= 0").InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("ParseSingleExample").Input("serialized: string")
                   .Input("dense_defaults: Tdense")
                   .Output("sparse_indices: num_sparse * int64")
                   .Output("sparse_values: sparse_types")
                   .Output("sparse_shapes: num_sparse * int64").Output("dense_values: Tdense")
                   .Attr("num_sparse: int >= 0").Attr("sparse_keys: list(string) >= 0")
                   .Attr("dense_keys: list(string) >= 0")
                   .Attr("sparse_types: list({float, int64, string}) >= 0")
                   .Attr("Tdense: list({float, int64, string}) >= 0")
                   .Attr("dense_shapes: list(shape) >= 0").InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("DecodeCSV").Input("records: string")
                   .Input("record_defaults: OUT_TYPE").Output("output: OUT_TYPE")
                   .Attr("OUT_TYPE: list({float, double, int32, int64, string})")
                   .Attr("field_delim: string = ','").Attr("use_quote_delim: bool = true")
                   .Attr("na_value: string = ''").Attr("select_cols: list(int) = []")
                   .InputPipeline());

// Decoders.
PX_REGISTER_OP(OpSchemaBuilder("DecodeRaw").Input("bytes: string").Output("output: out_type")
                   .Attr("out_type: {half, float, double, int32, uint16, uint8, int16, int8, "
                         "int64, complex64, complex128, bool, bfloat16}")
                   .Attr("little_endian: bool = true").InputPipeline());
PX_REGISTER_OP(Decoder("DecodeJpeg", "image: uint8").Attr("channels: int = 0")
                   .Attr("ratio: int = 1").Attr("fancy_upscaling: bool = true")
                   .Attr("try_recover_truncated: bool = false")
                   .Attr("acceptable_fraction: float = 1.0").Attr("dct_method: string = ''"));
PX_REGISTER_OP(Decoder("DecodePng", "image: dtype").Attr("channels: int = 0")
                   .Attr("dtype: {uint8, uint16} = DT_UINT8"));
PX_REGISTER_OP(Decoder("DecodeGif", "image: uint8"));
PX_REGISTER_OP(Decoder("DecodeBmp", "image: uint8").Attr("channels: int = 0"));
PX_REGISTER_OP(Decoder("DecodeImage", "image: dtype").Attr("channels: int = 0")
                   .Attr("dtype: {uint8, uint16, float32} = DT_UINT8")
                   .Attr("expand_animations: bool = true"));
// Encoders (image summaries and tests write images back).
PX_REGISTER_OP(OpSchemaBuilder("EncodeJpeg").Input("image: uint8").Output("contents: string")
                   .Attr("format: {'', 'grayscale', 'rgb'} = ''").Attr("quality: int = 95")
                   .Attr("progressive: bool = false").Attr("optimize_size: bool = false")
                   .Attr("chroma_downsampling: bool = true")
                   .Attr("density_unit: {'in', 'cm'} = 'in'").Attr("x_density: int = 300")
                   .Attr("y_density: int = 300").Attr("xmp_metadata: string = ''"));
PX_REGISTER_OP(OpSchemaBuilder("EncodePng").Input("image: T").Output("contents: string")
                   .Attr("compression: int = -1").Attr("T: {uint8, uint16} = DT_UINT8"));
PX_REGISTER_OP(OpSchemaBuilder("DecodeCompressed").Input("bytes: string")
                   .Output("output: string").Attr("compression_type: string = ''")
                   .InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("DecodeBase64").Input("input: string").Output("output: string")
                   .InputPipeline());

// Iterators and datasets (tf.data).
PX_REGISTER_OP(IteratorResource("Iterator"));
PX_REGISTER_OP(IteratorResource("IteratorV2"));
PX_REGISTER_OP(OpSchemaBuilder("AnonymousIterator").Output("handle: resource")
                   .Attr("output_types: list(type) >= 1")
                   .Attr("output_shapes: list(shape) >= 1").Stateful().InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("AnonymousIteratorV2").Output("handle: resource")
                   .Output("deleter: variant").Attr("output_types: list(type) >= 1")
                   .Attr("output_shapes: list(shape) >= 1").Stateful().InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("OneShotIterator").Output("handle: resource")
                   .Attr("dataset_factory: func").Attr("output_types: list(type) >= 1")
                   .Attr("output_shapes: list(shape) >= 1").Attr("container: string = ''")
                   .Attr("shared_name: string = ''").Stateful().InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("MakeIterator").Input("dataset: variant")
                   .Input("iterator: resource").Stateful().InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("DeleteIterator").Input("handle: resource")
                   .Input("deleter: variant").Stateful().InputPipeline());
PX_REGISTER_OP(IteratorGetNext("IteratorGetNext"));
PX_REGISTER_OP(IteratorGetNext("IteratorGetNextSync"));
PX_REGISTER_OP(OpSchemaBuilder("IteratorGetNextAsOptional").Input("iterator: resource")
                   .Output("optional: variant").Attr("output_types: list(type) >= 1")
                   .Attr("output_shapes: list(shape) >= 1").Stateful().InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("IteratorToStringHandle").Input("resource_handle: resource")
                   .Output("string_handle: string").Stateful().InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("IteratorFromStringHandle").Input("string_handle: string")
                   .Output("resource_handle: resource")
                   .Attr("output_types: list(type) >= 0 = []")
                   .Attr("output_shapes: list(shape) >= 0 = []").Stateful().InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("IteratorFromStringHandleV2").Input("string_handle: string")
                   .Output("resource_handle: resource")
                   .Attr("output_types: list(type) >= 0 = []")
                   .Attr("output_shapes: list(shape) >= 0 = []").Stateful().InputPipeline());
PX_REGISTER_OP(TensorDataset("TensorSliceDataset").Attr("is_files: bool = false")
                   .Attr("replicate_on_split: bool = false"));
PX_REGISTER_OP(TensorDataset("TensorDataset"));
PX_REGISTER_OP(OpSchemaBuilder("TFRecordDataset").Input("filenames: string")
                   .Input("compression_type: string").Input("buffer_size: int64")
                   .Output("handle: variant").Attr("metadata: string = ''").InputPipeline());

// Datasets built by tf.data. Every one outputs a variant (the dataset) and declares what
// its elements are (output_types/output_shapes); transformations take the input dataset
// first; function-valued ones name a FunctionDef of the graph's library in an attr and
// take the function's captured inputs as `other_arguments`.
OpSchemaBuilder Dataset(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Output("handle: variant").Attr("output_types: list(type) >= 1")
      .Attr("output_shapes: list(shape) >= 1").Attr("metadata: string = ''").InputPipeline();
  return b;
}
OpSchemaBuilder UnaryDataset(std::string name) {
  OpSchemaBuilder b = Dataset(std::move(name));
  b.Input("input_dataset: variant");
  return b;
}
OpSchemaBuilder FunctionDataset(std::string name, std::string_view func_attr = "f") {
  OpSchemaBuilder b = UnaryDataset(std::move(name));
  b.Input("other_arguments: Targuments").Attr(std::string(func_attr) + ": func")
      .Attr("Targuments: list(type) >= 0");
  return b;
}
// The file readers; FixedLengthRecordDatasetV2 adds compression_type.
OpSchemaBuilder FileDataset(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("filenames: string").Output("handle: variant").Attr("metadata: string = ''")
      .InputPipeline();
  return b;
}

PX_REGISTER_OP(FileDataset("TextLineDataset").Input("compression_type: string")
                   .Input("buffer_size: int64"));
PX_REGISTER_OP(FileDataset("FixedLengthRecordDataset").Input("header_bytes: int64")
                   .Input("record_bytes: int64").Input("footer_bytes: int64")
                   .Input("buffer_size: int64"));
PX_REGISTER_OP(FileDataset("FixedLengthRecordDatasetV2").Input("header_bytes: int64")
                   .Input("record_bytes: int64").Input("footer_bytes: int64")
                   .Input("buffer_size: int64").Input("compression_type: string"));
PX_REGISTER_OP(Dataset("RangeDataset").Input("start: int64").Input("stop: int64")
                   .Input("step: int64").Attr("replicate_on_split: bool = false"));
PX_REGISTER_OP(FunctionDataset("MapDataset").Attr("use_inter_op_parallelism: bool = true")
                   .Attr("preserve_cardinality: bool = false")
                   .Attr("force_synchronous: bool = false"));
PX_REGISTER_OP(FunctionDataset("ParallelMapDataset").Input("num_parallel_calls: int32")
                   .Attr("use_inter_op_parallelism: bool = true").Attr("sloppy: bool = false")
                   .Attr("preserve_cardinality: bool = false"));
PX_REGISTER_OP(FunctionDataset("ParallelMapDatasetV2").Input("num_parallel_calls: int64")
                   .Attr("use_inter_op_parallelism: bool = true")
                   .Attr("deterministic: string = 'default'")
                   .Attr("preserve_cardinality: bool = false"));
PX_REGISTER_OP(FunctionDataset("MapAndBatchDataset").Input("batch_size: int64")
                   .Input("num_parallel_calls: int64").Input("drop_remainder: bool")
                   .Attr("preserve_cardinality: bool = false"));
PX_REGISTER_OP(FunctionDataset("ExperimentalMapAndBatchDataset").Input("batch_size: int64")
                   .Input("num_parallel_calls: int64").Input("drop_remainder: bool")
                   .Attr("preserve_cardinality: bool = false"));
PX_REGISTER_OP(FunctionDataset("FlatMapDataset"));
PX_REGISTER_OP(FunctionDataset("FilterDataset", "predicate"));
PX_REGISTER_OP(FunctionDataset("InterleaveDataset").Input("cycle_length: int64")
                   .Input("block_length: int64"));
PX_REGISTER_OP(FunctionDataset("ParallelInterleaveDataset").Input("cycle_length: int64")
                   .Input("block_length: int64").Input("sloppy: bool")
                   .Input("buffer_output_elements: int64").Input("prefetch_input_elements: int64"));
PX_REGISTER_OP(FunctionDataset("ExperimentalParallelInterleaveDataset")
                   .Input("cycle_length: int64").Input("block_length: int64").Input("sloppy: bool")
                   .Input("buffer_output_elements: int64").Input("prefetch_input_elements: int64"));
PX_REGISTER_OP(FunctionDataset("ParallelInterleaveDatasetV2").Input("cycle_length: int64")
                   .Input("block_length: int64").Input("num_parallel_calls: int64")
                   .Attr("sloppy: bool = false"));
PX_REGISTER_OP(FunctionDataset("ParallelInterleaveDatasetV3").Input("cycle_length: int64")
                   .Input("block_length: int64").Input("num_parallel_calls: int64")
                   .Attr("deterministic: string = 'default'"));
PX_REGISTER_OP(FunctionDataset("ParallelInterleaveDatasetV4").Input("cycle_length: int64")
                   .Input("block_length: int64").Input("buffer_output_elements: int64")
                   .Input("prefetch_input_elements: int64").Input("num_parallel_calls: int64")
                   .Attr("deterministic: string = 'default'"));
PX_REGISTER_OP(UnaryDataset("BatchDataset").Input("batch_size: int64"));
PX_REGISTER_OP(UnaryDataset("BatchDatasetV2").Input("batch_size: int64")
                   .Input("drop_remainder: bool").Attr("parallel_copy: bool = false"));
PX_REGISTER_OP(OpSchemaBuilder("PaddedBatchDataset").Input("input_dataset: variant")
                   .Input("batch_size: int64").Input("padded_shapes: N * int64")
                   .Input("padding_values: Toutput_types").Output("handle: variant")
                   .Attr("Toutput_types: list(type) >= 1").Attr("output_shapes: list(shape) >= 1")
                   .Attr("N: int >= 1").Attr("metadata: string = ''").InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("PaddedBatchDatasetV2").Input("input_dataset: variant")
                   .Input("batch_size: int64").Input("padded_shapes: N * int64")
                   .Input("padding_values: Toutput_types").Input("drop_remainder: bool")
                   .Output("handle: variant").Attr("parallel_copy: bool = false")
                   .Attr("Toutput_types: list(type) >= 1").Attr("output_shapes: list(shape) >= 1")
                   .Attr("N: int >= 1").Attr("metadata: string = ''").InputPipeline());
PX_REGISTER_OP(UnaryDataset("ShuffleDataset").Input("buffer_size: int64").Input("seed: int64")
                   .Input("seed2: int64").Attr("reshuffle_each_iteration: bool = true"));
PX_REGISTER_OP(UnaryDataset("ShuffleDatasetV2").Input("buffer_size: int64")
                   .Input("seed_generator: resource"));
PX_REGISTER_OP(UnaryDataset("ShuffleDatasetV3").Input("buffer_size: int64").Input("seed: int64")
                   .Input("seed2: int64").Input("seed_generator: resource")
                   .Attr("reshuffle_each_iteration: bool = true"));
PX_REGISTER_OP(UnaryDataset("ShuffleAndRepeatDataset").Input("buffer_size: int64")
                   .Input("seed: int64").Input("seed2: int64").Input("count: int64")
                   .Attr("reshuffle_each_iteration: bool = true"));
PX_REGISTER_OP(OpSchemaBuilder("AnonymousSeedGenerator").Input("seed: int64").Input("seed2: int64")
                   .Input("reshuffle: bool").Output("handle: resource").Output("deleter: variant")
                   .Stateful().InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("DummySeedGenerator").Output("handle: resource").Stateful()
                   .InputPipeline());
PX_REGISTER_OP(UnaryDataset("RepeatDataset").Input("count: int64"));
PX_REGISTER_OP(UnaryDataset("TakeDataset").Input("count: int64"));
PX_REGISTER_OP(UnaryDataset("SkipDataset").Input("count: int64"));
PX_REGISTER_OP(UnaryDataset("ShardDataset").Input("num_shards: int64").Input("index: int64")
                   .Attr("require_non_empty: bool = false"));
PX_REGISTER_OP(UnaryDataset("CacheDataset").Input("filename: string"));
PX_REGISTER_OP(UnaryDataset("ConcatenateDataset").Input("another_dataset: variant"));
PX_REGISTER_OP(Dataset("ZipDataset").Input("input_datasets: N * variant").Attr("N: int >= 1"));
// Performance and options wrappers: the elements pass through unchanged.
PX_REGISTER_OP(UnaryDataset("PrefetchDataset").Input("buffer_size: int64")
                   .Attr("slack_period: int = 0").Attr("legacy_autotune: bool = true")
                   .Attr("buffer_size_min: int = 0"));
PX_REGISTER_OP(UnaryDataset("OptimizeDataset").Input("optimizations: string")
                   .Attr("optimization_configs: list(string) = []"));
PX_REGISTER_OP(UnaryDataset("OptimizeDatasetV2").Input("optimizations_enabled: string")
                   .Input("optimizations_disabled: string").Input("optimizations_default: string")
                   .Attr("optimization_configs: list(string) = []"));
PX_REGISTER_OP(UnaryDataset("ModelDataset").Attr("algorithm: int = 0").Attr("cpu_budget: int = 0")
                   .Attr("ram_budget: int = 0"));
PX_REGISTER_OP(UnaryDataset("MaxIntraOpParallelismDataset")
                   .Input("max_intra_op_parallelism: int64"));
PX_REGISTER_OP(UnaryDataset("PrivateThreadPoolDataset").Input("num_threads: int64"));
PX_REGISTER_OP(UnaryDataset("AssertCardinalityDataset").Input("cardinality: int64"));

// Staging areas (tf.contrib.staging): a buffer of tuples between a producer and the step.
PX_REGISTER_OP(OpSchemaBuilder("Stage").Input("values: dtypes").Attr("capacity: int >= 0 = 0")
                   .Attr("memory_limit: int >= 0 = 0").Attr("dtypes: list(type)")
                   .Attr("container: string = ''").Attr("shared_name: string = ''").Stateful()
                   .InputPipeline());
PX_REGISTER_OP(OpSchemaBuilder("Unstage").Output("values: dtypes").Attr("capacity: int >= 0 = 0")
                   .Attr("memory_limit: int >= 0 = 0").Attr("dtypes: list(type)")
                   .Attr("container: string = ''").Attr("shared_name: string = ''").Stateful()
                   .InputPipeline());

// Checkpoints: the save/restore subgraph of every Saver. RestoreV2 has one output per
// entry of dtypes (RestoreV2:92 is common).
PX_REGISTER_OP(OpSchemaBuilder("SaveV2").Input("prefix: string").Input("tensor_names: string")
                   .Input("shape_and_slices: string").Input("tensors: dtypes")
                   .Attr("dtypes: list(type)").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("RestoreV2").Input("prefix: string")
                   .Input("tensor_names: string").Input("shape_and_slices: string")
                   .Output("tensors: dtypes").Attr("dtypes: list(type)").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("Save").Input("filename: string").Input("tensor_names: string")
                   .Input("data: T").Attr("T: list(type)").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("SaveSlices").Input("filename: string")
                   .Input("tensor_names: string").Input("shapes_and_slices: string")
                   .Input("data: T").Attr("T: list(type)").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("Restore").Input("file_pattern: string")
                   .Input("tensor_name: string").Output("tensor: dt").Attr("dt: type")
                   .Attr("preferred_shard: int = -1").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("RestoreSlice").Input("file_pattern: string")
                   .Input("tensor_name: string").Input("shape_and_slice: string")
                   .Output("tensor: dt").Attr("dt: type").Attr("preferred_shard: int = -1")
                   .Stateful());
PX_REGISTER_OP(OpSchemaBuilder("MergeV2Checkpoints").Input("checkpoint_prefixes: string")
                   .Input("destination_prefix: string").Attr("delete_old_dirs: bool = true")
                   .Attr("allow_missing_files: bool = false").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("ShardedFilename").Input("basename: string")
                   .Input("shard: int32").Input("num_shards: int32").Output("filename: string"));
PX_REGISTER_OP(OpSchemaBuilder("ShardedFilespec").Input("basename: string")
                   .Input("num_shards: int32").Output("filename: string"));

}  // namespace
}  // namespace parallax
