// Queues of TF1 input pipelines (FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue and
// tf.contrib.staging's StagingArea), filled on demand by their queue runners.
//
// In TensorFlow, QueueRunner threads run each queue's enqueue ops in a loop while the
// training loop dequeues. Parallax runs a queue's *runners* — the enqueue ops of the
// graph that write into it (QueueEnqueue(Many)(V2) whose handle input is the queue; for
// a staging area, its Stage ops) — on demand instead: a dequeue that finds too few
// elements runs the next runner (round robin, as the threads would take turns) as a
// nested step of the graph (Session::RunRoot) until enough are there. The runner's own
// inputs may dequeue from further queues, which fill themselves the same way. So a
// pipeline of readers, parsers and batching queues runs deterministically on the
// training thread, and what one step dequeues is the same on every run.
//
// Semantics kept from TensorFlow: elements leave a FIFO queue in the order they came;
// a RandomShuffleQueue dequeues uniformly from its elements once it holds
// min_after_dequeue more than asked for (or is closed), seeded by (seed, seed2); a runner
// whose enqueue op ends with OutOfRange (an input that ran out: string_input_producer's
// num_epochs) is done, and a queue whose runners are all done is closed, as QueueRunner
// closes it; dequeuing from a closed queue with too few elements is OutOfRange.
// Differences: capacity never blocks (runners run only when a dequeue needs elements, so
// queues hold what one dequeue needs plus min_after_dequeue); enqueue ops run by the
// training step itself (not as runners) are fine too.
#ifndef PARALLAX_LIB_RUNTIME_PIPELINE_QUEUE_H_
#define PARALLAX_LIB_RUNTIME_PIPELINE_QUEUE_H_

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/data/random.h"
#include "lib/runtime/pipeline/dataset.h"
#include "lib/runtime/resource.h"
#include "lib/runtime/session.h"

namespace parallax::pipeline {

// A resource op's resource name: its `shared_name` attr, else its node name.
std::string ResourceNameOf(const Node& node);

// The runners of the queue (or, with `staging`, staging area) named `name` in `graph`:
// the enqueue ops writing into it (Stage ops of that name), in node order.
std::vector<std::string> QueueRunners(const Graph& graph, const std::string& name, bool staging);

class QueueResource : public Resource {
 public:
  enum class Kind { kFifo, kRandomShuffle, kPaddingFifo, kStagingArea };
  struct Options {
    Kind kind = Kind::kFifo;
    std::vector<DataType> types;
    // Per component: the element shape (-1: any size); empty when the queue has none.
    std::vector<std::vector<int64_t>> shapes;
    int64_t min_after_dequeue = 0;  // RandomShuffle
    uint64_t seed = 0;              // RandomShuffle
  };

  // `name`: the resource name; `node`: the queue op's node (its enqueue ops read it).
  QueueResource(std::string name, std::string node, Options options);
  std::string TypeName() const override;

  // Adds one element / the rows of a batch (EnqueueMany). Errors: dtype or shape not the
  // queue's, a closed queue.
  Status Enqueue(Element element);
  Status EnqueueMany(const Element& batch);

  // Dequeues `n` elements (n = -1: one element, not batched), running the runners as
  // needed. `up_to`: fewer than n are fine once the queue is closed. OutOfRange when the
  // queue is closed with too few elements.
  StatusOr<Element> Dequeue(int64_t n, bool up_to, Session& session);

  void Close();
  bool closed();
  int64_t size();

 private:
  // Finds the runners in the session's root graph (once).
  void FindRunners(Session& session);
  // Runs the next runner once. false: every runner is done (the queue is then closed).
  StatusOr<bool> RunOneRunner(Session& session);
  Status CheckElement(const Element& element, std::string_view what) const;

  std::string name_, node_;
  Options options_;
  std::mutex mu_;
  std::deque<Element> elements_;
  bool closed_ = false;
  bool runners_found_ = false;
  std::vector<std::string> runners_;
  std::vector<bool> runner_done_;
  size_t next_runner_ = 0;
  DataRng rng_;
};

}  // namespace parallax::pipeline

#endif  // PARALLAX_LIB_RUNTIME_PIPELINE_QUEUE_H_
