#!/usr/bin/python3
"""Small ONNX graphs (python3-onnx) covering every op and fusion fmt-convert maps to .nk:
Gemm/MatMul(+Add) with each activation, Conv (group 1, depthwise, grouped), asymmetric pads,
max/average/global pools, BatchNormalization (folded into a conv, kept, folded into a dense),
Flatten/Reshape/Squeeze (NHWC after a Transpose and plain NCHW), and the ResNet basic block (identity
and projection), MobileNetV4 UIB and ConvNeXt V2 block. Random weights from a fixed seed.

usage: nk_onnx_gen.py DIR   writes DIR/NAME.onnx and DIR/cases.json ({name: input shape})
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(22)


class G:
    """A graph under construction: nodes, initializers, unique names."""

    def __init__(self, shape):
        self.nodes, self.inits, self.n = [], [], 0
        self.shape = shape
        self.x = "x"

    def name(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def init(self, arr):
        name = self.name("w")
        self.inits.append(numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name))
        return name

    def rand(self, *shape, scale=0.3):
        return self.init(RNG.uniform(-scale, scale, shape))

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=self.name("n_" + op), **attrs))
        return out

    def conv(self, x, cin, cout, k, stride=1, pads=None, group=1, bias=True):
        pads = pads if pads is not None else [k // 2] * 4
        ins = [x, self.rand(cout, cin // group, k, k)] + ([self.rand(cout, scale=0.1)] if bias else [])
        return self.node("Conv", ins, kernel_shape=[k, k], strides=[stride, stride], pads=pads, group=group)

    def bn(self, x, c):
        return self.node("BatchNormalization", [x, self.init(RNG.uniform(0.5, 1.5, c)), self.rand(c, scale=0.2),
                                                self.rand(c, scale=0.2), self.init(RNG.uniform(0.5, 2.0, c))],
                         epsilon=1e-5)

    def gemm(self, x, fin, fout, trans_b=1):
        w = self.rand(fout, fin) if trans_b else self.rand(fin, fout)
        return self.node("Gemm", [x, w, self.rand(fout, scale=0.1)], transB=trans_b)

    def save(self, path, out):
        inp = helper.make_tensor_value_info("x", TensorProto.FLOAT, self.shape)
        outp = helper.make_tensor_value_info(out, TensorProto.FLOAT, None)
        graph = helper.make_graph(self.nodes, "g", [inp], [outp], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, path)


def mlp_gemm():
    g = G([1, 6])
    y = g.node("Relu", [g.gemm("x", 6, 8)])
    y = g.node("Sigmoid", [g.gemm(y, 8, 8, trans_b=0)])
    y = g.node("Tanh", [g.gemm(y, 8, 8)])
    y = g.node("LeakyRelu", [g.gemm(y, 8, 8)], alpha=0.2)
    y = g.node("Clip", [g.gemm(y, 8, 8), g.init([0.0]), g.init([6.0])])
    y = g.node("Softmax", [g.gemm(y, 8, 4)], axis=1)
    return g, y


def mlp_matmul():
    g = G([1, 5])
    y = g.node("Add", [g.node("MatMul", ["x", g.rand(5, 7)]), g.rand(7, scale=0.1)])
    y = g.node("Relu", [y])
    y = g.node("MatMul", [y, g.rand(7, 6)])                      # no bias, no activation:
    y = g.node("Add", [g.node("MatMul", [y, g.rand(6, 3)]), g.rand(3)])  # merged with this one
    return g, y


def cnn_conv_pool():
    g = G([1, 2, 9, 8])
    y = g.node("Relu", [g.conv("x", 2, 4, 3)])
    y = g.node("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = g.node("LeakyRelu", [g.conv(y, 4, 6, 3, pads=[0, 1, 2, 1])], alpha=0.1)   # asymmetric pads
    y = g.node("AveragePool", [y], kernel_shape=[3, 2], strides=[1, 1], pads=[1, 0, 1, 1])
    y = g.bn(y, 6)                                               # stays a batch_norm2d
    y = g.node("MaxPool", [y], kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1])
    y = g.node("GlobalAveragePool", [y])
    y = g.node("Flatten", [y], axis=1)
    return g, g.node("Softmax", [g.gemm(y, 6, 5)], axis=1)


def cnn_depthwise_grouped():
    g = G([1, 4, 7, 7])
    y = g.node("Clip", [g.conv("x", 4, 4, 3, stride=2, group=4), g.init([0.0]), g.init([6.0])])  # depthwise
    y = g.node("Tanh", [g.conv(y, 4, 6, 3, group=2)])           # grouped, expanded to a conv2d
    y = g.bn(g.conv(y, 6, 6, 1, bias=False), 6)                 # folded into the conv
    y = g.node("Sigmoid", [y])
    y = g.conv(y, 6, 6, 3, pads=[1, 1, 2, 2], group=6)          # depthwise, asymmetric pads
    y = g.node("Transpose", [y], perm=[0, 2, 3, 1])
    y = g.node("Flatten", [y], axis=1)
    return g, g.node("Add", [g.node("MatMul", [y, g.rand(6 * 5 * 5, 3)]), g.rand(3)])


def cnn_nchw_flatten():
    g = G([1, 3, 5, 4])
    y = g.node("Relu", [g.conv("x", 3, 5, 3)])
    y = g.bn(y, 5)                                               # BN, flatten, dense: folded into the dense
    y = g.node("Flatten", [y], axis=1)                           # NCHW order: the dense is permuted
    return g, g.node("Relu", [g.gemm(y, 5 * 5 * 4, 6)])


def cnn_global_max_reshape():
    g = G([1, 3, 6, 4])
    y = g.node("Relu", [g.conv("x", 3, 5, 3, stride=1, pads=[1, 1, 1, 1])])
    y = g.node("GlobalMaxPool", [y])
    shape = g.name("shape")
    g.inits.append(numpy_helper.from_array(np.array([1, 5], dtype=np.int64), shape))
    y = g.node("Reshape", [y, shape])
    return g, g.gemm(y, 5, 2)


def resnet(stride, cin, cout, h=6):
    g = G([1, cin, h, h])
    a = g.node("Relu", [g.bn(g.conv("x", cin, cout, 3, stride=stride, bias=False), cout)])
    b = g.bn(g.conv(a, cout, cout, 3, bias=False), cout)
    skip = "x" if stride == 1 and cin == cout else g.bn(g.conv("x", cin, cout, 1, stride=stride, pads=[0] * 4,
                                                                bias=False), cout)
    return g, g.node("Relu", [g.node("Add", [b, skip])])


def uib():
    g = G([1, 8, 5, 5])
    y = g.bn(g.conv("x", 8, 8, 3, group=8, bias=False), 8)     # start depthwise
    y = g.node("Relu", [g.bn(g.conv(y, 8, 16, 1, pads=[0] * 4, bias=False), 16)])
    y = g.node("Relu", [g.bn(g.conv(y, 16, 16, 3, group=16, bias=False), 16)])
    y = g.bn(g.conv(y, 16, 8, 1, pads=[0] * 4, bias=False), 8)
    y = g.node("GlobalAveragePool", [g.node("Add", [y, "x"])])
    axes = g.name("axes")
    g.inits.append(numpy_helper.from_array(np.array([2, 3], dtype=np.int64), axes))
    return g, g.gemm(g.node("Squeeze", [y, axes]), 8, 3)      # Squeeze of [1, C, 1, 1]: a flatten


def convnext():
    c, eps = 4, 1e-6
    g = G([1, c, 5, 5])
    t = g.conv("x", c, c, 7, group=c)
    t = g.node("Transpose", [t], perm=[0, 2, 3, 1])
    t = g.node("LayerNormalization", [t, g.init(RNG.uniform(0.5, 1.5, c)), g.rand(c, scale=0.1)], axis=-1,
               epsilon=eps)
    t = g.node("Transpose", [t], perm=[0, 3, 1, 2])
    u = g.conv(t, c, 4 * c, 1, pads=[0] * 4)
    # GELU, tanh form (the .nk block's): x * 0.5 * (1 + tanh(0.79788456 * (x + 0.044715 x^3)))
    cube = g.node("Mul", [g.node("Mul", [u, u]), u])
    inner = g.node("Add", [u, g.node("Mul", [cube, g.init(0.044715)])])
    th = g.node("Tanh", [g.node("Mul", [inner, g.init(0.7978845608)])])
    act = g.node("Mul", [u, g.node("Mul", [g.node("Add", [th, g.init(1.0)]), g.init(0.5)])])
    # GRN: act * gamma * (L2 over H, W) / (mean over channels + eps) + beta + act
    gx = g.node("ReduceL2", [act], axes=[2, 3], keepdims=1)
    nx = g.node("Div", [gx, g.node("Add", [g.node("ReduceMean", [gx], axes=[1], keepdims=1), g.init(eps)])])
    gamma, beta = g.rand(1, 4 * c, 1, 1), g.rand(1, 4 * c, 1, 1, scale=0.1)
    m2 = g.node("Mul", [g.node("Mul", [gamma, g.node("Mul", [act, nx])]), g.init([1.0])])
    grn = g.node("Add", [act, g.node("Add", [beta, m2])])
    v = g.conv(grn, 4 * c, c, 1, pads=[0] * 4)
    return g, g.node("Add", [v, "x"])


CASES = {
    "mlp_gemm": mlp_gemm, "mlp_matmul": mlp_matmul, "cnn_conv_pool": cnn_conv_pool,
    "cnn_depthwise_grouped": cnn_depthwise_grouped, "cnn_nchw_flatten": cnn_nchw_flatten,
    "cnn_global_max_reshape": cnn_global_max_reshape, "resnet_identity": lambda: resnet(1, 4, 4),
    "resnet_projection": lambda: resnet(2, 4, 6, h=7), "uib": uib, "convnext": convnext,
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    shapes = {}
    for name, make in CASES.items():
        g, y = make()
        g.save(os.path.join(out, name + ".onnx"), y)
        s = g.shape
        shapes[name] = [s[1]] if len(s) == 2 else [s[2], s[3], s[1]]
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(shapes, f)


if __name__ == "__main__":
    main()
