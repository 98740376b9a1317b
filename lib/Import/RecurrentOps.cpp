//===- RecurrentOps.cpp - RNN, GRU and LSTM unrolled over time ------------===//
//
// Kiln has no recurrent ops: the importer unrolls RNN, GRU and LSTM over
// their static sequence length into ONNX ops it has (MatMul, Add, the
// activations, Split, Concat, ...), written as a function body that
// GraphBuilder imports like the body of an ONNX function op. The input
// projection X·Wᵀ (+ biases) is one MatMul over the whole sequence; each
// step adds H·Rᵀ and applies the gates. Reverse directions walk the steps
// backwards; with sequence_lens shorter than the sequence, steps past a
// batch entry's length keep its state and output zeros (ONNX semantics),
// and a reverse direction reverses each entry's valid prefix
// (ReverseSequence) before and after.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "onnx/defs/attr_proto_util.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln::import {

bool isRecurrentOp(llvm::StringRef opType) {
  return opType == "RNN" || opType == "GRU" || opType == "LSTM";
}

namespace {

enum class Kind { RNN, GRU, LSTM };

/// An activation of the recurrent ops' `activations` list, with the alpha
/// and beta it takes (from activation_alpha/beta, else the ONNX defaults).
struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
};

/// Appends nodes to a function body; values get fresh internal names.
class BodyWriter {
public:
  BodyWriter(onnx::FunctionProto &function, bool xIsF32)
      : function(function), xIsF32(xIsF32) {}

  std::vector<std::string>
  addN(const std::string &op, const std::vector<std::string> &inputs,
       unsigned numOutputs, const std::vector<onnx::AttributeProto> &attrs = {},
       const std::string &output = "") {
    onnx::NodeProto *node = function.add_node();
    node->set_op_type(op);
    for (const std::string &input : inputs)
      node->add_input(input);
    std::vector<std::string> outputs;
    for (unsigned i = 0; i < numOutputs; ++i) {
      outputs.push_back(!output.empty() ? output
                                        : "v" + std::to_string(nextValue++));
      node->add_output(outputs.back());
    }
    for (const onnx::AttributeProto &attr : attrs)
      *node->add_attribute() = attr;
    return outputs;
  }

  std::string add(const std::string &op, const std::vector<std::string> &inputs,
                  const std::vector<onnx::AttributeProto> &attrs = {},
                  const std::string &output = "") {
    return addN(op, inputs, 1, attrs, output)[0];
  }

  /// An INT64 constant; a scalar when `scalar`, else a vector.
  std::string i64(const std::vector<int64_t> &values, bool scalar = false) {
    onnx::TensorProto tensor;
    tensor.set_data_type(onnx::TensorProto::INT64);
    if (!scalar)
      tensor.add_dims(int64_t(values.size()));
    for (int64_t v : values)
      tensor.add_int64_data(v);
    return add("Constant", {}, {onnx::MakeAttribute("value", tensor)});
  }

  /// A constant of X's element type, of `shape` (a scalar when empty),
  /// every element `value`.
  std::string like(float value, const std::vector<int64_t> &shape = {}) {
    onnx::TensorProto tensor;
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (int64_t dim : shape) {
      tensor.add_dims(dim);
      count *= dim;
    }
    for (int64_t i = 0; i < count; ++i)
      tensor.add_float_data(value);
    std::string constant =
        add("Constant", {}, {onnx::MakeAttribute("value", tensor)});
    return xIsF32 ? constant : add("CastLike", {constant, "X"});
  }

private:
  onnx::FunctionProto &function;
  bool xIsF32;
  int nextValue = 0;
};

onnx::AttributeProto intAttr(const std::string &name, int64_t value) {
  return onnx::MakeAttribute(name, value);
}

onnx::AttributeProto intsAttr(const std::string &name,
                              const std::vector<int64_t> &values) {
  return onnx::MakeAttribute(name, values);
}

/// The canonical spelling of an activation name (ONNX Runtime matches them
/// case-insensitively).
std::string canonicalActivation(const std::string &name) {
  static const char *const known[] = {
      "Relu",       "Tanh",        "Sigmoid",
      "Affine",     "LeakyRelu",   "ThresholdedRelu",
      "ScaledTanh", "HardSigmoid", "Elu",
      "Softsign",   "Softplus"};
  for (const char *k : known)
    if (llvm::StringRef(name).equals_insensitive(k))
      return k;
  fail("unsupported activation '{0}'", name);
}

/// Applies `act` to `x`.
std::string activate(BodyWriter &w, const Activation &act,
                     const std::string &x) {
  const std::string &n = act.name;
  if (n == "Relu" || n == "Tanh" || n == "Sigmoid" || n == "Softsign" ||
      n == "Softplus")
    return w.add(n, {x});
  if (n == "LeakyRelu" || n == "ThresholdedRelu" || n == "Elu")
    return w.add(n, {x}, {onnx::MakeAttribute("alpha", act.alpha)});
  if (n == "HardSigmoid")
    return w.add(n, {x},
                 {onnx::MakeAttribute("alpha", act.alpha),
                  onnx::MakeAttribute("beta", act.beta)});
  if (n == "Affine")
    return w.add("Add",
                 {w.add("Mul", {x, w.like(act.alpha)}), w.like(act.beta)});
  // ScaledTanh: alpha * tanh(beta * x).
  return w.add("Mul", {w.add("Tanh", {w.add("Mul", {x, w.like(act.beta)})}),
                       w.like(act.alpha)});
}

/// The activations of each direction: the `activations` attribute (with
/// activation_alpha/beta consumed in order by the activations that take
/// them), else the op's defaults.
std::vector<std::vector<Activation>>
getActivations(const onnx::NodeProto &node, Kind kind, int numDirections) {
  std::vector<std::string> defaults;
  switch (kind) {
  case Kind::RNN:
    defaults = {"Tanh"};
    break;
  case Kind::GRU:
    defaults = {"Sigmoid", "Tanh"};
    break;
  case Kind::LSTM:
    defaults = {"Sigmoid", "Tanh", "Tanh"};
    break;
  }
  std::vector<std::string> names;
  std::vector<float> alphas, betas;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name() == "activations")
      names.assign(attr.strings().begin(), attr.strings().end());
    else if (attr.name() == "activation_alpha")
      alphas.assign(attr.floats().begin(), attr.floats().end());
    else if (attr.name() == "activation_beta")
      betas.assign(attr.floats().begin(), attr.floats().end());
  }
  size_t perDirection = defaults.size();
  if (names.empty()) {
    for (int d = 0; d < numDirections; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() != perDirection * numDirections) {
    fail("'activations' has {0} entries; {1} with {2} direction(s) takes {3}",
         names.size(), node.op_type(), numDirections,
         perDirection * numDirections);
  }
  size_t nextAlpha = 0, nextBeta = 0;
  auto takeAlpha = [&](float dflt) {
    return nextAlpha < alphas.size() ? alphas[nextAlpha++] : dflt;
  };
  auto takeBeta = [&](float dflt) {
    return nextBeta < betas.size() ? betas[nextBeta++] : dflt;
  };
  std::vector<std::vector<Activation>> result(numDirections);
  for (size_t i = 0; i < names.size(); ++i) {
    Activation act;
    act.name = canonicalActivation(names[i]);
    if (act.name == "LeakyRelu")
      act.alpha = takeAlpha(0.01f);
    else if (act.name == "ThresholdedRelu" || act.name == "Elu")
      act.alpha = takeAlpha(1.0f);
    else if (act.name == "HardSigmoid") {
      act.alpha = takeAlpha(0.2f);
      act.beta = takeBeta(0.5f);
    } else if (act.name == "Affine" || act.name == "ScaledTanh") {
      act.alpha = takeAlpha(1.0f);
      act.beta = takeBeta(act.name == "Affine" ? 0.0f : 1.0f);
    }
    result[i / perDirection].push_back(act);
  }
  return result;
}

} // namespace

onnx::FunctionProto buildRecurrentBody(const onnx::NodeProto &node,
                                       const RecurrentInputs &inputs) {
  const std::string &opType = node.op_type();
  Kind kind = opType == "RNN"   ? Kind::RNN
              : opType == "GRU" ? Kind::GRU
                                : Kind::LSTM;
  const int numGates = kind == Kind::RNN ? 1 : kind == Kind::GRU ? 3 : 4;

  onnx::FunctionProto function;
  for (const char *name :
       {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"}) {
    if (kind != Kind::LSTM && llvm::StringRef(name) == "initial_c")
      break;
    function.add_input(name);
  }
  function.add_output("Y");
  function.add_output("Y_h");
  if (kind == Kind::LSTM)
    function.add_output("Y_c");
  if (node.input_size() > function.input_size())
    fail("{0} inputs, but {1} takes at most {2}", node.input_size(), opType,
         function.input_size());
  if (node.output_size() > function.output_size())
    fail("{0} outputs, but {1} has at most {2}", node.output_size(), opType,
         function.output_size());
  auto has = [&](int i) {
    return i < node.input_size() && !node.input(i).empty();
  };
  auto wants = [&](int i) {
    return i < node.output_size() && !node.output(i).empty();
  };

  int64_t hiddenSize = -1, layout = 0, linearBeforeReset = 0;
  std::optional<float> clip;
  std::string direction = "forward";
  for (const onnx::AttributeProto &attr : node.attribute()) {
    const std::string &name = attr.name();
    if (name == "hidden_size")
      hiddenSize = attr.i();
    else if (name == "layout")
      layout = attr.i();
    else if (name == "direction")
      direction = attr.s();
    else if (name == "linear_before_reset" && kind == Kind::GRU)
      linearBeforeReset = attr.i();
    else if (name == "input_forget" && kind == Kind::LSTM) {
      if (attr.i() != 0)
        fail("not supported: input_forget = {0}", attr.i());
    } else if (name == "clip") {
      if (!(attr.f() > 0))
        fail("clip must be positive, not {0}", attr.f());
      clip = attr.f();
    }
    else if (name != "activations" && name != "activation_alpha" &&
             name != "activation_beta")
      fail("unsupported attribute '{0}'", name);
  }
  if (!has(0) || !has(1) || !has(2))
    fail("{0} needs its inputs X, W and R", opType);
  if (hiddenSize <= 0)
    fail("{0} needs a positive hidden_size attribute", opType);
  if (layout != 0 && layout != 1)
    fail("layout must be 0 or 1, not {0}", layout);
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    fail("unsupported direction '{0}'", direction);
  if (inputs.xShape.size() != 3)
    fail("{0} needs X of known rank 3", opType);
  int64_t seqLength = inputs.xShape[layout ? 1 : 0];
  int64_t batch = inputs.xShape[layout ? 0 : 1];
  if (seqLength < 0)
    fail("{0} is unrolled over time and needs a static sequence length (dim "
         "{1} of X is dynamic; compile with --input-shapes)",
         opType, layout ? 1 : 0);
  const int numDirections = direction == "bidirectional" ? 2 : 1;
  const int64_t H = hiddenSize;
  std::vector<std::vector<Activation>> activations =
      getActivations(node, kind, numDirections);

  BodyWriter w(function, inputs.xIsF32);
  // X as [seq, batch, input].
  std::string x = layout
                      ? w.add("Transpose", {"X"}, {intsAttr("perm", {1, 0, 2})})
                      : std::string("X");

  // Steps past a batch entry's length are masked, unless sequence_lens is a
  // constant that says every entry has the whole sequence.
  bool masked = has(4);
  if (masked && inputs.constantSequenceLens) {
    const std::vector<int64_t> &lens = *inputs.constantSequenceLens;
    masked = !llvm::all_of(lens, [&](int64_t l) { return l == seqLength; });
  }
  std::string seqLens;
  if (masked)
    seqLens = w.add("Cast", {"sequence_lens"},
                    {intAttr("to", onnx::TensorProto::INT64)});

  auto zerosBH = [&]() {
    if (batch >= 0)
      return w.like(0.0f, {batch, H});
    std::string batchDim =
        w.add("Slice", {w.add("Shape", {x}), w.i64({1}), w.i64({2})});
    std::string shape =
        w.add("Concat", {batchDim, w.i64({H})}, {intAttr("axis", 0)});
    return w.add("Expand", {w.like(0.0f), shape});
  };
  auto slice1D = [&](const std::string &v, int64_t begin, int64_t end) {
    return w.add("Slice", {v, w.i64({begin}), w.i64({end})});
  };

  // `clip` bounds the input of the gate activations (f and g, not LSTM's
  // h of the cell state), as ONNX Runtime does.
  std::string clipLow, clipHigh;
  if (clip) {
    clipLow = w.like(-*clip);
    clipHigh = w.like(*clip);
  }
  auto gate = [&](const Activation &act, const std::string &x) {
    return activate(w, act,
                    clip ? w.add("Clip", {x, clipLow, clipHigh}) : x);
  };

  std::vector<std::string> ys, yhs, ycs;
  for (int d = 0; d < numDirections; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const std::vector<Activation> &act = activations[d];
    std::string dIndex = w.i64({d}, /*scalar=*/true);
    auto ofDirection = [&](const std::string &v) {
      return w.add("Gather", {v, dIndex}, {intAttr("axis", 0)});
    };
    // initial_h and initial_c are [batch, directions, H] with layout 1.
    auto stateOfDirection = [&](const std::string &v) {
      return w.add("Gather", {v, dIndex}, {intAttr("axis", layout)});
    };
    // Wᵀ: [input, gates*H]; Rᵀ: [H, gates*H].
    std::string wt =
        w.add("Transpose", {ofDirection("W")}, {intsAttr("perm", {1, 0})});
    std::string rt =
        w.add("Transpose", {ofDirection("R")}, {intsAttr("perm", {1, 0})});
    std::string xd = x;
    if (masked && reverse)
      xd = w.add("ReverseSequence", {x, seqLens},
                 {intAttr("batch_axis", 1), intAttr("time_axis", 0)});
    // X·Wᵀ for every step at once: [seq, batch, gates*H], with the biases
    // that do not depend on the state.
    std::string xw = w.add("MatMul", {xd, wt});
    std::string rbh; // GRU: Rb of the hidden gate, added after the reset.
    if (has(3)) {
      std::string b = ofDirection("B");
      std::string wb = slice1D(b, 0, numGates * H);
      std::string rb = slice1D(b, numGates * H, 2 * numGates * H);
      std::string bias;
      if (kind == Kind::GRU) {
        std::string zr =
            w.add("Add", {slice1D(wb, 0, 2 * H), slice1D(rb, 0, 2 * H)});
        bias = w.add("Concat", {zr, slice1D(wb, 2 * H, 3 * H)},
                     {intAttr("axis", 0)});
        rbh = slice1D(rb, 2 * H, 3 * H);
      } else {
        bias = w.add("Add", {wb, rb});
      }
      xw = w.add("Add", {xw, bias});
    }
    std::string rtZR, rtH; // GRU: Rᵀ of the z and r gates, of the h gate.
    if (kind == Kind::GRU) {
      rtZR = w.add("Slice", {rt, w.i64({0}), w.i64({2 * H}), w.i64({1})});
      rtH = w.add("Slice", {rt, w.i64({2 * H}), w.i64({3 * H}), w.i64({1})});
    }
    std::string h = has(5) ? stateOfDirection("initial_h") : zerosBH();
    std::string c;
    if (kind == Kind::LSTM)
      c = has(6) ? stateOfDirection("initial_c") : zerosBH();
    std::string pI, pO, pF;
    if (kind == Kind::LSTM && has(7)) {
      std::string p = ofDirection("P");
      pI = slice1D(p, 0, H);
      pO = slice1D(p, H, 2 * H);
      pF = slice1D(p, 2 * H, 3 * H);
    }
    std::string zeros = masked ? zerosBH() : std::string();
    std::string one = kind == Kind::GRU ? w.like(1.0f) : std::string();

    // Step k reads time t; outputs[t] is the output at time t (before the
    // masked reverse's ReverseSequence, which puts each entry back).
    std::vector<std::string> outputs(seqLength);
    for (int64_t k = 0; k < seqLength; ++k) {
      int64_t t = reverse && !masked ? seqLength - 1 - k : k;
      std::string xt = w.add("Gather", {xw, w.i64({t}, /*scalar=*/true)},
                             {intAttr("axis", 0)});
      std::string hNext, cNext;
      switch (kind) {
      case Kind::RNN:
        hNext =
            gate(act[0], w.add("Add", {xt, w.add("MatMul", {h, rt})}));
        break;
      case Kind::GRU: {
        std::vector<std::string> xg =
            w.addN("Split", {xt, w.i64({H, H, H})}, 3, {intAttr("axis", 1)});
        std::vector<std::string> hg =
            w.addN("Split", {w.add("MatMul", {h, rtZR}), w.i64({H, H})}, 2,
                   {intAttr("axis", 1)});
        std::string z = gate(act[0], w.add("Add", {xg[0], hg[0]}));
        std::string r = gate(act[0], w.add("Add", {xg[1], hg[1]}));
        std::string hh;
        if (linearBeforeReset) {
          hh = w.add("MatMul", {h, rtH});
          if (!rbh.empty())
            hh = w.add("Add", {hh, rbh});
          hh = w.add("Mul", {r, hh});
        } else {
          hh = w.add("MatMul", {w.add("Mul", {r, h}), rtH});
          if (!rbh.empty())
            hh = w.add("Add", {hh, rbh});
        }
        std::string candidate = gate(act[1], w.add("Add", {xg[2], hh}));
        hNext = w.add("Add", {w.add("Mul", {w.add("Sub", {one, z}), candidate}),
                              w.add("Mul", {z, h})});
        break;
      }
      case Kind::LSTM: {
        std::string gates = w.add("Add", {xt, w.add("MatMul", {h, rt})});
        // Gate order i, o, f, c.
        std::vector<std::string> g = w.addN(
            "Split", {gates, w.i64({H, H, H, H})}, 4, {intAttr("axis", 1)});
        std::string i = g[0], o = g[1], f = g[2];
        if (!pI.empty()) {
          i = w.add("Add", {i, w.add("Mul", {pI, c})});
          f = w.add("Add", {f, w.add("Mul", {pF, c})});
        }
        i = gate(act[0], i);
        f = gate(act[0], f);
        std::string candidate = gate(act[1], g[3]);
        cNext =
            w.add("Add", {w.add("Mul", {f, c}), w.add("Mul", {i, candidate})});
        if (!pO.empty())
          o = w.add("Add", {o, w.add("Mul", {pO, cNext})});
        o = gate(act[0], o);
        hNext = w.add("Mul", {o, activate(w, act[2], cNext)});
        break;
      }
      }
      std::string output = hNext;
      if (masked) {
        std::string live = w.add(
            "Unsqueeze", {w.add("Less", {w.i64({k}, /*scalar=*/true), seqLens}),
                          w.i64({1})});
        output = w.add("Where", {live, hNext, zeros});
        hNext = w.add("Where", {live, hNext, h});
        if (kind == Kind::LSTM)
          cNext = w.add("Where", {live, cNext, c});
      }
      outputs[t] = output;
      h = hNext;
      c = cNext;
    }

    if (wants(0)) {
      std::vector<std::string> steps;
      for (const std::string &o : outputs)
        steps.push_back(w.add("Unsqueeze", {o, w.i64({0})}));
      std::string y = steps.size() == 1
                          ? steps[0]
                          : w.add("Concat", steps, {intAttr("axis", 0)});
      if (masked && reverse)
        y = w.add("ReverseSequence", {y, seqLens},
                  {intAttr("batch_axis", 1), intAttr("time_axis", 0)});
      ys.push_back(w.add("Unsqueeze", {y, w.i64({1})}));
    }
    yhs.push_back(w.add("Unsqueeze", {h, w.i64({0})}));
    if (kind == Kind::LSTM)
      ycs.push_back(w.add("Unsqueeze", {c, w.i64({0})}));
  }

  // [seq, directions, batch, H] and [directions, batch, H]; layout 1 puts
  // the batch first.
  auto finish = [&](const std::vector<std::string> &parts, int64_t axis,
                    const std::vector<int64_t> &batchFirst,
                    const std::string &output) {
    std::string joined = parts.size() == 1
                             ? parts[0]
                             : w.add("Concat", parts, {intAttr("axis", axis)});
    if (layout)
      w.add("Transpose", {joined}, {intsAttr("perm", batchFirst)}, output);
    else
      w.add("Identity", {joined}, {}, output);
  };
  if (wants(0))
    finish(ys, 1, {2, 0, 1, 3}, "Y");
  if (wants(1))
    finish(yhs, 0, {1, 0, 2}, "Y_h");
  if (kind == Kind::LSTM && wants(2))
    finish(ycs, 0, {1, 0, 2}, "Y_c");
  return function;
}

} // namespace kiln::import
