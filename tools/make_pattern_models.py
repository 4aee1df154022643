#!/usr/bin/python3
"""Writes small multi-node models: the pieces of UNets that voxrt's graph passes rewrite.

Each pattern is a tiny piece of a UNet or its head (two to four channels, a few voxels a side,
dynamic batch): BatchNorm after Conv, Conv + residual + activation in both orders, normalization
+ activation, GroupNorm written as torch exports it, Softmax between Transposes, Concat into Conv,
Resize or Upsample (the fp32 island an fp16 conversion leaves between Casts), a Resize given
sizes computed from shapes, deep supervision's
several outputs, a classification head, MONAI's strided residual units (two convolutions of one
input; BatchNorm and InstanceNorm). Each is written at several opsets from 7 to 21, in
float32, float16 and float16 with float32 inputs and outputs (tools/fp16_convert.py, as
onnxconverter-common converts).

Two users: tests/models/pattern_model_test.cpp runs every file against the reference backend
(CMake writes them into the build folder), and scripts/fuzz.sh seeds its corpus with them, since
ONNX's backend test models hold one op each and their mutants rarely reach the passes.

Usage: /usr/bin/python3 tools/make_pattern_models.py OUT_DIR
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fp16_convert import convert_float_to_float16  # noqa: E402

RNG = np.random.default_rng(7)


class Graph:
    """Nodes and initializers of one model, with fresh names."""

    def __init__(self, opset):
        self.opset = opset
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, stem):
        self.count += 1
        return f"{stem}{self.count}"

    def const(self, values, dtype=np.float32):
        n = self.name("w")
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), n))
        return n

    def weights(self, *shape):
        return self.const(RNG.standard_normal(shape) * (2.0 / np.prod(shape[1:])) ** 0.5)

    def op(self, op_type, inputs, outputs=1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name("n"), **attrs))
        return outs[0] if outputs == 1 else outs

    def conv(self, x, c_in, c_out, k=3, stride=1, dims=3, bias=True, **attrs):
        w = self.weights(c_out, c_in, *([k] * dims))
        inputs = [x, w] + ([self.const(RNG.standard_normal(c_out) * 0.1)] if bias else [])
        pad = (k - 1) // 2
        return self.op("Conv", inputs, kernel_shape=[k] * dims, strides=[stride] * dims,
                       pads=[pad] * (2 * dims), **attrs)

    def batch_norm(self, x, c):
        attrs = {"epsilon": 1e-5}
        if self.opset < 7:
            attrs["consumed_inputs"] = [0, 0, 0, 1, 1]
        elif self.opset < 9:
            attrs["spatial"] = 1
        return self.op("BatchNormalization",
                       [x, self.const(1 + 0.1 * RNG.standard_normal(c)),
                        self.const(0.1 * RNG.standard_normal(c)),
                        self.const(0.1 * RNG.standard_normal(c)),
                        self.const(0.5 + RNG.random(c))], **attrs)

    def instance_norm(self, x, c):
        return self.op("InstanceNormalization",
                       [x, self.const(1 + 0.1 * RNG.standard_normal(c)),
                        self.const(0.1 * RNG.standard_normal(c))], epsilon=1e-5)

    def ints(self, values):
        return self.const(values, np.int64)

    def model(self, inputs, outputs, name):
        g = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)],
                              producer_name="voxrt pattern models")
        m.ir_version = 7 if self.opset <= 15 else 8
        onnx.checker.check_model(m)
        return m


def io(name, channels, spatial):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", channels] + spatial)


def unet_bn(opset):
    """Conv, BatchNorm, Relu, MaxPool, ConvTranspose k2 s2, skip Concat, Conv, Softmax."""
    g = Graph(opset)
    a = g.op("Relu", [g.batch_norm(g.conv("x", 1, 3, bias=False), 3)])
    d = g.op("MaxPool", [a], kernel_shape=[2, 2, 2], strides=[2, 2, 2])
    d = g.op("Relu", [g.batch_norm(g.conv(d, 3, 4), 4)])
    u = g.op("ConvTranspose", [d, g.weights(4, 3, 2, 2, 2), g.const(np.zeros(3))],
             kernel_shape=[2, 2, 2], strides=[2, 2, 2])
    c = g.op("Concat", [a, u], axis=1)
    y = g.conv(g.op("Relu", [g.conv(c, 6, 3)]), 3, 2, k=1)
    g.nodes.append(helper.make_node("Softmax", [y], ["y"], axis=1))
    return g.model([io("x", 1, [4, 6, 6])], [io("y", 2, [4, 6, 6])], "unet_bn")


def monai_residual(opset):
    """MONAI's residual unit: strided Conv, InstanceNorm, PRelu, a 1x1 strided residual added
    after the activation; a k3 s2 ConvTranspose with output padding back up."""
    g = Graph(opset)
    slope = g.const([0.25])
    a = g.op("PRelu", [g.instance_norm(g.conv("x", 2, 3, stride=2), 3), slope])
    a = g.op("PRelu", [g.instance_norm(g.conv(a, 3, 3), 3), slope])
    r = g.op("Add", [a, g.conv("x", 2, 3, k=1, stride=2)])
    u = g.op("ConvTranspose", [r, g.weights(3, 2, 3, 3, 3), g.const(np.zeros(2))],
             kernel_shape=[3, 3, 3], strides=[2, 2, 2], pads=[1] * 6, output_padding=[1, 1, 1])
    u = g.op("PRelu", [g.instance_norm(u, 2), slope])
    c = g.op("Concat", [u, "x"], axis=1)
    g.nodes.append(helper.make_node("Sigmoid", [g.conv(c, 4, 2)], ["y"]))
    return g.model([io("x", 2, [4, 4, 6])], [io("y", 2, [4, 4, 6])], "monai_residual")


def group_norm(opset):
    """GroupNorm as torch exports it: Reshape to groups, InstanceNorm, Reshape back to the
    input's Shape, Mul and Add per channel; then LeakyRelu and a Conv + residual Add + Relu."""
    g = Graph(opset)
    x = g.conv("x", 1, 4)
    grouped = g.op("Reshape", [x, g.ints([0, 2, -1])])
    n = g.op("InstanceNormalization", [grouped, g.const(np.ones(2)), g.const(np.zeros(2))],
             epsilon=1e-5)
    back = g.op("Reshape", [n, g.op("Shape", [x])])
    scaled = g.op("Add", [g.op("Mul", [back, g.const(1 + 0.1 * RNG.standard_normal((4, 1, 1, 1)))]),
                          g.const(0.1 * RNG.standard_normal((4, 1, 1, 1)))])
    a = g.op("LeakyRelu", [scaled], alpha=0.01)
    r = g.op("Relu", [g.op("Add", [g.conv(a, 4, 4), a])])
    g.nodes.append(helper.make_node("Conv", [r, g.weights(2, 4, 1, 1, 1)], ["y"],
                                    kernel_shape=[1, 1, 1]))
    return g.model([io("x", 1, [3, 5, 4])], [io("y", 2, [3, 5, 4])], "group_norm")


def resize_island(opset):
    """Strided Conv, trilinear Resize (or Upsample before opset 10) by 2, Concat, Conv: the
    Resize is the fp32 island an fp16 conversion leaves between Casts."""
    g = Graph(opset)
    a = g.op("Relu", [g.conv("x", 1, 3)])
    d = g.op("Relu", [g.conv(a, 3, 3, stride=2)])
    scales = g.const([1, 1, 2, 2, 2])
    if opset < 9:
        u = g.op("Upsample", [d], mode="nearest", scales=[1.0, 1.0, 2.0, 2.0, 2.0])
    elif opset < 10:
        u = g.op("Upsample", [d, scales], mode="linear")
    elif opset < 11:
        u = g.op("Resize", [d, scales], mode="linear")
    else:
        roi = g.const([])
        u = g.op("Resize", [d, roi, scales], mode="linear",
                 coordinate_transformation_mode="align_corners" if opset < 13 else "half_pixel")
    c = g.op("Concat", [a, u], axis=1)
    g.nodes.append(helper.make_node("Conv", [g.op("Relu", [g.conv(c, 6, 3)]),
                                             g.weights(3, 3, 1, 1, 1)], ["y"],
                                    kernel_shape=[1, 1, 1]))
    return g.model([io("x", 1, [4, 4, 4])], [io("y", 3, [4, 4, 4])], "resize_island")


def resize_sizes(opset):
    """F.interpolate(d, size=a.shape[2:]) as torch exports it: the Resize's sizes from Shape,
    Slice and Concat (nearest at opsets 11 and 17, trilinear at 13 and 21), Concat, Conv."""
    g = Graph(opset)
    a = g.op("Relu", [g.conv("x", 1, 3)])
    d = g.op("Relu", [g.conv(g.op("MaxPool", [a], kernel_shape=[2, 2, 2], strides=[2, 2, 2]),
                             3, 4)])
    nc = g.op("Slice", [g.op("Shape", [d]), g.ints([0]), g.ints([2])])
    dhw = g.op("Slice", [g.op("Shape", [a]), g.ints([2]), g.ints([5])])
    sizes = g.op("Concat", [nc, dhw], axis=0)
    nearest = opset in (11, 17)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
             "nearest_mode": "floor"} if nearest else {
        "mode": "linear", "coordinate_transformation_mode": "half_pixel"}
    inputs = [d, g.const([]), g.const([]), sizes] if opset < 13 else [d, "", "", sizes]
    u = g.op("Resize", inputs, **attrs)
    g.nodes.append(helper.make_node("Conv", [g.op("Concat", [a, u], axis=1),
                                             g.weights(2, 7, 3, 3, 3)], ["y"],
                                    kernel_shape=[3, 3, 3], pads=[1] * 6))
    return g.model([io("x", 1, [4, 6, 8])], [io("y", 2, [4, 6, 8])], "resize_sizes")


def pool_softmax_2d(opset):
    """A 2D piece: Pad of zeros before AveragePool, Clip, a channel Softmax written the opset-11
    way (Transpose, Softmax on the last axis, Transpose back)."""
    g = Graph(opset)
    a = g.op("Relu", [g.conv("x", 3, 4, dims=2)])
    if opset >= 11:
        p = g.op("Pad", [a, g.ints([0, 0, 1, 1, 0, 0, 1, 1]), g.const(0.0)], mode="constant")
    else:
        p = g.op("Pad", [a], mode="constant", pads=[0, 0, 1, 1, 0, 0, 1, 1])
    p = g.op("AveragePool", [p], kernel_shape=[3, 3], strides=[2, 2])
    if opset >= 11:
        p = g.op("Clip", [p, g.const(0.0), g.const(6.0)])
    else:
        p = g.op("Clip", [p], min=0.0, max=6.0)
    u = g.op("ConvTranspose", [p, g.weights(4, 4, 2, 2), g.const(np.zeros(4))],
             kernel_shape=[2, 2], strides=[2, 2])
    y = g.conv(g.op("Concat", [a, u], axis=1), 8, 3, dims=2)
    t = g.op("Transpose", [y], perm=[0, 2, 3, 1])
    s = g.op("Softmax", [t], axis=-1 if opset >= 11 else 3)
    g.nodes.append(helper.make_node("Transpose", [s], ["y"], perm=[0, 3, 1, 2]))
    return g.model([io("x", 3, [6, 8])], [io("y", 3, [6, 8])], "pool_softmax_2d")


def deep_supervision(opset):
    """nnU-Net's deep supervision: an output at each decoder scale; Identity and Dropout the
    exporter leaves, a reflect Pad, Split and Slice of channels, Sigmoid times x (SiLU)."""
    g = Graph(opset)
    a = g.op("Identity", [g.op("LeakyRelu", [g.instance_norm(g.conv("x", 2, 4), 4)], alpha=0.01)])
    if opset < 12:
        a = g.op("Dropout", [a], **({"is_test": 1} if opset < 7 else {}))
    else:
        a = g.op("Dropout", [a])
    d = g.op("Relu", [g.conv(a, 4, 4, stride=2)])
    low = g.conv(d, 4, 2, k=1)
    split = {"split": [2, 2]} if opset < 13 else {}
    inputs = [d] if opset < 13 else [d, g.ints([2, 2])]
    s0, s1 = g.op("Split", inputs, outputs=2, axis=1, **split)
    mixed = g.op("Mul", [s0, g.op("Sigmoid", [s1])])
    if opset >= 11:
        pad = g.op("Pad", [mixed, g.ints([0, 0, 1, 1, 1, 0, 0, 1, 1, 1])], mode="reflect")
        cut = g.op("Slice", [pad, g.ints([1, 1, 1]), g.ints([-1, -1, -1]), g.ints([2, 3, 4])])
    else:
        pad = g.op("Pad", [mixed], mode="reflect", pads=[0, 0, 1, 1, 1, 0, 0, 1, 1, 1])
        cut = g.op("Slice", [pad], starts=[1, 1, 1], ends=[-1, -1, -1], axes=[2, 3, 4])
    u = g.op("ConvTranspose", [cut, g.weights(2, 2, 2, 2, 2)], kernel_shape=[2, 2, 2],
             strides=[2, 2, 2])
    c = g.op("Concat", [a, u], axis=1)
    g.nodes.append(helper.make_node("Conv", [c, g.weights(2, 6, 1, 1, 1)], ["y"],
                                    kernel_shape=[1, 1, 1]))
    g.nodes.append(helper.make_node("Identity", [low], ["y_low"]))
    return g.model([io("x", 2, [4, 6, 4])], [io("y", 2, [4, 6, 4]), io("y_low", 2, [2, 3, 2])],
                   "deep_supervision")


def classifier_head(opset):
    """A 2D encoder with a classification head: strided Conv, BatchNorm, Clip as ReLU6, global
    average pooling, Flatten, Gemm, Softmax."""
    g = Graph(opset)
    a = g.batch_norm(g.conv("x", 1, 4, dims=2, stride=2), 4)
    a = g.op("Clip", [a], min=0.0, max=6.0) if opset < 11 else g.op(
        "Clip", [a, g.const(0.0), g.const(6.0)])
    f = g.op("Flatten", [g.op("GlobalAveragePool", [a])], axis=1)
    logits = g.op("Gemm", [f, g.weights(3, 4), g.const(np.zeros(3))], transB=1)
    g.nodes.append(helper.make_node("Softmax", [logits], ["y"], axis=1))
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
    return g.model([io("x", 1, [8, 6])], [out], "classifier_head")


def monai_strided_units(opset, instance_norm=False):
    """MONAI's UNet as the spleen bundle configures it (BatchNorm), or with MONAI's default
    InstanceNorm: strided residual units whose first convolution and residual convolution (3x3x3,
    stride 2) read the same input, the residual one exported before the unit's second
    convolution, as torch writes it; a last unit at stride 1 with a 1x1 residual, as at the
    bottom of MONAI's UNet."""
    g = Graph(opset)
    slope = g.const([0.25])
    norm = g.instance_norm if instance_norm else g.batch_norm

    def unit(x, c_in, c_out, stride, k_res, out=None):
        a = g.op("PRelu", [norm(g.conv(x, c_in, c_out, stride=stride), c_out), slope])
        r = g.conv(x, c_in, c_out, k=k_res, stride=stride)
        a = g.op("PRelu", [norm(g.conv(a, c_out, c_out), c_out), slope])
        if out is None:
            return g.op("Add", [a, r])
        g.nodes.append(helper.make_node("Add", [a, r], [out], name=g.name("n")))
        return out

    unit(unit(unit("x", 1, 3, 2, 3), 3, 4, 2, 3), 4, 4, 1, 1, out="y")
    name = "monai_strided_units_in" if instance_norm else "monai_strided_units"
    return g.model([io("x", 1, [8, 8, 12])], [io("y", 4, [2, 2, 3])], name)


def monai_strided_units_in(opset):
    return monai_strided_units(opset, instance_norm=True)


def wide_decoder(opset):
    """A decoder level wide enough for the CPU backend's Winograd form (16 -> 32 and 32 -> 16 3x3x3
    convolutions): Conv, InstanceNorm, LeakyRelu, strided Conv, ConvTranspose k2 s2, skip Concat,
    Conv (whose X the passes leave whole: x_as_stored), InstanceNorm, Relu, a 1x1 output layer."""
    g = Graph(opset)
    a = g.op("LeakyRelu", [g.instance_norm(g.conv("x", 16, 32), 32)], alpha=0.01)
    d = g.op("Relu", [g.conv(a, 32, 32, stride=2)])
    u = g.op("ConvTranspose", [d, g.weights(32, 16, 2, 2, 2), g.const(np.zeros(16))],
             kernel_shape=[2, 2, 2], strides=[2, 2, 2])
    c = g.op("Concat", [g.conv(a, 32, 16, k=1), u], axis=1)
    h = g.op("Relu", [g.instance_norm(g.conv(c, 32, 16), 16)])
    g.nodes.append(helper.make_node("Conv", [h, g.weights(2, 16, 1, 1, 1)], ["y"],
                                    kernel_shape=[1, 1, 1]))
    return g.model([io("x", 16, [4, 4, 6])], [io("y", 2, [4, 4, 6])], "wide_decoder")


PATTERNS = {
    "unet_bn": (unet_bn, [7, 9, 13, 17, 21]),
    "monai_residual": (monai_residual, [9, 13, 17, 21]),
    "group_norm": (group_norm, [7, 13, 17, 21]),
    "resize_island": (resize_island, [7, 9, 10, 11, 13, 17, 21]),
    "resize_sizes": (resize_sizes, [11, 13, 17, 21]),
    "pool_softmax_2d": (pool_softmax_2d, [7, 11, 13, 17, 21]),
    "deep_supervision": (deep_supervision, [7, 11, 13, 17, 21]),
    "classifier_head": (classifier_head, [7, 11, 13, 17, 21]),
    "monai_strided_units": (monai_strided_units, [7, 11, 13, 17, 21]),
    "monai_strided_units_in": (monai_strided_units_in, [7, 11, 13, 17, 21]),
    "wide_decoder": (wide_decoder, [7, 11, 13, 17, 21]),
}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    written = 0
    for name, (build, opsets) in PATTERNS.items():
        for opset in opsets:
            m = build(opset)
            forms = {"": m, "_fp16": convert_float_to_float16(m),
                     "_fp16io32": convert_float_to_float16(m, keep_io_types=True)}
            for suffix, model in forms.items():
                onnx.save(model, os.path.join(out, f"voxrt_{name}_op{opset}{suffix}.onnx"))
                written += 1
    print(f"wrote {written} models to {out}")


if __name__ == "__main__":
    main()
