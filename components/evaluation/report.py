"""An evaluation report as Markdown and as one self-contained HTML file (plots inlined as PNG).

:func:`write_report` writes ``report.json`` (everything, per-question records included),
``report.md``, ``report.html`` and the plot PNGs into a folder and returns their paths.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from components.evaluation.metrics import OUTCOMES

__all__ = [
    "DATA_BY_SOURCE",
    "DATA_FUNNEL",
    "breakdown_rows",
    "data_tables",
    "fmt_num",
    "grit_tables",
    "html_page",
    "main_table",
    "markdown_report",
    "md_table",
    "paired_table",
    "relative_files",
    "section_tables",
    "signed_ci",
    "write_grit_report",
    "write_report",
]

DATA_FUNNEL = "Training data: the certification funnel"
DATA_BY_SOURCE = "Training data by source"
_COLUMNS = (
    ("em", "EM"),
    ("em_nonbool", "EM non-bool"),
    ("grounded", "grounded EM"),
    ("f1", "F1"),
    ("raw_em", "raw EM"),
    ("rouge_l", "ROUGE-L"),
    ("judge", "judge"),
    ("eh", "EH"),
    ("vf", "VF"),
    ("vc", "VC"),
)


def fmt_num(v: Any, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _with_ci(summary: Mapping[str, Any], key: str) -> str:
    lo, hi = summary.get(f"{key}_ci") or (None, None)
    value = fmt_num(summary.get(key))
    return value if lo is None else f"{value} [{fmt_num(lo, 2)}, {fmt_num(hi, 2)}]"


def _section(s: Mapping[str, Any], section: str) -> Mapping[str, Any] | None:
    """A system's entry for one report section (older reports: the test section is the entry)."""
    sections = s.get("sections")
    if sections is None:
        return s if section == "test" else None
    return sections.get(section)


def main_table(report: Mapping[str, Any], section: str = "test") -> list[dict[str, str]]:
    """One row per system: every metric with its 95 % CI, P(EM|EH), P(EM|¬EH), outcomes, tokens,
    latency; a system that is not available shows its note."""
    rows = []
    for name, s in report["systems"].items():
        sec = _section(s, section) if s["available"] else None
        if not s["available"] or not sec:
            note = s.get("note", "not available") if not s["available"] else f"not evaluated on the {section} section"
            rows.append({"system": name, "method": s.get("method", ""), "note": note})
            continue
        sm = sec["summary"]
        row = {"system": name, "method": s.get("method", "")}
        row.update({label: _with_ci(sm, key) for key, label in _COLUMNS})
        row["questions × samples"] = f"{sm['questions']} × {len(sm['seeds'])}" + (
            f" × {len(sm['train_seeds'])} seeds" if len(sm.get("train_seeds") or []) > 1 else ""
        )
        row["P(EM|EH)"] = fmt_num(sm["p_em_given_eh"])
        row["P(EM|¬EH)"] = fmt_num(sm["p_em_given_not_eh"])
        row.update({o: fmt_num(sm["outcomes"][o], 2) for o in OUTCOMES})
        row["tokens/q"] = fmt_num(sm["tokens_per_question"], 1)
        row["latency s/q"] = fmt_num(sm["latency_s_per_question"], 2)
        row["note"] = s.get("note", "")
        rows.append(row)
    return rows


def ood_table(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per system that answered the OOD questions: ROUGE-L and the judge against the
    reference (with 95 % CIs), F1, valid format, questions."""
    rows = []
    for name, s in report["systems"].items():
        ood = s.get("ood") if s.get("available") else None
        if not ood:
            continue
        sm = ood["summary"]
        rows.append(
            {
                "system": name,
                "ROUGE-L": _with_ci(sm, "rouge_l"),
                "judge": _with_ci(sm, "judge"),
                "F1 vs reference": _with_ci(sm, "f1"),
                "VF": fmt_num(sm.get("vf"), 2),
                "questions": str(sm.get("questions", "")),
            }
        )
    return rows


def md_table(rows: Sequence[Mapping[str, str]]) -> str:
    cols: list[str] = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "")).replace("|", "\\|") for c in cols) + " |" for r in rows]
    return "\n".join(lines)


_PAIRED = (("em", "EM"), ("em_nonbool", "EM non-bool"), ("grounded", "grounded EM"), ("f1", "F1"))


def signed_ci(d: Mapping[str, Any] | None) -> str:
    """``+0.123 [+0.05, +0.20]`` for a paired difference (``–`` when undefined)."""
    if not d or d.get("value") is None:
        return "–"
    lo, hi = d["ci"]
    return f"{d['value']:+.3f} [{lo:+.2f}, {hi:+.2f}]"


def paired_table(report: Mapping[str, Any], section: str = "test") -> list[dict[str, str]]:
    """One row per compared pair in ``section``: EM, EM on non-boolean questions, grounded EM and
    F1 differences with their paired-bootstrap 95 % CIs (and, with several training seeds, the
    sign per seed)."""
    rows = []
    for pair in report.get("paired", []):
        if pair.get("section", "test") != section:
            continue
        row = {"difference": f"{pair['a']} − {pair['b']}", "questions": str(pair["em"]["n"])}
        if pair.get("baseline"):
            row["baseline"] = "yes"
        for metric, label in _PAIRED:
            if metric in pair:
                row[label] = signed_ci(pair[metric])
        per_seed = pair["em"].get("per_seed") or {}
        if len(per_seed) > 1:
            row["EM per seed"] = ", ".join(f"{v:+.2f}" for v in per_seed.values())
        rows.append(row)
    return rows


def breakdown_rows(report: Mapping[str, Any], field: str, section: str = "test") -> list[dict[str, str]]:
    rows = []
    for name, s in report["systems"].items():
        sec = _section(s, section) if s["available"] else None
        if not sec or field not in sec:
            continue
        for group, sm in sec[field].items():
            rows.append(
                {
                    "system": name,
                    field.removeprefix("by_"): group,
                    "questions": str(sm["questions"]),
                    "correct": str(round(sm["em"] * sm["records"]) if sm["em"] is not None else "–")
                    + f" / {sm['records']}",
                    "EM": _with_ci(sm, "em"),
                    "grounded EM": fmt_num(sm.get("grounded")),
                    "F1": fmt_num(sm["f1"]),
                    "VF": fmt_num(sm["vf"]),
                }
            )
    return rows


#: the breakdown tables of each section: (title, field)
_BREAKDOWN_TABLES = (
    ("By answer type", "by_answer_type"),
    ("By template family", "by_family"),
    ("By difficulty level", "by_level"),
)


def section_tables(report: Mapping[str, Any]) -> list[tuple[str, list[dict[str, str]]]]:
    """Every table of the report, section by section (test split, then external questions)."""
    out: list[tuple[str, list[dict[str, str]]]] = []
    for section, title in (("test", "Test split"), ("external", "External questions")):
        if not any(_section(s, section) for s in report["systems"].values() if s.get("available")):
            continue
        out += [
            (f"{title}: systems side by side", main_table(report, section)),
            (f"{title}: paired differences", paired_table(report, section)),
        ]
        for name, field in _BREAKDOWN_TABLES:
            if section == "external" and field == "by_family":
                continue  # every external question is one family ("external")
            out.append((f"{title}: {name.lower()}", breakdown_rows(report, field, section)))
    return out


def data_tables(report: Mapping[str, Any]) -> list[tuple[str, list[dict[str, str]]]]:
    """The training data the evaluated systems were made from: the certification funnel of the
    ``certified`` input (candidates → hard failures → strict / partial → judge → leakage →
    admitted) and, for a pool with several sources (a noisy pool, the LLM Quizzer beside the
    templates), the same per source — so a row of the report can be read against what
    certification removed from its data. Empty when the report has no ``data`` part."""
    data = report.get("data") or {}
    out = []
    if data.get("funnel"):
        out.append((DATA_FUNNEL, [{"stage": s, "items": str(c)} for s, c in data["funnel"]]))
    if len({r["source"] for r in data.get("by_source") or []}) > 1:
        rows = data["by_source"]
        keep = [k for k in rows[0] if k in ("source", "kind", "candidates", "admitted") or any(r[k] for r in rows)]
        out.append((DATA_BY_SOURCE, [{k: str(r[k]) for k in keep} for r in rows]))
    return out


def skipped_table(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """The questions of an external file that were not scorable, each with its reason."""
    return [
        {
            "id": str(s.get("id")),
            "line": str(s.get("line")),
            "section": str(s.get("section") or "test"),
            "reason": str(s.get("reason")),
            "detail": str(s.get("detail") or "")[:200],
            "question": str(s.get("question"))[:120],
        }
        for s in report.get("questions_skipped") or []
    ]


def markdown_report(report: Mapping[str, Any], title: str, plots: Mapping[str, str] | None = None) -> str:
    parts = [
        f"# {title}",
        "",
        f"- Questions: {len(report['order'])} from {report.get('questions_source') or 'the test split'} "
        f"(order fixed: {', '.join(report['order'][:12])}"
        f"{' …' if len(report['order']) > 12 else ''}); seeds {report['seeds']}",
        f"- Questions skipped: {len(report.get('questions_skipped') or [])} (listed below with their reasons)",
        f"- Decoding: {json.dumps(report['decoding'])}",
        f"- Judge model: `{report['judge_model']}` (yes/no correctness prompt)",
        f"- Normalisation: {report['normalisation']}",
        "- Brackets: 95 % cluster-bootstrap CI (questions resampled with all their samples; "
        "training seeds first when there are several). Paired differences: the same questions on both "
        "sides, resampled the same way. EM non-bool: yes/no questions left out; grounded EM: correct "
        "and equal to a value the episode's own queries returned.",
        "- Transcripts: `transcripts.md` (per system, wrong and correct answers to questions that are "
        "not yes/no, with the episode as played); every record's episode is in `report.json`.",
        "",
        *_external_lines(report),
        *[part for t, rows in section_tables(report) for part in (f"## {t}", "", md_table(rows) or "(none)", "")],
        *_data_lines(report),
        "## Questions skipped",
        "",
        md_table(skipped_table(report)) or "(none)",
        "",
    ]
    ood = report.get("ood") or {}
    if ood.get("questions"):
        parts += [
            "## Out-of-distribution questions (evaluated only, never trained on)",
            "",
            f"{ood['questions']} recommendation-style questions no lookup answers, scored against a "
            "reference derived by a stated rule (one reasonable answer, not the only one): "
            + "; ".join(ood.get("rules") or []),
            "",
            md_table(ood_table(report)) or "(none)",
            "",
        ]
    for name, path in (plots or {}).items():
        parts += [f"![{name}]({Path(path).name})", ""]
    return "\n".join(parts)


def _data_lines(report: Mapping[str, Any]) -> list[str]:
    from components.certify.dataset import funnel_chart

    out = []
    for title, rows in data_tables(report):
        out += [f"## {title}", "", md_table(rows), ""]
        if title == DATA_FUNNEL:
            out += [funnel_chart(report["data"]["funnel"]), ""]
    return out


def _external_lines(report: Mapping[str, Any]) -> list[str]:
    ext = report.get("external") or {}
    if not ext:
        return []
    share = ext.get("share")
    return [
        f"- External questions: {ext.get('evaluated')} evaluated from `{Path(str(ext.get('file'))).name}` "
        f"({ext.get('questions')} scorable, {ext.get('skipped')} skipped; "
        f"{ext.get('outside')} ({fmt_num(share, 2)}) outside the template families by the deriver: "
        f"{json.dumps(ext.get('reasons') or {})}); evaluation-only, never trained on",
        "",
    ]


def _plots(report: Mapping[str, Any], folder: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    avail = {n: s["summary"] for n, s in report["systems"].items() if s["available"]}
    if not avail:
        return {}
    names = list(avail)
    out = {}
    fig, ax = plt.subplots(figsize=(max(5, 1.4 * len(names)), 3.2))
    width = 0.25
    for i, (key, label) in enumerate((("f1", "F1"), ("em", "EM"), ("judge", "judge"))):
        vals = [avail[n][key] or 0.0 for n in names]
        cis = [avail[n].get(f"{key}_ci") or (None, None) for n in names]
        err = [
            [max(0.0, v - (c[0] if c[0] is not None else v)) for v, c in zip(vals, cis, strict=True)],
            [max(0.0, (c[1] if c[1] is not None else v) - v) for v, c in zip(vals, cis, strict=True)],
        ]
        ax.bar([x + (i - 1) * width for x in range(len(names))], vals, width, yerr=err, capsize=3, label=label)
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_ylim(0, 1)
    ax.legend()
    ax.set_title("answer quality (95 % CI)")
    fig.tight_layout()
    path = folder / "quality.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    out["quality"] = str(path)
    fig, ax = plt.subplots(figsize=(max(5, 1.4 * len(names)), 3.2))
    bottom = [0.0] * len(names)
    for o in OUTCOMES:
        vals = [avail[n]["outcomes"][o] for n in names]
        ax.bar(names, vals, bottom=bottom, label=o.replace("_", " "))
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    ax.set_title("outcome decomposition")
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    fig.tight_layout()
    path = folder / "outcomes.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    out["outcomes"] = str(path)
    return out


def _base64(path: str) -> str:
    return base64.b64encode(Path(path).read_bytes()).decode()


def html_page(
    markdown: str, plots: Mapping[str, str], title: str, tables: Sequence[tuple[str, list[dict[str, str]]]]
) -> str:
    def table(rows: list[dict[str, str]]) -> str:
        if not rows:
            return "<p>(none)</p>"
        cols: list[str] = []
        for r in rows:
            cols += [c for c in r if c not in cols]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in cols) + "</tr>" for r in rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    intro = [line[2:] for line in markdown.splitlines() if line.startswith("- ")]
    imgs = "".join(
        f'<figure><img alt="{html.escape(n)}" src="data:image/png;base64,{_base64(p)}">'
        f"<figcaption>{html.escape(n)}</figcaption></figure>"
        for n, p in plots.items()
    )
    sections = "".join(f"<h2>{html.escape(t)}</h2>{table(rows)}" for t, rows in tables)
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:12px}"
        "td,th{border:1px solid #ccc;padding:3px 6px}th{background:#f3f3f3}figure{display:inline-block}"
    )
    items = "".join(f"<li>{html.escape(i)}</li>" for i in intro)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{style}</style>"
        f"</head><body><h1>{html.escape(title)}</h1><ul>{items}</ul>{sections}{imgs}</body></html>"
    )


def transcripts_markdown(report: Mapping[str, Any], title: str, *, wrong: int = 2, right: int = 1) -> str:
    """Episodes to read beside the tables: per system and section, its first ``wrong`` wrong and
    first ``right`` correct answers to questions that are not yes/no (a yes/no answer says little
    about whether the graph was read), each with the question, gold, answer, outcome and the
    episode as played (its record's ``transcript``). Every record's transcript is in
    ``report.json``."""
    parts = [f"# {title}: transcripts", ""]
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in report.get("records") or []:
        if r.get("transcript") and r.get("answer_type") != "boolean":
            groups.setdefault((str(r["system"]), str(r.get("section") or "test")), []).append(r)
    if not groups:
        return "\n".join([*parts, "(no episodes: no system with a model was evaluated)", ""])
    for (system, section), recs in groups.items():
        bad = [r for r in recs if r.get("outcome") != "correct"][:wrong]
        good = [r for r in recs if r.get("outcome") == "correct"][:right]
        parts += [f"## {system} — {section}", ""]
        for r in [*bad, *good]:
            parts += [
                f"**{r['question']}** ({r.get('answer_type')}, training seed {r.get('train_seed', 0)})  ",
                f"gold `{r.get('gold')}` · answered `{r.get('answer')}` · {r.get('outcome')}"
                f"{' · grounded' if r.get('grounded') else ''}",
                "",
                "```text",
                str(r["transcript"]).replace("```", "ʼʼʼ"),
                "```",
                "",
            ]
    return "\n".join(parts)


def write_report(report: Mapping[str, Any], folder: Path, title: str) -> dict[str, str]:
    """Write ``report.json``, ``report.md``, ``report.html``, ``transcripts.md`` and the plots;
    returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps(report, indent=1, default=str))
    (folder / "transcripts.md").write_text(transcripts_markdown(report, title))
    plots = _plots(report, folder)
    md = markdown_report(report, title, plots)
    (folder / "report.md").write_text(md)
    tables = [*section_tables(report), *data_tables(report), ("Questions skipped", skipped_table(report))]
    (folder / "report.html").write_text(html_page(md, plots, title, tables))
    return {
        "json": str(folder / "report.json"),
        "markdown": str(folder / "report.md"),
        "html": str(folder / "report.html"),
        "transcripts": str(folder / "transcripts.md"),
        **plots,
    }


def relative_files(files: Mapping[str, str], folder: Path) -> dict[str, str]:
    """The report files ``write_*`` returned, as names relative to their ``folder`` (an
    artifact's summary outlives the staging folder they were written in)."""
    return {k: Path(v).relative_to(folder).as_posix() for k, v in files.items()}


def _ci_cell(m: Mapping[str, Any] | None) -> str:
    if not m or m.get("value") is None:
        return "–"
    lo, hi = m.get("ci") or (None, None)
    return fmt_num(m["value"]) + ("" if lo is None else f" [{fmt_num(lo, 2)}, {fmt_num(hi, 2)}]") + f" (n={m.get('n')})"


def grit_tables(summaries: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, list[dict[str, str]]]]:
    """The GRIT report's tables: overview, per task, per naming scheme."""
    overview, tasks, namings = [], [], []
    for name, s in summaries.items():
        overview.append(
            {
                "system": name,
                "accuracy (test)": _ci_cell(s["accuracy_id"]),
                "accuracy (OOD scenarios)": _ci_cell(s["accuracy_ood"]),
                "ID − OOD gap": fmt_num(s["ood_gap"]),
                "accuracy (large)": _ci_cell(s.get("accuracy_large")),
                "variance across namings": fmt_num(s["naming_variance"], 4),
                "VF": fmt_num(s["valid_format"]),
                "node-F1": _ci_cell(s["structure"]["node_f1"]),
                "edge-F1": _ci_cell(s["structure"]["edge_f1"]),
                "exact": _ci_cell(s["structure"]["exact"]),
                "tokens/item": fmt_num(s["tokens_per_item"], 1),
            }
        )
        tasks += [{"system": name, "task": t, "accuracy": _ci_cell(v)} for t, v in s["by_task"].items()]
        namings += [{"system": name, "naming": n, "accuracy": _ci_cell(v)} for n, v in s["by_naming"].items()]
    return [
        ("Overview", overview),
        ("Accuracy per task (test split)", tasks),
        ("Accuracy per naming scheme (test split)", namings),
    ]


def write_grit_report(
    summaries: Mapping[str, Mapping[str, Any]],
    meta: Mapping[str, Any],
    folder: Path,
    records: Sequence[Mapping[str, Any]],
) -> dict[str, str]:
    """``report.json`` / ``.md`` / ``.html`` (+ a per-naming accuracy plot) of a GRIT evaluation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(
        json.dumps({"summaries": summaries, "meta": meta, "records": list(records)}, indent=1, default=str)
    )
    tables = grit_tables(summaries)
    fig, ax = plt.subplots(figsize=(6, 3))
    names = list(summaries)
    schemes = sorted({n for s in summaries.values() for n in s["by_naming"]})
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        vals = [summaries[name]["by_naming"].get(n, {}).get("value") or 0.0 for n in schemes]
        ax.bar([x + i * width for x in range(len(schemes))], vals, width, label=name)
    ax.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(schemes))], schemes)
    ax.set_ylim(0, 1)
    ax.set_title("accuracy per naming scheme")
    ax.legend(fontsize=7)
    fig.tight_layout()
    plot = folder / "namings.png"
    fig.savefig(plot, dpi=90)
    plt.close(fig)
    title = "graphdojo GRIT-style evaluation"
    md = "\n".join(
        [
            f"# {title}",
            "",
            *[f"- {k}: {v}" for k, v in meta.items()],
            "",
            *[part for t, rows in tables for part in (f"## {t}", "", md_table(rows), "")],
            f"![namings]({plot.name})",
            "",
        ]
    )
    (folder / "report.md").write_text(md)
    (folder / "report.html").write_text(html_page(md, {"accuracy per naming": str(plot)}, title, tables))
    return {
        "json": str(folder / "report.json"),
        "markdown": str(folder / "report.md"),
        "html": str(folder / "report.html"),
        "namings": str(plot),
    }
