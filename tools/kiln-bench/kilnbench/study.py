#===- kilnbench/study.py - Study files and the configurations they mean ----===#
#
# A study says what to compile and measure (docs/kiln-bench.md has the
# format): models (the seed's variants from models/generate_seed_variants.py,
# or ONNX files), targets, kernel strategies, pass configurations, batch
# sizes and sequence lengths, the measurement settings, the peers, the
# ablation and the sweeps. It is a TOML file (Python's tomllib) or the same
# keys given as flags; flags override the file.
#
#===----------------------------------------------------------------------===#

import copy
import os

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

DEFAULTS = {
    "study": {
        "name": "study",
        "title": "",
        "threads": 2,
        "warmup": 3,
        "iterations": 10,
        "duration": 0.0,
        "rounds": 3,
        "seed": 0,
    },
    "models": {
        "source": "seed-variants",
        "preset": "small",
        # Generator overrides (layers, d_model, heads, kv_heads, ffn, vocab).
        "config": {},
        "variants": ["softmax_fp16", "linear_int8", "softmax_int8",
                     "linear_fp16"],
        # source = "onnx": [{name, path, input_shapes?}]
        "files": [],
    },
    "task": {
        "definition": "",
    },
    "grid": {
        "targets": ["cpu"],
        "kernels": ["codegen"],
        "passes": ["O3"],
        "batch": [1],
        "seq_len": [128],
    },
    "baseline": {"variant": "softmax_fp16"},
    "peers": {"onnxruntime": True, "torch": True},
    "profile": {"enabled": True},
    "ablation": {
        "enabled": True,
        "variant": "",           # default: the baseline variant
        "passes": [],            # default: every pass of the -O3 pipeline
    },
    "sweep": {
        "enabled": True,
        "variants": ["softmax_fp32", "linear_fp32"],
        "batch": [1, 2, 4, 8],
        "seq_len": [32, 64, 128, 256, 512],
    },
}

# Named pass configurations -> kiln-compile flags.
PASS_CONFIGS = {
    "O0": ["-O0"],
    "O1": ["-O1"],
    "O2": ["-O2"],
    "O3": ["-O3"],
}


def pass_flags(name):
    """Flags of a pass configuration: O0..O3, or O3-no-PASS[,PASS]."""
    if name in PASS_CONFIGS:
        return list(PASS_CONFIGS[name])
    if "-no-" in name:
        level, _, passes = name.partition("-no-")
        if level in PASS_CONFIGS:
            return PASS_CONFIGS[level] + [f"--disable-pass={passes}"]
    raise ValueError(f"unknown pass configuration '{name}' (O0, O1, O2, O3 "
                     f"or O3-no-PASS)")


def _merge(base, override):
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


class StudyError(Exception):
    pass


def load(path=None, overrides=None):
    """The study as a dict of sections, defaults filled in."""
    study = copy.deepcopy(DEFAULTS)
    if path:
        if tomllib is None:
            raise StudyError("reading a study file needs Python 3.11 "
                             "(tomllib)")
        with open(path, "rb") as f:
            try:
                data = tomllib.load(f)
            except tomllib.TOMLDecodeError as e:
                raise StudyError(f"{path}: {e}")
        unknown = set(data) - set(DEFAULTS)
        if unknown:
            raise StudyError(f"{path}: unknown section(s) "
                             f"{', '.join(sorted(unknown))} (known: "
                             f"{', '.join(DEFAULTS)})")
        for section, values in data.items():
            if not isinstance(values, dict):
                raise StudyError(f"{path}: [{section}] must be a table")
            unknown = set(values) - set(DEFAULTS[section])
            if unknown:
                raise StudyError(f"{path}: [{section}] has unknown key(s) "
                                 f"{', '.join(sorted(unknown))}")
        _merge(study, data)
        study["study"]["file"] = os.path.abspath(path)
    if overrides:
        _merge(study, overrides)
    validate(study)
    return study


def validate(study):
    s = study["study"]
    for key in ("threads", "rounds"):
        if not isinstance(s[key], int) or s[key] < 1:
            raise StudyError(f"study.{key} must be a positive integer")
    for key in ("warmup", "iterations"):
        if not isinstance(s[key], int) or s[key] < 0:
            raise StudyError(f"study.{key} must be a non-negative integer")
    if s["iterations"] == 0 and not s["duration"]:
        raise StudyError("study.iterations or study.duration must be set")
    g = study["grid"]
    for key in ("targets", "kernels", "passes", "batch", "seq_len"):
        if not isinstance(g[key], list) or not g[key]:
            raise StudyError(f"grid.{key} must be a non-empty list")
    for k in g["kernels"]:
        if k not in ("auto", "codegen", "library"):
            raise StudyError(f"grid.kernels: unknown strategy '{k}' "
                             f"(auto, codegen, library)")
    for t in g["targets"]:
        if t not in ("cpu", "cuda"):
            raise StudyError(f"grid.targets: unknown target '{t}' (cpu, "
                             f"cuda)")
    for p in g["passes"]:
        try:
            pass_flags(p)
        except ValueError as e:
            raise StudyError(f"grid.passes: {e}")
    m = study["models"]
    if m["source"] not in ("seed-variants", "onnx"):
        raise StudyError(f"models.source must be seed-variants or onnx, "
                         f"not '{m['source']}'")
    if m["source"] == "onnx":
        if not m["files"]:
            raise StudyError("models.source = onnx needs models.files")
        for f in m["files"]:
            if "name" not in f or "path" not in f:
                raise StudyError("each models.files entry needs name and "
                                 "path")
        m["variants"] = [f["name"] for f in m["files"]]
        if study["baseline"]["variant"] not in m["variants"]:
            study["baseline"]["variant"] = m["variants"][0]
        # The seed sweeps name seed variants; other models sweep batch only
        # when they say so.
        study["sweep"]["variants"] = [v for v in study["sweep"]["variants"]
                                      if v in m["variants"]]
    if study["baseline"]["variant"] not in m["variants"]:
        raise StudyError(f"baseline.variant '{study['baseline']['variant']}'"
                         f" is not one of models.variants")
    if not study["ablation"]["variant"]:
        study["ablation"]["variant"] = study["baseline"]["variant"]
    return study


class Config:
    """One thing measured: a model variant at a shape, compiled one way (or a
    peer engine running the ONNX model)."""

    def __init__(self, variant, batch, seq_len, engine="kiln", target="cpu",
                 kernels="codegen", passes="O3", groups=()):
        self.variant = variant
        self.batch = batch
        self.seq_len = seq_len
        self.engine = engine
        self.target = target
        self.kernels = kernels if engine == "kiln" else None
        self.passes = passes if engine == "kiln" else None
        self.groups = set(groups)
        # Filled in by the runner.
        self.info = {}
        self.status = "planned"
        self.error = None
        self.compile_s = None
        self.artifact = None
        self.samples = []        # per round: list of ms
        self.runs = []           # kiln-run JSON per round
        self.quality = None
        self.self_check = None
        self.profile = None
        self.kernel_count = None
        self.memory = None
        self.energy = None
        self.consistency = None
        self.cold = None

    def key(self):
        return (self.variant, self.batch, self.seq_len, self.engine,
                self.target, self.kernels, self.passes)

    def label(self):
        parts = [self.variant, f"b{self.batch}"]
        if self.seq_len is not None:
            parts.append(f"s{self.seq_len}")
        if self.engine == "kiln":
            parts += [self.target, self.kernels, self.passes]
        else:
            parts.append(self.engine)
        return " ".join(parts)

    def slug(self):
        return self.label().replace(" ", "_").replace(",", "+").replace(
            "/", "_")


def plan(study, ablation_passes=None):
    """Every configuration of the study, deduplicated; each carries the
    groups (main, ablation, sweep-batch, sweep-seq) it belongs to."""
    configs = {}

    def add(cfg):
        k = cfg.key()
        if k in configs:
            configs[k].groups |= cfg.groups
        else:
            configs[k] = cfg

    g = study["grid"]
    variants = study["models"]["variants"]
    seq_lens = g["seq_len"] if study["models"]["source"] == "seed-variants" \
        else [None]
    peers = [p for p in ("onnxruntime", "torch") if study["peers"].get(p)]
    for v in variants:
        for b in g["batch"]:
            for s in seq_lens:
                for t in g["targets"]:
                    for k in g["kernels"]:
                        for p in g["passes"]:
                            add(Config(v, b, s, "kiln", t, k, p, ["main"]))
                for peer in peers:
                    add(Config(v, b, s, peer, groups=["main"]))
    b0, s0 = g["batch"][0], seq_lens[0]
    k0, t0 = g["kernels"][0], g["targets"][0]
    a = study["ablation"]
    if a["enabled"] and ablation_passes is not None:
        for p in ["O3"] + [f"O3-no-{x}" for x in ablation_passes] + ["O0"]:
            add(Config(a["variant"], b0, s0, "kiln", t0, k0, p,
                       ["ablation"]))
    sw = study["sweep"]
    if sw["enabled"]:
        for v in sw["variants"]:
            for b in sw["batch"]:
                add(Config(v, b, s0, "kiln", t0, k0, "O3", ["sweep-batch"]))
            if study["models"]["source"] == "seed-variants":
                for s in sw["seq_len"]:
                    add(Config(v, b0, s, "kiln", t0, k0, "O3",
                               ["sweep-seq"]))
    return list(configs.values())
