"""Builds the ONNX models of Kiln's control-flow tests (If, Loop, Scan).

    control_flow_models.py CASE OUTPUT
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, array):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.asarray(array)))


def model(nodes, inputs, outputs, opset=17, ir=8):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="kiln-tests")
    m.ir_version = ir
    return m


def if_branches():
    """If on a data-dependent condition; both branches use the outer x; the
    then branch yields 4 values, the else branch 3 (a dynamic dim)."""
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"], name="relu")], "then", [],
        [vi("t", F, [4])])
    else_g = helper.make_graph(
        [const("three", np.array([3], np.int64)),
         const("zero", np.array([0], np.int64)),
         helper.make_node("Slice", ["x", "zero", "three"], ["e"], name="head")],
        "else", [], [vi("e", F, [3])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
             const("zero_f", np.array(0, np.float32)),
             helper.make_node("Greater", ["s", "zero_f"], ["c"], name="positive"),
             helper.make_node("If", ["c"], ["y"], name="branch",
                              then_branch=then_g, else_branch=else_g)]
    return model(nodes, [vi("x", F, [4])], [vi("y", F, ["n"])])


def if_same_shape():
    """If whose branches both keep x's dynamic batch: the result has it."""
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"], name="relu")], "then", [],
        [vi("t", F, ["N", 4])])
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"], name="neg")], "else", [],
        [vi("e", F, ["N", 4])])
    nodes = [helper.make_node("If", ["c"], ["y"], name="branch",
                              then_branch=then_g, else_branch=else_g)]
    return model(nodes, [vi("c", B, []), vi("x", F, ["N", 4])],
                 [vi("y", F, ["N", 4])])


def loop_body(with_scan=True):
    """Body: acc += x * (i + 1) while acc.sum() < limit; the scan output is
    acc after each iteration."""
    nodes = [const("one", np.array(1, np.int64)),
             helper.make_node("Add", ["i", "one"], ["i1"], name="next_i"),
             helper.make_node("Cast", ["i1"], ["f"], to=F, name="to_float"),
             helper.make_node("Mul", ["x", "f"], ["step"], name="scale"),
             helper.make_node("Add", ["acc", "step"], ["acc_out"], name="acc"),
             helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0,
                              name="total"),
             helper.make_node("Less", ["total", "limit"], ["cond_out"],
                              name="keep_going")]
    outputs = [vi("cond_out", B, []), vi("acc_out", F, [3])]
    if with_scan:
        nodes.append(helper.make_node("Identity", ["acc_out"], ["row"],
                                      name="row"))
        outputs.append(vi("row", F, [3]))
    return helper.make_graph(
        nodes, "body", [vi("i", I64, []), vi("cond", B, []),
                        vi("acc", F, [3])], outputs)


def loop_carried_scan():
    """Loop with a max trip count, a condition, a carried value and a scan
    output: the scan output's length is data-dependent; its sum over the
    iterations is the graph output."""
    nodes = [const("true", np.array(True)),
             helper.make_node("Loop", ["m", "true", "init"], ["final", "rows"],
                              name="loop", body=loop_body()),
             const("axis0", np.array([0], np.int64)),
             helper.make_node("ReduceSum", ["rows", "axis0"], ["rows_sum"],
                              keepdims=0, name="rows_sum")]
    return model(nodes, [vi("m", I64, []), vi("x", F, [3]),
                         vi("limit", F, []), vi("init", F, [3])],
                 [vi("final", F, [3]), vi("rows_sum", F, [3])])


def loop_scan_output():
    """The same loop with its scan output as a graph output: its length is
    the number of iterations (data-dependent)."""
    nodes = [const("true", np.array(True)),
             helper.make_node("Loop", ["m", "true", "init"], ["final", "rows"],
                              name="loop", body=loop_body())]
    return model(nodes, [vi("m", I64, []), vi("x", F, [3]),
                         vi("limit", F, []), vi("init", F, [3])],
                 [vi("final", F, [3]), vi("rows", F, ["iterations", 3])])


def loop_growing():
    """A carried value that grows by one row per iteration (Concat): its
    type's first dim is dynamic."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"], name="pass"),
         helper.make_node("Concat", ["acc", "x"], ["acc_out"], axis=0,
                          name="grow")],
        "body", [vi("i", I64, []), vi("cond", B, []), vi("acc", F, [1, 2])],
        [vi("cond_out", B, []), vi("acc_out", F, ["rows", 2])])
    nodes = [helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop",
                              body=body)]
    return model(nodes, [vi("m", I64, []), vi("x", F, [1, 2])],
                 [vi("y", F, ["rows", 2])])


def loop_fixed_count():
    """A constant trip count and no condition (PyTorch's `for i in
    range(3)`): the scan output is static."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"], name="pass"),
         helper.make_node("Add", ["acc", "x"], ["acc_out"], name="add"),
         helper.make_node("Identity", ["acc_out"], ["row"], name="row")],
        "body", [vi("i", I64, []), vi("cond", B, []), vi("acc", F, [2])],
        [vi("cond_out", B, []), vi("acc_out", F, [2]), vi("row", F, [2])])
    nodes = [const("three", np.array(3, np.int64)),
             helper.make_node("Loop", ["three", "", "x"], ["y", "rows"],
                              name="loop", body=body)]
    return model(nodes, [vi("x", F, [2])],
                 [vi("y", F, [2]), vi("rows", F, ["n", 2])])


def loop_nested_if():
    """An If inside a Loop: odd iterations add x, even ones subtract it."""
    two = const("two", np.array(2, np.int64))
    then_g = helper.make_graph(
        [helper.make_node("Add", ["acc", "x"], ["t"], name="plus")], "then",
        [], [vi("t", F, [3])])
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["acc", "x"], ["e"], name="minus")], "else",
        [], [vi("e", F, [3])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"], name="pass"),
         two,
         helper.make_node("Mod", ["i", "two"], ["r"], name="parity"),
         const("zero", np.array(0, np.int64)),
         helper.make_node("Equal", ["r", "zero"], ["even"], name="is_even"),
         helper.make_node("If", ["even"], ["acc_out"], name="branch",
                          then_branch=then_g, else_branch=else_g)],
        "body", [vi("i", I64, []), vi("cond", B, []), vi("acc", F, [3])],
        [vi("cond_out", B, []), vi("acc_out", F, [3])])
    nodes = [helper.make_node("Loop", ["m", "", "init"], ["y"], name="loop",
                              body=body)]
    return model(nodes, [vi("m", I64, []), vi("x", F, [3]),
                         vi("init", F, [3])], [vi("y", F, [3])])


def scan_running_sum():
    """Scan: a running sum over the rows of x (scan output along axis 1),
    and a reversed scan input."""
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "next"], ["sum_out"], name="add"),
         helper.make_node("Mul", ["sum_out", "back"], ["prod"], name="mul")],
        "body", [vi("sum_in", F, [2]), vi("next", F, [2]), vi("back", F, [2])],
        [vi("sum_out", F, [2]), vi("prod", F, [2])])
    nodes = [helper.make_node("Scan", ["init", "x", "x"], ["sum", "prods"],
                              name="scan", body=body, num_scan_inputs=2,
                              scan_input_directions=[0, 1],
                              scan_output_axes=[1])]
    return model(nodes, [vi("init", F, [2]), vi("x", F, [3, 2])],
                 [vi("sum", F, [2]), vi("prods", F, [2, 3])])


# Sequences (resolved into tensor ops when Kiln imports them).

def sequence_list_ops():
    """SequenceConstruct, SequenceInsert (at the back and at 0),
    SequenceErase, SequenceAt (a constant and a run-time position),
    SequenceLength and ConcatFromSequence (with and without new_axis)."""
    nodes = [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s0"], name="make"),
        helper.make_node("SequenceInsert", ["s0", "c"], ["s1"], name="back"),
        const("zero", np.array(0, np.int64)),
        helper.make_node("SequenceInsert", ["s1", "b", "zero"], ["s2"],
                         name="front"),
        const("minus_one", np.array(-1, np.int64)),
        helper.make_node("SequenceErase", ["s2", "minus_one"], ["s3"],
                         name="erase"),
        helper.make_node("SequenceAt", ["s3", "i"], ["at"], name="at"),
        helper.make_node("SequenceLength", ["s3"], ["n"], name="length"),
        helper.make_node("ConcatFromSequence", ["s3"], ["cat"], axis=0,
                         name="cat"),
        helper.make_node("ConcatFromSequence", ["s3"], ["stack"], axis=1,
                         new_axis=1, name="stack"),
    ]
    return model(nodes, [vi("a", F, [2]), vi("b", F, [2]), vi("c", F, [2]),
                         vi("i", I64, [])],
                 [vi("at", F, [2]), vi("n", I64, []), vi("cat", F, [6]),
                  vi("stack", F, [2, 3])])


def loop_append_stack():
    """A list appended to in a Loop, stacked along axis 1 afterwards."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"], name="pass"),
         helper.make_node("Add", ["acc", "x"], ["acc_out"], name="add"),
         helper.make_node("SequenceInsert", ["seq", "acc_out"], ["seq_out"],
                          name="append")],
        "body", [vi("i", I64, []), vi("cond", B, []), vi("acc", F, [2]),
                 helper.make_tensor_sequence_value_info("seq", F, [2])],
        [vi("cond_out", B, []), vi("acc_out", F, [2]),
         helper.make_tensor_sequence_value_info("seq_out", F, [2])])
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=F,
                              name="empty"),
             const("four", np.array(4, np.int64)),
             helper.make_node("Loop", ["four", "", "x", "empty"],
                              ["last", "all"], name="loop", body=body),
             helper.make_node("ConcatFromSequence", ["all"], ["y"], axis=1,
                              new_axis=1, name="stack"),
             helper.make_node("SequenceLength", ["all"], ["n"],
                              name="length")]
    return model(nodes, [vi("x", F, [2])],
                 [vi("last", F, [2]), vi("y", F, [2, 4]), vi("n", I64, [])])


def split_loop():
    """SplitToSequence (chunks of one, dim dropped), its length as a Loop's
    trip count, SequenceAt at the iteration number in the body."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"], name="pass"),
         helper.make_node("SequenceAt", ["rows", "i"], ["row"], name="row"),
         helper.make_node("Add", ["acc", "row"], ["acc_out"], name="add")],
        "body", [vi("i", I64, []), vi("cond", B, []), vi("acc", F, [3])],
        [vi("cond_out", B, []), vi("acc_out", F, [3])])
    nodes = [helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0,
                              keepdims=0, name="split"),
             helper.make_node("SequenceLength", ["rows"], ["n"],
                              name="length"),
             helper.make_node("Loop", ["n", "", "init"], ["y"], name="loop",
                              body=body)]
    return model(nodes, [vi("x", F, [4, 3]), vi("init", F, [3])],
                 [vi("y", F, [3])])


# Errors.

def sequence_output():
    nodes = [helper.make_node("SequenceConstruct", ["a"], ["s"], name="make")]
    return model(nodes, [vi("a", F, [2])],
                 [helper.make_tensor_sequence_value_info("s", F, [2])])


def split_runtime_sizes():
    nodes = [helper.make_node("SplitToSequence", ["x", "sizes"], ["s"],
                              name="split"),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0,
                              name="cat")]
    return model(nodes, [vi("x", F, [4]), vi("sizes", I64, [2])],
                 [vi("y", F, [4])])


def loop_reads_its_sequence():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"], name="pass"),
         helper.make_node("SequenceLength", ["seq"], ["n"], name="length"),
         helper.make_node("Cast", ["n"], ["nf"], to=F, name="to_float"),
         helper.make_node("Mul", ["x", "nf"], ["row"], name="scale"),
         helper.make_node("SequenceInsert", ["seq", "row"], ["seq_out"],
                          name="append")],
        "body", [vi("i", I64, []), vi("cond", B, []),
                 helper.make_tensor_sequence_value_info("seq", F, [2])],
        [vi("cond_out", B, []),
         helper.make_tensor_sequence_value_info("seq_out", F, [2])])
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=F,
                              name="empty"),
             const("four", np.array(4, np.int64)),
             helper.make_node("Loop", ["four", "", "empty"], ["all"],
                              name="loop", body=body),
             helper.make_node("ConcatFromSequence", ["all"], ["y"], axis=0,
                              name="cat")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [8])])



def if_ranks_differ():
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"], name="relu")], "then", [],
        [vi("t", F, [2, 2])])
    else_g = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["e"], axis=0, name="flat")],
        "else", [], [vi("e", F, [1, 4])])
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0,
                              name="max"),
             helper.make_node("Cast", ["m"], ["c"], to=B, name="cond"),
             helper.make_node("Reshape", ["x", "shape"], ["x2"], name="x2")]
    # The then branch yields rank 2 via x2 (captured), the else rank 1.
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x2"], ["t"], name="relu")], "then", [],
        [vi("t", F, [2, 2])])
    else_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["e"], name="relu2")], "else", [],
        [vi("e", F, [4])])
    nodes.append(helper.make_node("If", ["c"], ["y"], name="branch",
                                  then_branch=then_g, else_branch=else_g))
    nodes.insert(0, const("shape", np.array([2, 2], np.int64)))
    return model(nodes, [vi("x", F, [4])], [vi("y", F, [4])], opset=21,
                 ir=10)


def loop_rank_change():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"], name="pass"),
         helper.make_node("Unsqueeze", ["acc", "axes"], ["acc_out"],
                          name="deeper")],
        "body", [vi("i", I64, []), vi("cond", B, []), vi("acc", F, [2])],
        [vi("cond_out", B, []), vi("acc_out", F, [1, 2])])
    nodes = [const("axes", np.array([0], np.int64)),
             helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop",
                              body=body)]
    return model(nodes, [vi("m", I64, []), vi("x", F, [2])],
                 [vi("y", F, [2])], opset=21, ir=10)


def body_undefined_name():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"], name="pass"),
         helper.make_node("Add", ["acc", "nowhere"], ["acc_out"],
                          name="bad_add")],
        "body", [vi("i", I64, []), vi("cond", B, []), vi("acc", F, [2])],
        [vi("cond_out", B, []), vi("acc_out", F, [2])])
    nodes = [helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop",
                              body=body)]
    return model(nodes, [vi("m", I64, []), vi("x", F, [2])],
                 [vi("y", F, [2])], opset=21, ir=10)


def if_sequence_branch():
    then_g = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["x"], ["t"], name="seq")],
        "then", [], [helper.make_tensor_sequence_value_info("t", F, [2])])
    else_g = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["x"], ["e"], name="seq2")],
        "else", [], [helper.make_tensor_sequence_value_info("e", F, [2])])
    nodes = [helper.make_node("If", ["c"], ["y"], name="branch",
                              then_branch=then_g, else_branch=else_g),
             helper.make_node("ConcatFromSequence", ["y"], ["z"], axis=0,
                              name="concat")]
    return model(nodes, [vi("c", B, []), vi("x", F, [2])], [vi("z", F, [2])])


def scan_opset8():
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "next"], ["sum_out"], name="add")],
        "body", [vi("sum_in", F, [2]), vi("next", F, [2])],
        [vi("sum_out", F, [2])])
    nodes = [helper.make_node("Scan", ["", "init", "x"], ["sum"], name="scan8",
                              body=body, num_scan_inputs=1)]
    return model(nodes, [vi("init", F, [1, 2]), vi("x", F, [1, 3, 2])],
                 [vi("sum", F, [1, 2])], opset=8, ir=3)


def main():
    case, out = sys.argv[1], sys.argv[2]
    onnx.save(globals()[case](), out)


if __name__ == "__main__":
    main()
