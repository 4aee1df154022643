#!/usr/bin/python3
"""Writes one-node Conv models (random weights and bias, kernel 3, pads 1, stride 1) with a dynamic
batch and spatial size, for timing single layers through the whole Session, as the Winograd
figures in docs/PERFORMANCE.md were:

    /usr/bin/python3 bench/export_conv_layer.py /tmp/wg 32 32 3      # c32m32.onnx: 32 -> 32, 3D
    /usr/bin/python3 bench/export_conv_layer.py /tmp/wg 128 128 2    # c128m128_2d.onnx
    build/voxrt bench /tmp/wg/c32m32.onnx --shape 1x32x96x96x96 --threads 1 --runs 5
    VOXRT_WINOGRAD=0 build/voxrt bench /tmp/wg/c32m32.onnx --shape 1x32x96x96x96 --threads 1 --runs 5
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    if len(sys.argv) != 5 or sys.argv[4] not in ("2", "3"):
        sys.exit(__doc__)
    out, c, m, dims = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array((rng.standard_normal((m, c) + (3,) * dims) * 0.05).astype(np.float32),
                                "w")
    b = numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b")
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1] * (2 * dims),
                            kernel_shape=[3] * dims)
    spatial = ["D", "H", "W"][3 - dims:]
    g = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         ["N", c] + spatial)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, b])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(out, exist_ok=True)
    name = os.path.join(out, f"c{c}m{m}{'_2d' if dims == 2 else ''}.onnx")
    onnx.save(model, name)
    print(name)


if __name__ == "__main__":
    main()
