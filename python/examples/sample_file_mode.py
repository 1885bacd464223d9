"""CANN's official pyACL sample "collect performance data to disk" (采集并落盘性能数据), as a
pyACL user writes it. Only the model path differs: aclprof's simulator runs a model
description where an NPU would run an .om file. The input and output datasets, which the
official sample leaves to the reader, are built from the model's description as in the
subscription sample. Results go under ./prof_output.

Run: python3 python/examples/sample_file_mode.py
"""

import os

import acl

MODEL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models",
                          "resnet50.json")
PROF_INIT_PATH = os.path.abspath("prof_output")
DEVICE_ID = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0


def check_ret(message, ret):
    if ret != 0:
        raise Exception("{} failed ret={}".format(message, ret))


def create_dataset(model_desc, count, size_of):
    dataset = acl.mdl.create_dataset()
    for i in range(count):
        size = size_of(model_desc, i)
        dev_ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
        check_ret("acl.rt.malloc", ret)
        data = acl.create_data_buffer(dev_ptr, size)
        _, ret = acl.mdl.add_dataset_buffer(dataset, data)
        check_ret("acl.mdl.add_dataset_buffer", ret)
    return dataset


def destroy_dataset(dataset):
    for i in range(acl.mdl.get_dataset_num_buffers(dataset)):
        data_buffer = acl.mdl.get_dataset_buffer(dataset, i)
        acl.rt.free(acl.get_data_buffer_addr(data_buffer))
        acl.destroy_data_buffer(data_buffer)
    acl.mdl.destroy_dataset(dataset)


def main():
    ret = acl.init()
    check_ret("acl.init", ret)
    ret = acl.rt.set_device(DEVICE_ID)
    check_ret("acl.rt.set_device", ret)
    context, ret = acl.rt.create_context(DEVICE_ID)
    check_ret("acl.rt.create_context", ret)
    stream, ret = acl.rt.create_stream()
    check_ret("acl.rt.create_stream", ret)

    model_id, ret = acl.mdl.load_from_file(MODEL_PATH)
    check_ret("acl.mdl.load_from_file", ret)
    model_desc = acl.mdl.create_desc()
    ret = acl.mdl.get_desc(model_desc, model_id)
    check_ret("acl.mdl.get_desc", ret)
    input = create_dataset(model_desc, acl.mdl.get_num_inputs(model_desc),
                           acl.mdl.get_input_size_by_index)
    output = create_dataset(model_desc, acl.mdl.get_num_outputs(model_desc),
                            acl.mdl.get_output_size_by_index)

    ret = acl.prof.init(PROF_INIT_PATH)
    check_ret("acl.prof.init", ret)
    device_list = [DEVICE_ID]
    ACL_PROF_ACL_API = 0x0001
    ACL_PROF_TASK_TIME = 0x0002
    ACL_PROF_AICORE_METRICS = 0x0004
    ACL_PROF_SYS_HARDWARE_MEM_FREQ = 3
    prof_config = acl.prof.create_config(
        device_list, 0, 0, ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS)
    print("create_config returned {:#x}".format(prof_config))
    mem_freq = "15"
    ret = acl.prof.set_config(ACL_PROF_SYS_HARDWARE_MEM_FREQ, mem_freq)
    check_ret("acl.prof.set_config", ret)
    ret = acl.prof.start(prof_config)
    check_ret("acl.prof.start", ret)

    ret = acl.mdl.execute(model_id, input, output)
    check_ret("acl.mdl.execute", ret)

    destroy_dataset(input)
    destroy_dataset(output)
    acl.mdl.destroy_desc(model_desc)
    ret = acl.mdl.unload(model_id)
    check_ret("acl.mdl.unload", ret)

    ret = acl.prof.stop(prof_config)
    check_ret("acl.prof.stop", ret)
    ret = acl.prof.destroy_config(prof_config)
    check_ret("acl.prof.destroy_config", ret)
    ret = acl.prof.finalize()
    check_ret("acl.prof.finalize", ret)

    ret = acl.rt.destroy_stream(stream)
    check_ret("acl.rt.destroy_stream", ret)
    ret = acl.rt.destroy_context(context)
    check_ret("acl.rt.destroy_context", ret)
    ret = acl.rt.reset_device(DEVICE_ID)
    check_ret("acl.rt.reset_device", ret)
    ret = acl.finalize()
    check_ret("acl.finalize", ret)
    print("file-mode sample finished; results under {}".format(PROF_INIT_PATH))


if __name__ == "__main__":
    main()
