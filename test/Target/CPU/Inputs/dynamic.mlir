func.func @main(%x: tensor<?x4xf32> {kiln.name = "x"}) -> tensor<?x4xf32> {
  %r = kiln.relu %x : tensor<?x4xf32> loc("relu0")
  return %r : tensor<?x4xf32>
}
