//===- GemmMatch.cpp - Contractions of the CUDA pipeline seen as GEMMs ----===//
//
// See GemmMatch.h. Everything here reads bufferized IR: which buffer a value
// is (through expand/collapse views), who else touches it, and whether the
// zero fill before a contraction and the elementwise op after it can be
// folded into one GEMM (a kernel or a library call) without changing what
// any other op sees.
//
//===----------------------------------------------------------------------===//

#include "GemmMatch.h"
#include "kiln/Transforms/Origin.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kiln::cuda {
namespace {

/// The buffer `v` is a view of (through any view-like op).
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// The root of `v` and every view of it, transitively.
llvm::SetVector<Value> aliasesOf(Value v) {
  llvm::SetVector<Value> set;
  set.insert(rootOf(v));
  for (unsigned i = 0; i < set.size(); ++i)
    for (Operation *user : set[i].getUsers())
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == set[i])
          for (Value result : user->getResults())
            set.insert(result);
  return set;
}

/// Whether `op` or an op nested in it has an operand in `set`. Views and
/// allocations read and write nothing.
bool touches(Operation *op, const llvm::SetVector<Value> &set) {
  if (isa<ViewLikeOpInterface, memref::AllocOp>(op))
    return false;
  bool found = false;
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands())
      if (set.contains(operand))
        found = true;
  });
  return found;
}

bool isZeroFloat(Value value) {
  auto constant = value.getDefiningOp<arith::ConstantOp>();
  if (auto attr = constant ? dyn_cast<IntegerAttr>(constant.getValue())
                           : nullptr) // an i32 accumulator (int8 GEMMs)
    return attr.getValue().isZero();
  auto attr = constant ? dyn_cast<FloatAttr>(constant.getValue()) : nullptr;
  return attr && attr.getValue().isZero();
}

bool isStaticIdentity(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.hasStaticShape() && type.getLayout().isIdentity();
}

/// `v`, or what an arith.extf extended.
Value skipExt(Value v) {
  if (auto ext = v.getDefiningOp<arith::ExtFOp>())
    return ext.getIn();
  if (auto ext = v.getDefiningOp<arith::ExtSIOp>())
    return ext.getIn();
  return v;
}

/// The body is `yield out + ext(a) * ext(b)` (exts optional, either order):
/// floats with extf, or integers with extsi (a signed int8 GEMM; extui is
/// no signed product, and is not taken).
bool isMulAddBody(Block &body) {
  if (body.getNumArguments() != 3)
    return false;
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || yield.getNumOperands() != 1)
    return false;
  Operation *add = yield.getOperand(0).getDefiningOp();
  if (!isa_and_nonnull<arith::AddFOp, arith::AddIOp>(add))
    return false;
  Value out = body.getArgument(2);
  if (add->getOperand(0) != out && add->getOperand(1) != out)
    return false;
  Value product =
      add->getOperand(0) == out ? add->getOperand(1) : add->getOperand(0);
  Operation *mul = product.getDefiningOp();
  if (!mul || !(isa<arith::AddFOp>(add) ? isa<arith::MulFOp>(mul)
                                         : isa<arith::MulIOp>(mul)))
    return false;
  Value x = skipExt(mul->getOperand(0)), y = skipExt(mul->getOperand(1));
  Value a = body.getArgument(0), b = body.getArgument(1);
  if (!((x == a && y == b) || (x == b && y == a)))
    return false;
  // Nothing else in the body: the add, the multiply, extensions of the
  // inputs and the yield.
  for (Operation &op : body) {
    if (&op == add || &op == mul || &op == yield.getOperation())
      continue;
    if (!isa<arith::ExtFOp, arith::ExtSIOp>(op) ||
        (op.getOperand(0) != a && op.getOperand(0) != b))
      return false;
  }
  return true;
}

/// Whether `map`'s results are exactly the loop dims `dims`, in order.
bool resultsAre(AffineMap map, ArrayRef<unsigned> dims) {
  if (map.getNumResults() != dims.size())
    return false;
  for (auto [expr, dim] : llvm::zip(map.getResults(), dims)) {
    auto d = dyn_cast<AffineDimExpr>(expr);
    if (!d || d.getPosition() != dim)
      return false;
  }
  return true;
}

int64_t numElements(Value v) {
  return cast<MemRefType>(v.getType()).getNumElements();
}

/// Whether `op` may write a buffer of `aliases`: a copy into it, a linalg
/// op with it as an output; any other op touching it, conservatively.
bool writes(Operation *op, const llvm::SetVector<Value> &aliases) {
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return aliases.contains(copy.getTarget());
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    if (linalgOp.hasPureBufferSemantics())
      return llvm::any_of(linalgOp.getDpsInits(),
                          [&](Value v) { return aliases.contains(v); });
  return touches(op, aliases);
}

bool isZeroFillOf(Operation *op, Value buffer,
                  const llvm::SetVector<Value> &aliases) {
  auto fill = dyn_cast<linalg::FillOp>(op);
  return fill && fill.hasPureBufferSemantics() &&
         aliases.contains(fill.getOutputs()[0]) &&
         numElements(fill.getOutputs()[0]) == numElements(buffer) &&
         isZeroFloat(fill.getInputs()[0]);
}

/// Whether the last op before `before` to write `buffer` zero-fills all of
/// it (readers in between are fine: they do not change it).
bool lastWriterIsZeroFill(Operation *before, Value buffer) {
  llvm::SetVector<Value> aliases = aliasesOf(buffer);
  for (Operation *prev = before->getPrevNode(); prev;
       prev = prev->getPrevNode())
    if (writes(prev, aliases))
      return isZeroFillOf(prev, buffer, aliases);
  return false;
}

/// Sets match.zeroStart/zeroOp: what zeroes C before `op`. A zero fill, or
/// a copy of a zero-filled buffer (CSE merges the identical zero tensors of
/// two matmuls, and bufferization gives the second a copy of the first's
/// buffer). The op is erased with the contraction, unless something reads
/// C between it and the contraction (then it stays, and the GEMM still
/// starts from zero).
void matchZeroStart(GemmMatch &match) {
  Operation *op = match.op;
  Value c = match.c;
  llvm::SetVector<Value> cAliases = aliasesOf(c);
  bool readers = false;
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (!touches(prev, cAliases))
      continue;
    if (!writes(prev, cAliases)) {
      readers = true;
      continue;
    }
    auto copy = dyn_cast<memref::CopyOp>(prev);
    bool zero = isZeroFillOf(prev, c, cAliases) ||
                (copy && numElements(copy.getTarget()) == numElements(c) &&
                 lastWriterIsZeroFill(copy, copy.getSource()));
    if (!zero)
      return;
    match.zeroStart = true;
    if (!readers)
      match.zeroOp = prev;
    return;
  }
}

/// The elementwise consumer of C that can be applied in the GEMM's store
/// (see GemmMatch::epilogue); fills `match.epilogue*` and `deadWithC`.
void matchEpilogue(GemmMatch &match) {
  Operation *op = match.op;
  Value root = rootOf(match.c);
  auto alloc = root.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != op->getBlock())
    return;
  llvm::SetVector<Value> cAliases = aliasesOf(match.c);
  SmallVector<Operation *> deallocs, views, others;
  for (Value v : cAliases)
    for (Operation *user : v.getUsers()) {
      // Users before the contraction (its zero start, readers of that)
      // are done when the GEMM runs.
      if (user == op ||
          (user->getBlock() == op->getBlock() && user->isBeforeInBlock(op)))
        continue;
      if (isa<memref::DeallocOp>(user)) {
        deallocs.push_back(user);
        continue;
      }
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == v) {
          views.push_back(user);
          continue;
        }
      if (user->getBlock() != op->getBlock() || !op->isBeforeInBlock(user))
        return;
      if (!llvm::is_contained(others, user))
        others.push_back(user);
    }
  if (others.empty())
    return;
  llvm::sort(others,
             [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  // The first reader after the contraction is the epilogue. It may write
  // C itself (in place: bufferization's choice when C has no other use);
  // then C is the result and later users read it. Otherwise bufferization
  // may reuse C's buffer for a later result: that is fine when the next op
  // to touch it overwrites all of it without reading it.
  auto candidate = dyn_cast<linalg::GenericOp>(others.front());
  if (!candidate || candidate.getNumDpsInits() != 1)
    return;
  bool inPlace = cAliases.contains(candidate.getDpsInitOperand(0)->get());
  bool cLivesOn = others.size() > 1 || inPlace;
  if (others.size() > 1 && !inPlace) {
    auto next = dyn_cast<linalg::LinalgOp>(others[1]);
    if (!next || !next.hasPureBufferSemantics() ||
        next.getNumLoops() != next.getNumParallelLoops())
      return;
    for (OpOperand &operand : next->getOpOperands()) {
      if (!cAliases.contains(operand.get()))
        continue;
      if (!next.isDpsInit(&operand) ||
          !next.getMatchingIndexingMap(&operand).isIdentity() ||
          !next.getMatchingBlockArgument(&operand).use_empty() ||
          next.getStaticLoopRanges() !=
              cast<MemRefType>(operand.get().getType()).getShape())
        return;
    }
  }
  if (!candidate || candidate->getBlock() != op->getBlock() ||
      !op->isBeforeInBlock(candidate) || !candidate.hasPureBufferSemantics() ||
      candidate.getNumDpsInits() != 1 ||
      candidate.getNumLoops() != candidate.getNumParallelLoops())
    return;
  auto cType = cast<MemRefType>(match.c.getType());
  if (candidate.getStaticLoopRanges() != cType.getShape())
    return;
  OpOperand *init = candidate.getDpsInitOperand(0);
  Value out = init->get();
  if (!isStaticIdentity(out) ||
      !candidate.getMatchingIndexingMap(init).isIdentity() ||
      !candidate.getMatchingBlockArgument(init).use_empty())
    return;
  int accArg = -1;
  for (OpOperand *input : candidate.getDpsInputOperands()) {
    if (!cAliases.contains(input->get()))
      continue;
    if (accArg >= 0 || input->get().getType() != cType ||
        !candidate.getMatchingIndexingMap(input).isIdentity())
      return;
    accArg = input->getOperandNumber();
  }
  if (accArg < 0)
    return;
  // The kernel or call replaces the epilogue where it is: the operands of
  // the contraction must not change in between (readers are fine: the row
  // sums of an int8 weight, Int8Calls.cpp), and its output must not be an
  // input (other blocks still read the inputs while one stores).
  llvm::SetVector<Value> operands = aliasesOf(match.a);
  operands.insert_range(aliasesOf(match.b));
  for (Operation *between = op->getNextNode(); between != candidate;
       between = between->getNextNode())
    if (writes(between, operands) || touches(between, cAliases))
      return;
  llvm::SetVector<Value> guarded = operands;
  guarded.insert_range(cAliases);
  llvm::SetVector<Value> outAliases = aliasesOf(out);
  if (llvm::any_of(guarded, [&](Value v) {
        return outAliases.contains(v) && !(inPlace && cAliases.contains(v));
      }))
    return;
  for (OpOperand *input : candidate.getDpsInputOperands())
    if (input->getOperandNumber() != static_cast<unsigned>(accArg) &&
        outAliases.contains(input->get()))
      return;
  match.epilogue = candidate;
  match.epilogueArg = accArg;
  if (cLivesOn)
    return;
  match.deadWithC = deallocs;
  // Views in reverse order of discovery: a view of a view dies first.
  for (Operation *view : llvm::reverse(views))
    match.deadWithC.push_back(view);
  match.deadWithC.push_back(alloc);
}

} // namespace

std::string onnxNodeOf(Operation *op) {
  std::string node = findOnnxNode(op->getLoc());
  return node.empty() ? "?" : node;
}

FailureOr<GemmMatch> matchGemm(linalg::LinalgOp op, std::string &why) {
  why.clear();
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() < 1 ||
      op->getNumRegions() != 1 || !isMulAddBody(*op.getBlock()))
    return failure();
  // Each operand indexed by loops (a convolution's window sums are not).
  if (!llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isProjectedPermutation(); }))
    return failure();
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims))
    return failure();
  GemmMatch match;
  match.op = op;
  match.a = op.getDpsInputOperand(0)->get();
  match.b = op.getDpsInputOperand(1)->get();
  match.c = op.getDpsInitOperand(0)->get();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (dims->k.empty() || dims->n.empty() || dims->m.empty()) {
    why = "no m, n or k dimension";
    return failure();
  }
  SmallVector<unsigned> batch(dims->batch.begin(), dims->batch.end());
  SmallVector<unsigned> mDims(dims->m.begin(), dims->m.end());
  SmallVector<unsigned> nDims(dims->n.begin(), dims->n.end());
  llvm::sort(batch);
  llvm::sort(mDims);
  llvm::sort(nDims);
  SmallVector<unsigned> kDims(dims->k.begin(), dims->k.end());
  llvm::sort(kDims);
  SmallVector<unsigned> aDims(batch), bDims(batch), cDims(batch);
  aDims.append(mDims.begin(), mDims.end());
  aDims.append(kDims.begin(), kDims.end());
  bDims.append(kDims.begin(), kDims.end());
  bDims.append(nDims.begin(), nDims.end());
  cDims.append(mDims.begin(), mDims.end());
  cDims.append(nDims.begin(), nDims.end());
  // A operand order other than A x B (B first) is not a row-major GEMM.
  // B indexed [n.., k] by its map (the signed int8 GEMM of
  // kiln-cuda-int8-prepare reads its weight so; reshape propagation may
  // split its n into heads) is read in place, as a folded transpose is
  // (bNK).
  SmallVector<unsigned> nkDims(nDims);
  nkDims.append(kDims.begin(), kDims.end());
  bool bNK = batch.empty() && kDims.size() == 1 && resultsAre(maps[1], nkDims);
  if (!resultsAre(maps[0], aDims) ||
      !(bNK || resultsAre(maps[1], bDims)) || !resultsAre(maps[2], cDims)) {
    why = "operands are not row-major [batch, m, k] x [batch, k, n] "
          "(a transposed operand)";
    return failure();
  }
  for (Value v : {match.a, match.b, match.c})
    if (!isStaticIdentity(v)) {
      why = "dynamic shape or strided operand";
      return failure();
    }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  match.numBatchDims = batch.size();
  match.numMDims = mDims.size();
  for (unsigned d : batch) {
    match.batch *= ranges[d];
    match.batchSizes.push_back(ranges[d]);
  }
  match.m = 1;
  for (unsigned d : mDims) {
    match.m *= ranges[d];
    match.mSizes.push_back(ranges[d]);
  }
  match.numNDims = nDims.size();
  match.n = 1;
  for (unsigned d : nDims) {
    match.n *= ranges[d];
    match.nSizes.push_back(ranges[d]);
  }
  match.numKDims = kDims.size();
  match.k = 1;
  for (unsigned d : kDims)
    match.k *= ranges[d];
  match.bNK = bNK;
  match.inType = cast<MemRefType>(match.a.getType()).getElementType();
  match.accType = cast<MemRefType>(match.c.getType()).getElementType();
  if (match.inType != cast<MemRefType>(match.b.getType()).getElementType()) {
    why = "A and B have different element types";
    return failure();
  }
  matchZeroStart(match);
  matchEpilogue(match);
  return match;
}

bool foldTransposedB(GemmMatch &match, Operation *anchor) {
  Operation *op = match.op;
  if (match.numBatchDims || match.numKDims != 1 || match.numNDims != 1)
    return false;
  auto alloc = match.b.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != op->getBlock())
    return false;
  linalg::TransposeOp transpose;
  for (Operation *user : alloc->getUsers()) {
    if (user == op || isa<memref::DeallocOp>(user))
      continue;
    auto t = dyn_cast<linalg::TransposeOp>(user);
    if (!t || transpose || t.getInit() != match.b ||
        t->getBlock() != op->getBlock() || !t->isBeforeInBlock(op))
      return false;
    transpose = t;
  }
  if (!transpose || !transpose.hasPureBufferSemantics() ||
      transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    return false;
  Value source = transpose.getInput();
  if (!isStaticIdentity(source))
    return false;
  // Nothing writes B between the transpose and the contraction (the
  // transpose is its only writer), nor the source before the kernel runs.
  llvm::SetVector<Value> sourceAliases = aliasesOf(source);
  for (Operation *between = transpose->getNextNode(); between != anchor;
       between = between->getNextNode())
    if (between != op && writes(between, sourceAliases))
      return false;
  match.bTransposed = source;
  match.bTranspose = transpose;
  return true;
}

void eraseFolded(GemmMatch &match, Operation *epilogue) {
  Value copySource;
  if (auto copy = dyn_cast_or_null<memref::CopyOp>(match.zeroOp))
    copySource = copy.getSource();
  if (epilogue)
    epilogue->erase();
  match.op->erase();
  if (match.zeroOp)
    match.zeroOp->erase();
  if (match.bTranspose) {
    auto alloc = match.b.getDefiningOp<memref::AllocOp>();
    match.bTranspose->erase();
    SmallVector<Operation *> deallocs(alloc->getUsers());
    if (llvm::all_of(deallocs,
                     [](Operation *u) { return isa<memref::DeallocOp>(u); })) {
      for (Operation *dealloc : deallocs)
        dealloc->erase();
      alloc->erase();
    }
  }
  if (epilogue)
    for (Operation *dead : match.deadWithC)
      if (dead->use_empty())
        dead->erase();
  // The buffer the copy read its zeros from may have no reader left: then
  // its fills (a kernel each) and the allocation go too.
  if (!copySource)
    return;
  llvm::SetVector<Value> aliases = aliasesOf(copySource);
  SmallVector<Operation *> users;
  for (Value v : aliases)
    for (Operation *user : v.getUsers()) {
      if (isa<memref::DeallocOp, linalg::FillOp>(user) ||
          (isa<ViewLikeOpInterface>(user) &&
           aliases.contains(user->getResult(0))))
        users.push_back(user);
      else
        return;
    }
  // Fills and deallocations first, then the views (latest first), then the
  // allocation.
  llvm::sort(users, [](Operation *x, Operation *y) {
    bool xv = isa<ViewLikeOpInterface>(x), yv = isa<ViewLikeOpInterface>(y);
    if (xv != yv)
      return yv;
    return y->isBeforeInBlock(x);
  });
  for (Operation *user : users)
    if (user->use_empty())
      user->erase();
  if (Operation *root = aliases[0].getDefiningOp<memref::AllocOp>())
    if (root->use_empty())
      root->erase();
}

Value collapseGroups(OpBuilder &b, Location loc, Value memref,
                     ArrayRef<unsigned> groupSizes) {
  SmallVector<ReassociationIndices> groups;
  int64_t dim = 0;
  bool trivial = true;
  for (unsigned size : groupSizes) {
    if (size == 0)
      continue;
    ReassociationIndices group;
    for (unsigned i = 0; i < size; ++i)
      group.push_back(dim++);
    trivial &= size == 1;
    groups.push_back(group);
  }
  if (trivial)
    return memref;
  return memref::CollapseShapeOp::create(b, loc, memref, groups);
}

} // namespace kiln::cuda
