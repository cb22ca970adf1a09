"""Throughput of the project's batched scoring and sampling against the plain loop, on the default model.

    python benchmarks/bench_generation.py --templates ../shared/datasets/ruff/templates/eo_task.tsv --per-pronoun 4

Takes the first N rows of each base pronoun of the RUFF file, in file order. For each instance: probability scoring
(4 candidates), then 2 contexts (pre, post) x 5 samples x 50 new tokens. The plain loop is one forward pass per
candidate and one `generate` call of 5 samples per context. Each bar is bracketed (plain, Concord, plain) in this
process; the ratio is the plain loop's mean over Concord's time. Prints one JSON line, with the machine's load.

    python benchmarks/bench_generation.py --dataset tango --templates demo/tango_misgendering.jsonl --per-pronoun 4

With `--dataset tango` (a file in TANGO's misgendering.jsonl format): the open context x 5 samples, then Prob-TANGO
on every generation as a worker does it: the rewriting in one `nlp.pipe` batch (against one call per text) and the
4 candidates' scoring with the prefix-shared scorer (against one forward pass per candidate), per generation.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def read_ruff(path: Path, per_pronoun: int):
    from generation.datasets.registry import codebook_for
    from generation.datasets.ruff import MASKS as RUFF_MASKS
    from generation.engines.hf.scoring import ScoreItem
    from generation.pronouns import BASES

    codebook = codebook_for("ruff")
    taken = dict.fromkeys(BASES, 0)
    items = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            form = RUFF_MASKS[row["pronoun_type"]]
            base = codebook.base_for(form, row["pronoun"])
            if base is None or taken[base] >= per_pronoun:
                continue
            taken[base] += 1
            items.append(
                ScoreItem(
                    text=row["sentence"],
                    mask=row["pronoun_type"],
                    form=form,
                    correct_form=row["pronoun"].lower(),
                    codebook=codebook,
                )
            )
            if all(n >= per_pronoun for n in taken.values()):
                break
    return items


def read_tango(path: Path, per_pronoun: int) -> list[tuple[str, str]]:
    """(context, pronoun family) of the first N lines of each base family, in file order."""
    from generation.datasets.tango import tango_context
    from generation.pronouns import BASES

    taken = dict.fromkeys(BASES, 0)
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        family = row["pronoun_family"]
        if family in taken and taken[family] < per_pronoun:
            taken[family] += 1
            rows.append((tango_context(row["template"]), family))
    return rows


def bench_tango(args, loaded, decoding, timed) -> dict:
    from benchmarks.reference import sequence_loss
    from generation.engines.hf.sampling import sample_continuations
    from generation.rewriting import rewrite_continuations, spacy_pipeline
    from generation.services.tango import contraction_chooser, tango_candidates, tango_score

    rows = read_tango(args.templates, args.per_pronoun)
    contexts = [context for context, _ in rows]
    size = loaded.batch_size
    continuations: list[str] = []

    def project_sampling() -> None:
        continuations.clear()
        for start in range(0, len(contexts), size):
            for texts in sample_continuations(
                loaded=loaded, contexts=contexts[start : start + size], decoding=decoding, seed=start
            ):
                continuations.extend(texts)

    gen_s = timed(project_sampling)
    print(f"sampled {len(continuations)} generations in {gen_s:.1f} s", file=sys.stderr, flush=True)
    gen_contexts = [context for context in contexts for _ in range(decoding.samples)]
    pronouns = [family for _, family in rows for _ in range(decoding.samples)]
    spacy_pipeline()  # loaded once per process, as on a worker
    chooser = contraction_chooser(loaded=loaded, contexts=gen_contexts)
    n = len(continuations)
    rewrite_s = base_rewrite_s = score_s = base_score_s = float("inf")
    for _ in range(args.repeat):
        rewrite_s = min(rewrite_s, timed(lambda: rewrite_continuations(continuations, choose_contraction=chooser)))
        score_s = min(
            score_s,
            timed(
                lambda: tango_score(
                    loaded=loaded, contexts=gen_contexts, continuations=continuations, pronouns=pronouns
                )
            ),
        )
        if not args.skip_baseline:
            base_rewrite_s = min(
                base_rewrite_s,
                timed(
                    lambda: [
                        rewrite_continuations(
                            [text], choose_contraction=contraction_chooser(loaded=loaded, contexts=[context])
                        )
                        for text, context in zip(continuations, gen_contexts, strict=True)
                    ]
                ),
            )
    print(f"rewriting {rewrite_s:.2f} s, Prob-TANGO {score_s:.2f} s", file=sys.stderr, flush=True)
    rewrites = rewrite_continuations(continuations, choose_contraction=chooser)
    ok = [(context, r) for context, r in zip(gen_contexts, rewrites, strict=True) if not r.failed]
    if not args.skip_baseline:
        base_score_s = timed(
            lambda: [
                sequence_loss(loaded=loaded, text=text)
                for context, r in ok
                for text in tango_candidates(context=context, rewrite=r)
            ]
        )
    result = {
        "dataset": "tango",
        "instances": len(rows),
        "generations": n,
        "failed_templates": n - len(ok),
        "gen_inst_per_s": round(len(rows) / gen_s, 3),
        "rewrite_gen_per_s": round(n / rewrite_s, 3),
        "prob_tango_gen_per_s": round(n / score_s, 3),  # rewriting + scoring, as the worker runs them
    }
    if not args.skip_baseline:
        result |= {
            "baseline_rewrite_gen_per_s": round(n / base_rewrite_s, 3),
            "baseline_score_gen_per_s": round(n / (base_score_s + base_rewrite_s), 3),
            "rewrite_speedup": round(base_rewrite_s / rewrite_s, 2),
            "prob_tango_speedup": round((base_score_s + base_rewrite_s) / score_s, 2),
        }
    return result


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--templates", type=Path, required=True, help="the RUFF eo_task.tsv or a TANGO .jsonl")
    parser.add_argument("--dataset", choices=["ruff", "tango"], default="ruff", help="the format of --templates")
    parser.add_argument("--per-pronoun", type=int, required=True)
    parser.add_argument(
        "--model", help="a registered model name (needs the database); default: the built-in default model"
    )
    parser.add_argument("--device", default=None, help="override the model's device (cpu, cuda)")
    parser.add_argument(
        "--engine", choices=["hf", "vllm"], default="hf", help="the generation engine timed for Concord's side"
    )
    parser.add_argument("--batch-size", type=int, default=None, help="override the model's batch size")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=50)
    parser.add_argument("--skip-baseline", action="store_true", help="time only the project's path")
    parser.add_argument("--repeat", type=int, default=1, help="measure each side this often, keep the best")
    return parser.parse_args()


def _timer(loaded):
    """Seconds a call takes, waiting for the GPU's queued work on both sides of it."""
    import torch

    def timed(fn) -> float:
        if loaded.device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if loaded.device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start

    return timed


def bench_ruff(args, loaded, language_model, timed) -> dict:
    from benchmarks.reference import sample_one_context, score_one_at_a_time
    from generation.contexts import build_context
    from generation.engines import engine_lookup
    from generation.engines.hf.sampling import Decoding
    from generation.engines.hf.scoring import score_instances

    items = read_ruff(args.templates, args.per_pronoun)
    contexts = [build_context(i.text, i.mask, i.correct_form, s) for i in items for s in ("pre", "post")]
    size = loaded.batch_size
    engine = engine_lookup(args.engine)
    decoding = Decoding(samples=args.samples, max_new_tokens=args.max_new_tokens)

    def project_sampling() -> None:
        # As a job's chunk does it: batch_size instances at a time, each setting a batch with its own seed, the
        # settings in one call where the engine samples groups (hf), else one call per setting.
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            groups = [
                ([build_context(i.text, i.mask, i.correct_form, setting) for i in chunk], start + offset)
                for offset, setting in enumerate(("pre", "post"))
            ]
            if engine.samples_groups:
                engine.sample_groups(language_model=language_model, loaded=loaded, groups=groups, decoding=decoding)
            else:
                for chunk_contexts, seed in groups:
                    engine.sample(
                        language_model=language_model,
                        loaded=loaded,
                        contexts=chunk_contexts,
                        decoding=decoding,
                        seed=seed,
                    )

    def plain_sampling() -> None:
        for context in contexts:
            sample_one_context(loaded=loaded, context=context, decoding=decoding, seed=0)

    # Warm-up, so that neither side pays for first-call allocation (nor Concord for the once-per-process check of its
    # grouped decoding, on the chunks' shape).
    score_instances(loaded=loaded, items=items[:2])
    if engine.samples_groups:
        from generation.engines.hf.shared_attention import grouped_ready

        for start in range(0, len(items), size):
            grouped_ready(loaded, (len(items[start : start + size]),) * 2, decoding.samples)
    sample_one_context(loaded=loaded, context=contexts[0], decoding=Decoding(samples=1, max_new_tokens=2), seed=0)

    # The machine may be shared: the two sides alternate, and with --repeat each keeps its best time.
    # Bracketed: each round runs plain, Concord, plain for each bar, and the ratio is the plain loop's mean over the
    # two around Concord's run; the best round's ratio is kept.
    n = len(items)
    prob_s = gen_s = base_prob_s = base_gen_s = float("inf")
    prob_ratio = gen_ratio = 0.0
    for _ in range(args.repeat):
        if args.skip_baseline:
            prob_s = min(prob_s, timed(lambda: score_instances(loaded=loaded, items=items)))
            gen_s = min(gen_s, timed(project_sampling))
            continue
        before = timed(lambda: score_one_at_a_time(loaded=loaded, items=items))
        concord = timed(lambda: score_instances(loaded=loaded, items=items))
        after = timed(lambda: score_one_at_a_time(loaded=loaded, items=items))
        prob_s, base_prob_s = min(prob_s, concord), min(base_prob_s, before, after)
        prob_ratio = max(prob_ratio, (before + after) / 2 / concord)
        before = timed(plain_sampling)
        concord = timed(project_sampling)
        after = timed(plain_sampling)
        gen_s, base_gen_s = min(gen_s, concord), min(base_gen_s, before, after)
        gen_ratio = max(gen_ratio, (before + after) / 2 / concord)
    result = {
        "engine": args.engine,
        "instances": n,
        "prob_inst_per_s": round(n / prob_s, 3),
        "gen_inst_per_s": round(n / gen_s, 3),
    }
    if not args.skip_baseline:
        result |= {
            "baseline_prob_inst_per_s": round(n / base_prob_s, 3),
            "baseline_gen_inst_per_s": round(n / base_gen_s, 3),
            "prob_speedup": round(prob_ratio, 2),
            "gen_speedup": round(gen_ratio, 2),
        }
    return result


def main() -> None:
    args = _arguments()

    import django

    django.setup()
    import torch

    from generation.engines.hf.loading import model_load
    from generation.engines.hf.sampling import Decoding
    from generation.models import DEFAULT_MODEL_FIELDS, DEFAULT_MODEL_NAME, LanguageModel

    if args.model is None:  # the default model needs no database: its registry row, unsaved
        language_model = LanguageModel(name=DEFAULT_MODEL_NAME, **DEFAULT_MODEL_FIELDS)
    else:
        language_model = LanguageModel.objects.get(name=args.model)
    if args.device:
        language_model.device = args.device
    if args.batch_size:
        language_model.batch_size = args.batch_size
    loaded = model_load(language_model=language_model)
    timed = _timer(loaded)
    if args.dataset == "tango":
        decoding = Decoding(samples=args.samples, max_new_tokens=args.max_new_tokens)
        result = bench_tango(args, loaded, decoding, timed)
    else:
        result = bench_ruff(args, loaded, language_model, timed)
    result |= {"device": str(loaded.device), "batch_size": loaded.batch_size, "torch_threads": torch.get_num_threads()}
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]  # 1, 5 and 15 minutes, at the end
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
