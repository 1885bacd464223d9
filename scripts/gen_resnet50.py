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


def op(name, typ, us, wait=None):
    o = {"name": name, "type": typ, "duration_us": jitter(us)}
    if wait is not None:
        o["wait_us"] = wait
    ops.append(o)


op("trans_TransData_0", "TransData", 14.0)
op("resnet50/conv1/Conv2D", "Conv2D", 61.0)
op("resnet50/conv1/Relu", "Relu", 9.5)
op("resnet50/pool1/MaxPool", "MaxPoolV3", 12.0)

# (blocks, 1x1-reduce us, 3x3 us, 1x1-expand us, relu us, add us) per stage
stages = [(3, 17.0, 31.0, 19.0, 4.5, 6.0), (4, 15.0, 27.0, 16.0, 2.6, 3.4),
          (6, 13.5, 24.0, 14.0, 1.6, 2.1), (3, 14.0, 26.0, 15.5, 1.2, 1.5)]
for s, (blocks, r_us, c_us, e_us, relu_us, add_us) in enumerate(stages, start=2):
    for b in range(1, blocks + 1):
        p = f"resnet50/layer{s - 1}/block{b}"
        if b == 1:
            op(f"{p}/downsample/Conv2D", "Conv2D", e_us * 1.3)
        op(f"{p}/conv1/Conv2D", "Conv2D", r_us)
        op(f"{p}/conv1/Relu", "Relu", relu_us)
        op(f"{p}/conv2/Conv2D", "Conv2D", c_us)
        op(f"{p}/conv2/Relu", "Relu", relu_us)
        op(f"{p}/conv3/Conv2D", "Conv2D", e_us)
        op(f"{p}/add/Add", "Add", add_us)
        op(f"{p}/Relu", "Relu", relu_us)

op("resnet50/avgpool/ReduceMean", "ReduceMeanD", 5.5)
op("resnet50/fc/MatMul", "MatMulV2", 11.0)
op("resnet50/fc/BiasAdd", "BiasAdd", 2.4)
op("resnet50/prob/Softmax", "SoftmaxV2", 4.2)
op("trans_TransData_1", "TransData", 3.1)

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
