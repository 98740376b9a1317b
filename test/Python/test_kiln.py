"""The kiln package: compile, ir, InferenceSession, errors, threads."""

import os
import subprocess
import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import kiln


def _feeds(session, seed=0):
    rng = np.random.default_rng(seed)
    return {i.name: rng.standard_normal(i.shape).astype(i.dtype)
            for i in session.get_inputs()}


def test_compile_run_matches_onnxruntime(mlp_path):
    artifact = kiln.compile(mlp_path)
    session = kiln.InferenceSession(artifact)
    assert [i.name for i in session.get_inputs()] == ["x"]
    assert [(o.name, o.shape, o.type) for o in session.get_outputs()] == [
        ("probs", [4, 10], "tensor(float)"), ("logits", [4, 10], "tensor(float)")]
    feeds = _feeds(session)
    probs, logits = session.run(None, feeds)
    ref_probs, ref_logits = ort.InferenceSession(mlp_path).run(None, feeds)
    np.testing.assert_allclose(logits, ref_logits, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(probs, ref_probs, rtol=1e-4, atol=1e-6)
    # Output selection by name, in the order asked.
    (only,) = session.run(["logits"], feeds)
    np.testing.assert_array_equal(only, logits)


def test_matches_kiln_run_bit_for_bit(mlp_path, kiln_run, tmp_path):
    artifact = kiln.compile(mlp_path)
    path = tmp_path / "mlp.kiln"
    artifact.save(path)
    session = kiln.InferenceSession(str(path))
    feeds = _feeds(session, seed=3)
    np.save(tmp_path / "x.npy", feeds["x"])
    out_dir = tmp_path / "out"
    subprocess.run([kiln_run, str(path), "--input", f"x={tmp_path / 'x.npy'}",
                    "--save-outputs", str(out_dir), "--threads", "1"],
                   check=True, capture_output=True)
    ours = kiln.InferenceSession(str(path), threads=1).run(None, feeds)
    for k, array in enumerate(ours):
        theirs = np.load(out_dir / f"output_{k}.npy")
        assert array.dtype == theirs.dtype and array.shape == theirs.shape
        assert array.tobytes() == theirs.tobytes(), f"output {k} differs"


def test_sources_path_bytes_modelproto_agree(mlp_path, mlp_model):
    from_path = kiln.ir(mlp_path, "graph")
    from_bytes = kiln.ir(mlp_model.SerializeToString(), "graph")
    from_proto = kiln.ir(mlp_model, "graph")
    strip = lambda text: text.split("\n", 1)[1]  # the module line names the source
    assert strip(from_path) == strip(from_bytes) == strip(from_proto)
    assert "kiln.softmax" in from_path or "kiln.matmul" in from_path


def test_ir_stages(mlp_path):
    assert "func.func @main" in kiln.ir(mlp_path, "kiln")
    assert "linalg." in kiln.ir(mlp_path, "linalg")
    assert "define" in kiln.ir(mlp_path, "llvm")
    obj = kiln.ir(mlp_path, "obj")
    assert isinstance(obj, bytes) and obj[:4] == b"\x7fELF"
    with pytest.raises(ValueError, match="stage must be one of"):
        kiln.ir(mlp_path, "bitcode")


def test_options_reach_the_compiler(mlp_path):
    fused = kiln.ir(mlp_path, "graph", opt_level=2)
    unfused = kiln.ir(mlp_path, "graph", opt_level=2,
                      disable_passes=["kiln-fuse-epilogues"])
    assert fused != unfused
    half = kiln.ir(mlp_path, "graph", precision="fp16")
    assert "f16" in half
    report = kiln.pass_report(mlp_path)
    assert report["passes"] and "pipeline" in report


def test_compile_error_carries_diagnostics(tmp_path):
    bad = onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery")], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])]),
        opset_imports=[onnx.helper.make_opsetid("", 17)])
    with pytest.raises(kiln.CompileError) as info:
        kiln.compile(bad)
    errors = [d for d in info.value.diagnostics if d.severity == "error"]
    assert errors and "NoSuchOp" in str(info.value)
    with pytest.raises(kiln.CompileError, match="unknown flag"):
        kiln.compile(bad, flags=["--no-such-flag"])
    with pytest.raises(kiln.CompileError, match="not a valid ONNX model"):
        kiln.compile(b"garbage")
    with pytest.raises(TypeError):
        kiln.compile(42)


def test_run_errors_name_the_tensor(mlp_path):
    session = kiln.InferenceSession(kiln.compile(mlp_path))
    x = np.zeros((4, 16), np.float32)
    with pytest.raises(ValueError, match="dtype float64"):
        session.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(ValueError, match="shape|dims"):
        session.run(None, {"x": np.zeros((4, 15), np.float32)})
    with pytest.raises(ValueError, match="missing input 'x'"):
        session.run(None, {})
    with pytest.raises(ValueError, match="unknown output"):
        session.run(["nope"], {"x": x})


def test_non_contiguous_input_is_copied(mlp_path):
    session = kiln.InferenceSession(kiln.compile(mlp_path))
    x = np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32).T
    assert not x.flags.c_contiguous
    a = session.run(None, {"x": x})
    b = session.run(None, {"x": np.ascontiguousarray(x)})
    assert a[0].tobytes() == b[0].tobytes()


def test_benchmark_times_in_cpp(mlp_path):
    session = kiln.InferenceSession(kiln.compile(mlp_path))
    result = session.benchmark(warmup=2, iterations=20, profile=True)
    assert result["iterations"] == 20 and len(result["times_ms"]) == 20
    t = result["time_ms"]
    assert 0 < t["min"] <= t["median"] <= t["max"]
    assert result["kernels"] and sum(k["launches"] for k in result["kernels"]) >= 20
    assert result["energy"] is not None or result["energy_unavailable"]


def test_progress_callback(mlp_path):
    seen = []
    kiln.compile(mlp_path, progress=lambda *a: seen.append(a))
    stages = [s for s, *_ in seen]
    assert "import" in stages and "graph passes" in stages
    assert "code generation" in stages and "linking" in stages


def test_two_threads_compile_at_once(mlp_path, mlp_model):
    alone = kiln.compile(mlp_path, opt_level=3).data
    other = kiln.compile(mlp_model, opt_level=1).data
    results = {}

    def work(key, model, level):
        results[key] = kiln.compile(model, opt_level=level).data

    threads = [threading.Thread(target=work, args=("a", mlp_path, 3)),
               threading.Thread(target=work, args=("b", mlp_model, 1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["a"] == alone and results["b"] == other


def test_artifact_save_and_info(mlp_path, tmp_path):
    artifact = kiln.compile(mlp_path, cpu="x86-64-v3")
    info = artifact.info
    assert info["target"]["cpu"] == "x86-64-v3"
    assert [i["name"] for i in info["inputs"]] == ["x"]
    artifact.save(tmp_path / "m.kiln")
    assert (tmp_path / "m.kiln").read_bytes() == bytes(artifact)


def test_shape_hints(tmp_path):
    # A MatMul and a Relu on a symbolic batch, hinted by symbol and by
    # input: min and max are constraints (a run outside fails naming the
    # symbol), every size in range matches (opt, or each size of a small
    # range, runs the matmul's static copies, the others its dynamic code).
    from onnx import TensorProto, helper, numpy_helper
    w = np.random.default_rng(1).standard_normal((8, 12)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("Relu", ["h"], ["y"])], "hinted",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 12])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(2)
    for hints, lo, hi in [({"batch": (2, 5, 16)}, 2, 16),
                          ({"x": ([1, 8], [2, 8], [3, 8])}, 1, 3)]:
        artifact = kiln.compile(model, shape_hints=hints)
        constraints = artifact.info["constraints"]
        assert constraints == ([f"{lo} <= batch"] if lo > 1 else []) + \
            [f"batch <= {hi}"]
        session = kiln.InferenceSession(artifact, threads=1)
        for n in sorted({lo, (lo + hi) // 2, hi}):
            x = rng.standard_normal((n, 8)).astype(np.float32)
            (y,) = session.run(None, {"x": x})
            np.testing.assert_allclose(y, np.maximum(x @ w, 0), rtol=1e-5,
                                       atol=1e-5)
        with pytest.raises(ValueError, match=rf"constraint 'batch <= {hi}' "
                                             rf"\({hi + 1} > {hi} for "
                                             rf"batch={hi + 1}\)"):
            session.run(None, {"x": np.zeros((hi + 1, 8), np.float32)})
    with pytest.raises(kiln.CompileError, match="'seq' is neither a symbol "
                                                "nor an input"):
        kiln.compile(model, shape_hints={"seq": (1, 2, 3)})
    with pytest.raises(ValueError, match="must be \\(min, opt, max\\)"):
        kiln.compile(model, shape_hints={"batch": (1, 2)})


def test_symbolic_dims(kiln_test_artifact, tmp_path):
    # test/Runtime/TestDynamicModel.c: symbols n, m; x [n, m], b [1, m];
    # y = concat(x + b, x + b + 2.5) [n, m * 2], even = x[0::2], count.
    path = tmp_path / "dynamic.kiln"
    subprocess.run([kiln_test_artifact, "-o", str(path), "--dynamic"],
                   check=True)
    session = kiln.InferenceSession(str(path), threads=1)
    assert session.symbols == ["n", "m"]
    assert [(i.name, i.shape) for i in session.get_inputs()] == [
        ("x", ["n", "m"]), ("b", [1, "m"])]
    assert [(o.name, o.shape) for o in session.get_outputs()] == [
        ("y", ["n", "m * 2"]), ("even", ["(n + 1) / 2", "m"]), ("count", [1])]
    rng = np.random.default_rng(0)
    for n, m in [(1, 1), (4, 3), (7, 5)]:
        x = rng.standard_normal((n, m)).astype(np.float32)
        b = rng.standard_normal((1, m)).astype(np.float32)
        y, even, count = session.run(None, {"x": x, "b": b})
        s = x + b
        assert y.shape == (n, 2 * m) and even.shape == ((n + 1) // 2, m)
        np.testing.assert_array_equal(
            y, np.concatenate([s, s + np.float32(2.5)], axis=1))
        np.testing.assert_array_equal(even, x[0::2])
        assert count.tolist() == [n * m]

    # A symbol of 0 (an empty KV cache) runs on empty tensors.
    zeros = lambda *shape: np.zeros(shape, np.float32)
    y, even, count = session.run(None, {"x": zeros(0, 3), "b": zeros(1, 3)})
    assert y.shape == (0, 6) and even.shape == (0, 3)
    assert count.tolist() == [0]

    # The runtime's messages: two sizes for one symbol, a static dim.
    with pytest.raises(ValueError, match=r"input 'b' dim 1 is 4 but 'm' is 3 "
                                         r"\(from input 'x' dim 1\)"):
        session.run(None, {"x": zeros(2, 3), "b": zeros(1, 4)})
    with pytest.raises(ValueError, match=r"shape \[2, 3\] given, the model "
                                         r"expects \[1, m\]"):
        session.run(None, {"x": zeros(2, 3), "b": zeros(2, 3)})

    # benchmark: dims= for random inputs (unset symbols are 1), or the
    # feeds' shapes.
    result = session.benchmark(warmup=0, iterations=3, dims={"n": 4, "m": 2})
    assert result["iterations"] == 3 and result["symbols"] == {"n": 4, "m": 2}
    assert session.benchmark(warmup=0, iterations=1,
                             dims={"n": 2})["symbols"] == {"n": 2, "m": 1}
    fed = session.benchmark({"x": zeros(3, 5), "b": zeros(1, 5)}, warmup=0,
                            iterations=1)
    assert fed["symbols"] == {"n": 3, "m": 5}
    with pytest.raises(ValueError, match="no symbol 'k'"):
        session.benchmark(dims={"k": 2})
    with pytest.raises(ValueError, match="dims= picks"):
        session.benchmark({"x": zeros(3, 5), "b": zeros(1, 5)}, dims={"n": 3})
