#!/usr/bin/env python3
"""Writes tests/nn/fractional_pool_fixtures.json: PyTorch's fractional max pooling (values,
indices and the input's gradient) for tests/nn/fractional_pool_test.cc to replay with tandem.

Inputs and random samples are made here from closed formulas in float64, rounded to the case's
dtype, and written into the fixture with the results, so both sides start from the same bits.
Floats are written by Python's repr, which round-trips exactly.

    ~/.cache/tandem/venv/bin/python tests/nn/make_fractional_pool_fixtures.py
"""

import json
import math
import os

import torch
import torch.nn.functional as F

DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def ramp(shape, scale, salt, dtype):
    n = math.prod(shape)
    values = [math.sin(scale * k + salt) * (1 + 0.3 * math.cos(0.7 * k)) for k in range(n)]
    return torch.tensor(values, dtype=torch.float64).view(shape).to(dtype)


def floats(t):
    # JSON has no NaN or infinity: those are written as strings, "nan", "inf" and "-inf".
    return [v if math.isfinite(v) else str(v) for v in t.double().flatten().tolist()]


def case(name, dims, shape, kernel, dtype="float64", output_size=None, output_ratio=None, samples=None,
         edit=None, grad=True):
    dt = DTYPES[dtype]
    x = ramp(shape, 0.37, 0.2, dt)
    if edit:
        x = edit(x)
    batch = shape[0] if len(shape) == dims + 2 else 1
    channels = shape[-dims - 1]
    if samples is None:
        # Irregular values in [0, 1), one per plane and dim.
        count = batch * channels * dims
        samples = [(math.sin(2.3 * k + 0.5) + 1) / 2 * 0.999 for k in range(count)]
        samples = torch.tensor(samples, dtype=torch.float64).view(batch, channels, dims).to(dt)
    pool = F.fractional_max_pool2d if dims == 2 else F.fractional_max_pool3d
    out = {"name": name, "dims": dims, "dtype": dtype, "input_shape": list(shape),
           "input": floats(x), "kernel_size": list(kernel),
           "output_size": list(output_size) if output_size else [],
           "output_ratio": list(output_ratio) if output_ratio else [],
           "samples_shape": list(samples.shape), "samples": floats(samples)}
    leaf = x.clone().requires_grad_(grad)
    try:
        y, indices = pool(leaf, kernel, output_size=output_size, output_ratio=output_ratio, return_indices=True,
                          _random_samples=samples)
    except RuntimeError as e:
        out["error"] = True  # PyTorch refuses (an internal assertion on the window)
        return out
    out["output_shape"] = list(y.shape)  # the gradient below is of sum(y * grad_weight)
    out["output"] = floats(y.detach())
    out["indices"] = [int(v) for v in indices.flatten()]
    if grad:
        weight = ramp(list(y.shape), 0.11, 0.9, dt)
        (y * weight).sum().backward()
        out["grad_weight"] = floats(weight)
        out["grad"] = floats(leaf.grad)
    return out


def with_ties_and_nans(x):
    # For [1, 2, 8, 9] with windows of 2 x 3: the first window of each plane starts at (0, 0), the
    # last at (6, 6).
    x = torch.floor(x * 2) / 2  # many equal values in a window: the first maximum wins
    x[0, 0, 0, 0] = float("nan")  # two NaNs in the first window: the last one wins
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 3, 5] = float("nan")
    x[0, 0, 3, 6] = float("-inf")
    x[0, 1, 6:8, 6:9] = float("-inf")  # a window of -inf only: -inf at its first position
    return x


def main():
    cases = [
        case("2-D k3 to 5x6", 2, [2, 3, 11, 13], [3, 3], output_size=[5, 6]),
        case("2-D k(2,3) ratio (0.5,0.7) unbatched float32", 2, [3, 10, 9], [2, 3], dtype="float32",
             output_ratio=[0.5, 0.7]),
        case("2-D k4 overlapping windows to 7x7", 2, [1, 2, 10, 10], [4, 4], output_size=[7, 7]),
        case("2-D one output position and one window per position", 2, [2, 1, 6, 7], [6, 1], output_size=[1, 7]),
        case("2-D ties, NaNs and -inf", 2, [1, 2, 8, 9], [2, 3], output_size=[4, 4], edit=with_ties_and_nans,
             grad=False),
        case("2-D more sample rows than the batch", 2, [2, 2, 9, 9], [2, 2], output_size=[4, 5],
             samples=torch.tensor([[[0.1, 0.9], [0.5, 0.25]], [[0.0, 0.75], [0.99, 0.3]],
                                   [[0.6, 0.6], [0.2, 0.8]]], dtype=torch.float64)),
        case("2-D samples at 1 and below 0", 2, [1, 2, 8, 8], [2, 2], output_size=[3, 3],
             samples=torch.tensor([[[1.0, -0.5], [0.5, 0.5]]], dtype=torch.float64)),
        case("2-D bfloat16 window arithmetic", 2, [1, 2, 2, 1000], [1, 2], dtype="bfloat16",
             output_size=[2, 700], grad=False),
        case("2-D float16 window arithmetic", 2, [1, 1, 3, 1000], [2, 1], dtype="float16",
             output_size=[2, 700], grad=False),
        case("2-D bfloat16 overlapping windows' gradients", 2, [1, 2, 6, 7], [3, 3], dtype="bfloat16",
             output_size=[3, 4]),
        case("2-D float16 overlapping windows' gradients", 2, [2, 1, 7, 6], [3, 2], dtype="float16",
             output_size=[4, 4]),
        case("2-D float32 window arithmetic", 2, [1, 1, 2, 3001], [1, 3], dtype="float32",
             output_size=[2, 1777]),
        case("2-D bfloat16 rounding past the input", 2, [1, 1, 1, 300], [1, 1], dtype="bfloat16",
             output_size=[1, 200], samples=torch.tensor([[[0.50390625, 0.5]]], dtype=torch.bfloat16), grad=False),
        case("3-D k(2,3,2) to (4,3,5)", 3, [2, 2, 7, 8, 9], [2, 3, 2], output_size=[4, 3, 5]),
        case("3-D k2 ratio 0.6 unbatched float32", 3, [2, 6, 7, 8], [2, 2, 2], dtype="float32",
             output_ratio=[0.6, 0.6, 0.6]),
    ]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fractional_pool_fixtures.json")
    with open(path, "w") as f:
        # One case per line.
        f.write('{"torch": %s, "cases": [\n' % json.dumps(torch.__version__))
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write("\n]}\n")
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
