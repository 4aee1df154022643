#!/usr/bin/python3
"""Convert a float32 ONNX model to float16 the way onnxconverter-common does.

This reproduces what users' files look like after
onnxconverter_common.float16.convert_float_to_float16 (not installable here):

- float initializers and float tensors in node attributes (Constant values,
  ConstantOfShape values, subgraphs) become float16, clamped so that nonzero
  magnitudes stay within [min_positive_val, max_finite_val] (1e-7 and 1e4 by
  default); 0, inf and NaN pass through unchanged;
- every tensor(float) graph input, output and value_info becomes tensor(float16);
- Cast(to=FLOAT) becomes Cast(to=FLOAT16);
- ops in the block list (DEFAULT_OP_BLOCK_LIST: Resize, Upsample, Min, Max,
  Range, TopK, ...) and nodes in node_block_list keep computing in float32:
  a Cast to float32 named <node>_input_cast<i> goes before each float16 input
  and a Cast back to float16 named <node>_output_cast<i> after each output;
  initializers that only blocked nodes read stay float32;
- keep_io_types=True keeps float32 graph inputs and outputs, with Cast nodes
  graph_input_cast<i> (output graph_input_cast_<i>) and graph_output_cast<i>
  (input graph_output_cast_<i>) at the boundary.

Deliberate differences, all so that the result passes onnx.checker:
nodes are put back in topological order (onnxconverter-common appends the
new Casts at the end of the node list); the scales input of Resize/Upsample,
which ONNX types as tensor(float), stays float32 even when the op is taken
off the block list; Casts for blocked nodes inside subgraphs go into that
subgraph; nameless blocked nodes get unique generated names.

Usage: /usr/bin/python3 tools/fp16_convert.py in.onnx out.onnx [--keep-io-types]
       [--op-block-list Resize,Max] [--node-block-list name,...]
"""

import argparse
import heapq
import itertools
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper

DEFAULT_OP_BLOCK_LIST = [
    "ArrayFeatureExtractor",
    "Binarizer",
    "CastMap",
    "CategoryMapper",
    "DictVectorizer",
    "FeatureVectorizer",
    "Imputer",
    "LabelEncoder",
    "LinearClassifier",
    "LinearRegressor",
    "Normalizer",
    "OneHotEncoder",
    "RandomUniformLike",
    "SVMClassifier",
    "SVMRegressor",
    "Scaler",
    "TreeEnsembleClassifier",
    "TreeEnsembleRegressor",
    "ZipMap",
    "NonMaxSuppression",
    "TopK",
    "RoiAlign",
    "Resize",
    "Range",
    "CumSum",
    "Min",
    "Max",
    "Upsample",
]


def clamp_to_float16(values, min_positive_val=1e-7, max_finite_val=1e4):
    """float32 array -> float16 array, keeping sign and finiteness of every element."""
    a = np.asarray(values, dtype=np.float32)
    mag = np.abs(a)
    finite_nonzero = np.isfinite(a) & (a != 0)
    if (finite_nonzero & (mag < min_positive_val)).any():
        warnings.warn(f"nonzero magnitudes below {min_positive_val} are raised to {min_positive_val}")
    if (finite_nonzero & (mag > max_finite_val)).any():
        warnings.warn(f"finite magnitudes above {max_finite_val} are lowered to {max_finite_val}")
    clamped = np.copysign(np.clip(mag, min_positive_val, max_finite_val), a)
    return np.where(finite_nonzero, clamped, a).astype(np.float16)


def tensor_to_float16(tensor, min_positive_val, max_finite_val):
    """Rewrite a float TensorProto in place as float16 (raw_data or int32_data, as stored)."""
    if tensor.data_type != TensorProto.FLOAT:
        return
    if tensor.HasField("data_location") and tensor.data_location == TensorProto.EXTERNAL:
        raise ValueError(f"tensor '{tensor.name}' uses external data; load it into the model first")
    tensor.data_type = TensorProto.FLOAT16
    if len(tensor.float_data) > 0:
        half = clamp_to_float16(np.array(tensor.float_data, dtype=np.float32), min_positive_val, max_finite_val)
        tensor.ClearField("float_data")
        tensor.int32_data.extend(int(v) for v in half.view(np.uint16))
    if len(tensor.raw_data) > 0:
        full = np.frombuffer(tensor.raw_data, dtype="<f4")
        tensor.raw_data = clamp_to_float16(full, min_positive_val, max_finite_val).astype("<f2").tobytes()


def float_only_inputs(node, opset):
    """Input slots that ONNX types as tensor(float) regardless of the op's data type."""
    if node.op_type == "Resize":
        return (1,) if opset == 10 else (2,)
    if node.op_type == "Upsample" and opset >= 9:
        return (1,)
    return ()


def subgraph_outer_names(graph):
    """Names a graph (and its nested subgraphs) reads without producing them itself."""
    produced = {vi.name for vi in graph.input} | {t.name for t in graph.initializer}
    used = set()
    for node in graph.node:
        used.update(n for n in node.input if n)
        for attr in node.attribute:
            for sub in itertools.chain([attr.g] if attr.HasField("g") else [], attr.graphs):
                used |= subgraph_outer_names(sub)
        produced.update(node.output)
    used.update(vi.name for vi in graph.output)
    return used - produced


def topo_sort(graph, keyed_nodes):
    """Write keyed_nodes [(key, NodeProto)] into graph.node in dependency order, lowest key first."""
    producer = {}
    for index, (_, node) in enumerate(keyed_nodes):
        for out in node.output:
            if out:
                producer[out] = index
    deps = []
    for _, node in keyed_nodes:
        names = {n for n in node.input if n}
        for attr in node.attribute:
            for sub in itertools.chain([attr.g] if attr.HasField("g") else [], attr.graphs):
                names |= subgraph_outer_names(sub)
        deps.append({producer[n] for n in names if n in producer})
    users = [[] for _ in keyed_nodes]
    waiting = []
    for index, d in enumerate(deps):
        d.discard(index)
        waiting.append(len(d))
        for p in d:
            users[p].append(index)
    ready = [(keyed_nodes[i][0], i) for i in range(len(keyed_nodes)) if waiting[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, index = heapq.heappop(ready)
        order.append(index)
        for u in users[index]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (keyed_nodes[u][0], u))
    if len(order) != len(keyed_nodes):
        raise ValueError("graph has a cycle; cannot order its nodes")
    nodes = []
    for i in order:
        copy = onnx.NodeProto()
        copy.CopyFrom(keyed_nodes[i][1])
        nodes.append(copy)
    graph.ClearField("node")
    graph.node.extend(nodes)


def is_float16_model(graph):
    values = itertools.chain(graph.input, graph.output, graph.value_info)
    if any(vi.type.tensor_type.elem_type == TensorProto.FLOAT16 for vi in values):
        return True
    return any(t.data_type == TensorProto.FLOAT16 for t in graph.initializer)


def subgraphs_of(node):
    for attr in node.attribute:
        if attr.HasField("g"):
            yield attr.g
        yield from attr.graphs


class _Converter:
    def __init__(self, model, min_positive_val, max_finite_val, op_block_list, node_block_list):
        self.model = model
        self.main_graph = model.graph
        self.min_positive_val = min_positive_val
        self.max_finite_val = max_finite_val
        self.op_block_list = set(op_block_list)
        self.node_block_list = set(node_block_list)
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        self.rename = {}
        self.io_kept_float = set()
        self.io_cast_names = set()
        self.float16_values = {}
        self.initializers = {}
        self.blocked = []
        self.float_only_uses = []
        self.graphs = []
        self.extra = {}
        self.used_names = set()
        self.generated = 0

    def node_base_name(self, node):
        if node.name:
            return node.name
        while True:
            self.generated += 1
            name = f"fp16_convert_unnamed_{self.generated}"
            if name not in self.used_names:
                self.used_names.add(name)
                node.name = name
                return name

    def add_cast(self, graph, key, src, dst, to, node_name, like):
        """Queue Cast(src -> dst) with sort key `key`; dst gets like's shape and type `to`."""
        cast = helper.make_node("Cast", [src], [dst], to=to, name=node_name)
        self.extra.setdefault(id(graph), []).append((key, cast))
        vi = graph.value_info.add()
        vi.CopyFrom(like)
        vi.name = dst
        vi.type.tensor_type.elem_type = to
        return vi

    def keep_io_float(self):
        graph = self.main_graph
        for i, vi in enumerate(graph.input):
            if vi.type.tensor_type.elem_type != TensorProto.FLOAT:
                continue
            cast_out = f"graph_input_cast_{i}"
            self.rename[vi.name] = cast_out
            self.io_kept_float.add(vi.name)
            self.io_cast_names.add(f"graph_input_cast{i}")
            new_vi = self.add_cast(graph, (-1, 0, i), vi.name, cast_out, TensorProto.FLOAT16,
                                   f"graph_input_cast{i}", vi)
            self.float16_values[cast_out] = new_vi
        for i, vi in enumerate(graph.output):
            if vi.type.tensor_type.elem_type != TensorProto.FLOAT:
                continue
            cast_in = f"graph_output_cast_{i}"
            self.rename[vi.name] = cast_in
            self.io_kept_float.add(vi.name)
            self.io_cast_names.add(f"graph_output_cast{i}")
            cast = helper.make_node("Cast", [cast_in], [vi.name], to=TensorProto.FLOAT, name=f"graph_output_cast{i}")
            self.extra.setdefault(id(graph), []).append(((float("inf"), 0, i), cast))
            new_vi = graph.value_info.add()
            new_vi.CopyFrom(vi)
            new_vi.name = cast_in
            new_vi.type.tensor_type.elem_type = TensorProto.FLOAT16
            self.float16_values[cast_in] = new_vi

    def visit(self, graph):
        self.graphs.append(graph)
        for t in graph.initializer:
            if t.data_type == TensorProto.FLOAT:
                self.initializers[t.name] = {"tensor": t, "fp16": 0, "fp32": 0}
        pending = []
        for index, node in enumerate(graph.node):
            if node.name:
                self.used_names.add(node.name)
            for i, name in enumerate(node.input):
                node.input[i] = self.rename.get(name, name)
            for i, name in enumerate(node.output):
                node.output[i] = self.rename.get(name, name)
            blocked = node.op_type in self.op_block_list or node.name in self.node_block_list
            keep_float = float_only_inputs(node, self.opset)
            for i, name in enumerate(node.input):
                if name in self.initializers:
                    self.initializers[name]["fp32" if blocked or i in keep_float else "fp16"] += 1
            if blocked:
                self.blocked.append((graph, index, node))
                continue
            for i in keep_float:
                if i < len(node.input) and node.input[i]:
                    self.float_only_uses.append((graph, index, node, i))
            if node.op_type == "Cast":
                for attr in node.attribute:
                    if attr.name == "to" and attr.i == TensorProto.FLOAT:
                        attr.i = TensorProto.FLOAT16
            for attr in node.attribute:
                if attr.HasField("t"):
                    tensor_to_float16(attr.t, self.min_positive_val, self.max_finite_val)
                for t in attr.tensors:
                    tensor_to_float16(t, self.min_positive_val, self.max_finite_val)
            pending.extend(subgraphs_of(node))
        for vi in itertools.chain(graph.input, graph.output, graph.value_info):
            if vi.name in self.io_kept_float and graph is self.main_graph:
                continue
            tensor_type = vi.type.tensor_type
            if vi.type.HasField("sequence_type"):
                tensor_type = vi.type.sequence_type.elem_type.tensor_type
            if tensor_type.elem_type == TensorProto.FLOAT:
                tensor_type.elem_type = TensorProto.FLOAT16
                self.float16_values[vi.name] = vi
        return pending

    def convert_initializers(self, force):
        input_names = {vi.name for g in self.graphs for vi in g.input}
        for name, info in self.initializers.items():
            if force or info["fp16"] or name in input_names:
                if info["fp32"] and not force:
                    warnings.warn(f"initializer '{name}' is read by float32 and float16 nodes; storing float16")
                tensor = info["tensor"]
                tensor_to_float16(tensor, self.min_positive_val, self.max_finite_val)
                self.float16_values[name] = helper.make_tensor_value_info(name, TensorProto.FLOAT16, tensor.dims)

    def cast_input_to_float(self, graph, index, node, i):
        name = node.input[i]
        if name not in self.float16_values:
            return
        base = self.node_base_name(node)
        cast_out = f"{base}_input_cast_{i}"
        self.add_cast(graph, (index, -1, i), name, cast_out, TensorProto.FLOAT, f"{base}_input_cast{i}",
                      self.float16_values[name])
        node.input[i] = cast_out

    def cast_output_to_float16(self, graph, index, node, i):
        name = node.output[i]
        if name not in self.float16_values:
            return
        base = self.node_base_name(node)
        cast_in = f"{base}_output_cast_{i}"
        cast = helper.make_node("Cast", [cast_in], [name], to=TensorProto.FLOAT16, name=f"{base}_output_cast{i}")
        self.extra.setdefault(id(graph), []).append(((index, 1, i), cast))
        vi = graph.value_info.add()
        vi.CopyFrom(self.float16_values[name])
        vi.name = cast_in
        vi.type.tensor_type.elem_type = TensorProto.FLOAT
        node.output[i] = cast_in

    def wrap_float32_nodes(self):
        for graph, index, node in self.blocked:
            for i in range(len(node.input)):
                self.cast_input_to_float(graph, index, node, i)
            for i in range(len(node.output)):
                self.cast_output_to_float16(graph, index, node, i)
        for graph, index, node, i in self.float_only_uses:
            self.cast_input_to_float(graph, index, node, i)

    def reorder(self):
        for graph in self.graphs:
            keyed = [((index, 0, 0), node) for index, node in enumerate(graph.node)]
            keyed += self.extra.get(id(graph), [])
            if len(keyed) == len(graph.node):
                continue
            topo_sort(graph, keyed)


def convert_float_to_float16(model, min_positive_val=1e-7, max_finite_val=1e4, keep_io_types=False,
                             disable_shape_infer=False, op_block_list=None, node_block_list=None,
                             force_fp16_initializers=False, check_fp16_ready=True):
    """Return a float16 copy of `model` (the argument is not modified).

    op_block_list None means DEFAULT_OP_BLOCK_LIST; pass [] to convert every op.
    """
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"expected an onnx.ModelProto, got {type(model).__name__}")
    out = onnx.ModelProto()
    out.CopyFrom(model)
    if not disable_shape_infer:
        out = onnx.shape_inference.infer_shapes(out)
    if check_fp16_ready and is_float16_model(out.graph):
        raise ValueError("the model already holds float16 tensors; pass check_fp16_ready=False to convert anyway")
    conv = _Converter(
        out,
        min_positive_val,
        max_finite_val,
        DEFAULT_OP_BLOCK_LIST if op_block_list is None else op_block_list,
        node_block_list or [],
    )
    if keep_io_types:
        conv.keep_io_float()
    queue = [conv.main_graph]
    while queue:
        queue = [sub for graph in queue for sub in conv.visit(graph)]
    conv.convert_initializers(force_fp16_initializers)
    conv.wrap_float32_nodes()
    conv.reorder()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--keep-io-types", action="store_true", help="keep float32 graph inputs/outputs")
    parser.add_argument("--op-block-list", default=None,
                        help="comma-separated op types kept in float32 (default: DEFAULT_OP_BLOCK_LIST; '' for none)")
    parser.add_argument("--node-block-list", default="", help="comma-separated node names kept in float32")
    parser.add_argument("--min-positive-val", type=float, default=1e-7)
    parser.add_argument("--max-finite-val", type=float, default=1e4)
    parser.add_argument("--force-fp16-initializers", action="store_true",
                        help="also convert initializers that only float32 (blocked) nodes read")
    parser.add_argument("--disable-shape-infer", action="store_true")
    args = parser.parse_args(argv)

    def split(text):
        return [s for s in (p.strip() for p in text.split(",")) if s]

    model = onnx.load(args.input)
    try:
        converted = convert_float_to_float16(
            model,
            min_positive_val=args.min_positive_val,
            max_finite_val=args.max_finite_val,
            keep_io_types=args.keep_io_types,
            disable_shape_infer=args.disable_shape_infer,
            op_block_list=None if args.op_block_list is None else split(args.op_block_list),
            node_block_list=split(args.node_block_list),
            force_fp16_initializers=args.force_fp16_initializers,
        )
    except ValueError as e:
        print(f"fp16_convert: {args.input}: {e}", file=sys.stderr)
        return 1
    onnx.checker.check_model(converted)
    onnx.save(converted, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
