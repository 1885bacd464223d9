#!/usr/bin/env python3
"""Writes models/resnet50.json (device 0) and models/resnet50_device1.json (the same model
on device 1, for multi-device file-mode runs): ResNet-50 v1.5 inference (batch 1) as the
emulated device runs it -- the op sequence of an ATC-converted model with plausible per-op
durations (about 1.5 ms per image with the gaps between ops). Deterministic: re-running it
gives the same file.

Each op carries what CANN's op_summary gives an op: its tensors' shapes, data types and
formats, its FLOPs and the bytes it moves. They are derived here from the network's
definition -- torchvision's resnet50 (v1.5: the stride in each stage's first 3x3
convolution; batch normalisation folded into the convolutions, which gain a bias, as ATC
folds it), at 224x224 -- in the device's layouts: float16 feature maps in NC1HWC0 (channels
in blocks of 16), convolution weights in FRACTAL_Z, the classifier in ND. FLOPs count a
multiply-add as two; bytes are every input's and output's."""
import json
import random
import sys

rng = random.Random(50)


def jitter(us):
    return round(us * rng.uniform(0.9, 1.1), 3)


ops = []

F16 = 2


def blocks(c):
    return -(-c // 16)


def fmap(c, side):
    """A float16 feature map: (shape, type, format, bytes)."""
    return (f"1,{blocks(c)},{side},{side},16", "FLOAT16", "NC1HWC0",
            blocks(c) * 16 * side * side * F16)


def nd(dims, dtype="FLOAT16", size=F16):
    n = 1
    for d in dims:
        n *= d
    return (",".join(map(str, dims)), dtype, "ND", n * size)


def op(name, typ, us, inputs, outputs, flops):
    """One op: its tensors as (shape, type, format, bytes) tuples."""
    o = {"name": name, "type": typ, "duration_us": jitter(us)}
    for side, tensors in (("input", inputs), ("output", outputs)):
        o[f"{side}_shapes"] = ";".join(t[0] for t in tensors)
        o[f"{side}_types"] = ";".join(t[1] for t in tensors)
        o[f"{side}_formats"] = ";".join(t[2] for t in tensors)
    o["flops"] = flops
    o["bytes"] = sum(t[3] for t in inputs + outputs)
    ops.append(o)


def conv(name, us, cin, cout, k, side_in, stride):
    side = side_in // stride
    weight = (f"{k * k * blocks(cin)},{blocks(cout)},16,16", "FLOAT16", "FRACTAL_Z",
              k * k * blocks(cin) * 16 * blocks(cout) * 16 * F16)
    op(name, "Conv2D", us, [fmap(cin, side_in), weight, nd([cout])], [fmap(cout, side)],
       2 * cin * k * k * cout * side * side)
    return side


def elementwise(name, typ, us, c, side, n_in=1):
    x = fmap(c, side)
    op(name, typ, us, [x] * n_in, [x], c * side * side * (n_in if typ == "Add" else 1))


op("trans_TransData_0", "TransData", 14.0, [nd([1, 3, 224, 224], "FLOAT", 4)[:2] + ("NCHW", 3 * 224 * 224 * 4)],
   [fmap(3, 224)], 0)
conv("resnet50/conv1/Conv2D", 61.0, 3, 64, 7, 224, 2)
elementwise("resnet50/conv1/Relu", "Relu", 9.5, 64, 112)
op("resnet50/pool1/MaxPool", "MaxPoolV3", 12.0, [fmap(64, 112)], [fmap(64, 56)], 9 * 64 * 56 * 56)

# (blocks, 1x1-reduce us, 3x3 us, 1x1-expand us, relu us, add us) per stage
stages = [(3, 17.0, 31.0, 19.0, 4.5, 6.0), (4, 15.0, 27.0, 16.0, 2.6, 3.4),
          (6, 13.5, 24.0, 14.0, 1.6, 2.1), (3, 14.0, 26.0, 15.5, 1.2, 1.5)]
channels, side = 64, 56
for s, (nblocks, r_us, c_us, e_us, relu_us, add_us) in enumerate(stages, start=2):
    width = 64 << (s - 2)
    stride = 1 if s == 2 else 2
    for b in range(1, nblocks + 1):
        p = f"resnet50/layer{s - 1}/block{b}"
        first = b == 1
        if first:
            conv(f"{p}/downsample/Conv2D", e_us * 1.3, channels, 4 * width, 1, side, stride)
        conv(f"{p}/conv1/Conv2D", r_us, channels, width, 1, side, 1)
        elementwise(f"{p}/conv1/Relu", "Relu", relu_us, width, side)
        out = conv(f"{p}/conv2/Conv2D", c_us, width, width, 3, side, stride if first else 1)
        elementwise(f"{p}/conv2/Relu", "Relu", relu_us, width, out)
        conv(f"{p}/conv3/Conv2D", e_us, width, 4 * width, 1, out, 1)
        elementwise(f"{p}/add/Add", "Add", add_us, 4 * width, out, n_in=2)
        elementwise(f"{p}/Relu", "Relu", relu_us, 4 * width, out)
        channels, side = 4 * width, out

op("resnet50/avgpool/ReduceMean", "ReduceMeanD", 5.5, [fmap(2048, 7)], [fmap(2048, 1)],
   2048 * 7 * 7)
op("resnet50/fc/MatMul", "MatMulV2", 11.0, [nd([1, 2048]), nd([2048, 1000])], [nd([1, 1000])],
   2 * 2048 * 1000)
op("resnet50/fc/BiasAdd", "BiasAdd", 2.4, [nd([1, 1000]), nd([1000])], [nd([1, 1000])], 1000)
op("resnet50/prob/Softmax", "SoftmaxV2", 4.2, [nd([1, 1000])], [nd([1, 1000])], 5 * 1000)
op("trans_TransData_1", "TransData", 3.1, [nd([1, 1000])], [nd([1, 1000], "FLOAT", 4)], 0)

outdir = sys.argv[1] if len(sys.argv) > 1 else "models"
for device, name in [(0, "resnet50"), (1, "resnet50_device1")]:
    # Inputs and outputs as the real model's: one 1x3x224x224 float32 image, 1000 float32
    # class scores (what aclmdlGetInputSizeByIndex / aclmdlGetOutputSizeByIndex report).
    model = {"name": name, "device": device, "wait_us": 1.5, "inputs": [3 * 224 * 224 * 4],
             "outputs": [1000 * 4], "ops": ops}
    out = f"{outdir}/{name}.json"
    with open(out, "w") as f:
        json.dump(model, f, indent=1)
        f.write("\n")
    print(f"{out}: {len(ops)} ops, {sum(o['duration_us'] for o in ops):.1f} us of compute, "
          f"{sum(o['flops'] for o in ops) / 1e9:.2f} GFLOPs")
