"""Evaluation layer: ``<domain>/eval_reports`` — every trained checkpoint of the domain and the
baselines, side by side on the held-out test split, one judge, CIs over seeds."""

import json
from pathlib import Path
from typing import Any

import dagster as dg

from assets.metadata import records_table
from assets.resources import ArtifactStore
from assets.training import ASSET as CURRICULUM
from assets.training import ABLATIONS, CHECKPOINT, DANCER_DPO, DANCER_RL, GRAPHCERT, checkpoints_key, stage_key
from components.evaluation.agents import EvalConfig
from components.store import ArtifactRecord
from components.store.atomic import relocate
from components.store.fingerprint import chain_fingerprint, code_digest, read_parquet
from components.training.checkpoint import TrainConfig

__all__ = ["GROUP", "TRANSFER_PREFIX", "eval_reports_asset", "eval_reports_key", "grit_eval_asset", "transfer_matrix_asset"]

GROUP = "evaluation"
ASSET = "eval_reports"
VERSION = "eval-1"


def eval_reports_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, ASSET])


def _test_rows(store: ArtifactStore, domain: str) -> tuple[list[dict[str, Any]], list[Any]]:
    from components.certify.dataset import read_certified

    catalog = store.catalog()
    curr, cert = catalog.latest(CURRICULUM, domain), catalog.latest("certified_dataset", domain)
    if curr is None or cert is None:
        raise dg.Failure(f"materialize {domain}/curriculum_splits first")
    axes = {r["id"]: json.loads(r.get("axes_json") or "{}") for r in read_certified(cert.path)}
    rows = [{**r, "qtype": axes.get(r["id"], {}).get("question_pattern")}
            for r in read_parquet(curr.path) if r["split"] == "test"]
    return rows, [curr, cert]


def eval_reports_asset(domain: str, train: TrainConfig, config: EvalConfig) -> list:
    key = eval_reports_key(domain)
    deps = [checkpoints_key(domain), stage_key(domain, GRAPHCERT), stage_key(domain, DANCER_RL),
            stage_key(domain, DANCER_DPO), stage_key(domain, ABLATIONS)]

    @dg.asset(
        key=key,
        deps=deps,
        group_name=GROUP,
        code_version=VERSION,
        kinds={"html"},
        description=(f"{domain}: the base model, zero-shot Graph-CoT, GraphRAG and every trained checkpoint (SFT-only, "
                     "GraphCert GRPO, GraphDancer RL and RL→DPO, configured ablations) on the held-out test split — "
                     "F1, EM (normalised and "
                     "raw), ROUGE-L, LLM judge, EH, P(EM|EH), VF, VC, outcomes, breakdowns, CIs over seeds."),
        tags={"domain": domain, "layer": "evaluation"},
    )
    def _eval(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        import components.evaluation as evaluation_pkg
        from components.evaluation.report import main_table, write_report
        from components.evaluation.run import SystemSpec, evaluate_systems
        from components.llm.models import smollm2_hf_dir
        from components.training.checkpoint import base_model_dir

        catalog = store.catalog()
        rows, parents = _test_rows(store, domain)
        snap = catalog.latest("graph_snapshot", domain)
        stages = {a: catalog.latest(a, domain) for a in (CHECKPOINT, GRAPHCERT, DANCER_RL, DANCER_DPO)}
        missing = [a for a in (CHECKPOINT, GRAPHCERT, DANCER_RL) if stages[a] is None]
        if snap is None or missing:
            raise dg.Failure(f"materialize {', '.join(f'{domain}/{a}' for a in missing) or 'the graph'} first")
        pairs = catalog.latest("preference_pairs", domain)
        dpo = stages[DANCER_DPO]
        dpo_current = dpo is not None and pairs is not None and pairs.fingerprint in dpo.parents
        base = str(base_model_dir(train, store.root))
        systems = [
            SystemSpec("base (before training)", "python_cypher", base, "no training"),
            SystemSpec("graph-cot zero-shot", "graph_cot", base, "Graph-CoT prompting, no examples"),
            SystemSpec("graphrag", "graphrag", base, "2-hop neighbourhood of retrieved entities in one prompt"),
            SystemSpec("sft-only", "python_cypher", stages[CHECKPOINT].path, "SFT warm start"),
            SystemSpec("graphcert-grpo", "python_cypher", stages[GRAPHCERT].path, "GraphCert GRPO"),
            SystemSpec("graphdancer-rl", "python_cypher", stages[DANCER_RL].path, "GraphDancer stage 1 (GRPO)"),
            SystemSpec("graphdancer-rl→dpo", "python_cypher", dpo.path if dpo_current else None, "GraphDancer RL → DPO",
                       "" if dpo_current else "not trained: no preference pairs for the current stage-1 policy"),
        ]
        abl = catalog.latest(ABLATIONS, domain)
        if abl is None:
            raise dg.Failure(f"materialize {domain}/{ABLATIONS} first")
        stages[ABLATIONS] = abl
        systems += [SystemSpec(f"ablation: {a['name']}", "python_cypher", a["path"],
                               f"GraphCert GRPO, data {a['data']} ({a['items']} items), reward {a['reward']}")
                    for a in abl.metadata["ablations"]]
        judge_dir = config.judge_model_dir or str(smollm2_hf_dir())
        used = [p.fingerprint for p in parents] + [s.fingerprint for s in stages.values() if s is not None]
        fingerprint = chain_fingerprint(used, f"{VERSION}:{code_digest(evaluation_pkg.__path__[0])}",
                                        {"config": vars(config), "systems": [vars(s) for s in systems], "judge": judge_dir})
        folder = store.layer_dir(ASSET, domain) / fingerprint
        previous = catalog.get(ASSET, domain, fingerprint)
        if previous is not None and (folder / "report.json").is_file():
            report, paths = json.loads((folder / "report.json").read_text()), dict(previous.metadata["paths"])
            context.log.info(f"reusing evaluation {fingerprint}")
        else:
            report = evaluate_systems(systems, rows, snap.path, config, judge_model_dir=judge_dir,
                                      progress=lambda name, s: context.log.info(f"{name}: {s:.1f} s"))
            with store.staged(ASSET, domain, fingerprint) as tmp:
                paths = relocate(write_report(report, tmp, f"graphdojo evaluation — {domain}"), tmp, folder)
            catalog.record(ArtifactRecord(asset=ASSET, domain=domain, fingerprint=fingerprint, parents=used,
                                          config=vars(config), row_counts={"records": len(report["records"])},
                                          path=str(folder), metadata={"paths": paths}))
        table = main_table(report)
        cols = [(c, "string") for c in dict.fromkeys(k for r in table for k in r)]
        return dg.MaterializeResult(
            metadata={
                "fingerprint": fingerprint,
                "report_html": dg.MetadataValue.path(paths["html"]),
                "report_md": dg.MetadataValue.md(Path(paths["markdown"]).read_text()),
                "systems": records_table(table, cols),
                "questions": len(report["order"]),
                "seeds": dg.MetadataValue.json(report["seeds"]),
                "judge_model": report["judge_model"],
            },
            data_version=dg.DataVersion(fingerprint),
        )

    return [_eval]


GRIT_EVAL = "eval_report"


def grit_eval_asset(train: TrainConfig, config: EvalConfig) -> list:
    """``grit/eval_report``: the base model and the GRAIN checkpoint on the GRIT-style test and
    OOD-scenario splits (accuracy per task / naming, naming variance, ID − OOD gap, structure)."""
    from assets.generation import GRIT_PREFIX
    from assets.training import GRAIN

    @dg.asset(key=dg.AssetKey([GRIT_PREFIX, GRIT_EVAL]), deps=[dg.AssetKey([GRIT_PREFIX, GRAIN])], group_name=GROUP,
              code_version=VERSION, kinds={"html"}, tags={"layer": "evaluation"},
              description=("GRIT-style evaluation: accuracy per task and naming scheme, variance across namings, "
                           "ID vs OOD-scenario gap, structure recovery (node-F1, edge-F1, exact), CIs over seeds."))
    def _grit_eval(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        import components.evaluation as evaluation_pkg
        from components.evaluation.grit import from_row
        from components.evaluation.grit_eval import grit_records, grit_summary
        from components.evaluation.report import grit_tables, write_grit_report
        from components.llm.transformers_backend import TransformersBackend
        from components.training.checkpoint import base_model_dir

        catalog = store.catalog()
        tasks, grain = catalog.latest("grit_tasks", GRIT_PREFIX), catalog.latest(GRAIN, GRIT_PREFIX)
        if tasks is None or grain is None:
            raise dg.Failure(f"materialize {GRIT_PREFIX}/{GRAIN} first")
        rows = [from_row(r) for r in read_parquet(tasks.path)]
        items = [r for split in ("test", "ood", "large") for r in [x for x in rows if x["split"] == split][: config.grit_per_split]]
        systems = {"base (before training)": str(base_model_dir(train, store.root)), "grain": grain.path}
        new_tokens = train.resolved()["grain_new_tokens"]
        fingerprint = chain_fingerprint([tasks.fingerprint, grain.fingerprint],
                                        f"{VERSION}:grit:{code_digest(evaluation_pkg.__path__[0])}",
                                        {"config": vars(config), "systems": systems, "new_tokens": new_tokens})
        folder = store.layer_dir(ASSET, GRIT_PREFIX) / fingerprint
        previous = catalog.get(ASSET, GRIT_PREFIX, fingerprint)
        if previous is not None and (folder / "report.json").is_file():
            summaries, paths = json.loads((folder / "report.json").read_text())["summaries"], previous.metadata["paths"]
        else:
            summaries, records = {}, []
            for name, model in systems.items():
                llm = TransformersBackend(model, threads=config.threads)
                try:
                    recs = grit_records(name, llm, items, config, new_tokens=new_tokens)
                finally:
                    llm.close()
                summaries[name] = grit_summary(recs)
                records += [r.to_dict() for r in recs]
            meta = {"items": len(items), "seeds": list(config.seeds), "decoding": json.dumps(vars(config)),
                    "tokens per turn": new_tokens, "ground truth": "the Part 2 solvers (exact)"}
            with store.staged(ASSET, GRIT_PREFIX, fingerprint) as tmp:
                paths = relocate(write_grit_report(summaries, meta, tmp, records), tmp, folder)
            catalog.record(ArtifactRecord(asset=ASSET, domain=GRIT_PREFIX, fingerprint=fingerprint,
                                          parents=[tasks.fingerprint, grain.fingerprint], config=vars(config),
                                          row_counts={"records": len(records)}, path=str(folder),
                                          metadata={"paths": paths}))
        overview = grit_tables(summaries)[0][1]
        return dg.MaterializeResult(
            metadata={"fingerprint": fingerprint, "report_html": dg.MetadataValue.path(paths["html"]),
                      "report_md": dg.MetadataValue.md(Path(paths["markdown"]).read_text()),
                      "overview": records_table(overview, [(c, "string") for c in overview[0]]),
                      "items": len(items)},
            data_version=dg.DataVersion(fingerprint),
        )

    return [_grit_eval]



TRANSFER_PREFIX = "transfer"


def transfer_matrix_asset(domains: list[str], config: EvalConfig) -> list:
    """``transfer/matrix``: every domain's GraphCert checkpoint on every domain's held-out test
    split and graph (the default domain's evaluation settings)."""

    @dg.asset(key=dg.AssetKey([TRANSFER_PREFIX, "matrix"]), deps=[stage_key(d, GRAPHCERT) for d in domains],
              group_name=GROUP, code_version=VERSION, kinds={"html"}, tags={"layer": "evaluation"},
              description="Train-domain × test-domain transfer: EM / F1 (95 % CI) of each domain's GraphCert "
                          "checkpoint on every domain's test questions; table and heat-map.")
    def _transfer(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        import components.evaluation as evaluation_pkg
        from components.evaluation.transfer import transfer_matrix, write_transfer_report

        catalog = store.catalog()
        models, tests, parents = {}, {}, []
        for d in domains:
            ckpt, snap = catalog.latest(GRAPHCERT, d), catalog.latest("graph_snapshot", d)
            if ckpt is None or snap is None:
                raise dg.Failure(f"materialize {d}/{GRAPHCERT} first")
            rows, used = _test_rows(store, d)
            models[d], tests[d] = ckpt.path, (snap.path, rows)
            parents += [ckpt.fingerprint, snap.fingerprint] + [u.fingerprint for u in used]
        fingerprint = chain_fingerprint(parents, f"{VERSION}:transfer:{code_digest(evaluation_pkg.__path__[0])}",
                                        {"config": vars(config), "domains": domains})
        folder = store.layer_dir(ASSET, TRANSFER_PREFIX) / fingerprint
        previous = catalog.get(ASSET, TRANSFER_PREFIX, fingerprint)
        if previous is not None and (folder / "report.json").is_file():
            matrix, paths = json.loads((folder / "report.json").read_text()), previous.metadata["paths"]
        else:
            matrix = transfer_matrix(models, tests, config)
            with store.staged(ASSET, TRANSFER_PREFIX, fingerprint) as tmp:
                paths = relocate(write_transfer_report(matrix, tmp), tmp, folder)
            catalog.record(ArtifactRecord(asset=ASSET, domain=TRANSFER_PREFIX, fingerprint=fingerprint, parents=parents,
                                          config=vars(config), row_counts={"cells": len(matrix["cells"])},
                                          path=str(folder), metadata={"paths": paths}))
        cells = [{"train": c["train"], "test": c["test"], "questions": c.get("questions", 0), "em": c.get("em"),
                  "f1": c.get("f1"), "vf": c.get("vf")} for c in matrix["cells"]]
        return dg.MaterializeResult(
            metadata={"fingerprint": fingerprint, "report_html": dg.MetadataValue.path(paths["html"]),
                      "heatmap": dg.MetadataValue.path(paths["heatmap"]),
                      "report_md": dg.MetadataValue.md(Path(paths["markdown"]).read_text()),
                      "cells": records_table(cells, [("train", "string"), ("test", "string"), ("questions", "int"),
                                                     ("em", "float"), ("f1", "float"), ("vf", "float")])},
            data_version=dg.DataVersion(fingerprint),
        )

    return [_transfer]
