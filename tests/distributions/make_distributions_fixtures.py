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


def _exact_log_bessel(x, order=0):
    """log I0 or log I1 from torch.special's scaled Bessel functions: exact, where PyTorch 2.15's
    VonMises evaluates polynomial fits good to about 1e-7 (tandem's are exact)."""
    return (torch.special.i0e(x) if order == 0 else torch.special.i1e(x)).log() + x


D.von_mises._log_modified_bessel_fn = _exact_log_bessel


def _continuous_bernoulli_variance(self):
    """PyTorch 2.15's ContinuousBernoulli.variance with its Taylor expansion's fourth-order sign
    corrected: around probs 1/2 the variance is 1/12 - x/15 - 128 x^2/945 for x = (probs - 1/2)^2;
    PyTorch adds the last term, which changes the gradient inside its band by about 1e-10."""
    cut_probs = self._cut_probs()
    closed = cut_probs * (cut_probs - 1.0) / torch.pow(1.0 - 2.0 * cut_probs, 2) + 1.0 / torch.pow(
        torch.log1p(-cut_probs) - torch.log(cut_probs), 2)
    x = torch.pow(self.probs - 0.5, 2)
    taylor = 1.0 / 12.0 - (1.0 / 15.0 + 128.0 / 945.0 * x) * x
    return torch.where(self._outside_unstable_region(), closed, taylor)


D.ContinuousBernoulli.variance = property(_continuous_bernoulli_variance)

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


def simplex(shape, scale):
    """Points of the simplex along the last dim, none of their coordinates 0."""
    w = ramp(shape, scale, 1.2)
    return w / w.sum(-1, keepdim=True)


def spd(n, salt, batch=()):
    a = ramp(list(batch) + [n, n], 0.9, salt=salt)
    return a @ a.transpose(-2, -1) + torch.eye(n) * 0.5


def corr_cholesky(n, salt, batch=()):
    """The Cholesky factor of a correlation matrix: unit rows, a positive diagonal."""
    s = spd(n, salt, batch)
    d = s.diagonal(dim1=-2, dim2=-1).rsqrt()
    return torch.linalg.cholesky(s * d.unsqueeze(-1) * d.unsqueeze(-2))


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
    if name == "FisherSnedecor":
        return D.FisherSnedecor(args["df1"], args["df2"]), args
    if name == "Kumaraswamy":
        return D.Kumaraswamy(args["concentration1"], args["concentration0"]), args
    if name == "VonMises":
        return D.VonMises(args["loc"], args["concentration"]), args
    if name == "LowRankMultivariateNormal":
        return D.LowRankMultivariateNormal(args["loc"], args["cov_factor"], args["cov_diag"]), args
    if name == "HalfCauchy":
        return D.HalfCauchy(args["scale"]), args
    if name == "InverseGamma":
        return D.InverseGamma(args["concentration"], args["rate"]), args
    if name == "GeneralizedPareto":
        return D.GeneralizedPareto(args["loc"], args["scale"], args["concentration"]), args
    if name == "OneHotCategoricalStraightThrough":
        return (D.OneHotCategoricalStraightThrough(probs=args["probs"]) if "probs" in args else
                D.OneHotCategoricalStraightThrough(logits=args["logits"])), args
    if name == "Wishart":
        key = [k for k in args if k != "df"][0]
        return D.Wishart(args["df"], **{key: args[key]}), args
    if name == "LogisticNormal":
        return D.LogisticNormal(args["loc"], args["scale"]), args
    if name == "LKJCholesky":
        return D.LKJCholesky(int(args["dim"]), args["concentration"]), args
    key = "probs" if "probs" in args else "logits"
    if name == "ContinuousBernoulli":
        return D.ContinuousBernoulli(**{key: args[key]}), args
    if name == "Multinomial":
        return D.Multinomial(int(args["total_count"]), **{key: args[key]}), args
    relaxed = {"LogitRelaxedBernoulli": D.relaxed_bernoulli.LogitRelaxedBernoulli, "RelaxedBernoulli": D.RelaxedBernoulli,
               "ExpRelaxedCategorical": D.relaxed_categorical.ExpRelaxedCategorical,
               "RelaxedOneHotCategorical": D.RelaxedOneHotCategorical}
    if name in relaxed:
        return relaxed[name](args["temperature"], **{key: args[key]}), args
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
    if name == "Wishart" and "scale_tril" in params and "log_prob_grad" in out:
        # PyTorch's cholesky_solve gives the factor's upper triangle a gradient though it never reads
        # it (the factor is lower triangular); tandem's gives it none.
        g = torch.tensor(out["log_prob_grad"]["scale_tril"]).view(params["scale_tril"].shape).tril()
        out["log_prob_grad"]["scale_tril"] = floats(g)
    if name == "ContinuousBernoulli":
        # PyTorch 2.15's cdf and icdf are the uniform's where probs lies in (0.499, 0.501], off by up
        # to 1e-3; tandem's are exact there: expm1(l x) / expm1(l) and log1p(u expm1(l)) / l for
        # l = logits, evaluated here in mpmath.
        def exact(f, at):
            lam, x = torch.broadcast_tensors(dist.logits.detach(), at)
            return [float(f(mpmath.mpf(l), mpmath.mpf(v))) for l, v in zip(lam.flatten().tolist(), x.flatten().tolist())]
        mpmath.mp.dps = 50
        out["cdf"] = exact(lambda l, v: v if l == 0 else mpmath.expm1(l * v) / mpmath.expm1(l), value)
        if icdf_at is not None:
            out["icdf"] = exact(lambda l, u: u if l == 0 else mpmath.log1p(u * mpmath.expm1(l)) / l, icdf_at)
        # Its variance, 1 / l^2 - 1 / (4 sinh^2(l / 2)), is exact too; PyTorch's closed form in probs
        # loses up to 1e-10 next to the band (at probs 0.4985, say).
        lam = dist.logits.detach()
        var = [float(mpmath.mpf(1) / 12 if l == 0 else 1 / mpmath.mpf(l) ** 2 - 1 / (4 * mpmath.sinh(mpmath.mpf(l) / 2) ** 2))
               for l in lam.flatten().tolist()]
        out["variance"] = {"shape": list(lam.shape), "values": var}
        out["stddev"] = {"shape": list(lam.shape), "values": [math.sqrt(v) for v in var]}
    if name == "Kumaraswamy":
        # PyTorch 2.15's mode takes log1p(-b) for b > 1 (NaN) where the density's maximum is at
        # x^a = (a - 1) / (a b - 1); tandem's gives that point (a, b >= 1, not both 1; else NaN).
        a, b = dist.concentration1, dist.concentration0
        defined = (a >= 1) & (b >= 1) & ((a > 1) | (b > 1))
        mode = torch.where(defined, ((a - 1) / (a * b - 1)).pow(1 / a), torch.nan)
        out["mode"] = {"shape": list(mode.shape), "values": floats(mode)}
    return out


def make_transforms(spec):
    out = []
    for t in spec:
        name = t["name"]
        if name == "exp":
            out.append(D.ExpTransform())
        elif name == "affine":
            out.append(D.AffineTransform(t["loc"], t["scale"], t.get("event_dim", 0)))
        elif name == "sigmoid":
            out.append(D.SigmoidTransform())
        elif name == "tanh":
            out.append(D.TanhTransform())
        elif name == "softplus":
            out.append(D.SoftplusTransform())
        elif name == "power":
            out.append(D.PowerTransform(torch.tensor(t["exponent"])))
        elif name == "stick_breaking":
            out.append(D.StickBreakingTransform())
        elif name == "independent":
            out.append(D.IndependentTransform(make_transforms([t["base"]])[0], t["ndims"]))
        elif name == "reshape":
            out.append(D.ReshapeTransform(torch.Size(t["in_shape"]), torch.Size(t["out_shape"])))
        elif name == "corr_cholesky":
            out.append(D.CorrCholeskyTransform())
        elif name == "cdf":
            out.append(D.CumulativeDistributionTransform(make(t["dist"], t["params"])[0]))
        elif name == "inv":
            out.append(make_transforms([t["of"]])[0].inv)
        elif name == "cat":
            out.append(D.CatTransform(make_transforms(t["parts"]), t["dim"], t["lengths"]))
        elif name == "stack":
            out.append(D.StackTransform(make_transforms(t["parts"]), t["dim"]))
        else:
            raise ValueError(name)
    return out


def encode_transforms(spec):
    def encoded(k, v):
        if k in ("loc", "scale"):
            return encode(v)
        if k == "params":  # a CumulativeDistributionTransform's distribution
            return {name: encode(p) for name, p in v.items()}
        if k in ("base", "of"):
            return encode_transforms([v])[0]
        if k == "parts":  # a CatTransform's or StackTransform's
            return encode_transforms(v)
        return v
    return [{k: encoded(k, v) for k, v in t.items()} for t in spec]


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
        case("FisherSnedecor", {"df1": ramp([3], 0.7, 3.0) * 2, "df2": ramp([2, 1], 0.9, 4.0) * 2},
             ramp([2, 3], 0.9, 1.5)),
        # df2 at or below 2 and 4, df1 at or below 2: NaN mean, variance and mode.
        case("FisherSnedecor", {"df1": torch.tensor([1.0, 2.0, 3.0, 6.0]), "df2": torch.tensor([1.5, 3.0, 4.0, 9.0])},
             torch.tensor([0.5, 1.0, 2.0, 0.1])),
        case("Kumaraswamy", {"concentration1": ramp([3], 0.7, 1.5) * 2, "concentration0": ramp([2, 1], 0.9, 1.5) * 2},
             torch.sigmoid(ramp([2, 3], 0.9) * 2), icdf_at=unit),
        # Concentrations below, at and above 1: a NaN mode, a mode at 0 and at 1.
        case("Kumaraswamy", {"concentration1": torch.tensor([0.5, 1.0, 2.0, 1.0, 3.0]),
                             "concentration0": torch.tensor([2.0, 3.0, 1.0, 1.0, 0.5])},
             torch.tensor([0.3, 0.6, 0.9, 0.5, 0.2]), icdf_at=torch.tensor([0.1, 0.5, 0.9, 0.3, 0.7])),
        case("VonMises", {"loc": ramp([3], 0.7) * 3, "concentration": ramp([2, 1], 0.9, 1.2) * 2},
             ramp([2, 3], 0.9) * 4),
        # Concentrations from 1e-3 to 80: I0 from 1 to e^80.
        case("VonMises", {"loc": 0.5, "concentration": torch.tensor([1e-3, 0.5, 3.75, 12.0, 80.0])},
             torch.tensor([0.1, -2.0, 3.0, 7.0, 0.4])),
        case("ContinuousBernoulli", {"probs": ramp([4], 0.8, 0.5) * 0.45}, torch.sigmoid(ramp([2, 4], 0.9) * 2),
             icdf_at=unit[0].repeat(2)[:4]),
        # probs inside the Taylor band (0.499, 0.501] and next to it, and at 0 and 1.
        case("ContinuousBernoulli", {"probs": torch.tensor([0.4995, 0.5, 0.501, 0.4985, 0.0, 1.0])},
             torch.tensor([0.3, 0.0, 1.0, 0.7, 0.2, 0.9]), icdf_at=torch.tensor([0.2, 0.5, 0.7, 0.9, 0.3, 0.6])),
        case("ContinuousBernoulli", {"logits": ramp([2, 3], 0.8, 0.3) * 3}, torch.sigmoid(ramp([2, 3], 0.9) * 2),
             icdf_at=unit),
        case("LowRankMultivariateNormal", {"loc": ramp([2, 4], 0.5), "cov_factor": ramp([4, 2], 0.7, salt=0.3),
                                           "cov_diag": ramp([4], 0.6, 1.5)}, ramp([3, 2, 4], 0.4, 0.3)),
        case("LowRankMultivariateNormal", {"loc": ramp([3], 0.5), "cov_factor": ramp([2, 3, 1], 0.7, salt=0.3),
                                           "cov_diag": ramp([2, 3], 0.6, 1.5)}, ramp([3], 0.4, 0.3)),
        case("Multinomial", {"total_count": 10.0, "probs": ramp([2, 4], 0.8, 1.2)},
             torch.tensor([[1.0, 3.0, 0.0, 6.0], [2.0, 2.0, 2.0, 4.0]])),
        # Counts summing to less than total_count; a category of probability 0 never drawn.
        case("LogisticNormal", {"loc": ramp([2, 3], 0.7), "scale": ramp([3], 0.5, 1.2)}, simplex([2, 4], 0.6)),
        case("LogisticNormal", {"loc": torch.tensor(0.3), "scale": torch.tensor(1.4)}, simplex([3, 2], 0.8)),
        case("Multinomial", {"total_count": 6.0, "logits": torch.tensor([0.5, -1.0, float("-inf")])},
             torch.tensor([[1.0, 3.0, 0.0], [4.0, 0.0, 0.0]]), grad=False),
        case("Wishart", {"df": ramp([2], 0.7, 4.0), "covariance_matrix": spd(3, 0.3)},
             torch.stack([spd(3, 0.9), spd(3, 1.7)])),
        # df between p - 1 and p + 1: a NaN mode; precision and scale_tril parameters, batched.
        case("Wishart", {"df": torch.tensor([2.5, 3.5, 7.0]), "precision_matrix": spd(3, 0.5, (3,))}, spd(3, 0.9)),
        case("Wishart", {"df": torch.tensor([4.0, 5.5]), "scale_tril": torch.linalg.cholesky(spd(3, 1.1, (2,)))},
             spd(3, 2.3, (2,))),
        case("LKJCholesky", {"dim": 3.0, "concentration": ramp([2], 0.7, 1.5)}, corr_cholesky(3, 0.4, (2,))),
        case("LKJCholesky", {"dim": 4.0, "concentration": torch.tensor([0.5, 1.0, 3.0])}, corr_cholesky(4, 1.3)),
        case("HalfCauchy", {"scale": ramp([3], 0.5, 1.2)}, ramp([2, 3], 0.9, 1.2) * 2, icdf_at=unit),
        # Concentrations at and below 1 and 2: infinite mean and variance.
        case("InverseGamma", {"concentration": torch.tensor([0.5, 1.5, 2.5, 4.0]), "rate": ramp([4], 0.5, 1.3)},
             ramp([2, 4], 0.9, 1.5)),
        # Values inside the support, bounded above where the concentration is negative; gradients in
        # the concentration away from 0 (PyTorch's is 0 there, where it switches to the exponential).
        case("GeneralizedPareto", {"loc": ramp([3], 0.7), "scale": ramp([3], 0.5, 1.2),
                                   "concentration": torch.tensor([-0.3, 0.05, 0.4])},
             ramp([3], 0.7) + ramp([3], 0.5, 1.2) * torch.tensor([[0.5, 2.0, 5.0], [3.0, 0.1, 40.0]]), icdf_at=unit),
        # Concentration 0 (the exponential), -1 (the uniform), and 0.7 and 1.2 (NaN variance, NaN mean).
        case("GeneralizedPareto", {"loc": 0.5, "scale": 2.0, "concentration": torch.tensor([0.0, -1.0, 0.7, 1.2])},
             torch.tensor([1.5, 2.0, 7.0, 30.0]), icdf_at=torch.tensor([0.3, 0.5, 0.9, 0.99]), grad=False),
        case("OneHotCategoricalStraightThrough", {"logits": ramp([2, 4], 0.8, 0.2) * 2},
             torch.tensor([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])),
        case("LogitRelaxedBernoulli", {"temperature": torch.tensor(0.7), "probs": ramp([3], 0.8, 0.5) * 0.4},
             ramp([2, 3], 0.9) * 3),
        case("RelaxedBernoulli", {"temperature": torch.tensor(1.3), "logits": ramp([2, 3], 0.8, 0.3) * 2},
             torch.sigmoid(ramp([2, 3], 0.9) * 2)),
        case("ExpRelaxedCategorical", {"temperature": torch.tensor(0.6), "probs": ramp([2, 4], 0.8, 1.2)},
             torch.log_softmax(ramp([3, 2, 4], 0.6) * 2, -1)),
        case("RelaxedOneHotCategorical", {"temperature": torch.tensor(2.0), "logits": ramp([2, 3], 0.8, 0.2) * 2},
             torch.softmax(ramp([2, 3], 0.6) * 2, -1)),
    ]
    gamma_p = {"concentration": ramp([3], 0.7, 1.5), "rate": ramp([3], 0.5, 1.3)}
    gamma_q = {"concentration": ramp([2, 3], 0.4, 1.2), "rate": ramp([3], 0.8, 1.1)}
    # PyTorch masks its infinite KLs by indexing, which fails where q's batch is larger than the mask's.
    gamma_q1 = {"concentration": ramp([3], 0.4, 1.2), "rate": ramp([3], 0.8, 1.1)}
    beta_p = {"concentration1": ramp([3], 0.7, 1.5), "concentration0": ramp([3], 0.5, 1.3)}
    beta_q = {"concentration1": ramp([3], 0.4, 1.2), "concentration0": ramp([3], 0.8, 1.1)}
    # alpha below 1, between 1 and 2, above 2: an infinite KL to Exponential, Gamma or Normal.
    pareto_p = {"scale": ramp([3], 0.7, 1.5), "alpha": torch.tensor([0.8, 1.6, 3.5])}
    # One probs inside the Taylor band around 1/2.
    cb_p = {"probs": torch.tensor([0.2, 0.4996, 0.7, 0.95])}
    low_rank_p = {"loc": ramp([2, 4], 0.5), "cov_factor": ramp([4, 2], 0.7, salt=0.3), "cov_diag": ramp([4], 0.6, 1.5)}
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
        kl_case("ContinuousBernoulli", cb_p, "ContinuousBernoulli", {"logits": ramp([2, 4], 0.5) * 2}),
        kl_case("Beta", {"concentration1": ramp([4], 0.7, 1.5), "concentration0": ramp([4], 0.5, 1.3)},
                "ContinuousBernoulli", cb_p),
        kl_case("ContinuousBernoulli", cb_p, "Exponential", {"rate": ramp([4], 0.6, 1.5)}),
        kl_case("ContinuousBernoulli", cb_p, "Normal", {"loc": ramp([4], 0.3), "scale": ramp([4], 0.4, 1.2)}),
        # Intervals that hold [0, 1] strictly: finite (PyTorch's is +inf where it is [0, 1] exactly).
        kl_case("ContinuousBernoulli", cb_p, "Uniform", {"low": torch.tensor([-0.5, -1.0, -0.1, -2.0]),
                                                         "high": torch.tensor([1.5, 1.1, 2.0, 3.0])}),
        kl_case("ContinuousBernoulli", cb_p, "Uniform", {"low": torch.tensor([0.5, -1.0, -0.1, -2.0]),
                                                         "high": torch.tensor([1.5, 0.9, 2.0, 3.0])}, grad=False),
        kl_case("Uniform", {"low": torch.tensor([0.1, 0.2, 0.3, 0.05]), "high": torch.tensor([0.9, 0.5, 0.95, 0.6])},
                "ContinuousBernoulli", cb_p),
        kl_case("Uniform", {"low": torch.tensor([-0.1, 0.2, 0.3, 0.05]), "high": torch.tensor([0.9, 1.5, 0.95, 0.6])},
                "ContinuousBernoulli", cb_p, grad=False),
        kl_case("ContinuousBernoulli", cb_p, "Pareto", {"scale": ramp([4], 0.5, 1.5), "alpha": ramp([4], 0.4, 1.5)},
                grad=False),
        kl_case("Normal", {"loc": ramp([4], 0.7), "scale": ramp([4], 0.5, 1.5)}, "ContinuousBernoulli", cb_p,
                grad=False),
        kl_case("Gamma", {"concentration": ramp([4], 0.7, 1.5), "rate": ramp([4], 0.5, 1.3)},
                "ContinuousBernoulli", cb_p, grad=False),
        kl_case("LowRankMultivariateNormal", low_rank_p, "LowRankMultivariateNormal",
                {"loc": ramp([4], 0.3), "cov_factor": ramp([4, 3], 0.5, salt=0.9), "cov_diag": ramp([4], 0.8, 1.2)}),
        kl_case("MultivariateNormal", {"loc": ramp([2, 4], 0.45, 0.1), "covariance_matrix": spd(4, 0.3)},
                "LowRankMultivariateNormal", low_rank_p),
        kl_case("LowRankMultivariateNormal", low_rank_p, "MultivariateNormal",
                {"loc": ramp([4], 0.2), "scale_tril": torch.linalg.cholesky(spd(4, 1.1, (2,)))}),
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
        # Transforms of vectors and of events: a Normal batch made one event of the simplex, an
        # element-wise map over events of 3, a reshape of events of 6 into 2 x 3, and a Dirichlet
        # mapped off the simplex by the inverse stick-breaking map.
        transformed_case("Normal", {"loc": ramp([2, 3], 0.7), "scale": ramp([3], 0.5, 1.2)},
                         [{"name": "stick_breaking"}, {"name": "affine", "loc": 0.0, "scale": 2.0}],
                         simplex([2, 4], 0.6) * 2),
        transformed_case("Normal", {"loc": ramp([2, 3], 0.7), "scale": ramp([3], 0.5, 1.2)},
                         [{"name": "independent", "base": {"name": "exp"}, "ndims": 1}], ramp([2, 3], 0.9, 1.5)),
        transformed_case("Normal", {"loc": ramp([2, 6], 0.7), "scale": ramp([6], 0.5, 1.2)},
                         [{"name": "reshape", "in_shape": [6], "out_shape": [2, 3]}, {"name": "exp"}],
                         ramp([2, 2, 3], 0.9, 1.5)),
        transformed_case("Dirichlet", {"concentration": ramp([2, 4], 0.8, 1.5)},
                         [{"name": "inv", "of": {"name": "stick_breaking"}}], ramp([2, 3], 0.9)),
        # Correlation Cholesky factors of 3 x 3 and 4 x 4, and a Normal through another's cdf.
        transformed_case("Normal", {"loc": ramp([2, 3], 0.7), "scale": ramp([3], 0.5, 1.2)},
                         [{"name": "corr_cholesky"}], corr_cholesky(3, 0.4, (2,))),
        transformed_case("Normal", {"loc": ramp([6], 0.7), "scale": ramp([6], 0.5, 1.2)},
                         [{"name": "corr_cholesky"}], corr_cholesky(4, 0.9, (2,))),
        transformed_case("Normal", normal, [{"name": "cdf", "dist": "Normal",
                                           "params": {"loc": torch.tensor(0.3), "scale": torch.tensor(1.5)}}],
                         ramp([2, 3], 0.9) * 0.45 + 0.5),
        # Slices through transforms of their own: concatenated along the event's one dim, along
        # a batch dim of events of 3, and stacked along a batch dim.
        transformed_case("Normal", {"loc": ramp([2, 5], 0.7), "scale": ramp([5], 0.5, 1.2)},
                         [{"name": "cat", "dim": -1, "lengths": [2, 3],
                           "parts": [{"name": "exp"}, {"name": "affine", "loc": 0.5, "scale": 2.0}]}],
                         ramp([2, 5], 0.9, 1.5)),
        transformed_case("Normal", {"loc": ramp([4, 3], 0.7), "scale": ramp([3], 0.5, 1.2)},
                         [{"name": "cat", "dim": 0, "lengths": [1, 3],
                           "parts": [{"name": "independent", "base": {"name": "exp"}, "ndims": 1},
                                     {"name": "independent", "base": {"name": "affine", "loc": 0.5, "scale": 2.0},
                                      "ndims": 1}]}],
                         ramp([4, 3], 0.9, 1.5)),
        # An affine map of events of 3, with a number and with a tensor for scale.
        transformed_case("Normal", {"loc": ramp([2, 3], 0.7), "scale": ramp([3], 0.5, 1.2)},
                         [{"name": "affine", "loc": 0.5, "scale": -2.0, "event_dim": 1}], ramp([2, 3], 0.9)),
        transformed_case("Normal", {"loc": ramp([2, 3], 0.7), "scale": ramp([3], 0.5, 1.2)},
                         [{"name": "affine", "loc": ramp([3], 0.2), "scale": ramp([3], 0.4, 1.1), "event_dim": 1}],
                         ramp([2, 3], 0.9)),
        transformed_case("Normal", {"loc": ramp([2, 3], 0.7), "scale": ramp([3], 0.5, 1.2)},
                         [{"name": "stack", "dim": 0,
                           "parts": [{"name": "exp"}, {"name": "affine", "loc": 0.0, "scale": -3.0}]}],
                         ramp([2, 3], 0.9, 1.5)),
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
