#!/usr/bin/env python3
#===- attention_numerics.py - Evaluate kiln IR to check the attention passes ===#
#
# A small numpy evaluator for the kiln ops that attention graphs, their
# fusions and their decompositions use, reading the generic op form
# (kiln-opt --mlir-print-op-generic). kiln.attention and
# kiln.linear_attention are evaluated from the formulas in their ODS
# descriptions, written independently of the decompositions (explicit loops
# over heads, KV head h // (H / Hkv), causal j <= i + Skv - Sq).
#
#   attention_numerics.py ORIGINAL FUSED DECOMPOSED [--dims FILE]
#
# Each function of the three files is run on the same random inputs (seeded;
# `?` dims in a signature take the sizes listed on a line
# `// DIMS @name: 2, 3, 5` of the --dims file, in order of appearance) and
# the results must agree to a tolerance for the element type. Prints one line
# per function with the number of kiln.attention / kiln.linear_attention ops
# in the fused file, so a FileCheck can tell that the fusion happened.
#
#===----------------------------------------------------------------------===#

import re
import sys

import numpy as np

DTYPES = {"f16": np.float16, "bf16": np.float32, "f32": np.float32,
          "f64": np.float64, "i1": np.bool_, "i8": np.int8, "i16": np.int16,
          "i32": np.int32, "i64": np.int64, "ui8": np.uint8}


def split_top(s, sep=","):
    """Splits `s` at `sep` outside brackets and quotes."""
    parts, depth, cur, quote = [], 0, "", False
    for ch in s:
        if ch == '"':
            quote = not quote
        if not quote:
            if ch in "<([{":
                depth += 1
            elif ch in ">)]}":
                depth -= 1
            elif ch == sep and depth == 0:
                parts.append(cur.strip())
                cur = ""
                continue
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_type(t):
    """tensor<2x?x4xf32> -> ([2, None, 4], 'f32'); none -> None."""
    t = t.strip()
    if t == "none":
        return None
    m = re.fullmatch(r"tensor<(.*)>", t)
    dims = m.group(1).split("x")
    return [None if d == "?" else int(d) for d in dims[:-1]], dims[-1]


def parse_number(tok, elem):
    tok = tok.strip()
    if tok in ("true", "false"):
        return tok == "true"
    if tok.startswith("0x") and elem in ("f16", "f32", "f64"):
        bits = int(tok, 16)
        width = {"f16": 2, "f32": 4, "f64": 8}[elem]
        return np.frombuffer(bits.to_bytes(width, "little"),
                             dtype=DTYPES[elem])[0]
    return float(tok) if elem.startswith(("f", "bf")) else int(tok)


def parse_dense(text, type_text):
    shape, elem = parse_type(type_text)
    dtype = DTYPES[elem]
    body = text.strip()
    if not body:
        return np.zeros(shape, dtype=dtype)
    if body.startswith('"0x'):  # raw hex blob
        raw = bytes.fromhex(body[3:-1])
        if elem == "i1":
            return np.frombuffer(raw, dtype=np.uint8).astype(bool).reshape(shape)
        return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if not body.startswith("["):
        return np.full(shape, parse_number(body, elem), dtype=dtype)
    flat = [parse_number(tok, elem)
            for tok in re.findall(r"true|false|0x[0-9A-Fa-f]+|[-+0-9.eE]+|nan|inf",
                                  body)]
    return np.array(flat, dtype=dtype).reshape(shape)


def parse_attr(value):
    value = value.strip()
    m = re.fullmatch(r"array<i64(?::\s*(.*))?>", value)
    if m:
        return [int(x) for x in m.group(1).split(",")] if m.group(1) else []
    m = re.fullmatch(r"dense<(.*)>\s*:\s*(tensor<.*>)", value, re.S)
    if m:
        return parse_dense(m.group(1), m.group(2))
    if value in ("true", "false"):
        return value == "true"
    if value.startswith('"'):
        return value[1:-1]
    m = re.fullmatch(r"(\S+)\s*:\s*(\w+)", value)
    if m:
        return float(m.group(1)) if m.group(2).startswith("f") else int(m.group(1))
    return value  # a type, e.g. Cast's `to`


def parse_attrs(text):
    attrs = {}
    for part in split_top(text):
        key, _, value = part.partition("=")
        attrs[key.strip()] = parse_attr(value)
    return attrs


OP_RE = re.compile(r'^\s*(?:(%[\w#]+) = )?"([\w.]+)"\((.*?)\)\s*'
                   r'(?:<\{(.*?)\}>\s*)?(?:\{(.*)\}\s*)?:\s*\((.*?)\)\s*->\s*(.*)$')


def parse_functions(path):
    funcs = {}
    name = None
    for line in open(path):
        m = re.search(r'sym_name = "(\w+)"', line)
        if m and '"func.func"' in line:
            name = m.group(1)
            funcs[name] = {"args": [], "ops": []}
            continue
        m = re.match(r"\s*\^bb0\((.*)\):", line)
        if m and name:
            for arg in split_top(m.group(1)):
                n, _, t = arg.partition(":")
                funcs[name]["args"].append((n.strip(), parse_type(t)))
            continue
        m = OP_RE.match(line)
        if m and name:
            result, op, operands, _props, attrs, _ins, out = m.groups()
            funcs[name]["ops"].append({
                "result": result, "op": op,
                "operands": [o.strip() for o in operands.split(",") if o.strip()],
                "attrs": parse_attrs(attrs) if attrs else {},
                "type": parse_type(out) if out.strip() not in ("()",) else None})
    return funcs


# --- the ops -----------------------------------------------------------------

def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def lowest(dtype):
    return np.finfo(dtype).min


def attention_reference(q, k, v, mask, a):
    """kiln.attention as its description states it."""
    b, h, sq, _ = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    rep = a["num_heads"] // a["num_kv_heads"]
    assert h == a["num_heads"] and hkv == a["num_kv_heads"]
    dt = q.dtype
    out = np.zeros((b, h, sq, v.shape[3]), dtype=dt)
    full = None if mask is None else np.broadcast_to(mask, (b, h, sq, skv))
    for bi in range(b):
        for hi in range(h):
            g = hi // rep
            s = (q[bi, hi] @ k[bi, g].T) * dt.type(a["scale"])
            if full is not None:
                if full.dtype == np.bool_:
                    s = np.where(full[bi, hi], s, lowest(dt))
                else:
                    s = s + full[bi, hi]
            if a["causal"]:
                i = np.arange(sq)[:, None]
                j = np.arange(skv)[None, :]
                s = np.where(j <= i + (skv - sq), s, lowest(dt))
            out[bi, hi] = softmax(s.astype(dt), -1) @ v[bi, g]
    return out


def linear_attention_reference(q, k, v, a):
    """kiln.linear_attention as its description states it."""
    phi = {"elu1": lambda t: np.where(t > 0, t, np.expm1(t)) + 1,
           "relu": lambda t: np.maximum(t, 0), "exp": np.exp}[a["feature_map"]]
    b, h, sq, _ = q.shape
    rep = a["num_heads"] // a["num_kv_heads"]
    out = np.zeros((b, h, sq, v.shape[3]), dtype=q.dtype)
    for bi in range(b):
        for hi in range(h):
            g = hi // rep
            fq, fk = phi(q[bi, hi]), phi(k[bi, g])
            num = fq @ (fk.T @ v[bi, g])
            den = fq @ fk.sum(axis=0)[:, None]
            out[bi, hi] = num / (den + q.dtype.type(a["eps"]))
    return out


def shape_target(data, shape, allowzero):
    target = []
    for i, d in enumerate(shape):
        target.append(data.shape[i] if d == 0 and not allowzero else int(d))
    return target


def evaluate(op, args):
    name, a = op["op"], op["attrs"]
    k = name[len("kiln."):] if name.startswith("kiln.") else name
    x = args[0] if args else None
    if k == "constant":
        return a["value"]
    if k == "none":
        return None
    if k == "matmul":
        return np.matmul(args[0], args[1])
    if k == "transpose":
        return np.transpose(x, a.get("perm") or list(range(x.ndim))[::-1])
    if k in ("add", "sub", "mul", "div"):
        f = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
             "div": np.divide}[k]
        r = f(args[0], args[1])
        if k == "div" and np.issubdtype(args[0].dtype, np.integer):
            r = np.trunc(args[0] / args[1]).astype(args[0].dtype)
        return r.astype(args[0].dtype)
    if k == "where":
        return np.where(args[0], args[1], args[2])
    if k == "softmax":
        return softmax(x, a.get("axis", -1)).astype(x.dtype)
    if k == "unsqueeze":
        axes = list(args[1]) if len(args) > 1 and args[1] is not None else a["axes"]
        rank = x.ndim + len(axes)
        for ax in sorted(int(v) % rank for v in axes):
            x = np.expand_dims(x, ax)
        return x
    if k == "expand":
        shape = np.broadcast_shapes(x.shape, tuple(int(d) for d in args[1]))
        return np.broadcast_to(x, shape).copy()
    if k == "tile":
        return np.tile(x, [int(r) for r in args[1]])
    if k == "reshape":
        return x.reshape(shape_target(x, args[1], a.get("allowzero", 0)))
    if k == "shape":
        start, end = a.get("start", 0), a.get("end", x.ndim)
        return np.array(x.shape[start:end], dtype=np.int64)
    if k == "concat":
        return np.concatenate(args, axis=a["axis"])
    if k == "range":
        return np.arange(args[0], args[1], args[2]).astype(args[0].dtype)
    if k == "reciprocal":
        return (1 / x).astype(x.dtype)
    if k == "not":
        return np.logical_not(x)
    if k == "less_or_equal":
        return args[0] <= args[1]
    if k == "elu":
        alpha = x.dtype.type(a.get("alpha", 1.0))
        return np.where(x > 0, x, alpha * np.expm1(x)).astype(x.dtype)
    if k == "relu":
        return np.maximum(x, 0)
    if k == "exp":
        return np.exp(x)
    if k == "reduce_sum":
        axes = (list(args[1]) if len(args) > 1 and args[1] is not None
                else a.get("axes"))
        return x.sum(axis=tuple(int(v) for v in axes),
                     keepdims=bool(a.get("keepdims", 1))).astype(x.dtype)
    if k == "trilu":
        kk = int(args[1]) if len(args) > 1 and args[1] is not None else 0
        return np.triu(x, kk) if a.get("upper", 1) else np.tril(x, kk)
    if k == "constant_of_shape":
        value = a.get("value", np.zeros(1, np.float32))
        return np.full([int(d) for d in x], value.reshape(-1)[0],
                       dtype=value.dtype)
    if k == "cast":
        return x.astype(DTYPES[a["to"]])
    if k == "attention":
        return attention_reference(args[0], args[1], args[2], args[3], a)
    if k == "linear_attention":
        return linear_attention_reference(args[0], args[1], args[2], a)
    raise NotImplementedError(name)


def run(func, inputs):
    env = {}
    for (n, _), value in zip(func["args"], inputs):
        env[n] = value
    for op in func["ops"]:
        args = [env[o] for o in op["operands"]]
        if op["op"] == "func.return":
            return args
        env[op["result"]] = evaluate(op, args)
    raise RuntimeError("no return")


def make_inputs(func, dims, rng):
    pending = list(dims)
    inputs = []
    for _, (shape, elem) in func["args"]:
        shape = [d if d is not None else pending.pop(0) for d in shape]
        if elem == "i1":
            keep = rng.random(shape) < 0.7
            keep[..., 0] = True  # no fully masked row
            inputs.append(keep)
        elif elem.startswith("i"):
            inputs.append(rng.integers(0, 3, shape).astype(DTYPES[elem]))
        else:
            inputs.append(rng.standard_normal(shape).astype(DTYPES[elem]))
    return inputs


def main():
    paths = sys.argv[1:4]
    dims = {}
    if "--dims" in sys.argv:
        for line in open(sys.argv[sys.argv.index("--dims") + 1]):
            m = re.match(r"//\s*DIMS @(\w+):\s*(.*)", line)
            if m:
                dims[m.group(1)] = [int(v) for v in m.group(2).split(",")]
    orig, fused, decomposed = (parse_functions(p) for p in paths)
    failed = False
    for name, func in orig.items():
        rng = np.random.default_rng(7)
        inputs = make_inputs(func, dims.get(name, []), rng)
        want = run(func, inputs)
        fused_ops = [op["op"] for op in fused[name]["ops"]]
        counts = (fused_ops.count("kiln.attention"),
                  fused_ops.count("kiln.linear_attention"))
        worst, bad = 0.0, False
        for other in (fused[name], decomposed[name]):
            got = run(other, inputs)
            for w, g in zip(want, got):
                tol = 2e-2 if w.dtype == np.float16 else 1e-4
                err = np.max(np.abs(w.astype(np.float64) - g.astype(np.float64))
                             / (1 + np.abs(w.astype(np.float64))))
                worst = max(worst, err)
                if not err <= tol:
                    bad = True
        failed |= bad
        status = "MISMATCH" if bad else "ok"
        print(f"@{name}: attention={counts[0]} linear_attention={counts[1]} "
              f"{status} (max rel err {worst:.1e})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
