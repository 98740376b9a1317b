//===- InPlaceOutputs.cpp - Outputs written in their input's buffer -------===//
//
// A decoder's static KV cache (docs/generation.md, "The static cache") is
// one buffer that each step writes a few rows into: the output
// `present.{i}.key` is the input `past_key_values.{i}.key` with the new rows
// in place. Two passes around bufferization make the compiled code do that:
//
//   * kiln-cpu-mark-in-place-outputs (before bufferization) finds each
//     result of @main that is an input written through destinations only (a
//     kiln.tensor_scatter lowers to a loop of tensor.insert_slice into the
//     cache), where the two are a decoder's state pair by name (the
//     generation loop's `past...` -> `present...`; other models keep the
//     plain calling convention), and makes that input writable, so one-shot
//     bufferization may
//     write into the caller's buffer instead of copying it first. It decides
//     nothing else: bufferization still copies the input when the graph
//     reads its old value after the write.
//   * kiln-cpu-elide-aliased-copies (after the results became out-params)
//     checks each such pair: when the value returned is the input's buffer
//     itself, the copy of it into the output's buffer is dropped, and the
//     pair is recorded in `kiln.aliases` on the module: the artifact
//     declares that the output aliases the input, and the runtime passes
//     the same buffer for both (docs/artifact.md, "aliases"). Otherwise a
//     remark says why the copy stays.
//
//===----------------------------------------------------------------------===//

#include "InPlaceOutputs.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kiln::cpu {
namespace {

constexpr StringLiteral kResultAttr = "kiln.in_place_result";

/// The block argument of @main whose buffer `value` is written through:
/// follows a loop's result to its init and a destination-style op's result
/// to its destination, up to an argument; null when it ends elsewhere.
BlockArgument writtenArgument(Value value, func::FuncOp main) {
  while (value) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return arg.getOwner() == &main.getBody().front() ? arg : nullptr;
    auto result = cast<OpResult>(value);
    Operation *op = result.getOwner();
    if (auto loop = dyn_cast<scf::ForOp>(op))
      value = loop.getInits()[result.getResultNumber()];
    else if (auto dps = dyn_cast<DestinationStyleOpInterface>(op))
      value = dps.getTiedOpOperand(result)->get();
    else
      return nullptr;
  }
  return nullptr;
}

/// Whether `use` may write its value's buffer (a destination of an op or
/// the init of a loop).
bool mayWrite(OpOperand &use) {
  Operation *owner = use.getOwner();
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(owner))
    return dps.isDpsInit(&use);
  return isa<scf::ForOp, scf::WhileOp, scf::ForallOp>(owner);
}

std::string nameOf(func::FuncOp main, unsigned index, bool result) {
  auto name = result ? main.getResultAttrOfType<StringAttr>(index, "kiln.name")
                     : main.getArgAttrOfType<StringAttr>(index, "kiln.name");
  return name ? name.str()
              : (result ? "result " : "argument ") + std::to_string(index);
}

/// Whether `output` is the state output the generation loop pairs with the
/// state input `input`: past_key_values.X -> present.X, pastX -> presentX.
bool isStatePair(StringRef input, StringRef output) {
  if (input.consume_front("past_key_values."))
    return output.consume_front("present.") && input == output;
  return input.consume_front("past") && output.consume_front("present") &&
         input == output;
}

struct MarkInPlaceOutputsPass
    : PassWrapper<MarkInPlaceOutputsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MarkInPlaceOutputsPass)
  StringRef getArgument() const override {
    return "kiln-cpu-mark-in-place-outputs";
  }
  StringRef getDescription() const override {
    return "Make the inputs that @main returns written in place (a static "
           "KV cache) writable for bufferization";
  }
  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main)
      return;
    auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
    // What kiln-cpu-elide-aliased-copies needs once the results are
    // out-params (their attributes gone): how many, and their names.
    Builder b(&getContext());
    SmallVector<Attribute> names;
    for (unsigned i = 0; i < main.getNumResults(); ++i)
      names.push_back(b.getStringAttr(nameOf(main, i, true)));
    main->setAttr("kiln.num_results", b.getI64IntegerAttr(names.size()));
    main->setAttr("kiln.result_names", b.getArrayAttr(names));
    llvm::SmallDenseSet<unsigned> taken;
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      // Only a value some op writes: an input returned as it is stays a
      // copy (it is not "updated in place", and aliasing it buys nothing).
      if (isa<BlockArgument>(value))
        continue;
      BlockArgument arg = writtenArgument(value, main);
      if (!arg || arg.getType() != value.getType() ||
          main.getArgAttr(arg.getArgNumber(), "kiln.weight") ||
          main.getArgAttr(arg.getArgNumber(), "kiln.weight_value") ||
          !taken.insert(arg.getArgNumber()).second)
        continue;
      // Only a decoder's state pair, named as the generation loop pairs
      // them (docs/generation.md): other callers of kiln_entry keep the
      // plain convention (inputs only read, every output its own buffer).
      if (!isStatePair(nameOf(main, arg.getArgNumber(), false),
                       nameOf(main, index, true)))
        continue;
      // Same symbolic shape (an artifact states the pair's shapes alike).
      if (main.getArgAttr(arg.getArgNumber(), "kiln.shape") !=
          main.getResultAttr(index, "kiln.shape"))
        continue;
      // One writer of the caller's buffer: the chain that returns it.
      unsigned writers = llvm::count_if(arg.getUses(), mayWrite);
      if (writers != 1) {
        main.emitRemark() << "output '" << nameOf(main, index, true)
                          << "' is written from input '"
                          << nameOf(main, arg.getArgNumber(), false)
                          << "', which " << writers
                          << " ops write: the input is copied";
        continue;
      }
      unsigned i = arg.getArgNumber();
      main.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                      BoolAttr::get(&getContext(), true));
      main.setArgAttr(i, kResultAttr,
                      IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                       index));
    }
  }
};

/// Whether the buffer `value` is `target` itself, after bufferization:
/// through casts, and through loops and branches that yield it unchanged
/// (the loop of a lowered kiln.tensor_scatter carries the cache's buffer
/// and writes rows into it).
bool isBuffer(Value value, Value target, int depth = 0) {
  if (value == target)
    return true;
  if (depth > 16)
    return false;
  Operation *op = value.getDefiningOp();
  if (!op)
    return false;
  if (auto cast = dyn_cast<memref::CastOp>(op))
    return isBuffer(cast.getSource(), target, depth + 1);
  unsigned k = cast<OpResult>(value).getResultNumber();
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    return isBuffer(loop.getInits()[k], target, depth + 1) &&
           isBuffer(yield.getOperand(k), loop.getRegionIterArgs()[k],
                    depth + 1);
  }
  if (auto branch = dyn_cast<scf::IfOp>(op))
    return branch.elseBlock() &&
           isBuffer(branch.thenYield().getOperand(k), target, depth + 1) &&
           isBuffer(branch.elseYield().getOperand(k), target, depth + 1);
  return false;
}

struct ElideAliasedCopiesPass
    : PassWrapper<ElideAliasedCopiesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ElideAliasedCopiesPass)
  StringRef getArgument() const override {
    return "kiln-cpu-elide-aliased-copies";
  }
  StringRef getDescription() const override {
    return "Drop the copy of an input written in place into its output's "
           "buffer (the same buffer); record the pair in kiln.aliases";
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main)
      return;
    Block &entry = main.getBody().front();
    // The out-params follow the inputs and weights, one per result.
    unsigned numResults = countResults(main);
    unsigned firstOutParam = main.getNumArguments() - numResults;
    SmallVector<Attribute> aliases;
    OpBuilder b(&getContext());
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      auto result = main.getArgAttrOfType<IntegerAttr>(i, kResultAttr);
      if (!result)
        continue;
      main.removeArgAttr(i, kResultAttr);
      std::string input = nameOf(main, i, false);
      // Result k's out-param: the k-th of the trailing out-params.
      unsigned outParam = firstOutParam + unsigned(result.getInt());
      std::string output = outputName(main, result.getInt());
      memref::CopyOp copy;
      for (Operation &op : entry)
        if (auto c = dyn_cast<memref::CopyOp>(op))
          if (c.getTarget() == entry.getArgument(outParam))
            copy = c;
      if (outParam >= main.getNumArguments())
        copy = nullptr;
      if (!copy || !isBuffer(copy.getSource(), entry.getArgument(i))) {
        main.emitRemark() << "output '" << output << "' does not alias input '"
                          << input
                          << "': the graph reads the input's old value after "
                             "writing it, so bufferization writes a copy";
        continue;
      }
      copy.erase();
      aliases.push_back(
          b.getArrayAttr({b.getStringAttr(output), b.getStringAttr(input)}));
    }
    main->removeAttr("kiln.num_results");
    main->removeAttr("kiln.result_names");
    if (!aliases.empty())
      module->setAttr("kiln.aliases", b.getArrayAttr(aliases));
  }

  /// The results @main had before they became out-params: recorded by the
  /// mark pass as kiln.num_results.
  static unsigned countResults(func::FuncOp main) {
    auto n = main->getAttrOfType<IntegerAttr>("kiln.num_results");
    return n ? unsigned(n.getInt()) : 0;
  }
  static std::string outputName(func::FuncOp main, int64_t index) {
    auto names = main->getAttrOfType<ArrayAttr>("kiln.result_names");
    if (names && index < int64_t(names.size()))
      if (auto s = dyn_cast<StringAttr>(names[index]))
        return s.str();
    return "result " + std::to_string(index);
  }
};

} // namespace

std::unique_ptr<Pass> createMarkInPlaceOutputsPass() {
  return std::make_unique<MarkInPlaceOutputsPass>();
}

std::unique_ptr<Pass> createElideAliasedCopiesPass() {
  return std::make_unique<ElideAliasedCopiesPass>();
}

} // namespace kiln::cpu
