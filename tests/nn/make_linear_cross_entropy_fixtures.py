#!/usr/bin/env python3
"""Writes tests/nn/linear_cross_entropy_fixtures.json: PyTorch's linear_cross_entropy (the loss
and the gradients of input, linear weight and bias, chunked and not) and the chunk sizes its
options resolve to, for tests/nn/linear_cross_entropy_test.cc to replay with tandem.

Operands are made here from closed formulas in float64, rounded to the case's dtype, and written
into the fixture, so both sides start from the same bits. Floats are written by Python's repr.

    ~/.cache/tandem/venv/bin/python tests/nn/make_linear_cross_entropy_fixtures.py
"""

import json
import math
import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16}


def ramp(shape, scale, salt, dtype):
    n = math.prod(shape)
    values = [math.sin(scale * k + salt) * (1 + 0.3 * math.cos(0.7 * k)) for k in range(n)]
    return torch.tensor(values, dtype=torch.float64).view(shape).to(dtype)


def floats(t):
    # JSON has no NaN or infinity: those are written as strings.
    return [v if math.isfinite(v) else str(v) for v in t.detach().double().flatten().tolist()]


def case(name, batch, in_features, classes, dtype="float64", out_features=(), bias=True, targets="index",
         class_weight=False, reduction="mean", ignore=(), ignore_index=None, label_smoothing=0.0, options=None,
         weight_dtype=None, bias_dtype=None):
    dt = DTYPES[dtype]
    weight_dtype, bias_dtype = weight_dtype or dtype, bias_dtype or dtype
    shape = [batch, in_features] if batch is not None else [in_features]
    x = ramp(shape, 0.37, 0.2, dt).requires_grad_()
    w = (ramp([classes, *out_features, in_features], 0.23, 1.1, DTYPES[weight_dtype]) * 0.5).requires_grad_()
    b = ramp([classes, *out_features], 0.41, 0.7, DTYPES[bias_dtype]).requires_grad_() if bias else None
    rows = [batch] if batch is not None else []
    if targets == "index":
        n = math.prod(rows + list(out_features))
        t = torch.tensor([(7 * k + 3) % classes for k in range(n)], dtype=torch.int64).view(rows + list(out_features))
        flat = t.view(-1)
        for k in ignore:
            flat[k] = -100 if ignore_index is None else ignore_index
    else:
        t = ramp(rows + [classes, *out_features], 0.29, 0.4, torch.float64).softmax(len(rows)).to(dt)
    cw = (ramp([classes], 0.53, 0.3, torch.float64).abs() + 0.5).to(dt) if class_weight else None
    opts = None if options is None else nn.LinearCrossEntropyOptions(**options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = F.linear_cross_entropy(x, w, t, linear_bias=b, weight=cw, reduction=reduction,
                                      ignore_index=ignore_index, label_smoothing=label_smoothing, options=opts)
    grad_weight = ramp(list(loss.shape), 0.11, 0.9, dt) if reduction == "none" else None
    (loss * grad_weight).sum().backward() if grad_weight is not None else loss.backward()
    out = {"name": name, "dtype": dtype, "weight_dtype": weight_dtype, "bias_dtype": bias_dtype,
           "chunked": "chunked" in type(loss.grad_fn).__name__,
           "input_shape": shape, "input": floats(x),
           "weight_shape": list(w.shape), "linear_weight": floats(w),
           "bias": floats(b) if bias else None,
           "target_shape": list(t.shape), "target": t.flatten().tolist() if targets == "index" else floats(t),
           "probabilities": targets != "index", "class_weight": floats(cw) if class_weight else None,
           "reduction": reduction, "ignore_index": ignore_index, "label_smoothing": label_smoothing,
           "options": options, "loss_shape": list(loss.shape), "loss": floats(loss),
           "grad_weight": floats(grad_weight) if grad_weight is not None else None,
           "grad_input": floats(x.grad), "grad_linear_weight": floats(w.grad),
           "grad_bias": floats(b.grad) if bias else None}
    return out


def plan(batch, in_features, classes, dtype, options, probabilities=False):
    opts = nn.LinearCrossEntropyOptions(**options)
    try:
        adjusted = opts._adjust(num_batches=batch, in_features=in_features, num_classes=classes,
                                dtype=DTYPES[dtype], device=torch.device("cpu"), prob_target=probabilities)
    except ValueError:
        return {"batch": batch, "in_features": in_features, "classes": classes, "dtype": dtype,
                "options": options, "probabilities": probabilities, "error": True}
    return {"batch": batch, "in_features": in_features, "classes": classes, "dtype": dtype, "options": options,
            "probabilities": probabilities, "batch_chunk_size": adjusted.batch_chunk_size,
            "acc_dtype": str(adjusted.acc_dtype).replace("torch.", "")}


def main():
    cases = [
        case("mean, bias, ignored rows, class weights, chunks of 3", 10, 4, 7, class_weight=True, ignore=(3, 8),
             options={"batch_chunk_size": 3}),
        case("sum, no bias, chunks of 4", 10, 5, 9, bias=False, reduction="sum", options={"batch_chunk_size": 4}),
        case("none, ignore_index 2, chunks of 3", 11, 4, 6, reduction="none", ignore=(1, 5), ignore_index=2,
             options={"batch_chunk_size": 3}),
        case("probabilities, class weights, mean, chunks of 4", 9, 4, 5, targets="probabilities",
             class_weight=True, options={"batch_chunk_size": 4}),
        case("probabilities, none, auto chunks", 6, 3, 5, targets="probabilities", reduction="none", options={}),
        case("float32, auto chunks", 64, 8, 100, dtype="float32", options={}),
        case("float32, aspect_ratio:4 chunks, sum", 64, 8, 100, dtype="float32", reduction="sum",
             options={"chunking_method": "aspect_ratio:4"}),
        case("bfloat16, float32 arithmetic, chunks of 5", 20, 8, 30, dtype="bfloat16",
             options={"batch_chunk_size": 5}),
        case("bfloat16 input, float32 weight and bias, chunks of 4", 16, 8, 24, dtype="bfloat16",
             weight_dtype="float32", bias_dtype="float32", reduction="sum", options={"batch_chunk_size": 4}),
        case("float32 input and weight, float64 bias, none", 9, 5, 7, dtype="float32", bias_dtype="float64",
             reduction="none", class_weight=True, options={"batch_chunk_size": 2}),
        case("unbatched, none", None, 4, 6, reduction="none", options={}),
        case("unbatched probabilities, mean", None, 4, 6, targets="probabilities", options={}),
        case("every row ignored, mean", 4, 3, 5, ignore=(0, 1, 2, 3), options={"batch_chunk_size": 2}),
        case("reference: K-dimensional, label smoothing, class weights", 5, 4, 3, out_features=(2, 3),
             class_weight=True, label_smoothing=0.1, ignore=(4,)),
        case("reference: label smoothing with options (ignored)", 8, 4, 6, label_smoothing=0.2,
             options={"batch_chunk_size": 3}),
        case("reference: probabilities, none", 5, 4, 6, targets="probabilities", reduction="none"),
    ]
    plans = [
        plan(4096, 256, 32000, "float32", {}),
        plan(4096, 256, 32000, "bfloat16", {}),
        plan(4096, 256, 32000, "float32", {}, probabilities=True),
        plan(1000, 512, 300, "float32", {}),
        plan(1000, 512, 300, "float32", {"acc_policy": "accurate"}),
        plan(1000, 512, 300, "float32", {}, probabilities=True),
        plan(100, 16, 1000, "float64", {"chunking_method": "aspect_ratio:3"}),
        plan(100, 16, 1000, "float64", {"batch_chunk_size": 7}),
        plan(100, 16, 1000, "float64", {"batch_chunk_size": 300}),
        plan(100, 16, 1000, "float64", {"batch_chunk_size": 7, "chunking_method": "aspect_ratio"}),
        plan(100, 16, 1000, "float64", {"batch_chunk_size": 2, "chunking_method": "aspect_ratio"}),
        plan(100, 16, 1000, "float64", {"chunking_method": None}),
        plan(100, 16, 1000, "bfloat16", {"acc_policy": "compact"}),
        plan(100, 16, 1000, "bfloat16", {"acc_dtype": torch.float32}),
        plan(3, 64, 10, "float32", {"chunking_method": "aspect_ratio:8"}),
    ]
    for p in plans:
        if "acc_dtype" in p["options"]:
            p["options"]["acc_dtype"] = str(p["options"]["acc_dtype"]).replace("torch.", "")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "linear_cross_entropy_fixtures.json")
    with open(path, "w") as f:
        f.write('{"torch": %s,\n"plans": [\n' % json.dumps(torch.__version__))
        f.write(",\n".join(json.dumps(p) for p in plans))
        f.write('],\n"cases": [\n')
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write("\n]}\n")
    print(f"wrote {len(cases)} cases and {len(plans)} plans to {path}")


if __name__ == "__main__":
    main()
