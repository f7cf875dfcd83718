// make_tf_data: writes the input files of lib/testing/tf_data.h from the command line.
//   make_tf_data slim-mnist OUT.tfrecord N
//   make_tf_data softmax-examples OUT.tfrecord N
//   make_tf_data graph-images GRAPH DIR HEIGHT WIDTH
//   make_tf_data checkpoint GRAPH PREFIX [all]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lib/graph/graph_io.h"
#include "lib/testing/tf_data.h"

int main(int argc, char** argv) {
  using namespace parallax;
  const std::string what = argc > 1 ? argv[1] : "";
  Status status;
  if (what == "slim-mnist" && argc == 4) {
    status = testing::WriteSlimMnist(argv[2], std::atoi(argv[3]));
  } else if (what == "softmax-examples" && argc == 4) {
    status = testing::WriteSoftmaxExamples(argv[2], std::atoi(argv[3]));
  } else if (what == "graph-images" && argc == 6) {
    StatusOr<Graph> graph = LoadGraph(argv[2]);
    if (!graph.ok()) {
      status = graph.status();
    } else {
      StatusOr<int> n = testing::WriteGraphImages(*graph, argv[3], std::atoi(argv[4]), std::atoi(argv[5]));
      if (n.ok()) std::printf("%d image names\n", *n);
      status = n.status();
    }
  } else if (what == "checkpoint" && (argc == 4 || argc == 5)) {
    StatusOr<Graph> graph = LoadGraph(argv[2]);
    if (!graph.ok()) {
      status = graph.status();
    } else {
      StatusOr<int> n = testing::WriteRandomCheckpoint(*graph, argv[3], argc == 5);
      if (n.ok()) std::printf("%d tensors\n", *n);
      status = n.status();
    }
  } else {
    std::fprintf(stderr, "usage: make_tf_data slim-mnist OUT N | softmax-examples OUT N | "
                         "checkpoint GRAPH PREFIX [all]\n");
    return 2;
  }
  if (!status.ok()) {
    std::fprintf(stderr, "make_tf_data: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
