"""PyTorch's side of `tandem bench`: the operations of tools/bench/cpu_benchmarks.cc under the
same names, on CPU tensors of the same shapes, timed the same way (median over repeated
batches). Prints one JSON object: {"torch": version, "threads": n, "results": {name: seconds}}."""
import argparse
import json
import re
import statistics
import time

import torch


def timed(fn, min_time, repetitions):
    """Median seconds per call over `repetitions` batches of about min_time / repetitions each."""
    fn()
    n = 1
    while True:  # a batch long enough to time reliably
        start = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - start > min_time / repetitions or n >= 1 << 24:
            break
        n *= 2
    per_call = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        per_call.append((time.perf_counter() - start) / n)
    return statistics.median(per_call)


def cases():
    m16 = 1 << 24
    a16, b16 = torch.randn(m16), torch.randn(m16)
    sq = torch.randn(4096, 4096)
    one_a, one_b = torch.ones(1), torch.ones(1)
    yield "add_f32_16M", lambda: a16 + b16
    yield "exp_f32_16M", lambda: a16.exp()
    yield "sum_rows_4096", lambda: sq.sum(1)
    yield "sum_cols_4096", lambda: sq.sum(0)
    yield "softmax_rows_4096", lambda: sq.softmax(1)
    for n in (256, 512, 1024, 2048):
        a, b = torch.randn(n, n), torch.randn(n, n)
        yield f"sgemm/{n}", (lambda a=a, b=b: a.mm(b))
    yield "add_1elem", lambda: one_a + one_b
    yield "mlp_train_step", train_step(mlp(), 128)
    yield "cnn_train_step", train_step(cnn(), 64)


def mlp():
    nn = torch.nn
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def cnn():
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def train_step(model, batch):
    """One step of tandem's train_step: forward, cross-entropy, backward, SGD with momentum."""
    torch.manual_seed(0)
    x, y = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
    sgd = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        sgd.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        sgd.step()
        return loss
    return step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--filter", default=".")
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--repetitions", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pattern = re.compile(args.filter)
    results = {}
    for name, fn in cases():
        if pattern.search(name):
            results[name] = timed(fn, args.min_time, args.repetitions)
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "results": results}))


if __name__ == "__main__":
    main()
