// Which ranks of a job share a GPU: NCCL refuses a communicator in which two ranks use
// the same device, so such a job moves its GPU tensors through MPI in host memory
// instead (nccl_communicator.h). Kept apart from NCCL so that it is tested without one.
#ifndef PARALLAX_LIB_RUNTIME_COMM_GPU_SHARING_H_
#define PARALLAX_LIB_RUNTIME_COMM_GPU_SHARING_H_

#include <string>
#include <vector>

namespace parallax {

// `gpu_by_rank[r]`: rank r's GPU, named so that two ranks name the same device alike and
// different devices differently across the job ("host-a/0000:1b:00.0": host and PCI bus
// id). "" when no two ranks share one; else one clause naming each shared GPU and its
// ranks in rank order: "ranks 0 and 1 share GPU host-a/0000:1b:00.0; ranks 2, 3 and 5
// share GPU host-b/0000:1b:00.0".
std::string DescribeSharedGpus(const std::vector<std::string>& gpu_by_rank);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_COMM_GPU_SHARING_H_
