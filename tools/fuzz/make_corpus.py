#!/usr/bin/env python3
"""Writes the seed corpus for the safetensors fuzzer: small valid files and hostile ones.

  python3 tools/fuzz/make_corpus.py [DIR]     (DIR defaults to tools/fuzz/corpus/safetensors)

valid_*.safetensors must load; bad_*.safetensors must be refused with tandem::Error
(tests/nn/safetensors_corpus_test.cc checks both). Standard library only, and the output is the
same on every run, so the committed files can be regenerated and compared.
"""

import json
import os
import struct
import sys


def pack(header_text, data=b"", pad=True, length=None):
    """A safetensors file from header text (bytes or str) and a data section.

    pad: add spaces so the data starts 8-byte aligned, as the reference writer does.
    length: the header length to write, if it should lie.
    """
    if isinstance(header_text, str):
        header_text = header_text.encode()
    if pad:
        header_text += b" " * (-len(header_text) % 8)
    n = len(header_text) if length is None else length
    return struct.pack("<Q", n) + header_text + data


def header(tensors, metadata=None):
    """JSON header text from (name, dtype, shape, begin, end) tuples, in the given order."""
    obj = {}
    if metadata is not None:
        obj["__metadata__"] = metadata
    for name, dtype, shape, begin, end in tensors:
        obj[name] = {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}
    return json.dumps(obj, separators=(",", ":"))


def valid_files():
    files = {}
    files["valid_empty"] = pack("{}")
    files["valid_metadata_only"] = pack(header([], {"format": "pt", "note": "no tensors"}))

    # One tensor of every dtype tandem reads, in the reference layout.
    parts, tensors, offset = [], [], 0
    for name, dtype, shape, data in [
        ("f32", "F32", [2, 2], struct.pack("<4f", 1.0, -2.5, float("nan"), -0.0)),
        ("f64", "F64", [2], struct.pack("<2d", 1 / 3, float("-inf"))),
        ("f16", "F16", [3], struct.pack("<3H", 0x3C00, 0x7E01, 0x8001)),
        ("bf16", "BF16", [3], struct.pack("<3H", 0x3F80, 0xFFC1, 0x0001)),
        ("i64", "I64", [2], struct.pack("<2q", -(2**63), 2**63 - 1)),
        ("i32", "I32", [1, 2], struct.pack("<2i", -7, 2**31 - 1)),
        ("u8", "U8", [3], bytes([0, 128, 255])),
        ("bool", "BOOL", [2], bytes([1, 0])),
    ]:
        tensors.append((name, dtype, shape, offset, offset + len(data)))
        parts.append(data)
        offset += len(data)
    files["valid_all_dtypes"] = pack(header(tensors, {"format": "pt"}), b"".join(parts))

    # A 0-dim tensor, empty tensors (sharing offsets), and a 1-byte tensor that leaves the next
    # float tensor unaligned in the file.
    files["valid_scalar_and_empty"] = pack(
        header([
            ("empty_a", "F32", [0, 3], 0, 0),
            ("scalar", "F64", [], 0, 8),
            ("empty_b", "I64", [5, 0], 8, 8),
            ("byte", "U8", [1], 8, 9),
            ("unaligned", "F32", [1], 9, 13),
        ]),
        struct.pack("<d", 2.5) + b"\x07" + struct.pack("<f", 0.25),
    )

    # Listed in the header in the opposite order to their data.
    files["valid_listed_out_of_order"] = pack(
        header([("second", "I32", [2], 8, 16), ("first", "I32", [2], 0, 8)]),
        struct.pack("<4i", 1, 2, 3, 4),
    )
    # Without the padding, and with whitespace the reference writer does not use.
    files["valid_unpadded"] = pack('{ "x" : { "dtype" : "U8", "shape" : [ 3 ], "data_offsets" : [ 0, 3 ] } }',
                                   b"abc", pad=False)
    return files


def bad_files():
    one_f32 = struct.pack("<f", 1.0)
    files = {}
    files["bad_too_short"] = b"\x08\x00\x00"
    files["bad_header_past_end"] = pack("{}", length=4096)
    files["bad_header_absurd_length"] = pack("{}", length=2**64 - 1)
    files["bad_header_over_limit"] = pack("{}", length=100_000_001)
    files["bad_empty_header"] = struct.pack("<Q", 0)
    files["bad_not_json"] = pack('{"w": {"dtype": "F32",')
    files["bad_not_object"] = pack("[1, 2, 3]")
    files["bad_trailing_json"] = pack('{} {}')
    files["bad_invalid_utf8"] = pack(b'{"\xff\xfe": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}}')
    files["bad_unknown_dtype"] = pack(header([("w", "I8", [1], 0, 1)]), b"\x01")
    files["bad_dtype_not_string"] = pack('{"w": {"dtype": 1, "shape": [1], "data_offsets": [0, 4]}}', one_f32)
    files["bad_negative_shape"] = pack(header([("w", "F32", [-1], 0, 4)]), one_f32)
    files["bad_fractional_shape"] = pack('{"w": {"dtype": "F32", "shape": [1.0], "data_offsets": [0, 4]}}', one_f32)
    files["bad_overflowing_shape"] = pack(header([("w", "F32", [2**32, 2**32], 0, 4)]), one_f32)
    files["bad_overflowing_empty_shape"] = pack(header([("w", "F32", [0, 2**62, 2**62], 0, 0)]))
    files["bad_huge_size"] = pack(header([("w", "U8", [2**64 - 1], 0, 4)]), one_f32)
    files["bad_nested_shape"] = pack('{"w": {"dtype": "F32", "shape": [[1]], "data_offsets": [0, 4]}}', one_f32)
    files["bad_offsets_past_end"] = pack(header([("w", "F32", [1], 0, 4), ("v", "F32", [1], 4, 8)]), one_f32)
    files["bad_offsets_backwards"] = pack(header([("w", "U8", [0], 4, 0)]), one_f32)
    files["bad_offsets_mismatch"] = pack(header([("w", "F32", [2], 0, 4)]), one_f32)
    files["bad_offsets_count"] = pack('{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}}', one_f32)
    files["bad_overlap"] = pack(header([("a", "F32", [2], 0, 8), ("b", "F32", [1], 4, 8)]), one_f32 * 2)
    files["bad_gap"] = pack(header([("a", "F32", [1], 0, 4), ("b", "F32", [1], 8, 12)]), one_f32 * 3)
    files["bad_trailing_bytes"] = pack(header([("a", "F32", [1], 0, 4)]), one_f32 + b"junk")
    files["bad_metadata_not_string"] = pack(header([], {"epoch": 3}))
    files["bad_metadata_not_object"] = pack('{"__metadata__": ["a"]}')
    files["bad_duplicate_name"] = pack('{"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, '
                                       '"w": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}', b"\x01\x02")
    files["bad_duplicate_metadata_key"] = pack('{"__metadata__": {"k": "a", "k": "b"}}')
    files["bad_duplicate_field"] = pack('{"w": {"dtype": "U8", "dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}',
                                        b"\x01")
    files["bad_unknown_field"] = pack('{"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "x": 0}}', b"\x01")
    files["bad_missing_field"] = pack('{"w": {"dtype": "U8", "shape": [1]}}', b"\x01")
    files["bad_empty_name"] = pack(header([("", "U8", [1], 0, 1)]), b"\x01")
    files["bad_bool_byte"] = pack(header([("flags", "BOOL", [3], 0, 3)]), b"\x01\x00\x02")
    files["bad_deep_nesting"] = pack("[" * 2000 + "]" * 2000)
    return files


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", "safetensors")
    os.makedirs(out, exist_ok=True)
    files = {**valid_files(), **bad_files()}
    for name, data in sorted(files.items()):
        with open(os.path.join(out, name + ".safetensors"), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} files to {out}")


if __name__ == "__main__":
    main()
