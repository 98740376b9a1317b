//===- InstrumentKernels.cpp - Profiling hooks around each kernel ---------===//
//
// kiln-cpu-instrument-kernels runs on bufferized IR, after the library calls
// and before the loops are lowered: there, each top-level compute op of
// @main is one kernel (a tiled scf.forall, a linalg op that will become a
// parallel loop nest, a library call, a memref.copy). It brackets each with
//
//   func.call @kiln_abi_prof_begin(%id) : (i32) -> ()
//   <kernel>
//   func.call @kiln_abi_prof_end(%id) : (i32) -> ()
//
// (runtime/abi/kiln_abi.c: a load and a branch while profiling is off) and
// records the kernel table as the module attribute `kiln.kernels`: one
// dictionary per kernel {id, name, category, onnx_nodes}, which kiln-compile
// writes into the artifact's metadata (docs/artifact.md, "kernels").
//
// Names and categories come from the locations: convert-kiln-to-linalg and
// kiln-decompose-fused wrap them with the kiln op they lower
// (kiln/Transforms/Origin.h), elementwise fusion merges the fused ops'
// locations, and the ONNX node names are the NameLocs inside.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CPU/CpuBackend.h"
#include "kiln/Target/KernelCategory.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace kiln::cpu {

namespace {

/// Calls to these (kiln_abi_blas.c, kiln_abi_qgemm.c, kiln_abi_dnnl.cpp)
/// are GEMMs whatever the location says.
bool isLibraryGemm(StringRef callee) {
  return callee.starts_with("kiln_abi_sgemm") ||
         callee.starts_with("kiln_abi_qgemm") ||
         callee.starts_with("kiln_abi_conv") ||
         callee.starts_with("kiln_abi_dnnl_conv") ||
         callee.starts_with("kiln_abi_dnnl_matmul");
}

constexpr StringLiteral kBegin = "kiln_abi_prof_begin";
constexpr StringLiteral kEnd = "kiln_abi_prof_end";

/// Whether a top-level op of @main does work worth timing. Allocations,
/// deallocations, views, constants and the scf.if/helper calls the
/// deallocation pipeline leaves are not kernels.
bool isKernel(Operation *op, ModuleOp module) {
  if (isa<linalg::LinalgOp, memref::CopyOp, LoopLikeOpInterface>(op))
    return true;
  if (auto call = dyn_cast<func::CallOp>(op)) {
    StringRef callee = call.getCallee();
    if (callee == kBegin || callee == kEnd)
      return false;
    auto fn = module.lookupSymbol<func::FuncOp>(callee);
    if (!fn || fn.isExternal())
      return true; // a library kernel
    bool any = false;
    fn.walk([&](Operation *inner) {
      if (inner != fn.getOperation() &&
          isa<linalg::LinalgOp, memref::CopyOp, LoopLikeOpInterface>(inner))
        any = true;
    });
    return any;
  }
  if (op->getNumRegions() == 0)
    return false;
  bool any = false;
  op->walk([&](Operation *inner) {
    if (inner != op &&
        (isa<linalg::LinalgOp, memref::CopyOp, LoopLikeOpInterface>(inner) ||
         (isa<func::CallOp>(inner) && isKernel(inner, module))))
      any = true;
  });
  return any;
}

/// The outermost origins in `loc`: the kiln ops it was lowered from (one
/// per op fused into it), not the fused ops those were decomposed from;
/// `parents` gets, for each new one, the fused op it came from ("" if none).
void collectPrimaryOrigins(Location loc, SmallVectorImpl<std::string> &out,
                           llvm::StringMap<std::string> &parents) {
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    auto meta = dyn_cast_or_null<StringAttr>(fused.getMetadata());
    if (meta && meta.getValue().starts_with("kiln.")) {
      SmallVector<std::string> nodes, inner;
      for (Location l : fused.getLocations())
        collectLocationInfo(l, nodes, inner);
      if (!llvm::is_contained(out, meta.getValue()))
        out.push_back(meta.getValue().str());
      std::string &parent = parents[meta.getValue()];
      if (parent.empty() && !inner.empty())
        parent = StringRef(inner.front()).drop_front(5).str();
      return;
    }
    for (Location inner : fused.getLocations())
      collectPrimaryOrigins(inner, out, parents);
  } else if (auto name = dyn_cast<NameLoc>(loc)) {
    collectPrimaryOrigins(name.getChildLoc(), out, parents);
  }
}

/// A kernel's name, category and ONNX nodes from its ops and locations.
struct KernelDescription {
  std::string base;
  KernelCategory category = KernelCategory::Other;
  SmallVector<std::string> nodes;
};

/// Lower is more important: the category of a kernel mixing origins (an
/// elementwise chain fused into a dequantize) is the most important one.
int rank(KernelCategory c) { return static_cast<int>(c); }

KernelDescription describeKernel(Operation *kernel) {
  KernelDescription d;
  // The outermost origin of each op (the kiln op it was lowered from), in
  // order, and every origin (attention shows as an inner one).
  SmallVector<std::string> primary, all, otherNodes;
  llvm::StringMap<std::string> parents;
  kernel->walk<WalkOrder::PreOrder>([&](Operation *op) {
    // CSE shares constants, views and the zero fills of accumulators
    // between kernels (two matmuls of one shape start from one fill, read
    // one input view), so they keep another kernel's location: only a
    // kernel's own work names it.
    if (op->hasTrait<OpTrait::ConstantLike>() || isa<ViewLikeOpInterface>(op))
      return WalkResult::skip();
    if (op != kernel && isa<linalg::FillOp>(op))
      return WalkResult::skip();
    SmallVector<std::string> nodes, origins;
    collectLocationInfo(op->getLoc(), nodes, origins);
    collectNodes(op->getLoc(), false, d.nodes, otherNodes);
    collectPrimaryOrigins(op->getLoc(), primary, parents);
    for (std::string &o : origins)
      if (!llvm::is_contained(all, o))
        all.push_back(o);
    return WalkResult::advance();
  });
  if (d.nodes.empty())
    d.nodes = otherNodes;

  // A GEMM origin makes a GEMM kernel only where products are summed: a
  // Gemm's bias add fused into the elementwise chain after it is
  // elementwise work.
  bool sumsProducts = false;
  kernel->walk([&](Operation *op) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    auto call = dyn_cast<func::CallOp>(op);
    if (isa<vector::ContractionOp>(op) ||
        (linalgOp && linalgOp.getNumReductionLoops() > 0) ||
        (call && isLibraryGemm(call.getCallee())))
      sumsProducts = true;
  });
  auto effective = [&](StringRef origin) -> std::optional<KernelCategory> {
    std::optional<KernelCategory> c = categoryOfKilnOp(origin);
    if (c == KernelCategory::GEMM && !sumsProducts)
      return KernelCategory::Elementwise;
    return c;
  };
  // Most important first: a tiled matmul with its bias add is "matmul+add".
  std::stable_sort(primary.begin(), primary.end(),
                   [&](const std::string &a, const std::string &b) {
                     return rank(effective(a).value_or(KernelCategory::Other)) <
                            rank(effective(b).value_or(KernelCategory::Other));
                   });

  // The category: attention whenever an attention is among the origins,
  // then what the op is, then the most important origin, then the shape of
  // the computation.
  std::optional<KernelCategory> category;
  // The fused op the kernel's main op was decomposed from, if any (the
  // name's prefix: "attention/matmul", "rms_norm/mul"); any attention.
  std::string parent;
  for (const std::string &o : all)
    if (categoryOfKilnOp(o) == KernelCategory::Attention) {
      category = KernelCategory::Attention;
      parent = StringRef(o).drop_front(5).str();
      break;
    }
  if (parent.empty() && !primary.empty())
    parent = parents.lookup(primary.front());
  std::string what; // a suffix naming helper ops (.fill, .copy)
  Operation *inner = kernel;
  if (auto forall = dyn_cast<scf::ForallOp>(kernel)) {
    // A tiled kernel: named after its main linalg op.
    forall.getBody()->walk([&](linalg::LinalgOp op) {
      if (inner == kernel || isa<linalg::ContractionOpInterface,
                                 linalg::ConvolutionOpInterface>(
                                 op.getOperation()))
        inner = op;
    });
  }
  if (auto call = dyn_cast<func::CallOp>(kernel)) {
    if (isLibraryGemm(call.getCallee()) && !category)
      category = KernelCategory::GEMM;
    // A oneDNN call is named as the op it runs (a pooling is a reduction).
    StringRef callee = call.getCallee();
    if (callee.starts_with("kiln_abi_dnnl_pool") && !category)
      category = KernelCategory::Reduction;
    if (primary.empty())
      primary.push_back(callee.starts_with("kiln_abi_dnnl_conv")     ? "dnnl_conv"
                        : callee.starts_with("kiln_abi_dnnl_pool")   ? "dnnl_pool"
                        : callee.starts_with("kiln_abi_dnnl_matmul") ? "dnnl_matmul"
                                                                     : callee.str());
  } else if (isa<memref::CopyOp, linalg::CopyOp, linalg::TransposeOp>(inner)) {
    if (!category)
      category = KernelCategory::Copy;
    what = isa<linalg::TransposeOp>(inner) ? "transpose" : "copy";
  } else if (isa<linalg::FillOp>(inner)) {
    if (!category)
      category = KernelCategory::Copy;
    what = "fill";
  }
  // The kiln ops lowered here count, and the fused ops they were
  // decomposed from (an rms_norm's pieces are a reduction's), except the
  // GEMM ones: a fused matmul's epilogue in a loop of its own is
  // elementwise work.
  if (!category) {
    for (const std::string &o : all) {
      std::optional<KernelCategory> c = effective(o);
      if (!c || (*c == KernelCategory::GEMM && !llvm::is_contained(primary, o)))
        continue;
      if (!category || rank(*c) < rank(*category))
        category = c;
    }
  }
  if (!category) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(inner);
    if (linalgOp && (isa<linalg::ContractionOpInterface,
                         linalg::ConvolutionOpInterface>(inner) ||
                     linalg::isaContractionOpInterface(linalgOp)))
      category = KernelCategory::GEMM;
    else if (linalgOp && linalgOp.getNumReductionLoops() > 0)
      category = KernelCategory::Reduction;
    else if (linalgOp)
      category = KernelCategory::Elementwise;
    else
      category = KernelCategory::Other;
  }
  d.category = *category;

  // The name: the kiln ops it computes ("matmul", "add+relu"), prefixed
  // with the fused op they came from ("attention/matmul"); without origins
  // the op's own name.
  std::string base;
  size_t named = 0;
  for (StringRef p : primary) {
    p.consume_front("kiln.");
    if (p == parent) // the fused op's own constants
      continue;
    if (named++ == 3) {
      base += "+more";
      break;
    }
    base += (base.empty() ? "" : "+") + p.str();
  }
  if (base.empty()) {
    StringRef opName = inner->getName().getStringRef();
    base = opName.substr(opName.find('.') + 1).str();
  }
  if (!parent.empty())
    base = parent + "/" + base;
  if (!what.empty() && !StringRef(base).ends_with(what))
    base += "." + what;
  d.base = base;
  return d;
}

struct InstrumentKernelsPass
    : PassWrapper<InstrumentKernelsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InstrumentKernelsPass)
  StringRef getArgument() const override {
    return "kiln-cpu-instrument-kernels";
  }
  StringRef getDescription() const override {
    return "Bracket each kernel of @main with kiln_abi_prof_begin/end calls "
           "and record the kernel table (kiln.kernels)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, func::FuncDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;

    OpBuilder b(context);
    b.setInsertionPointToStart(module.getBody());
    auto hookType = b.getFunctionType({b.getI32Type()}, {});
    for (StringRef name : {kBegin, kEnd}) {
      if (auto existing = module.lookupSymbol<func::FuncOp>(name)) {
        if (existing.getFunctionType() != hookType) {
          existing.emitError("kiln-cpu-instrument-kernels: @")
              << name << " exists with another type";
          return signalPassFailure();
        }
        continue;
      }
      auto fn = func::FuncOp::create(b, module.getLoc(), name, hookType);
      fn.setPrivate();
    }

    SmallVector<Attribute> table;
    llvm::StringMap<int> counters;
    int32_t id = 0;
    // Before the SCF/CF lowering @main has one block; should a lowering
    // have made more, the top-level ops of each are kernels all the same.
    SmallVector<Operation *> kernels;
    for (Block &block : main.getBody())
      for (Operation &op : block)
        if (!op.hasTrait<OpTrait::IsTerminator>() && isKernel(&op, module))
          kernels.push_back(&op);
    for (Operation *op : kernels) {
      KernelDescription d = describeKernel(op);
      std::string name = d.base + "_" + std::to_string(counters[d.base]++);
      Location loc = op->getLoc();
      b.setInsertionPoint(op);
      Value idValue = arith::ConstantIntOp::create(b, loc, id, 32);
      func::CallOp::create(b, loc, kBegin, TypeRange{}, ValueRange{idValue});
      b.setInsertionPointAfter(op);
      func::CallOp::create(b, loc, kEnd, TypeRange{}, ValueRange{idValue});

      SmallVector<Attribute> nodes;
      for (const std::string &n : d.nodes)
        nodes.push_back(b.getStringAttr(n));
      table.push_back(b.getDictionaryAttr({
          b.getNamedAttr("id", b.getI32IntegerAttr(id)),
          b.getNamedAttr("name", b.getStringAttr(name)),
          b.getNamedAttr("category",
                         b.getStringAttr(kernelCategoryName(d.category))),
          b.getNamedAttr("onnx_nodes", b.getArrayAttr(nodes)),
      }));
      ++id;
    }
    module->setAttr("kiln.kernels", b.getArrayAttr(table));
  }
};

} // namespace

std::unique_ptr<Pass> createInstrumentKernelsPass() {
  return std::make_unique<InstrumentKernelsPass>();
}

std::string kernelTableJson(ModuleOp module) {
  auto table = module->getAttrOfType<ArrayAttr>("kiln.kernels");
  if (!table)
    return "";
  auto quote = [](StringRef s) {
    std::string out = "\"";
    for (char c : s) {
      unsigned char u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (u < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", u);
        out += buf;
      } else {
        out += c;
      }
    }
    return out + "\"";
  };
  std::string json = "[";
  for (auto [i, attr] : llvm::enumerate(table)) {
    auto dict = dyn_cast<DictionaryAttr>(attr);
    if (!dict)
      continue;
    auto idAttr = dict.getAs<IntegerAttr>("id");
    auto name = dict.getAs<StringAttr>("name");
    auto category = dict.getAs<StringAttr>("category");
    auto nodes = dict.getAs<ArrayAttr>("onnx_nodes");
    if (!idAttr || !name || !category || !nodes)
      continue;
    json += std::string(i ? ",\n    " : "\n    ") +
            "{\"id\": " + std::to_string(idAttr.getInt()) +
            ", \"name\": " + quote(name.getValue()) +
            ", \"category\": " + quote(category.getValue()) +
            ", \"onnx_nodes\": [";
    for (auto [j, n] : llvm::enumerate(nodes))
      if (auto s = dyn_cast<StringAttr>(n))
        json += (j ? ", " : "") + quote(s.getValue());
    json += "]";
    // A CUDA library call (cuBLASLt), not a kernel of the fatbin.
    if (auto library = dict.getAs<BoolAttr>("library"); library &&
                                                        library.getValue())
      json += ", \"library\": true";
    json += "}";
  }
  json += table.empty() ? "]" : "\n  ]";
  return json;
}

} // namespace kiln::cpu
