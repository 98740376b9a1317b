func.func @main(%x: tensor<0x4xf32> {kiln.name = "x"}) -> tensor<0x4xf32> {
  %r = kiln.relu %x : tensor<0x4xf32>
  return %r : tensor<0x4xf32>
}
