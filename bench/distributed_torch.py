"""PyTorch side of bench/distributed_bench.py: the zoo's mlp and embedding models trained
with DistributedDataParallel (gloo) on N ranks, or plainly on one.

Run one process per rank under mpirun (the rank and world size come from OpenMPI's
OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE; rank 0 also hosts the TCP rendezvous at
127.0.0.1:--port). With one rank the model is trained without DDP or a process group:
the single-device baseline of the scaling efficiency, as Parallax's is the untransformed
graph.

Models, as the zoo builds them (lib/models/zoo.cc; bench/step_time_torch.py mirrors the
same mlp):
  mlp        784-512-512-10, ReLU, batch 256 per rank, SGD lr 0.01;
  embedding  ids [128, 16] int64 in [0, 100000) -> nn.Embedding(100000, 128) -> mean over
             the 16 -> Linear(128, 10), batch 128 per rank, Adagrad lr 0.01. The
             embedding's gradient is sparse (sparse=True: a torch sparse COO gradient, as
             TF's IndexedSlices), which DDP's gloo reducer all-gathers (indices and values)
             and sums: Parallax's *allgather* strategy. --dense-embedding makes it a dense
             gradient all-reduced whole: Parallax's *densify*.
Loss: mean softmax cross entropy. A step draws a new random batch (x uniform in [0, 1),
ids uniform, labels uniform in [0, 10)), then zero_grad, forward, backward (DDP
all-reduces the gradients during it), optimizer.step.

Prints one line on rank 0: `<model>: <examples/s over all ranks> <ms per step>`: --steps
timed steps after --warmup, the ranks started together by a barrier.
"""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


class Embedding(nn.Module):
    def __init__(self, vocab, dim, sparse):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, dim, sparse=sparse)
        self.dense = nn.Linear(dim, 10)

    def forward(self, ids):
        return self.dense(self.embeddings(ids).mean(dim=1))


def build(name, dense_embedding):
    if name == "mlp":
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10))
        return model, 256, lambda p: torch.optim.SGD(p, lr=0.01)
    if name == "embedding":
        model = Embedding(100000, 128, sparse=not dense_embedding)
        return model, 128, lambda p: torch.optim.Adagrad(p, lr=0.01)
    raise SystemExit(f"distributed_torch.py: unknown model {name}")


def batch_of(name, batch, generator):
    y = torch.randint(0, 10, (batch,), generator=generator)
    if name == "mlp":
        return torch.rand(batch, 784, generator=generator), y
    return torch.randint(0, 100000, (batch, 16), generator=generator), y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=["mlp", "embedding"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--port", type=int, default=29500)
    parser.add_argument("--dense-embedding", action="store_true")
    args = parser.parse_args()
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)  # the same initial parameters on every rank (DDP broadcasts anyway)
    model, batch, make_optimizer = build(args.model, args.dense_embedding)
    if world > 1:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                                world_size=world, timeout=datetime.timedelta(seconds=120))
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = make_optimizer(model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(1000 + rank)

    def step():
        x, y = batch_of(args.model, batch, generator)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

    for _ in range(args.warmup):
        step()
    if world > 1:
        dist.barrier()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    if world > 1:
        dist.barrier()  # the step is done when every rank is
    seconds = time.perf_counter() - start
    if rank == 0:
        print(f"{args.model}: {args.steps * batch * world / seconds:.1f} "
              f"{seconds / args.steps * 1e3:.3f}", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
