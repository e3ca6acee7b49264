#!/usr/bin/env python3
"""Writes tests/nn/optim_fixtures.json: PyTorch's parameter values after each optimizer step and
its learning-rate sequences, for tests/nn/optim_test.cc to replay with tandem.

The parameters and gradients are made here from closed formulas (not torch's RNG), written into
the fixture, and the C++ test reads them back, so both sides start from the same bits. Floats
are written by Python's repr, which round-trips exactly.

    ~/.cache/tandem/venv/bin/python tests/nn/make_optim_fixtures.py
"""

import json
import math
import os

import torch

STEPS = 5
# A configuration may take more steps (RAdam rectifies its step from the sixth on): gradients are
# written for this many.
MAX_STEPS = 8
SHAPES = [[2, 3], [4], []]  # a matrix, a vector and a 0-dim tensor
# (step, parameter) pairs with no gradient: the optimizer must skip that parameter that step.
NO_GRAD = {(1, 2), (3, 0)}


def flat_values(n, salt, scale):
    # Deterministic, irregular values of mixed signs; every 7th is 0 (Adam's denominator is eps there).
    out = []
    for k in range(n):
        if (k + salt) % 7 == 3:
            out.append(0.0)
        else:
            out.append(scale * math.sin(1.7 * k + 0.61 * salt + 0.3) * (1 + 0.25 * math.cos(2.9 * k + salt)))
    return out


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


PARAMS = [flat_values(numel(s), 11 * i + 1, 1.5) for i, s in enumerate(SHAPES)]
GRADS = [
    [None if (t, i) in NO_GRAD else flat_values(numel(s), 5 * t + 17 * i + 2, 0.8 + 0.3 * t)
     for i, s in enumerate(SHAPES)]
    for t in range(MAX_STEPS)
]

OPTIMIZERS = {"SGD": torch.optim.SGD, "Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW,
              "RMSprop": torch.optim.RMSprop, "Adagrad": torch.optim.Adagrad, "Adamax": torch.optim.Adamax,
              "NAdam": torch.optim.NAdam, "RAdam": torch.optim.RAdam, "Adadelta": torch.optim.Adadelta,
              "Rprop": torch.optim.Rprop, "ASGD": torch.optim.ASGD, "Adafactor": torch.optim.Adafactor,
              "Muon": torch.optim.Muon}
SCHEDULERS = {
    "StepLR": torch.optim.lr_scheduler.StepLR,
    "MultiStepLR": torch.optim.lr_scheduler.MultiStepLR,
    "ExponentialLR": torch.optim.lr_scheduler.ExponentialLR,
    "CosineAnnealingLR": torch.optim.lr_scheduler.CosineAnnealingLR,
    "LinearLR": torch.optim.lr_scheduler.LinearLR,
    "OneCycleLR": torch.optim.lr_scheduler.OneCycleLR,
    "ConstantLR": torch.optim.lr_scheduler.ConstantLR,
    "PolynomialLR": torch.optim.lr_scheduler.PolynomialLR,
    "CosineAnnealingWarmRestarts": torch.optim.lr_scheduler.CosineAnnealingWarmRestarts,
    "CyclicLR": torch.optim.lr_scheduler.CyclicLR,
    "SWALR": torch.optim.swa_utils.SWALR,
}

# groups: lists of parameter indices with option overrides; defaults apply to every group.
CONFIGS = [
    ("sgd_plain", "SGD", {"lr": 0.1}, None, None),
    ("sgd_momentum", "SGD", {"lr": 0.1, "momentum": 0.9}, None, None),
    ("sgd_nesterov", "SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}, None, None),
    ("sgd_weight_decay", "SGD", {"lr": 0.1, "weight_decay": 0.1}, None, None),
    ("sgd_dampening", "SGD", {"lr": 0.1, "momentum": 0.8, "dampening": 0.5, "weight_decay": 0.01}, None, None),
    ("sgd_two_groups", "SGD", {"lr": 0.1, "momentum": 0.9},
     [{"params": [0], "options": {}}, {"params": [1, 2], "options": {"lr": 0.01}}], None),
    ("adam_plain", "Adam", {"lr": 0.01}, None, None),
    ("adam_weight_decay", "Adam", {"lr": 0.01, "betas": [0.8, 0.99], "eps": 1e-6, "weight_decay": 0.1}, None, None),
    ("adam_amsgrad", "Adam", {"lr": 0.01, "amsgrad": True}, None, None),
    # 1 - beta1 >= 0.5 takes lerp's other branch.
    ("adam_small_beta1", "Adam", {"lr": 0.02, "betas": [0.3, 0.9]}, None, None),
    ("adam_two_groups", "Adam", {"lr": 0.01},
     [{"params": [0, 2], "options": {"weight_decay": 0.05}}, {"params": [1], "options": {"lr": 0.001}}], None),
    ("adamw", "AdamW", {"lr": 0.01}, None, None),
    ("adamw_amsgrad", "AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}, None, None),
    # The scheduler steps after each optimizer step, so the later steps use the warmed-up lr.
    ("adam_linear_warmup", "Adam", {"lr": 0.01}, None,
     {"type": "LinearLR", "args": {"start_factor": 0.25, "end_factor": 1.0, "total_iters": 3}}),
    ("sgd_cosine", "SGD", {"lr": 0.1, "momentum": 0.9}, None,
     {"type": "CosineAnnealingLR", "args": {"T_max": 3, "eta_min": 0.01}}),
    ("sgd_maximize", "SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1, "maximize": True}, None, None),
    ("adam_maximize", "Adam", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True, "maximize": True}, None, None),
    ("adamw_maximize", "AdamW", {"lr": 0.01, "maximize": True}, None, None),
    ("rmsprop_plain", "RMSprop", {"lr": 0.01}, None, None),
    ("rmsprop_momentum_centered", "RMSprop",
     {"lr": 0.01, "alpha": 0.9, "eps": 1e-6, "momentum": 0.8, "centered": True, "weight_decay": 0.1}, None, None),
    # alpha 0.4: 1 - alpha >= 0.5 takes lerp's other branch for the centered mean.
    ("rmsprop_centered_small_alpha", "RMSprop", {"lr": 0.005, "alpha": 0.4, "centered": True, "maximize": True},
     None, None),
    ("rmsprop_two_groups", "RMSprop", {"lr": 0.01, "momentum": 0.5},
     [{"params": [0], "options": {}}, {"params": [1, 2], "options": {"lr": 0.02, "momentum": 0.0}}], None),
    ("adagrad_plain", "Adagrad", {"lr": 0.1}, None, None),
    ("adagrad_decay", "Adagrad",
     {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 0.3, "eps": 1e-6}, None, None),
    ("adagrad_maximize", "Adagrad", {"lr": 0.05, "maximize": True}, None, None),
    ("rmsprop_one_cycle", "RMSprop", {"lr": 0.01, "momentum": 0.5}, None,
     {"type": "OneCycleLR", "args": {"max_lr": 0.05, "total_steps": 7}}),
    # OneCycleLR also cycles SGD's momentum and Adam's beta1, which the parameters show.
    ("sgd_one_cycle", "SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}, None,
     {"type": "OneCycleLR", "args": {"max_lr": 0.5, "total_steps": 6}}),
    ("adamax_plain", "Adamax", {"lr": 0.02}, None, None),
    ("adamax_decay_maximize", "Adamax",
     {"lr": 0.01, "betas": [0.8, 0.99], "eps": 1e-6, "weight_decay": 0.1, "maximize": True}, None, None),
    ("nadam_plain", "NAdam", {"lr": 0.01}, None, None),
    ("nadam_decay", "NAdam", {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.05}, None, None),
    ("nadam_decoupled_maximize", "NAdam",
     {"lr": 0.01, "betas": [0.3, 0.9], "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True},
     None, None),
    # Eight steps: from the sixth on, RAdam's step is rectified.
    ("radam_plain", "RAdam", {"lr": 0.01}, None, None, 8),
    ("radam_decay", "RAdam", {"lr": 0.01, "betas": [0.8, 0.9], "eps": 1e-6, "weight_decay": 0.1}, None, None, 8),
    ("radam_decoupled_maximize", "RAdam",
     {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}, None, None, 8),
    ("adadelta_plain", "Adadelta", {}, None, None),
    ("adadelta_options", "Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5, "weight_decay": 0.1, "maximize": True},
     None, None),
    ("rprop_plain", "Rprop", {"lr": 0.01}, None, None, 8),
    ("rprop_options", "Rprop", {"lr": 0.05, "etas": [0.3, 1.5], "step_sizes": [0.02, 0.08], "maximize": True},
     None, None, 8),
    ("rprop_two_groups", "Rprop", {"lr": 0.01},
     [{"params": [0], "options": {}}, {"params": [1, 2], "options": {"lr": 0.1}}], None),
    ("asgd_plain", "ASGD", {"lr": 0.01}, None, None),
    # t0 2: the average starts at the third step.
    ("asgd_averaging", "ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 2, "weight_decay": 0.1}, None, None,
     8),
    ("asgd_maximize", "ASGD", {"lr": 0.05, "t0": 0, "maximize": True}, None, None),
    # Eight steps: the step size min(lr, 1 / sqrt(t)) stays lr; the matrix's moments are factored.
    ("adafactor_plain", "Adafactor", {"lr": 0.01}, None, None, 8),
    ("adafactor_options", "Adafactor",
     {"lr": 0.05, "beta2_decay": -0.5, "eps": [1e-20, 1e-2], "d": 1.5, "weight_decay": 0.1, "maximize": True},
     None, None),
    # lr 0.5 in the second group: from the fifth step on, 1 / sqrt(t) is the smaller.
    ("adafactor_two_groups", "Adafactor", {"lr": 0.01},
     [{"params": [0], "options": {"eps": [None, 0.5]}}, {"params": [1, 2], "options": {"lr": 0.5, "d": 2.0}}], None,
     8),
    # Muon takes matrices only: the first parameter, in one group.
    ("muon_plain", "Muon", {"lr": 0.02}, [{"params": [0], "options": {}}], None),
    ("muon_options", "Muon",
     {"lr": 0.05, "weight_decay": 0.01, "momentum": 0.8, "nesterov": False, "ns_steps": 3,
      "adjust_lr_fn": "match_rms_adamw"}, [{"params": [0], "options": {}}], None),
    ("sgd_swa", "SGD", {"lr": 0.1, "momentum": 0.9}, None,
     {"type": "SWALR", "args": {"swa_lr": 0.02, "anneal_epochs": 3}}),
    ("adam_one_cycle_three_phase", "Adam", {"lr": 0.01},
     [{"params": [0], "options": {}}, {"params": [1, 2], "options": {"lr": 0.001}}],
     {"type": "OneCycleLR", "args": {"max_lr": [0.02, 0.05], "total_steps": 8, "pct_start": 0.25,
                                     "anneal_strategy": "linear", "three_phase": True,
                                     "base_momentum": [0.8, 0.7], "max_momentum": 0.9}}),
]

# Each runs on an SGD optimizer with two groups (lr 0.1 and 0.02).
SCHEDULES = [
    ("step_lr", "StepLR", {"step_size": 3, "gamma": 0.5}, 10),
    # A milestone listed twice multiplies by gamma ** 2 at once.
    ("multi_step", "MultiStepLR", {"milestones": [2, 5, 5, 8], "gamma": 0.3}, 10),
    ("multi_step_default", "MultiStepLR", {"milestones": [1, 3]}, 5),
    ("exponential", "ExponentialLR", {"gamma": 0.9}, 8),
    ("cosine", "CosineAnnealingLR", {"T_max": 4, "eta_min": 0.001}, 14),
    ("cosine_no_floor", "CosineAnnealingLR", {"T_max": 6}, 8),
    ("linear_warmup", "LinearLR", {"start_factor": 0.25, "end_factor": 1.0, "total_iters": 4}, 8),
    ("linear_defaults", "LinearLR", {}, 7),
    ("linear_decay", "LinearLR", {"start_factor": 1.0, "end_factor": 0.1, "total_iters": 3}, 6),
    ("one_cycle", "OneCycleLR", {"max_lr": [1.0, 0.2], "total_steps": 10, "cycle_momentum": False}, 10),
    ("one_cycle_linear_three_phase", "OneCycleLR",
     {"max_lr": 0.5, "total_steps": 12, "pct_start": 0.4, "anneal_strategy": "linear", "three_phase": True,
      "cycle_momentum": False, "div_factor": 10.0, "final_div_factor": 100.0}, 12),
    # pct_start 0: no rise, the lr falls from max_lr from the first step.
    ("one_cycle_no_warmup", "OneCycleLR", {"max_lr": 0.3, "total_steps": 5, "pct_start": 0.0,
                                           "cycle_momentum": False}, 5),
    ("constant", "ConstantLR", {"factor": 0.25, "total_iters": 3}, 6),
    ("constant_defaults", "ConstantLR", {}, 7),
    ("polynomial", "PolynomialLR", {"total_iters": 4, "power": 2.0}, 7),
    ("polynomial_defaults", "PolynomialLR", {}, 7),
    ("warm_restarts", "CosineAnnealingWarmRestarts", {"T_0": 3, "eta_min": 0.001}, 10),
    ("warm_restarts_doubling", "CosineAnnealingWarmRestarts", {"T_0": 2, "T_mult": 2, "eta_min": 0.01}, 16),
    ("swalr_cos", "SWALR", {"swa_lr": 0.05, "anneal_epochs": 4}, 8),
    ("swalr_linear_per_group", "SWALR", {"swa_lr": [0.5, 0.001], "anneal_epochs": 3, "anneal_strategy": "linear"}, 6),
    # anneal_epochs 0: swa_lr from the first step.
    ("swalr_no_anneal", "SWALR", {"swa_lr": 0.03, "anneal_epochs": 0}, 4),
    ("cyclic_triangular", "CyclicLR", {"base_lr": 0.01, "max_lr": [0.1, 0.05], "step_size_up": 3}, 14),
    ("cyclic_triangular2", "CyclicLR",
     {"base_lr": [0.01, 0.002], "max_lr": 0.1, "step_size_up": 2, "step_size_down": 3, "mode": "triangular2"}, 16),
    ("cyclic_exp_range", "CyclicLR",
     {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 2.5, "mode": "exp_range", "gamma": 0.9,
      "base_momentum": [0.7, 0.6], "max_momentum": 0.95}, 12),
]

# ReduceLROnPlateau on the same two groups, fed these metrics one epoch at a time.
PLATEAUS = [
    ("plateau_min_rel", {"patience": 2, "factor": 0.5, "cooldown": 1},
     [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.7, 0.7, 0.7, 0.7]),
    # min_lr per group: the second group stops at 0.015, then no reduction is made.
    ("plateau_min_lr", {"patience": 0, "factor": 0.3, "min_lr": [0.001, 0.015], "threshold": 0.1},
     [5.0, 4.8, 4.7, 4.0, 4.0, 4.5, 3.0, 3.0]),
    ("plateau_max_abs", {"mode": "max", "threshold_mode": "abs", "threshold": 0.05, "patience": 1, "factor": 0.2},
     [0.5, 0.52, 0.6, 0.61, 0.64, 0.66, 0.9, 0.92, 0.93]),
    ("plateau_max_rel", {"mode": "max", "patience": 1, "threshold": 0.01},
     [0.5, 0.502, 0.504, 0.6, 0.6, 0.6, 0.7]),
    ("plateau_min_abs", {"threshold_mode": "abs", "threshold": 0.2, "patience": 1, "eps": 0.05},
     [3.0, 2.9, 2.85, 2.0, 1.9, 1.85, 1.0]),
]


def torch_options(options):
    out = dict(options)
    for pair in ("betas", "etas", "step_sizes", "eps"):  # Adafactor's eps is a pair, Adam's a number
        if isinstance(out.get(pair), list):
            out[pair] = tuple(out[pair])
    return out


def run_config(kind, defaults, groups, scheduler, steps):
    params = [torch.tensor(v, dtype=torch.float64).reshape(s) for v, s in zip(PARAMS, SHAPES)]
    for p in params:
        p.requires_grad_(True)
    if groups is None:
        param_groups = [{"params": params}]
    else:
        param_groups = [dict(torch_options(g["options"]), params=[params[i] for i in g["params"]]) for g in groups]
    # foreach=False: the single-tensor algorithm, the one tandem follows operation for operation
    # (Muon has only that one).
    foreach = {} if kind == "Muon" else {"foreach": False}
    optimizer = OPTIMIZERS[kind](param_groups, **torch_options(defaults), **foreach)
    sched = SCHEDULERS[scheduler["type"]](optimizer, **scheduler["args"]) if scheduler else None
    expected = []
    for t in range(steps):
        for i, p in enumerate(params):
            g = GRADS[t][i]
            p.grad = None if g is None else torch.tensor(g, dtype=torch.float64).reshape(SHAPES[i])
        optimizer.step()
        if sched:
            sched.step()
        expected.append([p.detach().reshape(-1).tolist() for p in params])
    # ASGD's averaged parameters, after the last step.
    averaged = [optimizer.state[p]["ax"].reshape(-1).tolist() for p in params] if kind == "ASGD" else None
    return expected, averaged


def optimizer_entry(name, kind, defaults, groups, scheduler, steps=STEPS):
    expected, averaged = run_config(kind, defaults, groups, scheduler, steps)
    entry = {"name": name, "optimizer": kind, "defaults": defaults, "groups": groups, "scheduler": scheduler,
             "steps": steps, "expected": expected}
    if averaged is not None:
        entry["averaged"] = averaged
    return entry


def run_schedule(kind, args, steps):
    a, b = torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.02}], lr=0.1)
    sched = SCHEDULERS[kind](optimizer, **args)
    lrs = [list(sched.get_last_lr())]
    momentums = [[g["momentum"] for g in optimizer.param_groups]]
    for _ in range(steps):
        optimizer.step()  # no gradients: nothing changes, but PyTorch wants the step before the scheduler's
        sched.step()
        lrs.append(list(sched.get_last_lr()))
        momentums.append([g["momentum"] for g in optimizer.param_groups])
    return lrs, momentums


def schedule_entry(name, kind, args, steps):
    lrs, momentums = run_schedule(kind, args, steps)
    entry = {"name": name, "type": kind, "args": args, "group_lrs": [0.1, 0.02], "lrs": lrs}
    if kind == "CyclicLR":  # which also cycles the momentum
        entry["momentums"] = momentums
    return entry


def run_plateau(args, metrics):
    a, b = torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.02}], lr=0.1)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, **args)
    lrs = [list(sched.get_last_lr())]
    for m in metrics:
        optimizer.step()
        sched.step(m)
        lrs.append(list(sched.get_last_lr()))
    return lrs


def dumps(value, indent=0):
    # JSON with the numbers of each innermost list on one line: small, and readable in a diff.
    pad = " " * indent
    if isinstance(value, dict):
        items = [f'{pad} {json.dumps(k)}: {dumps(v, indent + 1).lstrip()}' for k, v in value.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and any(isinstance(v, (list, dict)) for v in value):
        return pad + "[\n" + ",\n".join(dumps(v, indent + 1) for v in value) + "\n" + pad + "]"
    return pad + json.dumps(value)


def main():
    fixture = {
        "torch_version": torch.__version__,
        "steps": STEPS,
        "shapes": SHAPES,
        "params": PARAMS,
        "grads": GRADS,
        "optimizers": [optimizer_entry(*config) for config in CONFIGS],
        "schedulers": [schedule_entry(*schedule) for schedule in SCHEDULES],
        "plateaus": [
            {"name": name, "args": args, "group_lrs": [0.1, 0.02], "metrics": metrics,
             "lrs": run_plateau(args, metrics)}
            for name, args, metrics in PLATEAUS
        ],
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim_fixtures.json")
    with open(path, "w") as f:
        f.write(dumps(fixture) + "\n")
    print(f"wrote {path} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
