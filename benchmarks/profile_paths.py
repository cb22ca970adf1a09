"""Where the time of the two engine bars goes: probability scoring and sampling, Concord's path and the plain loop,
profiled on two checkouts of Concord taking turns in one run (the same model, threads and load).

    git worktree add /tmp/concord-old cfa2092    # the code before the engine and dataset registries
    python benchmarks/profile_paths.py --trees . /tmp/concord-old --per-pronoun 2 --rounds 2

Each round runs one worker process per tree, one after the other (`--worker`, the tree's own `generation` package on
sys.path, this interpreter): it loads the default model, takes the first N RUFF instances of each base pronoun, warms
up, then times each path (best of the round's repeats) and profiles it once with cProfile. The driver prints per tree
and path the seconds, the ratio to the plain loop, the machine's load and the functions that took the most time.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import io
import json
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
DEFAULT_TEMPLATES = HERE.parent.parent.parent / "shared/datasets/ruff/templates/eo_task.tsv"


def _modules():
    """The tree's scoring, sampling and loading modules (moved into generation/engines/hf/ by the engine registry)."""
    try:
        from generation.engines.hf import loading, sampling, scoring
    except ImportError:
        from generation import loading, sampling, scoring  # type: ignore[no-redef]
    try:
        from generation.datasets.registry import codebook_for
        from generation.datasets.ruff import MASKS
    except ImportError:
        from generation.pronouns import RUFF_MASKS as MASKS  # type: ignore[no-redef]
        from generation.pronouns import codebook_for  # type: ignore[no-redef]
    return loading, sampling, scoring, codebook_for, MASKS


def _plain_loops(sampling, scoring):
    """The plain loops (`score_one_at_a_time`, `sample_one_context`): in the tree's app modules before they moved to
    benchmarks/reference.py, else from the tree's benchmarks/reference.py."""
    if hasattr(scoring, "score_one_at_a_time"):
        return scoring.score_one_at_a_time, sampling.sample_one_context
    from benchmarks.reference import sample_one_context, score_one_at_a_time

    return score_one_at_a_time, sample_one_context


def _items(scoring, codebook_for, masks, path: Path, per_pronoun: int):
    codebook = codebook_for("ruff")
    taken: dict[str, int] = {}
    items = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            form = masks[row["pronoun_type"]]
            base = codebook.base_of.get(row["pronoun"].lower())
            if base is None or taken.get(base, 0) >= per_pronoun:
                continue
            taken[base] = taken.get(base, 0) + 1
            items.append(
                scoring.ScoreItem(
                    text=row["sentence"],
                    mask=row["pronoun_type"],
                    form=form,
                    correct_form=row["pronoun"].lower(),
                    codebook=codebook,
                )
            )
            if len(taken) == 4 and all(n >= per_pronoun for n in taken.values()):
                break
    return items


def _top(profile: cProfile.Profile, root: str, n: int) -> list[str]:
    """The n functions with the most own time, as 'seconds  file:line(function)' (paths shortened)."""
    stream = io.StringIO()
    stats = pstats.Stats(profile, stream=stream)
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:n]  # type: ignore[attr-defined]
    shown = []
    for (file, line, name), (_, calls, own, cumulative, _) in rows:
        short = file.replace(root + "/", "").split("site-packages/")[-1]
        shown.append(f"{own:7.3f} s own {cumulative:7.3f} s cum {calls:7d} calls  {short}:{line}({name})")
    return shown


def worker(args: argparse.Namespace) -> None:
    root = str(Path(args.root).resolve())
    sys.path.insert(0, root)
    os.chdir(root)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import django

    django.setup()
    import torch

    torch.set_num_threads(args.threads)
    loading, sampling, scoring, codebook_for, masks = _modules()
    score_one_at_a_time, sample_one_context = _plain_loops(sampling, scoring)
    from generation.contexts import build_context
    from generation.models import DEFAULT_MODEL_FIELDS, DEFAULT_MODEL_NAME, LanguageModel

    loaded = loading.model_load(language_model=LanguageModel(name=DEFAULT_MODEL_NAME, **DEFAULT_MODEL_FIELDS))
    items = _items(scoring, codebook_for, masks, Path(args.templates), args.per_pronoun)
    decoding = sampling.Decoding(samples=5, max_new_tokens=args.max_new_tokens)
    size = loaded.batch_size

    def concord_sampling() -> None:
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            for setting in ("pre", "post"):
                contexts = [build_context(i.text, i.mask, i.correct_form, setting) for i in chunk]
                sampling.sample_continuations(loaded=loaded, contexts=contexts, decoding=decoding, seed=start)

    def plain_sampling() -> None:
        for item in items:
            for setting in ("pre", "post"):
                context = build_context(item.text, item.mask, item.correct_form, setting)
                sample_one_context(loaded=loaded, context=context, decoding=decoding, seed=0)

    paths = {
        "scoring, Concord": lambda: scoring.score_instances(loaded=loaded, items=items),
        "scoring, plain loop": lambda: score_one_at_a_time(loaded=loaded, items=items),
        "sampling, Concord": concord_sampling,
        "sampling, plain loop": plain_sampling,
    }
    scoring.score_instances(loaded=loaded, items=items[:2])  # warm-up (and the tree pass's check)
    sample_one_context(
        loaded=loaded, context="Robin said", decoding=sampling.Decoding(samples=1, max_new_tokens=2), seed=0
    )
    result: dict = {"root": root, "instances": len(items), "threads": torch.get_num_threads(), "paths": {}}
    best = dict.fromkeys(paths, float("inf"))
    for _ in range(args.repeat):
        for name, fn in paths.items():  # the paths take turns
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    for name, fn in paths.items():
        profile = cProfile.Profile()
        profile.enable()
        fn()
        profile.disable()
        result["paths"][name] = {"seconds": best[name], "top": _top(profile, root, args.top)}
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))


def driver(args: argparse.Namespace) -> None:
    runs: dict[str, list[dict]] = {tree: [] for tree in args.trees}
    for round_ in range(args.rounds):
        for tree in args.trees:  # the trees take turns
            command = [sys.executable, str(HERE), "--worker", "--root", tree, "--templates", str(args.templates)]
            command += ["--per-pronoun", str(args.per_pronoun), "--max-new-tokens", str(args.max_new_tokens)]
            command += ["--threads", str(args.threads), "--repeat", str(args.repeat), "--top", str(args.top)]
            load = os.getloadavg()[0]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            runs[tree].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {round_ + 1}, {tree}: load {load:.2f} before", file=sys.stderr, flush=True)
    for tree, results in runs.items():
        print(f"\n== {tree} ({results[0]['instances']} instances, {results[0]['threads']} torch threads)")
        for name in results[0]["paths"]:
            seconds = [r["paths"][name]["seconds"] for r in results]
            plain = [r["paths"][name.split(",")[0] + ", plain loop"]["seconds"] for r in results]
            ratios = ", ".join(f"{p / s:.2f}x" for s, p in zip(seconds, plain, strict=True))
            print(f"  {name}: {', '.join(f'{s:.3f}' for s in seconds)} s; plain / this: {ratios}")
        for name, path in results[-1]["paths"].items():
            print(f"  -- {name}, profiled:")
            for line in path["top"]:
                print(f"     {line}")
        print(f"  load average at the end of each run: {[r['load_average'] for r in results]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", nargs="+", default=["."], help="checkouts of Concord to compare")
    parser.add_argument("--templates", type=Path, default=DEFAULT_TEMPLATES, help="RUFF's eo_task.tsv")
    parser.add_argument("--per-pronoun", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="torch threads, the same for every path and tree")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2, help="timed runs per path in each worker (best kept)")
    parser.add_argument("--top", type=int, default=8, help="functions shown per profiled path")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
    else:
        args.trees = [str(Path(tree).resolve()) for tree in args.trees]
        driver(args)


if __name__ == "__main__":
    main()
