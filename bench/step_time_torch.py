"""PyTorch side of bench/step_time_bench.cc: the zoo's mlp, lenet, lstm and resnet50 in eager mode.

Prints one line per model, `<model>: <median ms per step>`, for the C++ bench to read.
The architectures are the zoo's (lib/models/zoo.h): mlp 784-512-512-10 (ReLU), batch
256, plain SGD; LeNet conv 5x5x32 SAME, ReLU, max-pool 2, conv 5x5x64 SAME, ReLU,
max-pool 2, dense 1024 ReLU, dense 10, batch 64, Adam; lstm: nn.LSTM(32, 128,
batch_first=True) over x[32, 20, 32], the last step's output -> Linear(128, 10), Adam
(the zoo's dynamic_rnn model: LSTM cell, forget bias 1, no peepholes); resnet50: ResNet-50
v1.5 (the stride on each bottleneck's 3x3 convolution, batch norm after every
convolution) on x[32, 3, 224, 224] (channels-last memory on a GPU, as the zoo's NHWC),
1001 classes, Momentum 0.9 with weight decay 1e-4. The loss is the mean sparse
softmax cross entropy (nn.CrossEntropyLoss). A step is zero_grad, forward, backward and
optimizer.step on one fixed batch; initialisation does not matter for the time.

Run by the C++ bench with /usr/bin/python3 and the environment it documents
(torch.set_num_threads(2) is set here). With --device cuda (scripts/device_check.sh, on a
GPU machine) the model and batch live on the GPU, TF32 is off (Parallax's default
precision), and each step ends with torch.cuda.synchronize() before it is timed.
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Linear(1024, 10))


class Lstm(nn.Module):
    def __init__(self, dim=32, hidden=128):
        super().__init__()
        self.lstm = nn.LSTM(dim, hidden, batch_first=True)
        self.dense = nn.Linear(hidden, 10)

    def forward(self, x):
        outputs, _ = self.lstm(x)
        return self.dense(outputs[:, -1, :])


class Bottleneck(nn.Module):
    def __init__(self, inputs, filters, stride):
        super().__init__()
        out = 4 * filters
        self.body = nn.Sequential(
            nn.Conv2d(inputs, filters, 1, bias=False), nn.BatchNorm2d(filters), nn.ReLU(),
            nn.Conv2d(filters, filters, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(filters), nn.ReLU(),
            nn.Conv2d(filters, out, 1, bias=False), nn.BatchNorm2d(out))
        self.shortcut = None
        if stride != 1 or inputs != out:
            self.shortcut = nn.Sequential(nn.Conv2d(inputs, out, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(out))

    def forward(self, x):
        skip = x if self.shortcut is None else self.shortcut(x)
        return torch.relu(self.body(x) + skip)


def resnet50(filters=64, blocks=(3, 4, 6, 3), classes=1001):
    layers = [nn.Conv2d(3, filters, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(filters),
              nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1)]
    inputs = filters
    for stage, count in enumerate(blocks):
        width = filters * 2 ** stage
        for block in range(count):
            layers.append(Bottleneck(inputs, width, 2 if block == 0 and stage > 0 else 1))
            inputs = 4 * width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inputs, classes)]
    return nn.Sequential(*layers)


def median_step_ms(model, x, y, optimizer, warmup, steps, sync):
    loss_fn = nn.CrossEntropyLoss()
    times = []
    for i in range(warmup + steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        sync()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("models", nargs="*", default=["mlp", "lenet"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    sync = lambda: None
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        sync = torch.cuda.synchronize
    for name in args.models:
        if name == "mlp":
            model = mlp().to(device)
            x, y = torch.rand(256, 784), torch.randint(0, 10, (256,))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        elif name == "lenet":
            model = lenet().to(device)
            x, y = torch.rand(64, 1, 28, 28), torch.randint(0, 10, (64,))
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        elif name == "lstm":
            model = Lstm().to(device)
            x, y = torch.rand(32, 20, 32), torch.randint(0, 10, (32,))
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        elif name == "resnet50":
            model = resnet50().to(device)
            x, y = torch.rand(32, 3, 224, 224), torch.randint(0, 1001, (32,))
            if args.device == "cuda":
                model = model.to(memory_format=torch.channels_last)
                x = x.to(memory_format=torch.channels_last)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.0125, momentum=0.9,
                                        weight_decay=1e-4)
        else:
            raise SystemExit(f"unknown model {name}")
        x, y = x.to(device), y.to(device)
        ms = median_step_ms(model, x, y, optimizer, args.warmup, args.steps, sync)
        print(f"{name}: {ms:.4f}", flush=True)


if __name__ == "__main__":
    main()
