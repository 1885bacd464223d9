"""CANN's official pyACL sample "subscribe to op information" (订阅算子信息), as a pyACL user
writes it. Only the model path differs: aclprof's simulator runs a model description where
an NPU would run an .om file.

Run: python3 python/examples/sample_subscribe.py
"""

import os

import numpy as np

import acl

MODEL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models",
                          "resnet50.json")
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


def get_model_info(data, data_len):
    op_number, ret = acl.prof.get_op_num(data, data_len)
    check_ret("acl.prof.get_op_num", ret)
    for i in range(op_number):
        model_id = acl.prof.get_model_id(data, data_len, i)
        op_type, ret = acl.prof.get_op_type_v2(data, data_len, i)
        check_ret("acl.prof.get_op_type_v2", ret)
        op_name, ret = acl.prof.get_op_name_v2(data, data_len, i)
        check_ret("acl.prof.get_op_name_v2", ret)
        op_start = acl.prof.get_op_start(data, data_len, i)
        op_end = acl.prof.get_op_end(data, data_len, i)
        op_duration = acl.prof.get_op_duration(data, data_len, i)
        print("op model_id={} type={} name={} start={} end={} duration={}".format(
            model_id, op_type, op_name, op_start, op_end, op_duration))


def prof_data_read(args):
    fd, ctx = args
    ret = acl.rt.set_context(ctx)
    check_ret("acl.rt.set_context", ret)
    buffer_size, ret = acl.prof.get_op_desc_size()
    check_ret("acl.prof.get_op_desc_size", ret)
    N = 10
    data_len = buffer_size * N
    while True:
        data = os.read(fd, data_len)
        if len(data) == 0:
            break
        np_data = np.array(data)
        np_data_ptr = acl.util.numpy_to_ptr(np_data)
        size = np_data.itemsize * np_data.size
        get_model_info(np_data_ptr, size)


def main():
    ret = acl.init()
    check_ret("acl.init", ret)
    ret = acl.rt.set_device(DEVICE_ID)
    check_ret("acl.rt.set_device", ret)
    context, ret = acl.rt.create_context(DEVICE_ID)
    check_ret("acl.rt.create_context", ret)

    model_id, ret = acl.mdl.load_from_file(MODEL_PATH)
    check_ret("acl.mdl.load_from_file", ret)
    print("load model success, model_id = {}".format(model_id))
    model_desc = acl.mdl.create_desc()
    ret = acl.mdl.get_desc(model_desc, model_id)
    check_ret("acl.mdl.get_desc", ret)
    input = create_dataset(model_desc, acl.mdl.get_num_inputs(model_desc),
                           acl.mdl.get_input_size_by_index)
    output = create_dataset(model_desc, acl.mdl.get_num_outputs(model_desc),
                            acl.mdl.get_output_size_by_index)

    r, w = os.pipe()
    ACL_AICORE_NONE = 0xFF
    subscribe_config = acl.prof.create_subscribe_config(1, ACL_AICORE_NONE, w)
    ret = acl.prof.model_subscribe(model_id, subscribe_config)
    check_ret("acl.prof.model_subscribe", ret)

    thr_id, ret = acl.util.start_thread(prof_data_read, [r, context])
    check_ret("acl.util.start_thread", ret)

    ret = acl.mdl.execute(model_id, input, output)
    check_ret("acl.mdl.execute", ret)

    ret = acl.prof.model_un_subscribe(model_id)
    check_ret("acl.prof.model_un_subscribe", ret)
    ret = acl.util.stop_thread(thr_id)
    check_ret("acl.util.stop_thread", ret)
    os.close(r)
    try:
        os.close(w)
    except OSError:
        pass  # model_un_subscribe already closed the write end, as the pyACL docs say
    ret = acl.prof.destroy_subscribe_config(subscribe_config)
    check_ret("acl.prof.destroy_subscribe_config", ret)

    for dataset in (input, output):
        for i in range(acl.mdl.get_dataset_num_buffers(dataset)):
            data_buffer = acl.mdl.get_dataset_buffer(dataset, i)
            acl.rt.free(acl.get_data_buffer_addr(data_buffer))
            acl.destroy_data_buffer(data_buffer)
        acl.mdl.destroy_dataset(dataset)
    acl.mdl.destroy_desc(model_desc)
    ret = acl.mdl.unload(model_id)
    check_ret("acl.mdl.unload", ret)
    ret = acl.rt.destroy_context(context)
    check_ret("acl.rt.destroy_context", ret)
    ret = acl.rt.reset_device(DEVICE_ID)
    check_ret("acl.rt.reset_device", ret)
    ret = acl.finalize()
    check_ret("acl.finalize", ret)
    print("subscription sample finished")


if __name__ == "__main__":
    main()
