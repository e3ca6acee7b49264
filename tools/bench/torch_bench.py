"""PyTorch's side of `tandem bench`: the operations of tools/bench/cpu_benchmarks.cc under the
same names, on CPU tensors of the same shapes, timed the same way (median over repeated
batches), and, when PyTorch sees a GPU, those of tools/bench/cuda_benchmarks.cc on cuda:0, timed
with CUDA events around batches of calls as tandem times them. Prints one JSON object:
{"torch": version, "threads": n, "results": {name: seconds}}."""
import argparse
import json
import re
import statistics
import sys
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


CALLS_PER_BATCH = 10  # as kCallsPerIteration in cuda_benchmarks.cc


def timed_cuda(fn, min_time, repetitions):
    """Median GPU seconds per call, each batch of CALLS_PER_BATCH calls between two CUDA events,
    behind one untimed call that keeps the GPU busy while the rest are queued (as tandem's)."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    per_call, spent = [], 0.0
    while len(per_call) < repetitions or spent < min_time:
        fn()
        start.record()
        for _ in range(CALLS_PER_BATCH):
            fn()
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1e3
        per_call.append(seconds / CALLS_PER_BATCH)
        spent += seconds
        if len(per_call) >= 1000:
            break
    return statistics.median(per_call)


def timed_wall_cuda(fn, min_time, repetitions):
    """Median host seconds per call, each call ending with the GPU synchronised (as tandem times
    work that spans devices)."""
    fn()
    torch.cuda.synchronize()
    per_call, spent = [], 0.0
    while len(per_call) < repetitions or spent < min_time:
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        per_call.append(time.perf_counter() - start)
        spent += per_call[-1]
        if len(per_call) >= 1000:
            break
    return statistics.median(per_call)


def cuda_cases():
    gpu = torch.device("cuda:0")
    F = torch.nn.functional
    # What tandem does unless told otherwise: convolutions in exact float32 (PyTorch's default lets
    # cuDNN use TF32), and 16-bit products that never add partial sums in 16 bits.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    for mib in (64, 1024):
        n = (mib << 20) // 4
        x, y = torch.randn(n, device=gpu), torch.empty(n, device=gpu)
        yield f"cuda_copy/MiB:{mib}", (lambda x=x, y=y: y.copy_(x))
        a, b = torch.randn(n, device=gpu), torch.randn(n, device=gpu)
        yield f"cuda_add/MiB:{mib}", (lambda a=a, b=b: a + b)
        yield f"cuda_mul/MiB:{mib}", (lambda a=a, b=b: a * b)
        yield f"cuda_gelu/MiB:{mib}", (lambda a=a: F.gelu(a))
        del x, y, b
        rows = a.view(n // 4096, 4096)
        yield f"cuda_sum_rows/MiB:{mib}", (lambda r=rows: r.sum(1))
        yield f"cuda_sum_cols/MiB:{mib}", (lambda r=rows: r.sum(0))
        yield f"cuda_softmax/MiB:{mib}", (lambda r=rows: r.softmax(1))
        w, bias = torch.ones(4096, device=gpu), torch.zeros(4096, device=gpu)
        yield f"cuda_layernorm/MiB:{mib}", (lambda r=rows, w=w, bias=bias: F.layer_norm(r, (4096,), w, bias))
        logits = a.view(n // 1024, 1024)
        target = torch.randint(0, 1024, (n // 1024,), device=gpu)
        yield f"cuda_cross_entropy/MiB:{mib}", (lambda l=logits, t=target: F.cross_entropy(l, t))
    for name, dtype, tf32 in (("cuda_gemm_f32", torch.float32, False), ("cuda_gemm_tf32", torch.float32, True),
                              ("cuda_gemm_bf16", torch.bfloat16, False)):
        for n in (4096, 8192):
            a, b = torch.randn(n, n, device=gpu, dtype=dtype), torch.randn(n, n, device=gpu, dtype=dtype)

            def mm(a=a, b=b, tf32=tf32):
                torch.backends.cuda.matmul.allow_tf32 = tf32
                return torch.matmul(a, b)
            yield f"{name}/{n}", mm
    torch.backends.cuda.matmul.allow_tf32 = False
    yield "cuda_mlp_train_step", train_step(mlp(), 128, gpu)
    yield "cuda_cnn_train_step", train_step(cnn(), 64, gpu)
    # PyTorch's DataParallel on the default MLP, batch 512: one GPU, and two where it has them.
    for devices in (1, 2):
        if torch.cuda.device_count() >= devices:
            yield f"cuda_dp_mlp512_step/devices:{devices}", train_step(
                torch.nn.DataParallel(mlp().to(gpu), device_ids=list(range(devices))), 512, gpu)


def cases():
    m16 = 1 << 24
    a16, b16 = torch.randn(m16), torch.randn(m16)
    sq = torch.randn(4096, 4096)
    one_a, one_b = torch.ones(1), torch.ones(1)
    yield "add_f32_16M", lambda: a16 + b16
    yield "exp_f32_16M", lambda: a16.exp()
    h16 = a16.half()
    yield "mul_f16_scalar_16M", lambda: h16 * 0.1
    b16 = a16.bfloat16()
    yield "mul_bf16_scalar_16M", lambda: b16 * 0.1
    yield "sum_rows_4096", lambda: sq.sum(1)
    yield "sum_cols_4096", lambda: sq.sum(0)
    yield "softmax_rows_4096", lambda: sq.softmax(1)
    F = torch.nn.functional
    ln_x = torch.randn(4096, 1024, requires_grad=True)
    ln_w, ln_b = torch.ones(1024, requires_grad=True), torch.zeros(1024, requires_grad=True)
    ln_g = torch.randn(4096, 1024)
    yield "layernorm_fwd_bwd_4096x1024", lambda: torch.autograd.grad(
        F.layer_norm(ln_x, (1024,), ln_w, ln_b), (ln_x, ln_w, ln_b), ln_g)
    logits, target = torch.randn(4096, 1000, requires_grad=True), torch.randint(0, 1000, (4096,))
    yield "cross_entropy_fwd_bwd_4096x1000", lambda: torch.autograd.grad(F.cross_entropy(logits, target), logits)
    head_x = torch.randn(1024, 128, requires_grad=True)
    head_w = (torch.randn(8192, 128) * 0.05).requires_grad_()
    head_t = torch.randint(0, 8192, (1024,))
    # Looked up when a case runs: a PyTorch without them fails these two cases, not the ones after.
    def linear_cross_entropy_grad(chunked):
        options = torch.nn.LinearCrossEntropyOptions() if chunked else None
        return torch.autograd.grad(F.linear_cross_entropy(head_x, head_w, head_t, options=options),
                                   (head_x, head_w))[1]
    yield "linear_cross_entropy_1024x128x8192", lambda: linear_cross_entropy_grad(False)
    yield "linear_cross_entropy_chunked_1024x128x8192", lambda: linear_cross_entropy_grad(True)
    yield "dropout_f32_16M", lambda: F.dropout(a16, 0.1, training=True)
    for n in (256, 512, 1024, 2048):
        a, b = torch.randn(n, n), torch.randn(n, n)
        yield f"sgemm/{n}", (lambda a=a, b=b: a.mm(b))
    yield "add_1elem", lambda: one_a + one_b
    yield "mlp_train_step", train_step(mlp(), 128)
    yield "mlp_train_step_bf16", train_step(mlp(), 128, autocast=torch.bfloat16)
    yield "cnn_train_step", train_step(cnn(), 64)
    yield "sgd_step_mlp", optimizer_step(lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9))
    yield "adamw_step_mlp", optimizer_step(lambda params: torch.optim.AdamW(params, lr=1e-3))


def mlp():
    nn = torch.nn
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def cnn():
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def train_step(model, batch, device=torch.device("cpu"), autocast=None):
    """One step of tandem's train_step: forward, cross-entropy, backward, SGD with momentum; with
    autocast, the forward and the loss under torch.autocast to that dtype."""
    torch.manual_seed(0)
    model = model.to(device)
    x, y = torch.randn(batch, 1, 28, 28, device=device), torch.randint(0, 10, (batch,), device=device)
    sgd = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        sgd.zero_grad()
        with torch.autocast(device.type, dtype=autocast, enabled=autocast is not None):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        sgd.step()
        return loss
    return step


def optimizer_step(make_optimizer):
    """tandem's optimizer_step: one step of PyTorch's default algorithm over the MLP's parameters,
    their gradients fixed beforehand."""
    torch.manual_seed(0)
    params = list(mlp().parameters())
    for p in params:
        p.grad = torch.randn_like(p)
    optimizer = make_optimizer(params)
    return optimizer.step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--filter", default=".")
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--repetitions", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pattern = re.compile(args.filter)
    results, errors = {}, {}

    def run(all_cases, timer_of):
        """Times the cases the filter selects; one that fails is reported and the rest still run."""
        try:
            for name, fn in all_cases:
                if not pattern.search(name):
                    continue
                try:
                    results[name] = timer_of(name)(fn, args.min_time, args.repetitions)
                except Exception as e:  # out of memory, a CUDA error: this case only
                    errors[name] = f"{type(e).__name__}: {e}"
        except Exception as e:  # making the cases failed: the ones after it are lost
            errors["(setup)"] = f"{type(e).__name__}: {e}"

    run(cases(), lambda name: timed)
    if torch.cuda.is_available():
        run(cuda_cases(), lambda name: timed_wall_cuda if name.startswith("cuda_dp") else timed_cuda)
    for name, error in errors.items():
        print(f"torch_bench.py: {name} failed: {error}", file=sys.stderr)
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "results": results,
                      "errors": errors}))


if __name__ == "__main__":
    main()
