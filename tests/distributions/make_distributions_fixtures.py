#!/usr/bin/env python3
"""Writes tests/distributions/distributions_fixtures.json: what torch.distributions gives for the
distributions tandem has (log_prob, cdf, icdf, entropy, mean, mode, variance, stddev, and the
gradients of sum(log_prob) with respect to the parameters), and kl_divergence between pairs with
its gradients, for tests/distributions/distributions_test.cc to replay. Everything in float64;
parameters and values from closed formulas, written into the fixture. Floats by Python's repr.

    ~/.cache/tandem/venv/bin/python tests/distributions/make_distributions_fixtures.py
"""

import json
import math
import os

import mpmath
import torch
import torch.distributions as D

torch.set_default_dtype(torch.float64)


class _Digamma(torch.autograd.Function):
    """digamma whose derivative is mpmath's trigamma: PyTorch 2.15's is 5e-10 off (at 1.2,
    1.2673772060 against 1.2673772054), which the KLs of Gamma, Beta and Dirichlet differentiate."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _torch_digamma(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        trigamma = torch.tensor([float(mpmath.psi(1, v)) for v in x.flatten().tolist()]).view(x.shape)
        return grad * trigamma


_torch_digamma = torch.digamma
torch.digamma = _Digamma.apply
torch.Tensor.digamma = lambda self: _Digamma.apply(self)


def ramp(shape, scale, offset=0.0, salt=0.0):
    n = math.prod(shape)
    return torch.tensor([offset + math.sin(scale * k + salt) for k in range(n)]).view(shape)


def floats(t):
    return [v if math.isfinite(v) else str(v) for v in t.detach().double().flatten().tolist()]


def encode(param):
    if isinstance(param, float):
        return {"number": param}
    return {"shape": list(param.shape), "values": floats(param)}


def spd(n, salt, batch=()):
    a = ramp(list(batch) + [n, n], 0.9, salt=salt)
    return a @ a.transpose(-2, -1) + torch.eye(n) * 0.5


def make(name, params, kind=None):
    args = {k: (v.clone().requires_grad_() if isinstance(v, torch.Tensor) else v) for k, v in params.items()}
    if name == "Normal":
        return D.Normal(args["loc"], args["scale"]), args
    if name == "Uniform":
        return D.Uniform(args["low"], args["high"]), args
    if name == "Exponential":
        return D.Exponential(args["rate"]), args
    if name == "Laplace":
        return D.Laplace(args["loc"], args["scale"]), args
    if name == "Bernoulli":
        return (D.Bernoulli(probs=args["probs"]) if "probs" in args else D.Bernoulli(logits=args["logits"])), args
    if name == "Categorical":
        return (D.Categorical(probs=args["probs"]) if "probs" in args else
                D.Categorical(logits=args["logits"])), args
    if name == "MultivariateNormal":
        key = [k for k in args if k != "loc"][0]
        return D.MultivariateNormal(args["loc"], **{key: args[key]}), args
    if name == "Cauchy":
        return D.Cauchy(args["loc"], args["scale"]), args
    if name == "LogNormal":
        return D.LogNormal(args["loc"], args["scale"]), args
    if name == "Gumbel":
        return D.Gumbel(args["loc"], args["scale"]), args
    if name == "HalfNormal":
        return D.HalfNormal(args["scale"]), args
    if name == "Poisson":
        return D.Poisson(args["rate"]), args
    if name == "Geometric":
        return (D.Geometric(probs=args["probs"]) if "probs" in args else D.Geometric(logits=args["logits"])), args
    if name == "Binomial":
        key = "probs" if "probs" in args else "logits"
        return D.Binomial(args["total_count"], **{key: args[key]}), args
    if name == "OneHotCategorical":
        return (D.OneHotCategorical(probs=args["probs"]) if "probs" in args else
                D.OneHotCategorical(logits=args["logits"])), args
    if name == "Gamma":
        return D.Gamma(args["concentration"], args["rate"]), args
    if name == "Chi2":
        return D.Chi2(args["df"]), args
    if name == "Beta":
        return D.Beta(args["concentration1"], args["concentration0"]), args
    if name == "Dirichlet":
        return D.Dirichlet(args["concentration"]), args
    if name == "StudentT":
        return D.StudentT(args["df"], args["loc"], args["scale"]), args
    if name == "NegativeBinomial":
        key = "probs" if "probs" in args else "logits"
        return D.NegativeBinomial(args["total_count"], **{key: args[key]}), args
    if name == "Pareto":
        return D.Pareto(args["scale"], args["alpha"]), args
    if name == "Weibull":
        return D.Weibull(args["scale"], args["concentration"]), args
    if name == "IndependentNormal":
        return D.Independent(D.Normal(args["loc"], args["scale"]), 1), args
    raise ValueError(name)


def grads_of(total, args):
    tensors = {k: v for k, v in args.items() if isinstance(v, torch.Tensor)}
    got = torch.autograd.grad(total, list(tensors.values()), allow_unused=True)
    return {k: floats(g) if g is not None else None for k, g in zip(tensors, got)}


def scores(dist, args, value, icdf_at, grad, out):
    """What every case records: the shapes, log_prob (and its gradients), cdf and icdf."""
    out.update({"value": encode(value), "batch_shape": list(dist.batch_shape), "event_shape": list(dist.event_shape)})
    log_prob = dist.log_prob(value)
    out["log_prob"] = {"shape": list(log_prob.shape), "values": floats(log_prob)}
    if grad:
        out["log_prob_grad"] = grads_of(log_prob.sum(), args)
    try:
        out["cdf"] = floats(dist.cdf(value))
    except NotImplementedError:
        pass
    if icdf_at is not None:
        out["icdf_at"] = encode(icdf_at)
        out["icdf"] = floats(dist.icdf(icdf_at))
    return out


def case(name, params, value, icdf_at=None, grad=True):
    dist, args = make(name, params)
    out = scores(dist, args, value, icdf_at, grad, {"dist": name, "params": {k: encode(v) for k, v in params.items()}})
    for what in ["entropy", "mean", "mode", "variance", "stddev"]:
        try:
            t = getattr(dist, what)() if what == "entropy" else getattr(dist, what)
        except NotImplementedError:
            continue
        out[what] = {"shape": list(t.shape), "values": floats(t)}
    if name in ("Dirichlet", "Beta"):
        # Where every concentration is below 1, PyTorch 2.15 takes the argmax of a row of NaN (0 / 0)
        # and puts the mode at the first corner; tandem puts it at the corner of the largest
        # concentration, where the density's singularity is the strongest.
        c = torch.stack([dist.concentration1, dist.concentration0], -1) if name == "Beta" else dist.concentration
        corner = torch.nn.functional.one_hot(c.argmax(-1), c.shape[-1]).to(c)
        mode = torch.where((c < 1).all(-1, keepdim=True), corner, dist._dirichlet.mode if name == "Beta" else dist.mode)
        mode = mode[..., 0] if name == "Beta" else mode
        out["mode"] = {"shape": list(mode.shape), "values": floats(mode)}
    return out


def make_transforms(spec):
    out = []
    for t in spec:
        name = t["name"]
        if name == "exp":
            out.append(D.ExpTransform())
        elif name == "affine":
            out.append(D.AffineTransform(t["loc"], t["scale"]))
        elif name == "sigmoid":
            out.append(D.SigmoidTransform())
        elif name == "tanh":
            out.append(D.TanhTransform())
        elif name == "softplus":
            out.append(D.SoftplusTransform())
        elif name == "power":
            out.append(D.PowerTransform(torch.tensor(t["exponent"])))
        else:
            raise ValueError(name)
    return out


def encode_transforms(spec):
    return [{k: (encode(v) if k in ("loc", "scale") else v) for k, v in t.items()} for t in spec]


def transformed_case(base_name, base_params, spec, value, icdf_at=None):
    base, args = make(base_name, base_params)
    dist = D.TransformedDistribution(base, make_transforms(spec))
    head = {"base": {"dist": base_name, "params": {k: encode(v) for k, v in base_params.items()}},
            "transforms": encode_transforms(spec)}
    return scores(dist, args, value, icdf_at, True, head)


def mixture_case(mix_params, comp_name, comp_params, value):
    mix, mix_args = make("Categorical", mix_params)
    comp, comp_args = make(comp_name, comp_params)
    dist = D.MixtureSameFamily(mix, comp)
    out = {"mixture": {k: encode(v) for k, v in mix_params.items()},
           "component": {"dist": comp_name, "params": {k: encode(v) for k, v in comp_params.items()}},
           "value": encode(value), "batch_shape": list(dist.batch_shape), "event_shape": list(dist.event_shape)}
    log_prob = dist.log_prob(value)
    out["log_prob"] = {"shape": list(log_prob.shape), "values": floats(log_prob)}
    out["mixture_grad"] = grads_of(log_prob.sum(), mix_args)
    log_prob = D.MixtureSameFamily(*[make("Categorical", mix_params)[0], comp]).log_prob(value)
    out["component_grad"] = grads_of(log_prob.sum(), comp_args)
    for what in ["mean", "variance"]:
        t = getattr(dist, what)
        out[what] = {"shape": list(t.shape), "values": floats(t)}
    if not dist.event_shape:
        out["cdf"] = floats(dist.cdf(value))
    return out


def kl_case(p_name, p_params, q_name, q_params, grad=True):
    p, p_args = make(p_name, p_params)
    q, q_args = make(q_name, q_params)
    kl = D.kl_divergence(p, q)
    out = {"p": {"dist": p_name, "params": {k: encode(v) for k, v in p_params.items()}},
           "q": {"dist": q_name, "params": {k: encode(v) for k, v in q_params.items()}},
           "kl": {"shape": list(kl.shape), "values": floats(kl)}}
    if grad:
        out["grad_p"] = grads_of(kl.sum(), p_args)
        q2, q_args2 = make(q_name, q_params)
        p2, _ = make(p_name, p_params)
        out["grad_q"] = grads_of(D.kl_divergence(p2, q2).sum(), q_args2)
    return out


def main():
    unit = ramp([2, 3], 0.7, 0.5, 0.1) * 0.45 + 0.5  # in (0, 1)
    cases = [
        case("Normal", {"loc": ramp([2, 3], 0.7), "scale": ramp([3], 0.5, 1.5)}, ramp([2, 3], 0.3, 0.2),
             icdf_at=unit),
        case("Normal", {"loc": 0.5, "scale": ramp([3], 0.5, 1.5)}, ramp([4, 3], 0.3), icdf_at=unit[0]),
        case("Uniform", {"low": ramp([3], 0.5, -1.0), "high": ramp([3], 0.4, 1.5)}, ramp([2, 3], 0.2, 0.1) * 0.3,
             icdf_at=unit),
        case("Exponential", {"rate": ramp([3], 0.6, 1.5)}, ramp([2, 3], 0.8, 1.2), icdf_at=unit),
        case("Laplace", {"loc": ramp([3], 0.6), "scale": ramp([2, 1], 0.5, 1.3)}, ramp([2, 3], 0.9, 0.1),
             icdf_at=unit),
        case("Bernoulli", {"probs": ramp([4], 0.8, 0.5) * 0.4}, torch.tensor([0.0, 1.0, 1.0, 0.0])),
        case("Bernoulli", {"logits": ramp([2, 4], 0.8, 0.3) * 3}, torch.tensor([0.0, 1.0, 1.0, 0.0])),
        case("Bernoulli", {"probs": torch.tensor([0.0, 1.0, 0.5, 0.25])}, torch.tensor([0.0, 1.0, 1.0, 0.0]),
             grad=False),
        # The gradients where the logits are 0 (probs 0.5): the usual starting point.
        case("Bernoulli", {"logits": torch.tensor([0.0, 0.0, 1.5, -2.0])}, torch.tensor([0.0, 1.0, 1.0, 0.0])),
        case("Bernoulli", {"probs": torch.tensor([0.5, 0.5, 0.3, 0.9])}, torch.tensor([0.0, 1.0, 1.0, 0.0])),
        case("Categorical", {"probs": ramp([2, 4], 0.8, 1.2)}, torch.tensor([[0.0, 3.0], [2.0, 1.0], [3.0, 3.0]])),
        case("Categorical", {"logits": ramp([2, 4], 0.8, 0.2) * 4}, torch.tensor([1.0, 2.0])),
        case("Categorical", {"probs": torch.tensor([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])}, torch.tensor([1.0, 0.0]),
             grad=False),
        case("MultivariateNormal", {"loc": ramp([2, 3], 0.5), "covariance_matrix": spd(3, 0.3)},
             ramp([2, 3], 0.4, 0.3)),
        case("MultivariateNormal", {"loc": ramp([3], 0.5), "precision_matrix": spd(3, 0.7)}, ramp([2, 3], 0.4, 0.3)),
        case("MultivariateNormal",
             {"loc": ramp([3], 0.5), "scale_tril": torch.linalg.cholesky(spd(3, 1.1, (2,)))}, ramp([4, 2, 3], 0.4)),
        case("IndependentNormal", {"loc": ramp([2, 3], 0.7), "scale": ramp([2, 3], 0.5, 1.5)}, ramp([2, 3], 0.3)),
        case("Cauchy", {"loc": ramp([2, 3], 0.7), "scale": ramp([3], 0.5, 1.5)}, ramp([2, 3], 0.9, 0.2) * 3,
             icdf_at=unit),
        case("LogNormal", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.2)}, ramp([2, 3], 0.9, 1.5),
             icdf_at=unit),
        case("Gumbel", {"loc": ramp([3], 0.7), "scale": ramp([2, 1], 0.5, 1.2)}, ramp([2, 3], 0.9, 0.3) * 2,
             icdf_at=unit),
        # icdf at 0 and 1 through the uniform's bounds [tiny, 1 - eps]: finite.
        case("Gumbel", {"loc": ramp([2], 0.7), "scale": ramp([2], 0.5, 1.2)}, ramp([2], 0.9, 0.3),
             icdf_at=torch.tensor([0.0, 1.0])),
        case("HalfNormal", {"scale": ramp([3], 0.5, 1.2)}, ramp([2, 3], 0.9, 1.2), icdf_at=unit),
        case("Poisson", {"rate": ramp([4], 0.7, 2.0)}, torch.tensor([[0.0, 1.0, 4.0, 2.0], [3.0, 0.0, 1.0, 7.0]])),
        case("Geometric", {"probs": ramp([4], 0.7, 0.5) * 0.4}, torch.tensor([0.0, 1.0, 4.0, 2.0])),
        case("Geometric", {"logits": ramp([2, 3], 0.7, 0.2) * 2}, torch.tensor([0.0, 5.0, 1.0])),
        case("Geometric", {"probs": torch.tensor([1.0, 1.0, 0.5])}, torch.tensor([0.0, 2.0, 3.0])),
        case("Binomial", {"total_count": 10.0, "probs": ramp([3], 0.7, 0.5) * 0.4},
             torch.tensor([[0.0, 3.0, 10.0], [7.0, 5.0, 1.0]])),
        case("Binomial", {"total_count": torch.tensor([4.0, 6.0, 9.0]), "logits": ramp([3], 0.7) * 2},
             torch.tensor([0.0, 3.0, 9.0])),
        case("OneHotCategorical", {"probs": ramp([2, 4], 0.8, 1.2)},
             torch.tensor([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])),
        # Concentrations below and above 1 (the mode's clamp), a value at 0.
        case("Gamma", {"concentration": ramp([3], 0.7, 1.0) * 0.9 + 0.05, "rate": ramp([2, 1], 0.5, 1.3)},
             torch.cat([ramp([1, 3], 0.9, 1.2), torch.tensor([[0.0, 0.5, 3.0]])]) * 1.0),
        case("Gamma", {"concentration": 2.5, "rate": ramp([3], 0.5, 1.3)}, ramp([2, 3], 0.9, 1.5)),
        case("Chi2", {"df": ramp([2, 3], 0.7, 2.0)}, ramp([2, 3], 0.9, 1.5)),
        case("Beta", {"concentration1": ramp([3], 0.7, 1.2), "concentration0": ramp([2, 1], 0.5, 1.0) * 0.9},
             torch.sigmoid(ramp([2, 3], 0.9) * 2)),
        # Both concentrations below 1, and the value at the ends with concentration 1.
        case("Beta", {"concentration1": torch.tensor([0.5, 1.0, 2.0]), "concentration0": torch.tensor([0.7, 3.0, 1.0])},
             torch.tensor([0.3, 0.0, 1.0])),
        case("Dirichlet", {"concentration": ramp([2, 4], 0.8, 1.2) * 1.5},
             torch.softmax(ramp([3, 1, 4], 0.6) * 2, -1)),
        # Every concentration below 1 in the first row: the one-hot mode.
        case("Dirichlet", {"concentration": torch.tensor([[0.5, 0.9, 0.3], [2.0, 0.5, 3.0]])},
             torch.tensor([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])),
        case("StudentT", {"df": ramp([3], 0.7, 2.0) * 1.5, "loc": ramp([2, 1], 0.4), "scale": ramp([3], 0.5, 1.2)},
             ramp([2, 3], 0.9, 0.2) * 3),
        # df at or below 1 and 2: a NaN mean, an infinite variance.
        case("StudentT", {"df": torch.tensor([0.8, 1.5, 2.0, 5.0]), "loc": 0.5, "scale": 2.0},
             ramp([4], 0.9, 0.2) * 3),
        case("NegativeBinomial", {"total_count": ramp([3], 0.7, 3.0), "probs": ramp([3], 0.6, 0.5) * 0.4},
             torch.tensor([[0.0, 3.0, 10.0], [7.0, 5.0, 1.0]])),
        case("NegativeBinomial", {"total_count": torch.tensor([0.0, 2.5, 9.0]), "logits": ramp([3], 0.7) * 2},
             torch.tensor([0.0, 3.0, 9.0])),
        case("Pareto", {"scale": ramp([3], 0.7, 1.2), "alpha": ramp([2, 1], 0.9, 1.5) * 1.5},
             ramp([2, 3], 0.9, 1.5) + 1.7, icdf_at=torch.sigmoid(ramp([2, 3], 0.8) * 2)),
        # alpha at or below 1 and 2: the infinite mean and variance.
        case("Pareto", {"scale": 1.5, "alpha": torch.tensor([0.5, 1.0, 1.8, 2.0, 3.0])}, ramp([5], 0.8, 2.0) + 1.0),
        case("Weibull", {"scale": ramp([3], 0.7, 1.2), "concentration": ramp([2, 1], 0.9, 1.5) * 1.2},
             ramp([2, 3], 0.9, 1.5), icdf_at=torch.sigmoid(ramp([2, 3], 0.8) * 2)),
        case("Weibull", {"scale": 2.0, "concentration": torch.tensor([0.5, 1.0, 3.0])}, torch.tensor([0.2, 1.0, 4.0])),
    ]
    gamma_p = {"concentration": ramp([3], 0.7, 1.5), "rate": ramp([3], 0.5, 1.3)}
    gamma_q = {"concentration": ramp([2, 3], 0.4, 1.2), "rate": ramp([3], 0.8, 1.1)}
    # PyTorch masks its infinite KLs by indexing, which fails where q's batch is larger than the mask's.
    gamma_q1 = {"concentration": ramp([3], 0.4, 1.2), "rate": ramp([3], 0.8, 1.1)}
    beta_p = {"concentration1": ramp([3], 0.7, 1.5), "concentration0": ramp([3], 0.5, 1.3)}
    beta_q = {"concentration1": ramp([3], 0.4, 1.2), "concentration0": ramp([3], 0.8, 1.1)}
    # alpha below 1, between 1 and 2, above 2: an infinite KL to Exponential, Gamma or Normal.
    pareto_p = {"scale": ramp([3], 0.7, 1.5), "alpha": torch.tensor([0.8, 1.6, 3.5])}
    kls = [
        kl_case("Normal", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.5)},
                "Normal", {"loc": ramp([2, 3], 0.3), "scale": ramp([2, 3], 0.4, 1.2)}),
        kl_case("Uniform", {"low": torch.tensor([0.0, -1.0, 0.5]), "high": torch.tensor([1.0, 0.5, 2.0])},
                "Uniform", {"low": torch.tensor([-0.5, -1.0, 0.7]), "high": torch.tensor([1.5, 1.0, 3.0])}, grad=False),
        kl_case("Exponential", {"rate": ramp([3], 0.6, 1.5)}, "Exponential", {"rate": ramp([3], 0.9, 1.2)}),
        kl_case("Laplace", {"loc": ramp([3], 0.6), "scale": ramp([3], 0.5, 1.3)},
                "Laplace", {"loc": ramp([3], 0.2), "scale": ramp([3], 0.7, 1.1)}),
        kl_case("Bernoulli", {"probs": ramp([4], 0.8, 0.5) * 0.4}, "Bernoulli", {"probs": ramp([4], 0.3, 0.5) * 0.4}),
        kl_case("Bernoulli", {"probs": torch.tensor([0.0, 1.0, 0.3, 0.5])},
                "Bernoulli", {"probs": torch.tensor([0.2, 0.4, 0.0, 1.0])}, grad=False),
        kl_case("Bernoulli", {"logits": torch.tensor([1.0, 0.0, -0.5])},
                "Bernoulli", {"logits": torch.tensor([0.0, 0.0, 2.0])}),
        kl_case("Categorical", {"probs": ramp([2, 4], 0.8, 1.2)}, "Categorical", {"logits": ramp([4], 0.5) * 2}),
        kl_case("Categorical", {"probs": torch.tensor([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])},
                "Categorical", {"probs": torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])}, grad=False),
        kl_case("MultivariateNormal", {"loc": ramp([2, 3], 0.5), "covariance_matrix": spd(3, 0.3)},
                "MultivariateNormal", {"loc": ramp([3], 0.2), "scale_tril": torch.linalg.cholesky(spd(3, 1.1))}),
        kl_case("Laplace", {"loc": ramp([3], 0.6), "scale": ramp([3], 0.5, 1.3)},
                "Normal", {"loc": ramp([2, 3], 0.3), "scale": ramp([2, 3], 0.4, 1.2)}),
        kl_case("Normal", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.5)},
                "Laplace", {"loc": ramp([3], 0.2), "scale": ramp([3], 0.7, 1.1)}),
        kl_case("Exponential", {"rate": ramp([3], 0.6, 1.5)},
                "Normal", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("Uniform", {"low": ramp([3], 0.5, -1.0), "high": ramp([3], 0.4, 1.5)},
                "Normal", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("Uniform", {"low": torch.tensor([0.5, 0.1, 2.0]), "high": torch.tensor([1.0, 3.0, 2.5])},
                "Exponential", {"rate": ramp([3], 0.6, 1.5)}),
        kl_case("Uniform", {"low": torch.tensor([-0.5, 0.1]), "high": torch.tensor([1.0, 3.0])},
                "Exponential", {"rate": torch.tensor([1.0, 2.0])}, grad=False),
        kl_case("Normal", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.5)},
                "Uniform", {"low": torch.tensor([-9.0]), "high": torch.tensor([9.0])}, grad=False),
        kl_case("Laplace", {"loc": ramp([2], 0.6), "scale": ramp([2], 0.5, 1.3)},
                "Exponential", {"rate": torch.tensor([1.0])}, grad=False),
        kl_case("Exponential", {"rate": ramp([3], 0.6, 1.5)},
                "Uniform", {"low": torch.tensor([0.0]), "high": torch.tensor([9.0])}, grad=False),
        kl_case("Cauchy", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.5)},
                "Cauchy", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("LogNormal", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.5)},
                "LogNormal", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("Gumbel", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.5)},
                "Gumbel", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("HalfNormal", {"scale": ramp([3], 0.5, 1.5)}, "HalfNormal", {"scale": ramp([3], 0.4, 1.2)}),
        kl_case("Poisson", {"rate": ramp([3], 0.5, 1.5)}, "Poisson", {"rate": ramp([3], 0.4, 1.2)}),
        kl_case("Geometric", {"probs": ramp([3], 0.5, 0.5) * 0.4}, "Geometric", {"logits": ramp([3], 0.4)}),
        kl_case("Binomial", {"total_count": 8.0, "probs": ramp([3], 0.5, 0.5) * 0.4},
                "Binomial", {"total_count": 8.0, "probs": ramp([3], 0.4, 0.5) * 0.4}),
        kl_case("Binomial", {"total_count": torch.tensor([8.0, 9.0]), "probs": torch.tensor([0.3, 0.6])},
                "Binomial", {"total_count": torch.tensor([8.0, 8.0]), "probs": torch.tensor([0.5, 0.5])}, grad=False),
        kl_case("OneHotCategorical", {"probs": ramp([2, 4], 0.8, 1.2)}, "OneHotCategorical", {"logits": ramp([4], 0.5)}),
        kl_case("Bernoulli", {"probs": ramp([3], 0.8, 0.5) * 0.4}, "Poisson", {"rate": ramp([3], 0.4, 1.2)}),
        kl_case("Exponential", {"rate": ramp([3], 0.6, 1.5)}, "Gumbel", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("Normal", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.5)},
                "Gumbel", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("Uniform", {"low": ramp([3], 0.5, -1.0), "high": ramp([3], 0.4, 1.5)},
                "Gumbel", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("Gumbel", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.5)},
                "Normal", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("Gumbel", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.5)},
                "Exponential", {"rate": ramp([3], 0.6, 1.5)}, grad=False),
        kl_case("Poisson", {"rate": ramp([3], 0.4, 1.2)}, "Bernoulli", {"probs": ramp([3], 0.8, 0.5) * 0.4},
                grad=False),
        kl_case("IndependentNormal", {"loc": ramp([2, 3], 0.7), "scale": ramp([2, 3], 0.5, 1.5)},
                "IndependentNormal", {"loc": ramp([2, 3], 0.3), "scale": ramp([2, 3], 0.4, 1.2)}),
        kl_case("Gamma", gamma_p, "Gamma", gamma_q),
        kl_case("Chi2", {"df": ramp([3], 0.7, 2.0)}, "Gamma", gamma_q),
        kl_case("Beta", beta_p, "Beta", beta_q),
        kl_case("Dirichlet", {"concentration": ramp([2, 4], 0.8, 1.2) * 1.5},
                "Dirichlet", {"concentration": ramp([4], 0.5, 1.1) * 2}),
        kl_case("Pareto", pareto_p, "Pareto", {"scale": torch.tensor([0.5, 0.9, 3.0]), "alpha": ramp([3], 0.5, 1.5)}),
        kl_case("Beta", beta_p, "Exponential", {"rate": ramp([3], 0.6, 1.5)}),
        kl_case("Beta", beta_p, "Gamma", gamma_q),
        kl_case("Beta", beta_p, "Normal", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("Beta", beta_p, "Uniform", {"low": torch.tensor([-0.5, 0.0, 0.2]), "high": torch.tensor([1.0, 1.5, 2.0])}),
        kl_case("Exponential", {"rate": ramp([3], 0.6, 1.5)}, "Gamma", gamma_q),
        kl_case("Gamma", gamma_p, "Exponential", {"rate": ramp([3], 0.6, 1.5)}),
        kl_case("Gamma", gamma_p, "Gumbel", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("Gamma", gamma_p, "Normal", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("Pareto", pareto_p, "Exponential", {"rate": ramp([3], 0.6, 1.5)}),
        kl_case("Pareto", pareto_p, "Gamma", gamma_q1),
        kl_case("Pareto", pareto_p, "Normal", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.2)}),
        kl_case("Uniform", {"low": torch.tensor([0.1, -0.2, 0.3]), "high": torch.tensor([0.9, 0.5, 1.0])}, "Beta", beta_q),
        kl_case("Uniform", {"low": torch.tensor([0.1, -0.2, 0.3]), "high": torch.tensor([0.9, 0.5, 4.0])},
                "Gamma", gamma_q1),
        kl_case("Uniform", {"low": torch.tensor([1.1, 0.2, 2.3]), "high": torch.tensor([1.9, 1.5, 4.0])},
                "Pareto", {"scale": torch.tensor([0.5, 0.9, 2.0]), "alpha": ramp([3], 0.5, 1.5)}),
        kl_case("Normal", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.5)}, "Gamma", gamma_q, grad=False),
        kl_case("Gamma", gamma_p, "Beta", beta_q, grad=False),
        kl_case("Pareto", pareto_p, "Uniform", {"low": torch.tensor([0.0]), "high": torch.tensor([9.0])}, grad=False),
        kl_case("Exponential", {"rate": ramp([3], 0.6, 1.5)}, "Pareto", pareto_p, grad=False),
    ]
    normal = {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.2)}
    transformed = [
        transformed_case("Normal", normal, [{"name": "tanh"}], ramp([2, 3], 0.9) * 0.9, icdf_at=unit),
        transformed_case("Normal", normal, [{"name": "affine", "loc": 0.5, "scale": 2.0}, {"name": "exp"}],
                         ramp([2, 3], 0.9, 1.5), icdf_at=unit),
        transformed_case("Normal", normal, [{"name": "sigmoid"}], ramp([2, 3], 0.9) * 0.45 + 0.5, icdf_at=unit),
        transformed_case("Exponential", {"rate": ramp([3], 0.6, 1.5)}, [{"name": "softplus"}],
                         ramp([2, 3], 0.9) * 0.5 + 1.5, icdf_at=unit),
        transformed_case("Exponential", {"rate": ramp([3], 0.6, 1.5)}, [{"name": "power", "exponent": 0.5}],
                         ramp([2, 3], 0.9, 1.5), icdf_at=unit),
        transformed_case("Normal", normal, [{"name": "affine", "loc": ramp([2, 1], 0.4), "scale": -1.5}],
                         ramp([2, 3], 0.9), icdf_at=unit),
        transformed_case("MultivariateNormal", {"loc": ramp([3], 0.5), "covariance_matrix": spd(3, 0.3)},
                         [{"name": "exp"}], ramp([2, 3], 0.4, 1.3)),
    ]
    mixtures = [
        mixture_case({"logits": ramp([2, 3], 0.8, 0.2) * 2}, "Normal",
                     {"loc": ramp([2, 3], 0.7) * 3, "scale": ramp([2, 3], 0.5, 1.2)}, ramp([4, 2], 0.9) * 2),
        # The mixture's batch [] broadcast against the components' [2].
        mixture_case({"logits": ramp([3], 0.8, 0.2) * 2}, "Normal",
                     {"loc": ramp([2, 3], 0.7) * 3, "scale": ramp([2, 3], 0.5, 1.2)}, ramp([4, 2], 0.9) * 2),
        mixture_case({"probs": ramp([3], 0.8, 1.2)}, "MultivariateNormal",
                     {"loc": ramp([3, 2], 0.7), "scale_tril": torch.linalg.cholesky(spd(2, 0.4, (3,)))},
                     ramp([4, 2], 0.9)),
    ]
    p_t, _ = make("Normal", normal)
    q_t, _ = make("Normal", {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.3)})
    spec = [{"name": "affine", "loc": 0.5, "scale": 2.0}, {"name": "exp"}]
    transformed_kl = {"p": normal, "q": {"loc": ramp([3], 0.3), "scale": ramp([3], 0.4, 1.3)},
                      "transforms": encode_transforms(spec),
                      "kl": floats(D.kl_divergence(D.TransformedDistribution(p_t, make_transforms(spec)),
                                                   D.TransformedDistribution(q_t, make_transforms(spec))))}
    transformed_kl["p"] = {k: encode(v) for k, v in transformed_kl["p"].items()}
    transformed_kl["q"] = {k: encode(v) for k, v in transformed_kl["q"].items()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "distributions_fixtures.json")
    with open(path, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases, "kl": kls, "transformed": transformed,
                   "transformed_kl": transformed_kl, "mixtures": mixtures}, f, separators=(",", ":"))
        f.write("\n")
    print(f"{len(cases)} cases, {len(kls)} KL pairs and {len(transformed)} transformed distributions written to {path}")


if __name__ == "__main__":
    main()
