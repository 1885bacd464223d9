#!/usr/bin/env python3
"""Writes models/resnet50.json (device 0) and models/resnet50_device1.json (the same model
on device 1, for multi-device file-mode runs): ResNet-50 v1.5 inference (batch 1) as the
emulated device runs it -- the op sequence of an ATC-converted model with plausible per-op durations
(about 1.5 ms per image with the gaps between ops). Deterministic: re-running it gives
the same file."""
import json
import random
import sys

rng = random.Random(50)


def jitter(us):
    return round(us * rng.uniform(0.9, 1.1), 3)


ops = []


def fp16(channels, side):
    """Bytes of a 1 x channels x side x side float16 feature map in the device's 5-D layout
    (NC1HWC0: channels in blocks of 16)."""
    return -(-channels // 16) * 16 * side * side * 2


def op(name, typ, us, out, wait=None):
    o = {"name": name, "type": typ, "duration_us": jitter(us), "output_bytes": out}
    if wait is not None:
        o["wait_us"] = wait
    ops.append(o)


op("trans_TransData_0", "TransData", 14.0, fp16(3, 224))
op("resnet50/conv1/Conv2D", "Conv2D", 61.0, fp16(64, 112))
op("resnet50/conv1/Relu", "Relu", 9.5, fp16(64, 112))
op("resnet50/pool1/MaxPool", "MaxPoolV3", 12.0, fp16(64, 56))

# (blocks, 1x1-reduce us, 3x3 us, 1x1-expand us, relu us, add us) per stage
stages = [(3, 17.0, 31.0, 19.0, 4.5, 6.0), (4, 15.0, 27.0, 16.0, 2.6, 3.4),
          (6, 13.5, 24.0, 14.0, 1.6, 2.1), (3, 14.0, 26.0, 15.5, 1.2, 1.5)]
# Each stage's width and side: v1.5 strides in the 3x3 convolution, so a stage's first
# 1x1 reduction still runs at the previous stage's side.
for s, (blocks, r_us, c_us, e_us, relu_us, add_us) in enumerate(stages, start=2):
    width, side = 64 << (s - 2), 56 >> (s - 2)
    for b in range(1, blocks + 1):
        p = f"resnet50/layer{s - 1}/block{b}"
        wide = fp16(4 * width, side)
        if b == 1:
            op(f"{p}/downsample/Conv2D", "Conv2D", e_us * 1.3, wide)
        before = side * 2 if b == 1 and s > 2 else side
        op(f"{p}/conv1/Conv2D", "Conv2D", r_us, fp16(width, before))
        op(f"{p}/conv1/Relu", "Relu", relu_us, fp16(width, before))
        op(f"{p}/conv2/Conv2D", "Conv2D", c_us, fp16(width, side))
        op(f"{p}/conv2/Relu", "Relu", relu_us, fp16(width, side))
        op(f"{p}/conv3/Conv2D", "Conv2D", e_us, wide)
        op(f"{p}/add/Add", "Add", add_us, wide)
        op(f"{p}/Relu", "Relu", relu_us, wide)

op("resnet50/avgpool/ReduceMean", "ReduceMeanD", 5.5, fp16(2048, 1))
op("resnet50/fc/MatMul", "MatMulV2", 11.0, fp16(1000, 1))
op("resnet50/fc/BiasAdd", "BiasAdd", 2.4, fp16(1000, 1))
op("resnet50/prob/Softmax", "SoftmaxV2", 4.2, fp16(1000, 1))
op("trans_TransData_1", "TransData", 3.1, 1000 * 4)

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
    print(f"{out}: {len(ops)} ops, {sum(o['duration_us'] for o in ops):.1f} us of compute")
