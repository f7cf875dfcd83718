// Random ops. The stateful ones draw from a per-op generator: never deduplicate, fold or
// prune them; the stateless ones are pure functions of their seed input.
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

constexpr std::string_view kSeeds[] = {"seed: int = 0", "seed2: int = 0"};

// "shape: T" -> "output: dtype" with float dtypes.
OpSchemaBuilder RandomFloat(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("shape: T").Output("output: dtype").Attr(kSeeds[0]).Attr(kSeeds[1])
      .Attr("dtype: {half, bfloat16, float, double}").Attr("T: {int32, int64}").Stateful();
  return b;
}

OpSchemaBuilder StatelessRandom(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("shape: T").Input("seed: Tseed").Output("output: dtype")
      .Attr("dtype: {half, bfloat16, float, double} = DT_FLOAT")
      .Attr("T: {int32, int64} = DT_INT32").Attr("Tseed: {int32, int64} = DT_INT64");
  return b;
}

PX_REGISTER_OP(RandomFloat("RandomUniform"));
PX_REGISTER_OP(RandomFloat("RandomStandardNormal"));
PX_REGISTER_OP(RandomFloat("TruncatedNormal"));
PX_REGISTER_OP(OpSchemaBuilder("RandomUniformInt").Input("shape: T").Input("minval: Tout")
                   .Input("maxval: Tout").Output("output: Tout").Attr(kSeeds[0])
                   .Attr(kSeeds[1]).Attr("Tout: {int32, int64}").Attr("T: {int32, int64}")
                   .Stateful());
PX_REGISTER_OP(OpSchemaBuilder("RandomShuffle").Input("value: T").Output("output: T")
                   .Attr(kSeeds[0]).Attr(kSeeds[1]).Attr("T: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("Multinomial").Input("logits: T").Input("num_samples: int32")
                   .Output("output: output_dtype").Attr(kSeeds[0]).Attr(kSeeds[1])
                   .Attr("T: realnumbertype").Attr("output_dtype: {int32, int64} = DT_INT64")
                   .Stateful());
PX_REGISTER_OP(OpSchemaBuilder("RandomGamma").Input("shape: S").Input("alpha: T")
                   .Output("output: T").Attr(kSeeds[0]).Attr(kSeeds[1])
                   .Attr("S: {int32, int64}").Attr("T: {half, float, double}").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("RandomPoisson").Input("shape: S").Input("rate: dtype")
                   .Output("output: dtype").Attr(kSeeds[0]).Attr(kSeeds[1])
                   .Attr("S: {int32, int64}").Attr("dtype: {half, float, double}").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("RandomPoissonV2").Input("shape: S").Input("rate: R")
                   .Output("output: dtype").Attr(kSeeds[0]).Attr(kSeeds[1])
                   .Attr("S: {int32, int64}")
                   .Attr("R: {half, float, double, int32, int64} = DT_DOUBLE")
                   .Attr("dtype: {half, float, double, int32, int64} = DT_INT64").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("ParameterizedTruncatedNormal").Input("shape: T")
                   .Input("means: dtype").Input("stdevs: dtype").Input("minvals: dtype")
                   .Input("maxvals: dtype").Output("output: dtype").Attr(kSeeds[0])
                   .Attr(kSeeds[1]).Attr("dtype: {half, bfloat16, float, double}")
                   .Attr("T: {int32, int64}").Stateful());
PX_REGISTER_OP(StatelessRandom("StatelessRandomUniform"));
PX_REGISTER_OP(StatelessRandom("StatelessRandomNormal"));
PX_REGISTER_OP(StatelessRandom("StatelessTruncatedNormal"));

// Candidate samplers (sampled softmax, NCE): num_sampled classes drawn per batch, with
// the expected counts of the true and sampled classes.
OpSchemaBuilder CandidateSampler(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("true_classes: int64").Output("sampled_candidates: int64")
      .Output("true_expected_count: float").Output("sampled_expected_count: float")
      .Attr("num_true: int >= 1").Attr("num_sampled: int >= 1").Attr("unique: bool")
      .Attr("seed: int = 0").Attr("seed2: int = 0").Stateful();
  return b;
}
PX_REGISTER_OP(CandidateSampler("LogUniformCandidateSampler").Attr("range_max: int >= 1"));
PX_REGISTER_OP(CandidateSampler("UniformCandidateSampler").Attr("range_max: int >= 1"));
PX_REGISTER_OP(CandidateSampler("LearnedUnigramCandidateSampler").Attr("range_max: int >= 1"));
PX_REGISTER_OP(CandidateSampler("ThreadUnsafeUnigramCandidateSampler")
                   .Attr("range_max: int >= 1"));
PX_REGISTER_OP(CandidateSampler("AllCandidateSampler"));
PX_REGISTER_OP(CandidateSampler("FixedUnigramCandidateSampler").Attr("range_max: int >= 1")
                   .Attr("vocab_file: string = ''").Attr("distortion: float = 1.0")
                   .Attr("num_reserved_ids: int = 0").Attr("num_shards: int >= 1 = 1")
                   .Attr("shard: int >= 0 = 0").Attr("unigrams: list(float) = []"));
PX_REGISTER_OP(OpSchemaBuilder("ComputeAccidentalHits").Input("true_classes: int64")
                   .Input("sampled_candidates: int64").Output("indices: int32")
                   .Output("ids: int64").Output("weights: float").Attr("num_true: int")
                   .Attr("seed: int = 0").Attr("seed2: int = 0"));

}  // namespace
}  // namespace parallax
