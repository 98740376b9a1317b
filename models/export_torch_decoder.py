#!/usr/bin/env python3
#===- models/export_torch_decoder.py - A Llama-style decoder, tied head ---===#
#
# Exports a Llama-style decoder LM with PyTorch (random weights, fixed seed):
# token embedding E [vocab, d], `layers` blocks of RMSNorm -> grouped-query
# attention with rotary embeddings (causal) -> residual, RMSNorm -> SwiGLU
# MLP -> residual, a final RMSNorm and an LM head tied to the embedding
# (logits = h . E^T, `lm_head.weight = embed.weight`: the exporter writes E
# once, read by the Gather and, through a Transpose, by the head; with
# --torch-folding the exporter folds that Transpose into a second copy). The default shape
# is SmolLM2-135M's (30 layers, d 576, 9 query / 3 KV heads of 64, FFN 1536,
# vocab 49152); --layers 2 gives the small one the tests use.
#
# Three graphs:
#   --mode generation: Hugging Face optimum's decoder with a KV cache, every
#                   axis that changes dynamic (docs/generation.md): input_ids
#                   [batch_size, sequence_length], attention_mask
#                   [batch_size, past_sequence_length + sequence_length],
#                   position_ids [batch_size, sequence_length] (the rotary
#                   tables gathered at them), past_key_values.<i>.key/value
#                   [batch_size, kv_heads, past_sequence_length, head_dim]
#                   -> logits, present.<i>.key/value; the causal mask from
#                   the positions (key position = cumsum(mask) - 1 <= query
#                   position, under the attention mask), as optimum exports
#                   it, with --genai DIR a genai_config.json for
#                   onnxruntime-genai beside a link to the model
#   static shapes:
#   --mode prefill: input_ids [1, seq] -> logits [1, seq, vocab]
#   --mode decode:  input_ids [1, 1], past_key_<i>/past_value_<i>
#                   [1, kv_heads, past, head_dim] -> logits [1, 1, vocab],
#                   present_key_<i>/present_value_<i> [1, kv_heads, past + 1,
#                   head_dim] (one decode step with a KV cache)
#
# With --data DIR it also writes DIR/input_<k>.npy (inputs from a fixed seed)
# and DIR/output_<k>.npy (PyTorch's outputs), as `kiln-run --inputs DIR` reads them.
#
# Needs Debian's python3-torch (1.13): run with /usr/bin/python3.
#
#   /usr/bin/python3 models/export_torch_decoder.py -o decoder.onnx
#       [--layers N] [--mode prefill|decode] [--seq S] [--past P]
#       [--vocab V] [--dim D] [--heads H] [--kv-heads G] [--ffn F]
#       [--data DIR] [--torch-folding]
#
#===----------------------------------------------------------------------===#

import argparse
import os
import sys
import warnings

import numpy as np

try:
    import torch
    import torch.nn as nn
except ImportError as e:
    print(f"export_torch_decoder: PyTorch not importable ({e}); install "
          "Debian's python3-torch and run with /usr/bin/python3",
          file=sys.stderr)
    sys.exit(77)

OPSET = 17
SEED = 0


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Block(nn.Module):
    def __init__(self, d, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv_heads = heads, kv_heads
        self.head_dim = d // heads
        self.attn_norm = RMSNorm(d)
        self.q = nn.Linear(d, heads * self.head_dim, bias=False)
        self.k = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.v = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(heads * self.head_dim, d, bias=False)
        self.mlp_norm = RMSNorm(d)
        self.gate = nn.Linear(d, ffn, bias=False)
        self.up = nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)

    def forward(self, x, cos, sin, mask, past_k=None, past_v=None):
        b, t, _ = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if past_k is not None:
            k = torch.cat((past_k, k), dim=2)
            v = torch.cat((past_v, v), dim=2)
        present = (k, v)
        groups = self.heads // self.kv_heads
        s = k.shape[2]
        k = k[:, :, None].expand(b, self.kv_heads, groups, s, self.head_dim)
        v = v[:, :, None].expand(b, self.kv_heads, groups, s, self.head_dim)
        k = k.reshape(b, self.heads, s, self.head_dim)
        v = v.reshape(b, self.heads, s, self.head_dim)
        scores = q @ k.transpose(-1, -2) / (self.head_dim ** 0.5) + mask
        y = torch.softmax(scores, dim=-1) @ v
        y = y.transpose(1, 2).reshape(b, t, self.heads * self.head_dim)
        x = x + self.o(y)
        h = self.mlp_norm(x)
        h = self.down(nn.functional.silu(self.gate(h)) * self.up(h))
        return x + h, present


class Decoder(nn.Module):
    def __init__(self, layers, vocab, d, heads, kv_heads, ffn):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.blocks = nn.ModuleList(
            Block(d, heads, kv_heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.embed.weight  # tied
        self.head_dim = d // heads
        for block in self.blocks:
            for linear in (block.q, block.k, block.v, block.o, block.gate,
                           block.up, block.down):
                nn.init.normal_(linear.weight, std=0.02)

    def rotary(self, start, t):
        inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() /
                               self.head_dim))
        pos = torch.arange(start, start + t).float()
        angles = torch.outer(pos, inv)
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos(), angles.sin()

    def forward(self, ids, *past):
        t = ids.shape[1]
        start = past[0].shape[2] if past else 0
        cos, sin = self.rotary(start, t)
        mask = torch.full((t, start + t), float("-inf")).triu(start + 1)
        x = self.embed(ids)
        presents = []
        for i, block in enumerate(self.blocks):
            pk = past[2 * i] if past else None
            pv = past[2 * i + 1] if past else None
            x, present = block(x, cos, sin, mask, pk, pv)
            presents.extend(present)
        logits = self.lm_head(self.norm(x))
        return (logits, *presents) if past else logits


MAX_POSITIONS = 8192


class GenerationDecoder(nn.Module):
    """The decoder in optimum's form: positions and the attention mask are
    inputs, the cache grows by Concat."""

    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder
        hd = decoder.head_dim
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        angles = torch.outer(torch.arange(MAX_POSITIONS).float(), inv)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos_table", angles.cos())
        self.register_buffer("sin_table", angles.sin())

    def forward(self, ids, attention_mask, position_ids, *past):
        cos = self.cos_table[position_ids].unsqueeze(1)  # [b, 1, t, hd]
        sin = self.sin_table[position_ids].unsqueeze(1)
        keys = torch.cumsum(attention_mask, dim=1) - 1   # [b, T]
        keep = (keys[:, None, None, :] <= position_ids[:, None, :, None]) & \
            (attention_mask[:, None, None, :] > 0)
        mask = torch.where(keep, torch.zeros(()),
                           torch.full((), torch.finfo(torch.float32).min))
        d = self.decoder
        x = d.embed(ids)
        presents = []
        for i, block in enumerate(d.blocks):
            x, present = block(x, cos, sin, mask, past[2 * i],
                               past[2 * i + 1])
            presents.extend(present)
        return (d.lm_head(d.norm(x)), *presents)


def genai_config(folder, model_path, args):
    """onnxruntime-genai's config for the generation graph (a Llama)."""
    import json
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(folder, "model.onnx")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.abspath(model_path), link)
    for side in (model_path + ".data",):
        if os.path.exists(side):
            target = os.path.join(folder, os.path.basename(side))
            if not os.path.lexists(target):
                os.symlink(os.path.abspath(side), target)
    config = {
        "model": {
            "type": "llama", "bos_token_id": 0,
            "eos_token_id": args.vocab - 1, "pad_token_id": 0,
            "vocab_size": args.vocab, "context_length": MAX_POSITIONS,
            "decoder": {
                "filename": "model.onnx",
                "head_size": args.dim // args.heads,
                "hidden_size": args.dim, "num_attention_heads": args.heads,
                "num_key_value_heads": args.kv_heads,
                "num_hidden_layers": args.layers,
                "session_options": {"intra_op_num_threads": 2,
                                    "provider_options": []},
                "inputs": {"input_ids": "input_ids",
                           "attention_mask": "attention_mask",
                           "position_ids": "position_ids",
                           "past_key_names": "past_key_values.%d.key",
                           "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits",
                            "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"}}},
        "search": {"max_length": MAX_POSITIONS, "do_sample": False,
                   "num_beams": 1, "past_present_share_buffer": False}}
    with open(os.path.join(folder, "genai_config.json"), "w") as f:
        json.dump(config, f, indent=1)


def export_generation(model, args):
    wrapper = GenerationDecoder(model).eval()
    gen = torch.Generator().manual_seed(SEED + 1)
    head_dim = args.dim // args.heads
    ids = torch.randint(0, args.vocab, (1, 3), generator=gen)
    mask = torch.ones(1, 5, dtype=torch.int64)
    positions = torch.tensor([[2, 3, 4]])
    inputs = [ids, mask, positions]
    names = ["input_ids", "attention_mask", "position_ids"]
    outputs = ["logits"]
    axes = {"input_ids": {0: "batch_size", 1: "sequence_length"},
            "attention_mask": {0: "batch_size",
                               1: "past_sequence_length + sequence_length"},
            "position_ids": {0: "batch_size", 1: "sequence_length"},
            "logits": {0: "batch_size", 1: "sequence_length"}}
    for i in range(args.layers):
        for kind in ("key", "value"):
            inputs.append(torch.randn(1, args.kv_heads, 2, head_dim,
                                      generator=gen))
            names.append(f"past_key_values.{i}.{kind}")
            outputs.append(f"present.{i}.{kind}")
            axes[names[-1]] = {0: "batch_size", 2: "past_sequence_length"}
            axes[outputs[-1]] = {
                0: "batch_size",
                2: "past_sequence_length + sequence_length"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(wrapper, tuple(inputs), args.output,
                          opset_version=OPSET, input_names=names,
                          output_names=outputs, dynamic_axes=axes,
                          do_constant_folding=args.torch_folding)
    if args.genai:
        genai_config(args.genai, args.output, args)


def main():
    parser = argparse.ArgumentParser(
        description="Export a Llama-style decoder with a tied LM head")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--layers", type=int, default=30)
    parser.add_argument("--mode", choices=["prefill", "decode", "generation"],
                        default="prefill")
    parser.add_argument("--seq", type=int, default=32,
                        help="tokens of the prefill")
    parser.add_argument("--past", type=int, default=32,
                        help="cached tokens of the decode step")
    parser.add_argument("--vocab", type=int, default=49152)
    parser.add_argument("--dim", type=int, default=576)
    parser.add_argument("--heads", type=int, default=9)
    parser.add_argument("--kv-heads", type=int, default=3)
    parser.add_argument("--ffn", type=int, default=1536)
    parser.add_argument("--data", help="folder for inputs and torch outputs")
    parser.add_argument("--genai", help="--mode generation: a folder for "
                        "onnxruntime-genai (genai_config.json, a link to "
                        "the model)")
    parser.add_argument("--torch-folding", action="store_true",
                        help="let the exporter fold constants (it then "
                        "stores E^T as a second initializer)")
    args = parser.parse_args()

    torch.manual_seed(SEED)
    model = Decoder(args.layers, args.vocab, args.dim, args.heads,
                    args.kv_heads, args.ffn).eval()
    if args.mode == "generation":
        export_generation(model, args)
        return
    gen = torch.Generator().manual_seed(SEED + 1)
    head_dim = args.dim // args.heads
    if args.mode == "prefill":
        inputs = [torch.randint(0, args.vocab, (1, args.seq), generator=gen)]
        names = ["input_ids"]
        outputs = ["logits"]
    else:
        inputs = [torch.randint(0, args.vocab, (1, 1), generator=gen)]
        names = ["input_ids"]
        outputs = ["logits"]
        for i in range(args.layers):
            for kind in ("key", "value"):
                inputs.append(torch.randn(1, args.kv_heads, args.past,
                                          head_dim, generator=gen))
                names.append(f"past_{kind}_{i}")
                outputs.append(f"present_{kind}_{i}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, tuple(inputs), args.output,
                          opset_version=OPSET, input_names=names,
                          output_names=outputs,
                          do_constant_folding=args.torch_folding)
    if args.data:
        os.makedirs(args.data, exist_ok=True)
        with torch.no_grad():
            results = model(*inputs)
        if not isinstance(results, tuple):
            results = (results,)
        for k, value in enumerate(inputs):
            np.save(os.path.join(args.data, f"input_{k}.npy"), value.numpy())
        for k, value in enumerate(results):
            np.save(os.path.join(args.data, f"output_{k}.npy"),
                    value.numpy())


if __name__ == "__main__":
    main()
