"""A QDQ model of ONNX Runtime's static quantization with chosen operations computing in float32 again,
without quantizing anew: onnxruntime_quantize.py ranks its operations with it (the quantizer, run again for
each with nodes_to_exclude, writes the whole model each time: the larger cost on a model of large
weights). A chosen operation reads its activations as they were before their QuantizeLinear, and the
float32 weights and biases of the model before quantization. Where the quantizer folded an activation into
its producer (a ReLU whose clipping the QuantizeLinear does: the producer's output carries the activation's
name), the activation is applied again. Its own outputs stay quantized where their consumers are, as with
nodes_to_exclude. Run by path from the quantizing process: it imports nothing of autograph."""
from typing import Dict, List, Optional, Sequence, Tuple

# ONNX Runtime's name of a quantized initializer: its float32 one's name and this.
QUANTIZED_SUFFIX = "_quantized"
# Names given to what the float32 operations read: the model's own names and this.
FLOAT_SUFFIX = "__in_float32"


class InFloat:
    """`quantized` (a QDQ ModelProto) as `original` (the ModelProto it was quantized from) computes chosen
    operations: `model(ops)`. Both are read, never changed."""

    def __init__(self, quantized, original):
        self._model = quantized
        self._original = {i.name: i for i in original.graph.initializer}
        self._original_producer = {o: n for n in original.graph.node for o in n.output}
        self._producer = {o: n for n in quantized.graph.node for o in n.output}
        self._names = set(self._producer) | {i.name for i in quantized.graph.initializer} | {
            i.name for i in quantized.graph.input}
        self._nodes = {n.name: n for n in quantized.graph.node if n.name}
        self._consumers: Dict[str, List[object]] = {}
        for node in quantized.graph.node:
            for name in node.input:
                self._consumers.setdefault(name, []).append(node)
        self._outputs = {o.name for o in quantized.graph.output}

    def covers(self, op: str) -> bool:
        """Whether operation `op` (by name) is in the quantized model: an activation folded into its producer
        is not (it computes in float32 with that producer)."""
        return op in self._nodes

    def model(self, ops: Sequence[str]) -> Optional[bytes]:
        """The quantized model, serialized, with operations `ops` in float32; None where one of them cannot be
        (not in it, or an input whose float32 value this cannot find)."""
        initializers: Dict[str, object] = {}
        nodes: Dict[str, object] = {}
        rewired: List[Tuple[object, int, str]] = []
        passed: List[Tuple[object, str, List[str]]] = []
        try:
            for op in ops:
                if op not in self._nodes:
                    return None
                node = self._nodes[op]
                for i, name in enumerate(node.input):
                    source = self._float_source(name, initializers, nodes)
                    if source is False:
                        return None
                    if source is not None:
                        rewired.append((node, i, name))
                        node.input[i] = source
                if not self._outputs_unquantized(node, passed, initializers, nodes):
                    return None
            graph = self._model.graph
            graph.initializer.extend(initializers.values())
            graph.node.extend(nodes.values())
            try:
                return self._model.SerializeToString()
            finally:
                del graph.initializer[len(graph.initializer) - len(initializers):]
                del graph.node[len(graph.node) - len(nodes):]
        finally:
            for node, i, name in rewired:
                node.input[i] = name
            for node, op_type, inputs in passed:
                node.op_type = op_type
                del node.input[:]
                node.input.extend(inputs)

    def _outputs_unquantized(self, node, passed: List[Tuple[object, str, List[str]]], initializers: Dict[str, object],
                             nodes: Dict[str, object]) -> bool:
        """The model's outputs that `node` computes, quantized only because `node` was (a QuantizeLinear then a
        DequantizeLinear that writes the model's output), read in float32: that DequantizeLinear passes its
        float32 value on (an Identity). False where that value cannot be found."""
        for name in node.output:
            for quantize in self._consumers.get(name, []):
                if quantize.op_type != "QuantizeLinear":
                    continue
                for dequantize in self._consumers.get(quantize.output[0], []):
                    if dequantize.op_type != "DequantizeLinear" or dequantize.output[0] not in self._outputs:
                        continue
                    source = self._activation(name, initializers, nodes)
                    if source is False:
                        return False
                    passed.append((dequantize, dequantize.op_type, list(dequantize.input)))
                    dequantize.op_type = "Identity"
                    del dequantize.input[:]
                    dequantize.input.append(source)
        return True

    def _float_source(self, name: str, initializers: Dict[str, object], nodes: Dict[str, object]):
        """What a float32 operation reads instead of input `name`: None where `name` is no DequantizeLinear's
        output (read as it is), False where its float32 value cannot be found."""
        dequantize = self._producer.get(name)
        if dequantize is None or dequantize.op_type != "DequantizeLinear":
            return None
        source = dequantize.input[0]
        quantize = self._producer.get(source)
        if quantize is not None and quantize.op_type == "QuantizeLinear":
            return self._activation(quantize.input[0], initializers, nodes)
        original = source[:-len(QUANTIZED_SUFFIX)] if source.endswith(QUANTIZED_SUFFIX) else None
        if original not in self._original:
            return False
        return self._original_copy(original, initializers)

    def _activation(self, name: str, initializers: Dict[str, object], nodes: Dict[str, object]):
        """Float32 tensor `name` as the original model computes it: where the quantizer folded the activation
        that produced it into the producer before (the producer's op type differs here), that activation
        applied again to it (its other inputs, such as a Clip's bounds, copied from the original model)."""
        folded, here = self._original_producer.get(name), self._producer.get(name)
        if folded is None or (here is not None and here.op_type == folded.op_type):
            return name
        renamed = name + FLOAT_SUFFIX
        if renamed in nodes:
            return renamed
        import onnx
        node = onnx.NodeProto()
        node.CopyFrom(folded)
        node.input[0], node.name = name, folded.name + FLOAT_SUFFIX
        del node.output[:]
        node.output.append(renamed)
        for i in range(1, len(node.input)):
            extra = node.input[i]
            if not extra or extra in self._names:
                continue
            if extra not in self._original:
                return False
            node.input[i] = self._original_copy(extra, initializers)
        nodes[renamed] = node
        return renamed

    def _original_copy(self, name: str, initializers: Dict[str, object]) -> str:
        """The original model's initializer `name` added to `initializers` under its float32 name (once)."""
        renamed = name + FLOAT_SUFFIX
        if renamed not in initializers:
            import onnx
            copy = onnx.TensorProto()
            copy.CopyFrom(self._original[name])
            copy.name = renamed
            initializers[renamed] = copy
        return renamed


__all__ = ["FLOAT_SUFFIX", "InFloat", "QUANTIZED_SUFFIX"]
