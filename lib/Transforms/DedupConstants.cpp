//===- DedupConstants.cpp - Merge identical constants ---------------------===//
//
// kiln-dedup-constants: constants of one type with the same bytes are one
// constant. Upstream CSE only merges constants whose attributes are the same
// object, but two ONNX initializers with equal contents import as
// dense_resource blobs with different names (and a folded constant may
// equal an initializer held as a dense attribute). This pass compares the
// stored bytes: the raw data of a dense attribute (which has the blobs'
// little-endian layout) or the blob of a dense_resource; a splat is compared
// with splats only.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/Transforms/Statistics.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"

namespace kiln {
#define GEN_PASS_DEF_KILNDEDUPCONSTANTS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// What identifies a constant's contents: its type, whether it is a splat,
/// and its stored bytes.
struct ConstantContents {
  Type type;
  bool isSplat = false;
  ArrayRef<char> bytes;

  /// The contents of `op`, or std::nullopt when its bytes are not available
  /// (an elided dense_resource, an attribute of another kind).
  static std::optional<ConstantContents> get(ConstantOp op) {
    ElementsAttr value = op.getValue();
    ConstantContents contents;
    contents.type = value.getType();
    if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
      contents.isSplat = dense.isSplat();
      contents.bytes = dense.getRawData();
      return contents;
    }
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
      AsmResourceBlob *blob = resource.getRawHandle().getBlob();
      if (!blob)
        return std::nullopt;
      contents.bytes = blob->getData();
      return contents;
    }
    return std::nullopt;
  }

  llvm::hash_code hash() const {
    return llvm::hash_combine(type, isSplat,
                              llvm::hash_combine_range(bytes.begin(), bytes.end()));
  }
  bool operator==(const ConstantContents &other) const {
    return type == other.type && isSplat == other.isSplat &&
           bytes.size() == other.bytes.size() &&
           std::equal(bytes.begin(), bytes.end(), other.bytes.begin());
  }
};

struct DedupConstantsPass
    : kiln::impl::KilnDedupConstantsBase<DedupConstantsPass> {
  using Base::Base;

  kiln::Statistic numDeduplicated{
      this, "constants-deduplicated",
      "Constants replaced by an identical earlier one"};
  kiln::Statistic bytesSaved{this, "bytes-saved",
                             "Bytes of constant data removed"};

  void runOnOperation() override {
    int64_t deduplicated = 0, saved = 0;
    // Per block, so that the kept constant (the first) dominates the others.
    getOperation().walk([&](Block *block) {
      // Hash -> the first constants seen with that hash.
      llvm::DenseMap<unsigned, SmallVector<std::pair<ConstantOp, ConstantContents>, 1>>
          seen;
      for (Operation &op : llvm::make_early_inc_range(*block)) {
        auto constant = dyn_cast<ConstantOp>(op);
        if (!constant)
          continue;
        std::optional<ConstantContents> contents = ConstantContents::get(constant);
        if (!contents)
          continue;
        auto &bucket = seen[static_cast<unsigned>(contents->hash())];
        auto match = llvm::find_if(bucket, [&](const auto &entry) {
          return entry.second == *contents;
        });
        if (match == bucket.end()) {
          bucket.push_back({constant, *contents});
          continue;
        }
        constant.getResult().replaceAllUsesWith(match->first.getResult());
        saved += contents->bytes.size();
        constant.erase();
        ++deduplicated;
      }
    });
    numDeduplicated += deduplicated;
    bytesSaved += saved;
    if (deduplicated == 0)
      markAllAnalysesPreserved();
  }
};

} // namespace
