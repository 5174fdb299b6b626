"""Domain configs: one YAML file per graph in this folder.

Schema of a file::

    name: academic            # asset keys are prefixed with it: academic/graph_snapshot
    description: ...
    default: true             # the domain `graphdojo demo` materializes (exactly one)
    source:
      format: generator | grbench-json | csv | cypher-script | neo4j
      src: <generator name | path (relative to the YAML file) | bolt/neo4j URI>
      options: {...}          # importer options (seed, scale, ...) or Neo4j user/database
    quiz:                     # optional: QuizConfig (components/quizzer/run.py)
      template_n: 60          # template-quizzer candidates
      llm_n: 2                # LLM-quizzer candidates
      seed: 0
      model: qwen2.5-coder-0.5b   # the Quizzer's model: a name (docs/generation.md) or a folder; default smollm2-135m
      paraphrase: false       # true: rewrite template questions into fluent English (checked)
      backend: transformers   # or openai / vllm, with backend_options
      llm: {max_turns: 2, max_new_tokens: 192}
    certify:                  # optional: CertifyConfig (components/certify/dataset.py)
      judge: off              # on: the two-stage judge admits only what it accepts
      judge_model: null       # the judge's model: a name or a folder (default: smollm2-135m)
      eval_questions: eval/academic.jsonl   # leakage filter's evaluation set (JSONL)
      bands: {admitted_rate: [0.5, 1.0]}    # WARN checks on the funnel rates
      fault_sample: 12        # certified items per fault type in the accuracy report
    train:                    # optional: TrainConfig (components/training/checkpoint.py)
      preset: cpu-demo        # cpu-tiny | cpu-demo | cpu-learn | gpu (with base_model)
      base_model: null        # the Solver's base model on cpu-demo / cpu-learn / gpu (default smollm2-135m)
      precision: auto         # auto (bf16 where native) | float32 | bfloat16
      budgets: {rl_steps: 4}  # any other budget of the preset (checked against PRESETS' keys)
      vllm_mode: server       # gpu only: colocate (default) | server, with vllm_server_url
    eval:                     # optional: EvalConfig (components/evaluation/agents.py)
      samples: 3              # sampled runs per question; confidence intervals over them
      seed: 0
      max_questions: 12       # of the test split, in its stored order
      max_turns: 3
      max_new_tokens: 96
      judge: true             # false: no LLM-judge score
      judge_model: null       # the LLM judge: a model name or folder (default: smollm2-135m)
      questions: null         # an external question file (gold answers or gold Cypher) instead of the test split
      systems: null           # run only these systems (report names); the others are listed as not evaluated
      external: eval/x.jsonl  # externally written questions (gold Cypher), the report's second section
      external_questions: 0   # the first N scorable external questions (0: all)
      offshelf: []            # registered models evaluated few-shot beside the trained rows
      offshelf_sections: [test, external]
      baselines: true         # the answer prior and the closed-book SFT Solver
      mechanics_questions: 8  # questions (one sample) for a system trained on the tiny model
      precision: auto
      grit_per_split: 6       # GRIT-style items per split in grit/eval_report (default domain)
    ablations:                # optional: GraphCert GRPO variants whose rows join eval_reports
      - {name: strict-only, data: strict, budget: matched}   # data: strict | strict_partial | uncertified
      - {name: no-evidence-reward, reward: answer_only}      # reward: graphcert | answer_only
    grit:                     # optional, read from the default domain: GritConfig (components/evaluation/grit.py)
      sizes: [10, 40]         # train / test / ood nodes; large_sizes: [40, 60]

Extra folders can be added with ``GRAPHDOJO_DOMAINS_DIR`` (``:``-separated) and single files
anywhere with ``GRAPHDOJO_DOMAIN_FILES`` (``:``-separated; what ``graphdojo demo --domain-file``
sets); ``GRAPHDOJO_DOMAINS``
(``,``-separated names) keeps only those domains (a deployment that serves one graph, a test);
``GRAPHDOJO_PRESET`` sets every domain's ``train.preset`` (e.g. ``cpu-demo``: the real SmolLM2
instead of the demo's tiny model).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import yaml

from components.certify.dataset import CertifyConfig
from components.curriculum.build import SplitConfig
from components.evaluation.agents import EvalConfig
from components.evaluation.grit import GritConfig
from components.graph.snapshot import SourceSpec
from components.quizzer.run import QuizConfig
from components.training.ablations import Ablation, ablations_from
from components.training.checkpoint import TrainConfig

__all__ = ["DomainConfig", "DOMAINS_DIR", "DomainConfigError", "default_domain", "load_domain_file", "load_domains"]

DOMAINS_DIR = Path(__file__).resolve().parent
_URI_FORMATS = {"generator", "neo4j"}


T = TypeVar("T")


class DomainConfigError(ValueError):
    pass


@dataclass(frozen=True)
class DomainConfig:
    name: str
    source: SourceSpec
    description: str = ""
    default: bool = False
    path: str = ""
    quiz: QuizConfig = QuizConfig()
    certify: CertifyConfig = CertifyConfig()
    train: TrainConfig = TrainConfig()
    evaluate: EvalConfig = EvalConfig()
    grit: GritConfig = GritConfig()
    ablations: tuple[Ablation, ...] = ()
    curriculum: SplitConfig = SplitConfig()


def _section(path: Path, key: str, parse: Callable[[Any], T], raw: dict[str, Any]) -> T:
    """``parse(raw[key])``; a bad section is a :class:`DomainConfigError` naming file and key."""
    try:
        return parse(raw.get(key))
    except (TypeError, ValueError) as exc:
        raise DomainConfigError(f"{path}: {key}: {exc}") from exc


def _load(path: Path) -> DomainConfig:
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise DomainConfigError(f"{path}: invalid YAML: {exc}") from exc
    if not isinstance(raw, dict) or "name" not in raw or "source" not in raw:
        raise DomainConfigError(f"{path}: a domain needs 'name' and 'source'")
    src = raw["source"]
    if not isinstance(src, dict) or "format" not in src or "src" not in src:
        raise DomainConfigError(f"{path}: source needs 'format' and 'src'")
    location = str(src["src"])
    if src["format"] not in _URI_FORMATS and not Path(location).is_absolute():
        location = str((path.parent / location).resolve())
    name = str(raw["name"])
    if not name.replace("_", "").isalnum():
        raise DomainConfigError(f"{path}: domain name {name!r} must be alphanumeric/underscore")
    if name in ("grit", "transfer"):
        raise DomainConfigError(f"{path}: {name!r} is reserved (the GRIT tasks / the transfer matrix)")
    quiz = _section(path, "quiz", QuizConfig.from_dict, raw)
    certify = _section(path, "certify", lambda r: CertifyConfig.from_dict(r, base=path.parent), raw)
    train = _section(path, "train", TrainConfig.from_dict, raw)
    evaluate = _section(path, "eval", lambda r: EvalConfig.from_dict(r, base=path.parent), raw)
    ablations = _section(path, "ablations", ablations_from, raw)
    grit = _section(path, "grit", GritConfig.from_dict, raw)
    curriculum = _section(path, "curriculum", SplitConfig.from_dict, raw)
    if train.dancer_environment == "graph_cot" and not curriculum.trajectories:
        raise DomainConfigError(
            f"{path}: train.dancer_env is graph_cot (the default) but curriculum.trajectories is false: "
            "GraphDancer's Graph-CoT warm start trains on those trajectories — set curriculum.trajectories: true, "
            "or train.dancer_env: python_cypher to run GraphDancer in the Python + Cypher sandbox"
        )
    if certify.eval_questions and not Path(certify.eval_questions).is_file():
        raise DomainConfigError(f"{path}: certify.eval_questions: no such file {certify.eval_questions}")
    if evaluate.questions and not Path(evaluate.questions).is_file():
        raise DomainConfigError(f"{path}: eval.questions: no such file {evaluate.questions}")
    if evaluate.external and not Path(evaluate.external).is_file():
        raise DomainConfigError(f"{path}: eval.external: no such file {evaluate.external}")
    return DomainConfig(
        name=name,
        quiz=quiz,
        certify=certify,
        train=train,
        evaluate=evaluate,
        grit=grit,
        ablations=ablations,
        curriculum=curriculum,
        source=SourceSpec(str(src["format"]), location, dict(src.get("options") or {})),
        description=str(raw.get("description", "")),
        default=bool(raw.get("default", False)),
        path=str(path),
    )


def load_domain_file(path: Path) -> DomainConfig:
    """One domain YAML from anywhere (relative paths inside it are resolved against its folder)."""
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise DomainConfigError(f"{path}: no such domain file")
    return _load(path)


def load_domains(extra_dirs: str | None = None) -> dict[str, DomainConfig]:
    dirs = [DOMAINS_DIR]
    extra = extra_dirs if extra_dirs is not None else os.environ.get("GRAPHDOJO_DOMAINS_DIR", "")
    dirs += [Path(d) for d in extra.split(":") if d]
    files = [p for d in dirs for p in sorted(d.glob("*.yaml"))]
    files += [Path(f) for f in os.environ.get("GRAPHDOJO_DOMAIN_FILES", "").split(":") if f]
    domains: dict[str, DomainConfig] = {}
    for path in files:
        cfg = load_domain_file(path)
        if cfg.name in domains:
            if Path(domains[cfg.name].path) == Path(cfg.path):
                continue  # the same file named twice
            raise DomainConfigError(f"{path}: domain {cfg.name!r} already defined in {domains[cfg.name].path}")
        domains[cfg.name] = cfg
    preset = os.environ.get("GRAPHDOJO_PRESET", "").strip()
    if preset:
        try:
            domains = {n: replace(c, train=replace(c.train, preset=preset)) for n, c in domains.items()}
        except ValueError as exc:
            raise DomainConfigError(f"GRAPHDOJO_PRESET={preset!r}: {exc}") from exc
    seed = os.environ.get("GRAPHDOJO_TRAIN_SEED", "").strip()
    if seed:  # another training seed of the same domains: upstream artifacts are shared
        if not seed.isdigit():
            raise DomainConfigError(f"GRAPHDOJO_TRAIN_SEED={seed!r}: a non-negative integer")
        domains = {n: replace(c, train=replace(c.train, seed=int(seed))) for n, c in domains.items()}
    only = [n.strip() for n in os.environ.get("GRAPHDOJO_DOMAINS", "").split(",") if n.strip()]
    if only:
        unknown = sorted(set(only) - set(domains))
        if unknown:
            raise DomainConfigError(f"GRAPHDOJO_DOMAINS names unknown domains {unknown}; configured: {sorted(domains)}")
        domains = {n: domains[n] for n in only}
    return domains


def default_domain(domains: dict[str, DomainConfig]) -> str:
    env = os.environ.get("GRAPHDOJO_DOMAIN")
    if env:
        if env not in domains:
            raise DomainConfigError(f"GRAPHDOJO_DOMAIN={env!r} is not one of {sorted(domains)}")
        return env
    defaults = [d.name for d in domains.values() if d.default]
    if len(domains) == 1:
        return next(iter(domains))
    if len(defaults) != 1:
        raise DomainConfigError(f"exactly one domain must be marked default, found {defaults}")
    return defaults[0]
