// CollectiveBuilder: the one place that knows which nodes implement a collective.
//
// Passes decide *where* communication goes; this factory decides *what* it is made of,
// so the strategy (AllReduce, parameter servers, all-gather) and the op vocabulary are
// swappable in tests (after XLA's SPMDCollectiveOpsCreator). The default, TfCollectives,
// emits TensorFlow's V2 collective ops where TF has one (CollectiveReduceV2,
// CollectiveGatherV2) and Parallax's own ops otherwise (ParallaxBroadcast,
// ParallaxScatterRowsSend/Recv, ParallaxSparsePull/Push), so rank graphs stay loadable
// by TF tools.
//
// Keys: every collective gets the next instance key from the builder's counter. Passes
// create collectives in a deterministic order (pass order, then variable order), so the
// same pipeline gives every rank the same keys for the same collectives, and each rank
// issues them in the same order.
//
// New nodes are named under `scope` ("w/parallax/allreduce"), de-duplicated by suffix.
#ifndef PARALLAX_LIB_PASSES_COLLECTIVE_BUILDER_H_
#define PARALLAX_LIB_PASSES_COLLECTIVE_BUILDER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/attr_values.h"
#include "lib/graph/graph.h"
#include "lib/plan/plan.h"
#include "protos/graph.pb.h"

namespace parallax {

// An int attr on a collective: where it comes in the order gradients are ready (0: first;
// the last layer's gradient before the first layer's). Set by insert-allreduce on the
// all-reduces it makes, from the plan's variable order on the rank-independent graph, so
// the same on every rank; order-collectives issues collectives of one level in this order
// (those without it after, by name), so that a collective can start while backprop goes on.
inline constexpr std::string_view kIssueOrderAttr = "_parallax_issue_order";

struct CollectiveOptions {
  int group_size = 1;      // the number of ranks
  int group_key = 1;       // one group: all ranks
  int first_instance_key = 1;
  std::string device;      // device string for the new nodes ("" = unplaced)
  // All-reduces ask for the communicator's hierarchical algorithm (the plan's
  // allreduce.algorithm): communication_hint "hierarchical" instead of "auto".
  bool hierarchical_allreduce = false;
};

// The result of a push: this rank's share of every rank's contributions.
struct PushResult {
  OutputRef local_values;
  OutputRef local_indices;  // rows of this rank's local storage
};

class CollectiveBuilder {
 public:
  explicit CollectiveBuilder(CollectiveOptions options) : options_(std::move(options)) {}
  virtual ~CollectiveBuilder() = default;

  const CollectiveOptions& options() const { return options_; }
  // The instance key the next collective will get.
  int next_instance_key() const { return next_key_; }

  // Every rank gets the element-wise sum of `input` over ranks, divided by the number of
  // ranks when `average`.
  virtual StatusOr<OutputRef> AllReduce(Graph& graph, std::string_view scope, OutputRef input,
                                        tensorflow::DataType dtype, bool average) = 0;
  // Every rank gets the concatenation along dimension 0 of every rank's `input`, in rank
  // order (dimension 0 may differ between ranks).
  virtual StatusOr<OutputRef> AllGather(Graph& graph, std::string_view scope, OutputRef input,
                                        tensorflow::DataType dtype) = 0;
  // Every rank gets rank `root`'s `input`.
  virtual StatusOr<OutputRef> Broadcast(Graph& graph, std::string_view scope, OutputRef input,
                                        tensorflow::DataType dtype, int root) = 0;
  // The rows of the partitioned `variable` that this rank owns (its local storage: its
  // partitions concatenated in partition order; [0, ...] when it owns none), taken from
  // rank `root`'s value of the whole variable. On the root `value` is that value (the
  // send half); on every other rank it is nullopt (the receive half, which computes no
  // whole value: dtype and `shape`, the whole variable's, come from the attrs). Both
  // halves are one collective with one instance key, like TF's CollectiveBcastSend/Recv.
  virtual StatusOr<OutputRef> ScatterRows(Graph& graph, std::string_view scope,
                                          const VariablePlan& variable,
                                          std::optional<OutputRef> value,
                                          tensorflow::DataType dtype,
                                          const std::vector<int64_t>& shape, int root) = 0;
  // Rows `ids` of the partitioned variable `variable`; `local_storage` is this rank's
  // partitions concatenated.
  virtual StatusOr<OutputRef> SparsePull(Graph& graph, std::string_view scope,
                                         const VariablePlan& variable, OutputRef local_storage,
                                         OutputRef ids, tensorflow::DataType dtype,
                                         tensorflow::DataType index_type) = 0;
  // Sends (indices, values * scale) to the rows' owners.
  virtual StatusOr<PushResult> SparsePush(Graph& graph, std::string_view scope,
                                          const VariablePlan& variable, OutputRef values,
                                          OutputRef indices, tensorflow::DataType dtype,
                                          tensorflow::DataType index_type, float scale) = 0;

 protected:
  int TakeInstanceKey() { return next_key_++; }

 private:
  CollectiveOptions options_;
  int next_key_ = options_.first_instance_key;
};

// TensorFlow V2 collectives plus Parallax's ops (see the file comment).
class TfCollectives : public CollectiveBuilder {
 public:
  using CollectiveBuilder::CollectiveBuilder;

  StatusOr<OutputRef> AllReduce(Graph& graph, std::string_view scope, OutputRef input,
                                tensorflow::DataType dtype, bool average) override;
  StatusOr<OutputRef> AllGather(Graph& graph, std::string_view scope, OutputRef input,
                                tensorflow::DataType dtype) override;
  StatusOr<OutputRef> Broadcast(Graph& graph, std::string_view scope, OutputRef input,
                                tensorflow::DataType dtype, int root) override;
  StatusOr<OutputRef> ScatterRows(Graph& graph, std::string_view scope,
                                  const VariablePlan& variable, std::optional<OutputRef> value,
                                  tensorflow::DataType dtype, const std::vector<int64_t>& shape,
                                  int root) override;
  StatusOr<OutputRef> SparsePull(Graph& graph, std::string_view scope,
                                 const VariablePlan& variable, OutputRef local_storage,
                                 OutputRef ids, tensorflow::DataType dtype,
                                 tensorflow::DataType index_type) override;
  StatusOr<PushResult> SparsePush(Graph& graph, std::string_view scope,
                                  const VariablePlan& variable, OutputRef values,
                                  OutputRef indices, tensorflow::DataType dtype,
                                  tensorflow::DataType index_type, float scale) override;

 private:
  // A TF V2 collective: `op`(input, group_size, group_key, instance_key) with the next
  // instance key, the common attrs and `attrs`.
  StatusOr<OutputRef> V2Collective(Graph& graph, std::string_view scope, std::string_view op,
                                   OutputRef input, tensorflow::DataType dtype,
                                   std::map<std::string, tensorflow::AttrValue> attrs);
  // An int32 scalar Const named `name` (de-duplicated).
  StatusOr<OutputRef> Int32Const(Graph& graph, std::string_view name, int32_t value);
};

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_COLLECTIVE_BUILDER_H_
