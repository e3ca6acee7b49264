#!/usr/bin/env python3
"""Writes tests/nn/interpolate_fixtures.json: PyTorch's F.interpolate in the modes bicubic and
area and with antialias, for tests/nn/interpolate_test.cc to replay with tandem: every output
value, and every value of the input's gradient of sum(output * sin(0.37 i)).

The input is sin(0.7 i) over its flat index, computed in float64 and rounded to the case's
dtype, as the test's sine_ramp makes it. float64 values are written by Python's repr, the others
with nine significant digits.

PyTorch 2.15's CPU kernel for antialias repeats the first output row in every row when the
output is one column wide (it is right on the same input transposed): that case's reference is
taken through the transpose. With antialias, a dim that keeps its size under a scale_factor other
than 1 is copied by PyTorch's forward but resampled by its backward (its own gradcheck fails
there): that case's reference takes the factor 1 for the dim, which gives the same forward.

    ~/.cache/tandem/venv/bin/python tests/nn/make_interpolate_fixtures.py
"""

import json
import math
import os

import torch
import torch.nn.functional as F

DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def ramp(shape, scale, dtype):
    n = math.prod(shape)
    return torch.sin(torch.arange(n, dtype=torch.float64) * scale).view(shape).to(dtype)


def floats(t):
    values = t.detach().double().flatten().tolist()
    # Nine significant digits tell float32's values apart (16-bit ones too), in half repr's length.
    return values if t.dtype == torch.float64 else [float(f"{v:.9g}") for v in values]


def case(name, dtype, shape, mode, size=None, scale_factor=None, align_corners=None, antialias=False,
         recompute_scale_factor=None, through_transpose=False, reference_scale_factor=None):
    dt = DTYPES[dtype]
    x = ramp(shape, 0.7, dt).requires_grad_()
    kwargs = dict(mode=mode, align_corners=align_corners, antialias=antialias,
                  recompute_scale_factor=recompute_scale_factor)
    if through_transpose:
        flipped = list(reversed(size)) if size else None
        flipped_factor = list(reversed(scale_factor)) if scale_factor else None
        y = F.interpolate(x.transpose(-1, -2), size=flipped, scale_factor=flipped_factor, **kwargs).transpose(-1, -2)
    else:
        # One factor for every dim: PyTorch takes it as a number.
        factor = reference_scale_factor or scale_factor
        factor = factor[0] if factor and len(factor) == 1 else factor
        y = F.interpolate(x, size=size, scale_factor=factor, **kwargs)
    (y * ramp(list(y.shape), 0.37, dt)).sum().backward()
    options = {"mode": mode, "antialias": antialias}
    if size is not None:
        options["size"] = size
    if scale_factor is not None:
        options["scale_factor"] = scale_factor
    if align_corners is not None:
        options["align_corners"] = align_corners
    if recompute_scale_factor:
        options["recompute_scale_factor"] = True
    return {"name": name, "dtype": dtype, "input_shape": shape, "options": options,
            "output_shape": list(y.shape), "output": floats(y), "grad": floats(x.grad)}


def main():
    cases = []
    for dtype in ["float64", "float32"]:
        cases += [
            case("bicubic to a size", dtype, [1, 3, 5, 7], "bicubic", size=[9, 4]),
            case("bicubic by factors", dtype, [1, 3, 5, 7], "bicubic", scale_factor=[1.7, 0.6]),
            case("bicubic keeps a size, resampled", dtype, [1, 2, 4, 4], "bicubic", scale_factor=[1.2, 2.0]),
            case("bicubic with corners", dtype, [1, 3, 5, 7], "bicubic", size=[8, 11], align_corners=True),
            case("bicubic recomputing the factor", dtype, [1, 2, 5, 7], "bicubic", scale_factor=[1.3, 2.1],
                 recompute_scale_factor=True),
            case("bilinear antialias down", dtype, [1, 2, 13, 17], "bilinear", size=[5, 6], antialias=True),
            case("bilinear antialias by factors", dtype, [1, 2, 13, 17], "bilinear", scale_factor=[0.4, 0.3],
                 antialias=True),
            case("bilinear antialias up", dtype, [1, 2, 3, 4], "bilinear", size=[7, 9], antialias=True),
            case("bilinear antialias with corners", dtype, [1, 2, 13, 17], "bilinear", size=[4, 7],
                 align_corners=True, antialias=True),
            case("bicubic antialias down", dtype, [1, 2, 13, 17], "bicubic", size=[5, 6], antialias=True),
            case("bicubic antialias up and down", dtype, [1, 2, 6, 17], "bicubic", size=[11, 3], antialias=True),
            case("bicubic antialias keeps a size", dtype, [1, 2, 6, 17], "bicubic", scale_factor=[1.1, 0.5],
                 antialias=True, reference_scale_factor=[1.0, 0.5]),
            case("bilinear antialias to one column", dtype, [1, 2, 13, 17], "bilinear", size=[5, 1],
                 antialias=True, through_transpose=True),
            case("area 1d", dtype, [2, 3, 11], "area", size=[4]),
            case("area 2d", dtype, [1, 2, 13, 17], "area", size=[5, 6]),
            case("area 2d by a factor", dtype, [1, 2, 13, 17], "area", scale_factor=[0.5]),
            case("area 3d", dtype, [1, 2, 5, 6, 7], "area", size=[3, 4, 5]),
        ]
    for dtype in ["bfloat16", "float16"]:
        cases.append(case("bicubic 16-bit", dtype, [1, 3, 5, 7], "bicubic", size=[9, 4]))
        cases.append(case("bicubic 16-bit with corners", dtype, [1, 3, 5, 7], "bicubic", size=[8, 11],
                          align_corners=True))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "interpolate_fixtures.json")
    with open(path, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"{len(cases)} cases written to {path}")


if __name__ == "__main__":
    main()
