"""PyTorch side of bench/workloads_bench.sh: the zoo's resnet50 and transformer in eager mode.

Prints one line per model, `<model>: <median ms per step>`, for the script to read.

resnet50: ResNet-50 v1.5 as the zoo builds it (lib/models/resnet.h): conv 7x7/2 64, batch
norm, ReLU, max pool 3x3/2, bottleneck stages [3, 4, 6, 3] with the stride on the 3x3
convolution, global average pool, dense 1001; batch norm momentum 0.003 (TF's 0.997),
epsilon 1e-5, in training mode; SGD with momentum 0.9 at lr 0.0125 and L2 weight decay
1e-4 on everything but batch norm (PyTorch's weight_decay, the same gradient as TF's
1e-4 * sum of l2_loss); batch 32 of 224x224x3 float32 images, channels first (NCHW,
PyTorch's native layout) or, as `resnet50_channels_last`, the same network and batch in
torch.channels_last memory format (NHWC, the zoo's default layout).

transformer: a BERT encoder classifier as the zoo builds it: word, position and token-type
embeddings, LayerNorm (epsilon 1e-12), dropout 0.1; nn.TransformerEncoder of post-norm
layers (d_model H, nhead, dim_feedforward 4H, GELU, dropout 0.1, batch_first); the pooler
(first token, dense H, tanh) and a dense 10 classifier; AdamW (lr 1e-4, weight decay 0.01);
BERT-base shapes: 12 layers, hidden 768, 12 heads, vocabulary 30522, seq 128, batch 8.

A step is zero_grad, forward, mean cross entropy, backward and optimizer.step on one fixed
batch; the first --warmup steps are not timed. torch.set_num_threads(--threads).
"""
import argparse
import torch
import torch.nn as nn

from step_time_torch import median_step_ms  # bench/step_time_torch.py, beside this file


class Bottleneck(nn.Module):
    def __init__(self, in_c, filters, stride, projection):
        super().__init__()
        out_c = 4 * filters
        self.shortcut = None
        if projection:
            self.shortcut = nn.Sequential(nn.Conv2d(in_c, out_c, 1, stride, bias=False), bn(out_c))
        self.body = nn.Sequential(
            nn.Conv2d(in_c, filters, 1, bias=False), bn(filters), nn.ReLU(inplace=True),
            nn.Conv2d(filters, filters, 3, stride, padding=1, bias=False), bn(filters),
            nn.ReLU(inplace=True),
            nn.Conv2d(filters, out_c, 1, bias=False), bn(out_c))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        shortcut = x if self.shortcut is None else self.shortcut(x)
        return self.relu(self.body(x) + shortcut)


def bn(channels):
    return nn.BatchNorm2d(channels, eps=1e-5, momentum=0.003)


def resnet50(blocks=(3, 4, 6, 3), filters=64, classes=1001):
    layers = [nn.Conv2d(3, filters, 7, 2, padding=3, bias=False), bn(filters), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, padding=1)]
    in_c = filters
    for stage, count in enumerate(blocks):
        f = filters << stage
        for block in range(count):
            stride = 2 if stage > 0 and block == 0 else 1
            layers.append(Bottleneck(in_c, f, stride, block == 0))
            in_c = 4 * f
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(in_c, classes)]
    return nn.Sequential(*layers)


class Bert(nn.Module):
    def __init__(self, vocab, hidden, layers, heads, seq, dropout=0.1):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(seq, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout, activation="gelu",
                                           batch_first=True, layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.pooler = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, 10)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.word(ids) + self.position(positions) + self.token_type(torch.zeros_like(ids))
        x = self.encoder(self.dropout(self.norm(x)))
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch", type=int, default=0, help="0: the model's (32, 8)")
    parser.add_argument("models", nargs="*",
                        default=["resnet50", "resnet50_channels_last", "transformer"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for name in args.models:
        if name in ("resnet50", "resnet50_channels_last"):
            batch = args.batch or 32
            model = resnet50()
            x, y = torch.rand(batch, 3, 224, 224), torch.randint(0, 10, (batch,))
            if name == "resnet50_channels_last":
                model = model.to(memory_format=torch.channels_last)
                x = x.to(memory_format=torch.channels_last)
            decay = [p for n, p in model.named_parameters() if p.dim() > 1 or "Linear" in n]
            no_decay = [p for p in model.parameters() if p.dim() == 1]
            # The dense bias is decayed in the zoo too (official excludes batch norm only).
            dense_bias = model[-1].bias
            no_decay = [p for p in no_decay if p is not dense_bias]
            optimizer = torch.optim.SGD([{"params": decay + [dense_bias], "weight_decay": 1e-4},
                                         {"params": no_decay, "weight_decay": 0.0}],
                                        lr=0.0125, momentum=0.9)
        elif name == "transformer":
            batch = args.batch or 8
            model = Bert(30522, 768, 12, 12, 128)
            x, y = torch.randint(0, 30522, (batch, 128)), torch.randint(0, 10, (batch,))
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
        else:
            raise SystemExit(f"unknown model {name}")
        model.train()
        ms = median_step_ms(model, x, y, optimizer, args.warmup, args.steps)
        print(f"{name}: {ms:.1f}", flush=True)


if __name__ == "__main__":
    main()
