"""Reads a CUDA model artifact (docs/artifact.md) for the lit tests.

  cuda_artifact.py info  model.kiln          target, sections, kernel table
  cuda_artifact.py extract model.kiln NAME OUT   a section's bytes to OUT
  cuda_artifact.py sizes model.kiln          the byte size of each kiln_entry
                                             buffer (inputs, weights, outputs)
"""
import json
import struct
import sys

SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int8": 1,
         "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2,
         "uint32": 4, "uint64": 8, "bool": 1}


def load(path):
    data = open(path, "rb").read()
    if data[:8] != b"KILNART\0":
        sys.exit(f"{path}: not a Kiln artifact")
    header_size, data_offset = struct.unpack_from("<QQ", data, 16)
    header = json.loads(data[40:40 + header_size])
    return data, header, data_offset


def section(data, header, data_offset, name):
    for s in header["sections"]:
        if s["name"] == name:
            start = data_offset + s["offset"]
            return data[start:start + s["size"]]
    sys.exit(f"no section '{name}'")


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    data, header, data_offset = load(path)
    if cmd == "info":
        print("target:", json.dumps(header["target"], sort_keys=True))
        for s in header["sections"]:
            print(f"section {s['name']} kind {s['kind']} size {s['size']}")
        fatbin = section(data, header, data_offset, "cuda-fatbin")
        # The fatbin container's magic (0xBA55ED50, little-endian).
        print("fatbin magic:", fatbin[:4].hex())
        print("inputs:", [(t["name"], t["shape"]) for t in header["inputs"]])
        print("weights:", [w["name"] for w in header["weights"]])
        print("outputs:", [(t["name"], t["shape"]) for t in header["outputs"]])
        kernels = header.get("kernels", [])
        for k in kernels:
            print(f"kernel {k['id']} {k['name']} {k['category']} "
                  f"{' '.join(k['onnx_nodes'])}")
        # Each kernel of the table is a symbol of the (uncompressed) fatbin:
        # the runtime resolves them all there at session creation.
        found = sum(1 for k in kernels
                    if b"\0" + k["name"].encode() + b"\0" in fatbin)
        print(f"kernels in the fatbin: {found}/{len(kernels)}")
    elif cmd == "extract":
        open(sys.argv[4], "wb").write(
            section(data, header, data_offset, sys.argv[3]))
    elif cmd == "sizes":
        sizes = []
        for t in header["inputs"] + header["weights"] + header["outputs"]:
            n = SIZES[t["dtype"]]
            for d in t["shape"]:
                n *= d
            sizes.append(str(n))
        print(" ".join(sizes))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
