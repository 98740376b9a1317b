"""Generation by a Python loop over any ONNX-Runtime-shaped session.

The peer of Kiln's own generation loop (``kiln-generate``, the runtime's
``kiln_generate``): it runs a decoder with state, as Hugging Face optimum
exports it, one call per step, feeding each step's ``present`` outputs back
as the next step's ``past`` inputs. It works with ``onnxruntime``'s
``InferenceSession`` and with ``kiln.InferenceSession`` alike, so the same
loop measures ONNX Runtime step by step and checks Kiln's compiled steps.

The decoder's signature (docs/generation.md):

* ``input_ids`` int64 [batch, seq] (required);
* ``attention_mask`` int64 [batch, past + seq] (optional; 1 for a real token,
  0 for left padding);
* ``position_ids`` int64 [batch, seq] (optional; a token's index among its
  sequence's real tokens, as optimum computes it from the mask);
* state inputs, each paired with the output of the same name with ``past``
  replaced by ``present`` (``past_key_values.0.key`` -> ``present.0.key``,
  ``past_state.0`` -> ``present_state.0``);
* the output ``logits`` [batch, seq, vocab].

Before the prompt a state input is zeros, with every symbolic dim other
than the batch 0 (an empty KV cache; a recurrent state keeps its static
size).

A decoder with the input ``cache_position`` int64 [batch] has a static
cache (ONNX Runtime GenAI's shared buffer, ``--form decoder-static``):
every symbolic dim of its state other than the batch is the cache length
``max_length`` (prompt + new tokens), ``attention_mask`` is [batch,
max_length] (1 for the real tokens so far), ``cache_position`` the column of
the step's first token, and each step's present is the next step's past."""

import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

_DTYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16,
           "tensor(double)": np.float64, "tensor(int64)": np.int64,
           "tensor(int32)": np.int32, "tensor(bfloat16)": None}


def present_name(past: str) -> str:
    """The output a state input is paired with."""
    if past.startswith("past_key_values."):
        return "present." + past[len("past_key_values."):]
    if past.startswith("past"):
        return "present" + past[len("past"):]
    raise ValueError(f"input '{past}' is not a state input")


class Signature:
    """The roles of a decoder's inputs and outputs (raises ValueError naming
    what does not fit)."""

    def __init__(self, inputs: Sequence[Any], outputs: Sequence[Any]):
        by_name = {i.name: i for i in inputs}
        out_names = {o.name for o in outputs}
        if "input_ids" not in by_name:
            raise ValueError("not a decoder: no input 'input_ids'")
        if "logits" not in out_names:
            raise ValueError("not a decoder: no output 'logits'")
        self.has_mask = "attention_mask" in by_name
        self.has_positions = "position_ids" in by_name
        self.static = "cache_position" in by_name
        self.batch_dim = by_name["input_ids"].shape[0]
        self.state = []  # (input NodeArg, output name)
        for i in inputs:
            if i.name in ("input_ids", "attention_mask", "position_ids",
                          "cache_position"):
                continue
            if not i.name.startswith("past"):
                raise ValueError(f"input '{i.name}' is neither a token "
                                 "input nor a state input ('past...')")
            out = present_name(i.name)
            if out not in out_names:
                raise ValueError(f"state input '{i.name}' has no output "
                                 f"'{out}'")
            self.state.append((i, out))

    def empty_state(self, batch: int,
                    length: int = 0) -> Dict[str, np.ndarray]:
        """Zeros; `length` for the symbolic dims other than the batch (0:
        an empty growing cache; a static cache's length)."""
        feeds = {}
        for arg, _ in self.state:
            dims = [batch if (d == self.batch_dim and k == 0) else
                    (d if isinstance(d, int) else length)
                    for k, d in enumerate(arg.shape)]
            dtype = _DTYPES.get(arg.type)
            if dtype is None:
                raise ValueError(f"state input '{arg.name}': type "
                                 f"{arg.type} not handled")
            feeds[arg.name] = np.zeros(dims, dtype)
        return feeds


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int = 0):
    """ids [B, P] left-padded with `pad_id`, and the mask [B, P]."""
    longest = max(len(p) for p in prompts)
    ids = np.full((len(prompts), longest), pad_id, np.int64)
    mask = np.zeros((len(prompts), longest), np.int64)
    for b, p in enumerate(prompts):
        if len(p):
            ids[b, longest - len(p):] = p
            mask[b, longest - len(p):] = 1
    return ids, mask


def generate(session: Any, prompts: Sequence[Sequence[int]],
             max_new_tokens: int, stop_ids: Sequence[int] = (),
             pad_id: int = 0) -> Dict[str, Any]:
    """Greedy decoding of a static batch of prompts (left-padded).

    Returns ``tokens`` (one list of new ids per prompt, cut after a stop
    id), and the timestamps in seconds from the start: ``ttft`` (prefill
    and the first token) and ``token_times`` (the time each step's tokens
    were ready)."""
    sig = Signature(session.get_inputs(), session.get_outputs())
    ids, mask = left_pad(prompts, pad_id)
    batch = ids.shape[0]
    written = ids.shape[1]  # static cache: the columns written so far
    capacity = written + max_new_tokens
    state = sig.empty_state(batch, capacity if sig.static else 0)
    names = ["logits"] + [out for _, out in sig.state]
    stops = set(int(s) for s in stop_ids)
    tokens: List[List[int]] = [[] for _ in range(batch)]
    done = np.zeros(batch, bool)
    times = []
    start = time.perf_counter()
    step_ids = ids
    for _ in range(max_new_tokens):
        feeds = {"input_ids": step_ids}
        if sig.static:
            feeds["cache_position"] = np.full(
                batch, written - step_ids.shape[1], np.int64)
            feeds["attention_mask"] = np.pad(
                mask, ((0, 0), (0, capacity - mask.shape[1])))
        elif sig.has_mask:
            feeds["attention_mask"] = mask
        if sig.has_positions:
            pos = np.maximum(np.cumsum(mask, axis=1) - 1, 0)
            feeds["position_ids"] = pos[:, -step_ids.shape[1]:]
        feeds.update(state)
        results = session.run(names, feeds)
        logits = results[0]
        nxt = logits[:, -1, :].argmax(-1).astype(np.int64)
        times.append(time.perf_counter() - start)
        for b in range(batch):
            if not done[b]:
                tokens[b].append(int(nxt[b]))
                done[b] = int(nxt[b]) in stops
        state = {arg.name: r for (arg, _), r in zip(sig.state, results[1:])}
        if done.all():
            break
        step_ids = nxt[:, None]
        written += 1
        mask = np.concatenate([mask, np.ones((batch, 1), np.int64)], axis=1)
    return {"tokens": tokens, "ttft": times[0] if times else None,
            "token_times": times}
