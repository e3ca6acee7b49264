"""PyTorch's side of tests/nn/serialize_test.cc: safetensors files travel both ways.

  python safetensors_interop.py write PATH   writes known tensors with safetensors.torch.save_file
  python safetensors_interop.py check PATH   loads the file tandem wrote with load_file and checks it

The expected values here and in serialize_test.cc must agree. Prints the PyTorch and safetensors
versions; exits 0 when everything matches, 1 (naming each mismatch) otherwise.
"""

import sys

import safetensors
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file


def written_by_pytorch():
    """What `write` saves: every dtype tandem has, a 0-dim and an empty tensor, odd values."""
    return {
        "f32": torch.tensor([[0.5, -1.25, 3.0], [1e-30, -0.0, float("inf")]], dtype=torch.float32),
        "f64": torch.tensor([1 / 3, -1e300, 5e-324], dtype=torch.float64),
        "f16": torch.tensor([0.5, -1.5, 65504.0, 6.103515625e-05, 5.960464477539063e-08], dtype=torch.float16),
        "bf16": torch.tensor([1.0, -2.5, 3.140625, 0.0078125, 65280.0, float("-inf")], dtype=torch.bfloat16),
        "i64": torch.tensor([2**62 + 1, -(2**63), 7], dtype=torch.int64),
        "i32": torch.tensor([-(2**31), 2**31 - 1, 0], dtype=torch.int32),
        "u8": torch.tensor([0, 1, 128, 255], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True, True]),
        "scalar": torch.tensor(42.5),
        "empty": torch.zeros(0, 4),
        "matrix": torch.arange(12, dtype=torch.float32).reshape(3, 4),
    }


WRITTEN_METADATA = {"format": "pt", "source": "pytorch"}


def signed16(bits):
    return [b - 0x10000 if b >= 0x8000 else b for b in bits]


def signed32(bits):
    return [b - 0x100000000 if b >= 0x80000000 else b for b in bits]


def check_tandem_file(path):
    """The tensors serialize_test.cc writes, compared bit for bit where bits matter."""
    problems = []
    tensors = load_file(path)
    with safe_open(path, framework="pt") as f:
        metadata = f.metadata()

    def expect(name, dtype, shape, test):
        if name not in tensors:
            problems.append(f"{name}: missing")
            return
        t = tensors[name]
        if t.dtype != dtype or list(t.shape) != shape:
            problems.append(f"{name}: got {t.dtype} {list(t.shape)}, expected {dtype} {shape}")
        elif not test(t):
            problems.append(f"{name}: wrong values {t.flatten()[:8].tolist()}")

    def bits(t, view_dtype, expected):
        return t.view(view_dtype).tolist() == expected

    expect("f32_bits", torch.float32, [5],
           lambda t: bits(t, torch.int32, signed32([0x7FC00001, 0x80000000, 0x7F800000, 0x00000001, 0x3F800000])))
    expect("bf16_bits", torch.bfloat16, [4], lambda t: bits(t, torch.int16, signed16([0x3F80, 0xC020, 0x7FC1, 0x8000])))
    expect("f16_bits", torch.float16, [4], lambda t: bits(t, torch.int16, signed16([0x3C00, 0x7BFF, 0x0001, 0xFC00])))
    expect("f64", torch.float64, [2], lambda t: t.tolist() == [0.1, -2.5e-300])
    expect("i64", torch.int64, [3], lambda t: t.tolist() == [-(2**63), 2**63 - 1, 3])
    expect("i32", torch.int32, [2], lambda t: t.tolist() == [-(2**31), 123456])
    expect("u8", torch.uint8, [3], lambda t: t.tolist() == [0, 255, 7])
    expect("bool", torch.bool, [2], lambda t: t.tolist() == [True, False])
    expect("transposed", torch.float32, [3, 2], lambda t: t.tolist() == [[0, 3], [1, 4], [2, 5]])
    expect("scalar", torch.int64, [], lambda t: t.item() == -9)
    expect("empty", torch.float64, [2, 0], lambda t: t.numel() == 0)
    expected_metadata = {"writer": "tandem", "note": "\u00fcn\u00efcode \u2713"}
    if metadata != expected_metadata:
        problems.append(f"metadata: got {metadata}, expected {expected_metadata}")
    if len(tensors) != 11:
        problems.append(f"expected 11 tensors, got {sorted(tensors)}")
    return problems


def main():
    print(f"PyTorch {torch.__version__}, safetensors {safetensors.__version__}")
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        print(__doc__)
        return 2
    mode, path = sys.argv[1:]
    if mode == "write":
        save_file(written_by_pytorch(), path, metadata=WRITTEN_METADATA)
        print(f"wrote {path}")
        return 0
    problems = check_tandem_file(path)
    for p in problems:
        print(f"mismatch: {p}")
    print("all values match" if not problems else f"{len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
