func.func @main(%x: tensor<?x4x8x8xf32> {kiln.name = "x"}) -> tensor<?x4x8x8xf32> {
  %r = kiln.lrn %x {size = 3 : i64} : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32> loc("lrn0")
  return %r : tensor<?x4x8x8xf32>
}
